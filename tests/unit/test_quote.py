"""Lesson notes quote a card through ``{card:ID}``, filled from the live card: the shipped lesson's every
placeholder renders, and its notes hold no number copied by hand."""

from __future__ import annotations

import re

import pytest

from headprune_core.findings.hypotheses import BY_ID
from headprune_core.findings.page import page_control
from headprune_core.findings.quote import card_ids, fill, quote
from headprune_core.plans.lessons import PRESET_DIR, read
from tests.helpers.findings_cards import constructed_cards


@pytest.fixture(scope="module")
def cards():
    out = constructed_cards()
    page_control(out, draws=50)
    return out


def test_a_quote_is_the_live_cards_verdict_interval_and_runs(cards):
    card = cards[0]
    (est,) = card.estimates.values()
    low, high = est.interval()
    text = quote(card)
    assert text.startswith(card.shown + ": ") and f"{est.diff:+.2f} [{low:+.2f}, {high:+.2f}]" in text
    assert "over 3 training runs" in text
    assert (f"the card alone: {card.verdict}" in text) == (card.verdict != card.shown)
    assert quote(cards[-1]) == "not computed in this cache yet"
    filled = fill("Card a1 reads {card:a1}.", cards)
    assert filled.startswith(f"Card a1 reads {card.shown}: ") and "\\[" in filled and "{card:" not in filled


def test_bad_placeholders_say_what_is_wrong(cards):
    assert "unknown card 'zz'; known: a1, a2" in fill("{card:zz}", cards).replace("\\", "")
    assert fill("{card:c}", [], unavailable="cannot be read here (no model)").replace("\\", "") == \
        "[card c: cannot be read here (no model)]"
    assert fill("no placeholder", cards) == "no placeholder"


def test_every_placeholder_of_the_shipped_lesson_renders(cards):
    for path in sorted(PRESET_DIR.glob("*.md")):
        lesson = read(path)
        quoted = [i for step in lesson.steps for i in card_ids(step.notes)]
        assert quoted and set(quoted) <= set(BY_ID), (path.name, quoted)
        for step in lesson.steps:
            text = fill(step.notes, cards)
            assert "{card:" not in text and "unknown card" not in text
            for card_id in card_ids(step.notes):
                card = next(c for c in cards if c.key == card_id)
                assert quote(card).split(":")[0] in text
            # no card's number or verdict copied into the prose by hand: they come from the placeholders
            assert not re.search(r"[+-]\d+\.\d+ \[", step.notes), (path.name, step.title)
