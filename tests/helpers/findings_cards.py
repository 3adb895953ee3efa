"""Findings cards built without a cache: every hypothesis's own rule decides planted training runs (for the
report's tests, in the unit tier and in the real browser)."""

from __future__ import annotations

from headprune_core.findings.cards import Card
from headprune_core.findings.hypotheses import HYPOTHESES
from headprune_core.methods.inference import Estimate


def constructed_cards() -> list[Card]:
    """Every hypothesis as a card: all but the last decided on planted runs at the paper's effect (or inside the
    margin), one part per named part; the last left not computed."""
    cards = []
    for i, h in enumerate(HYPOTHESES):
        card = Card(h, draws=50)
        if i < len(HYPOTHESES) - 1:
            centre = h.rule.effect if h.rule.kind == "superiority" else 0.1 * h.rule.margin
            runs = (centre * 0.8, centre, centre * 1.2 + 0.05)
            card.measured = f"planted runs {runs}"
            card.protocol = "constructed for the report test"
            card.rows = [{"seed": 13 + j, "value": r} for j, r in enumerate(runs)]
            card.decide({name: Estimate(runs, se_sentences=0.01, n_sentences=200) for name in (h.parts or ("",))})
        else:
            card.missing = ["the runs of this card"]
        cards.append(card)
    return cards
