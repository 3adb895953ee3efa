"""One Findings card: a hypothesis stated before the data and what this model and data give.

A :class:`Card` pairs a :class:`~headprune_core.findings.hypotheses.Hypothesis` (the claim quoted with its
number, the statistic, the control, the rule) with the statistic as an
:class:`~headprune_core.methods.inference.Estimate` over training runs, the rule's verdict and its reason, the
rule's error rates measured around these sizes (:mod:`headprune_core.findings.calibration`) and a table of the
evidence. The cards themselves are built by :class:`~headprune_core.findings.cards.Findings`, one module per
family of tests (:mod:`~headprune_core.findings.retrain_cards`, :mod:`~headprune_core.findings.ranking_cards`,
:mod:`~headprune_core.findings.multitask_cards`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from headprune_core.encoders.models import EMBEDDED
from headprune_core.findings.calibration import DRAWS, calibrate, card_p_value, combine
from headprune_core.findings.hypotheses import Hypothesis
from headprune_core.methods.inference import INCONCLUSIVE, MISSING, OTHER_WAY, REPRODUCED, SAME, SMALLER, Estimate


@dataclass
class Card:
    """One hypothesis and what this model and data give."""

    hypothesis: Hypothesis
    verdict: str = MISSING
    estimates: dict[str, Estimate] = field(default_factory=dict)  # per part ("" when the claim is one part)
    measured: str = ""
    rows: list[dict] = field(default_factory=list)
    protocol: str = ""
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    numbers: dict = field(default_factory=dict)
    calibration: dict | None = None
    draws: int = DRAWS  # simulated draws that measure the rule's error rates
    model: str = ""  # the model the results are for, in words (the study's own)
    data: str = ""  # the task and data, in words
    reason: str = ""  # why the verdict is what it is, in a line
    same_as: str = ""  # the card whose result this one is (verdict SAME), shown and counted there
    looks: tuple | None = None  # a staged design's looks ((runs, alpha), ...): its rates count every look
    look: int = 0  # which of them gave the verdict (0: the first, the preset's own three runs)
    seen: tuple = ()  # in a staged design, ((look, estimates), ...) of every look computed for it (the page's p)
    headline: str = ""  # the verdict controlled across the page (findings/page.py); "" until the page sets it
    page_note: str = ""  # why the headline differs from the card's own verdict, in a line

    @property
    def shown(self) -> str:
        """The verdict a reader sees first: the page's headline once the page is read, else the card's own."""
        return self.headline or self.verdict

    key = property(lambda self: self.hypothesis.id)
    title = property(lambda self: self.hypothesis.title)
    claim = property(lambda self: self.hypothesis.claim)
    paper = property(lambda self: self.hypothesis.paper)
    page = property(lambda self: self.hypothesis.page)
    rule = property(lambda self: self.hypothesis.rule.text())

    @property
    def mde(self) -> float | None:
        """The largest minimum detectable effect of the card's parts (None before the results); information
        only, computed from the same runs: it never gates the verdict."""
        if not self.estimates:
            return None
        return max(e.mde(self.hypothesis.rule.kind) for e in self.estimates.values())

    @property
    def p(self) -> float | None:
        """The one-sided p-value the card's *reproduced* rests on (None before the results)."""
        return card_p_value(self.hypothesis, list(self.estimates.values())) if self.estimates else None

    def decide(self, estimates: dict[str, Estimate], *, draws: int | None = None) -> None:
        """Set the estimates, the verdict of the rule from the intervals alone (every part must hold), its
        reason, and its error rates, measured on ``draws`` simulated draws around these sizes."""
        self.estimates = estimates
        rule = self.hypothesis.rule
        n = self.hypothesis.split(len(estimates))
        self.verdict = str(combine([np.array([rule.decide(e, parts=n)], dtype=object) for e in estimates.values()],
                                   scales=self.hypothesis.scales)[0])
        self.reason = "; ".join((f"{name}: " if name else "") + rule.reason(e, parts=n)
                                for name, e in estimates.items())
        if self.hypothesis.scales and self.verdict == INCONCLUSIVE and len({rule.decide(e) for e in
                                                                            estimates.values()}) > 1:
            self.reason = f"the scales disagree ({self.reason}); a verdict needs them all to agree"
        self.calibration = calibrate(self.hypothesis, list(estimates.values()), draws=draws or self.draws,
                                     looks=self.looks)

    def verdict_text(self) -> str:
        """The headline verdict in words that name this model and data beside the paper's (a *not reproduced*
        reads as "smaller on this model and data", never as a refutation of the paper), and where the page's
        control changed the card's own verdict, what the card alone says."""
        h = self.hypothesis
        here = " and ".join(x for x in (self.model, self.data) if x) or "this model and data"
        verdict = self.shown
        note = f" {self.page_note}" if self.page_note else ""
        if verdict == SMALLER:
            return f"Not reproduced: smaller on {here} than the paper's {h.paper_effect}.{note}"
        if verdict == OTHER_WAY:
            way = "a difference larger than the margin" if h.rule.kind == "equivalence" else "the opposite sign"
            return (f"The other way on {here}: {way}, where the paper reports {h.paper_effect}. A result about this "
                    f"model and data, not a refutation of the paper.{note}")
        if verdict == REPRODUCED:
            return f"Reproduced on {here} (the paper: {h.paper_effect}).{note}"
        if verdict == MISSING:
            return "Not computed yet."
        if verdict == SAME:
            return f"One result with card {self.same_as}: {self.reason}."
        return f"Inconclusive on {here}: {self.reason}.{note}"

    def estimate_text(self) -> str:
        """``"+0.42 [-0.31, +1.15] (3 runs; MDE 1.9 points vs the paper's 0.91)"`` per part."""
        h = self.hypothesis
        parts = []
        for name, e in self.estimates.items():
            low, high = e.interval(h.rule.level)
            parts.append(f"{name + ': ' if name else ''}{e.diff:+.2f} [{low:+.2f}, {high:+.2f}] {h.rule.unit} "
                         f"({e.n_runs} run{'s' if e.n_runs != 1 else ''}, {e.df:.0f} df; MDE {e.mde(h.rule.kind):.2f}, "
                         "information only)")
        target = "the paper's effect" if h.rule.kind == "superiority" else "the margin"
        return "; ".join(parts) + f"; {target} {h.rule.target:g} {h.rule.unit}"

    def to_dict(self) -> dict:
        """The card as ``headprune findings --format json`` writes it."""
        h = self.hypothesis
        return {"id": h.id, "title": h.title, "claim": h.claim, "paper": h.paper, "hypothesis": h.hypothesis,
                "statistic": h.statistic, "control": h.control, "rule": h.rule.text(), "kind": h.rule.kind,
                "margin": h.rule.margin, "effect": h.rule.effect, "unit": h.rule.unit,
                "paper_effect": h.paper_effect, "mde": self.mde, "verdict": self.shown,
                "verdict_unadjusted": self.verdict, "page_note": self.page_note,
                "verdict_text": self.verdict_text(), "reason": self.reason, "p": self.p, "model": self.model,
                "data": self.data, "same_as": self.same_as, "alpha": h.rule.alpha, "look": self.look,
                "numbers": {"estimates": {name or "all": e.to_dict() for name, e in self.estimates.items()},
                            **self.numbers},
                "calibration": None if self.calibration is None else {
                    k: self.calibration[k] for k in ("false_reproduced", "false_not_reproduced", "false_other_way",
                                                     "power", "draws", "goal", "goals_missed", "rates", "sizes")}
                    | ({"looks": self.calibration["looks"]} if self.looks else {}),
                "measured": self.measured, "protocol": self.protocol, "missing": self.missing, "notes": self.notes,
                "rows": self.rows, "page": h.page}


def model_label(model_id: str) -> str:
    """The study's model in words: ``"me5-small (4-bit, dequantised to fp32)"`` for an embedded quantised model,
    else its id."""
    entry = EMBEDDED.get(model_id)
    return f"{model_id} ({entry.quantised})" if entry and entry.quantised else model_id


def mean_of(values):
    """The mean of numbers or of equally shaped arrays (a statistic works on both)."""
    return np.mean(np.stack([np.asarray(v, dtype=float) for v in values]), axis=0)


def relative_cost(unpruned, pruned):
    """Relative cost of pruning, in % of the unpruned score (numbers or arrays): within one language only (a
    lower baseline makes the same drop in points a larger share)."""
    return 100 * (unpruned - pruned) / np.maximum(unpruned, 1e-9)
