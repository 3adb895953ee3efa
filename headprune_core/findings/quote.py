"""Cards quoted from the live page: a placeholder ``{card:ID}`` in a lesson's notes is filled from the card as
computed now (its verdict on the page, its estimate and interval, its training runs), so prose that names a
card's result never goes stale when a rule or a result changes. The lesson views and the lesson handout fill
them; a card not computed in this cache says so.

>>> card_ids("Card c ({card:c}) and card b3 ({card:b3}).")
['c', 'b3']
"""

from __future__ import annotations

import re

PLACEHOLDER = re.compile(r"\{card:([A-Za-z0-9_]+)\}")
_MARKDOWN = re.compile(r"([\\`*_\[\]<>|~])")


def card_ids(text: str) -> list[str]:
    """The card ids ``text`` quotes, in order (repeats kept)."""
    return PLACEHOLDER.findall(text or "")


def quote(card) -> str:
    """One card in a line: ``"the other way: -0.20 [-0.30, -0.10] rho over 3 training runs"``; the card's own
    verdict beside it where the page's control changed it; what it lacks where it has no results."""
    if not card.estimates:
        return card.shown if card.shown != "not computed yet" else "not computed in this cache yet"
    rule = card.hypothesis.rule
    parts = "; ".join(f"{name + ': ' if name else ''}{e.diff:+.2f} [{lo:+.2f}, {hi:+.2f}]"
                      for name, e in card.estimates.items() for lo, hi in [e.interval(rule.level)])
    runs = min(e.n_runs for e in card.estimates.values())
    alone = f"; the card alone: {card.verdict}" if card.verdict != card.shown else ""
    return f"{card.shown}: {parts} {rule.unit} over {runs} training runs{alone}"


def fill(text: str, cards, *, unavailable: str = "") -> str:
    """``text`` with each ``{card:ID}`` replaced by :func:`quote` of that card among ``cards`` (Markdown-escaped,
    as the notes are Markdown); an id that is no card's says so, listing the known ones; with ``unavailable``
    (why the cards cannot be read here), every placeholder says that instead."""
    by_id = {c.key: c for c in cards}

    def one(match: re.Match) -> str:
        card = by_id.get(match.group(1))
        if unavailable:
            return _MARKDOWN.sub(r"\\\1", f"[card {match.group(1)}: {unavailable}]")
        if card is None:
            return _MARKDOWN.sub(r"\\\1", f"[unknown card {match.group(1)!r}; known: {', '.join(by_id)}]")
        return _MARKDOWN.sub(r"\\\1", quote(card))

    return PLACEHOLDER.sub(one, text or "")
