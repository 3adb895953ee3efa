"""The findings of the papers behind headprune, checked on this model and data: one card per hypothesis.

:class:`Findings` reads the plan's cached results (:class:`~headprune_core.findings.evidence.Evidence`) and builds
each :class:`~headprune_core.findings.card.Card`: the statistic as an estimate over training runs, the verdict
of the hypothesis's rule, the rule's error rates and a table of the evidence. The cards are grouped by the shape
of their evidence: prune-then-retrain runs (:mod:`~headprune_core.findings.retrain_cards`), the ranking without
retraining (:mod:`~headprune_core.findings.ranking_cards`), multi-task training and per-task maps
(:mod:`~headprune_core.findings.multitask_cards`). Cards only read the cache: a missing piece leaves its card
"not computed yet" with the jobs it needs (:meth:`Findings.missing`), which the page offers with a time estimate.
"""

from __future__ import annotations

from dataclasses import replace

from headprune_core.findings.calibration import DRAWS
from headprune_core.findings.card import Card, model_label
from headprune_core.findings.evidence import Evidence
from headprune_core.findings.hypotheses import BY_ID, HYPOTHESES
from headprune_core.findings.multitask_cards import SHARED_TOP_PERCENT, MultitaskCards
from headprune_core.findings.ranking_cards import RankingCards
from headprune_core.findings.retrain_cards import FAMILIES, RetrainCards
from headprune_core.methods.inference import (
    INCONCLUSIVE,
    MISSING,
    ONE_RUN,
    OTHER_WAY,
    REPRODUCED,
    SAME,
    SMALLER,
    VERDICTS,
)

__all__ = ["Card", "Findings", "FAMILIES", "VERDICTS", "REPRODUCED", "SMALLER", "OTHER_WAY", "INCONCLUSIVE",
           "ONE_RUN", "SAME", "MISSING", "SHARED_TOP_PERCENT", "model_label"]


class Findings(RetrainCards, RankingCards, MultitaskCards, Evidence):
    """The cards of ``plan`` (default: the ``findings`` preset) on ``study``'s cache; each rule's error rates are
    measured on ``draws`` simulated draws."""

    def __init__(self, study, plan=None, *, task: str = "pos", draws: int = DRAWS, look: int = 0,
                 looks: tuple | None = None):
        super().__init__(study, plan, task=task)
        self.draws = draws
        self.model_text = model_label(study.model_id)
        self.looks, self.look = looks, look  # a staged design (findings/staged.py): its looks, and this one

    def _card(self, card_id: str) -> Card:
        h = BY_ID[card_id]
        if self.looks:  # a staged look decides at its own alpha, and its rates count every look
            h = replace(h, rule=replace(h.rule, alpha=self.looks[self.look][1]))
        return Card(h, draws=self.draws, model=self.model_text, data=f"{self.task.upper()}, {self.source} source",
                    looks=self.looks, look=self.look)

    def cards(self) -> list[Card]:
        return [getattr(self, f"card_{h.id}")() for h in HYPOTHESES]

    def card(self, card_id: str) -> Card:
        if card_id not in BY_ID:
            raise KeyError(f"unknown findings card {card_id!r}; known: {', '.join(BY_ID)}")
        return getattr(self, f"card_{card_id}")()
