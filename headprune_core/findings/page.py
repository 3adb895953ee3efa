"""The Findings page as a whole: the headline verdicts, controlled across every card, both ways.

Each card's own verdict (its rule on its 95% interval) is wrong on one side at most 2.5% of the time; a page of
sixteen such verdicts is wrong somewhere far more often. So the verdict a reader sees first, the *headline*, is
adjusted over every card on the page by Holm's step-down procedure (Holm 1979) over the one-sided tests of all
cards, one family per statement a headline can make, each family at 2.5% (:data:`ALPHA_PAGE`):

- **reproduced**: per card, the p-value its *reproduced* rests on (superiority: H0 the difference is at most 0;
  equivalence: the larger of the two one-sided tests; a card of several parts: the largest of its parts');
- **not reproduced**: per part of a card, superiority H0 the difference is at least the paper's effect (*smaller
  here*); equivalence H0 the difference lies within the margin (*the other way*: a difference beyond it);
- **the other way** (superiority): per part, H0 the difference is at least 0; a part reads *the other way* only
  when its *not reproduced* is rejected too.

Holm's bound follows from the union (Bonferroni's inequality), not from independence: whatever the truths, and
however the cards share training runs, each family makes a false statement with probability at most 2.5%. So if
every claim on the page were false at its boundary, P(any false *reproduced*) <= 2.5%; if every claim were true,
P(any false *not reproduced* or *the other way*) <= 2.5% (there *the other way* implies *not reproduced*); and
wherever a true difference is at least 0, P(any false *the other way*) <= 2.5%. No headline is bolder than its
card's own verdict: a family's last step is the card's own 2.5%.

A card judged in the staged design (:mod:`headprune_core.findings.staged`) spent 2.5% + 0.5% + 0.5% per side over
its looks; each of its p-values on the page is the smallest over the looks computed of that look's p times 3.5% /
the look's one-sided alpha, a valid p-value for the whole design by the same union (Bonferroni over the looks),
whichever looks were computed. The simulation (:func:`page_rates`) reads each card at the look that decides it
alone; on a staged cache the page may use more looks than that.

:func:`page_rates` measures both page-wide rates by simulation around each card's own sizes, with and without
the control (the cards drawn independently: the simulation's assumption, which the bound does not need).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from headprune_core.findings.calibration import DRAWS, ONE_SIDED, draw_card, goal, planted
from headprune_core.findings.hypotheses import BY_ID
from headprune_core.methods.inference import (
    AGAINST,
    DECIDED,
    INCONCLUSIVE,
    MISSING,
    ONE_RUN,
    OTHER_WAY,
    REPRODUCED,
    SAME,
    SMALLER,
    statement_p,
)

ALPHA_PAGE = ONE_SIDED
NOT_REPRODUCED = "not reproduced"
PROCEDURE = ("Holm's step-down procedure at 2.5% over the one-sided tests of every card, one family per statement "
             "(reproduced; not reproduced; the other way)")
UNTESTED = (ONE_RUN, SAME, MISSING)  # verdicts with no test behind them: kept as they are


def holm_reject(p, alpha: float = ALPHA_PAGE) -> np.ndarray:
    """Holm's step-down rejections of the p-values along the last axis (leading axes: independent pages, as in
    a simulation): sorted ascending, the ``i``-th (from 0) is rejected while every one up to it is at most
    ``alpha / (m - i)``."""
    p = np.asarray(p, dtype=float)
    m = p.shape[-1]
    if m == 0:
        return np.zeros(p.shape, dtype=bool)
    order = np.argsort(p, axis=-1, kind="stable")
    ok = np.take_along_axis(p, order, axis=-1) <= alpha / (m - np.arange(m))
    out = np.zeros(p.shape, dtype=bool)
    np.put_along_axis(out, order, np.cumprod(ok, axis=-1).astype(bool), axis=-1)
    return out


def holm_adjusted(p) -> np.ndarray:
    """Holm-adjusted p-values of a one-dimensional family (rejected at ``alpha`` exactly when at most
    ``alpha``): ``max over j <= i of (m - j) p_(j)``, capped at 1."""
    p = np.asarray(p, dtype=float)
    m = p.size
    if not m:
        return p
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


@dataclass
class StatementTests:
    """The page's one-sided tests (leading axis: draws; one for a real page): per card its *reproduced* p
    (``rep``: draws x cards); per part its *not reproduced* p (``against``: draws x parts, ``part_card`` the card
    of each column, ``equivalence`` whether the part's rule is one); per superiority part its *the other way* p
    (``other``: draws x such parts, ``other_part`` the ``against`` column each belongs to)."""

    keys: list[str]
    rep: np.ndarray
    against: np.ndarray
    part_card: list[int]
    equivalence: list[bool]
    other: np.ndarray
    other_part: list[int]


def look_weight(looks, look: int) -> float:
    """What a staged card's p-values at ``look`` are multiplied by on the page: the design's one-sided alpha over
    that look's (1 for a card judged at one look)."""
    return goal(looks) / (looks[look][1] / 2) if looks else 1.0


def _look_p(h, parts, weight) -> dict:
    """One look's p-values of a card: ``REPRODUCED`` (the largest over its parts), and per part (one for a
    claim on several scales: the largest) its ``SMALLER`` and ``OTHER_WAY``; each times the look's weight."""
    ps = [statement_p(h.rule, *part) for part in parts]
    out = {REPRODUCED: np.minimum(1.0, weight * np.max([np.asarray(p[REPRODUCED]) for p in ps], axis=0))}
    if h.scales:  # one claim on several scales: every statement needs them all, one test of the largest p
        ps = [{k: np.max([np.asarray(p[k]) for p in ps], axis=0) for k in ps[0]}]
    out["parts"] = [{k: np.minimum(1.0, weight * np.asarray(p[k])) for k in p if k != REPRODUCED} for p in ps]
    return out


def build_tests(rows: list[dict]) -> StatementTests:
    """The page's tests from ``rows``: per card ``{"key", "looks": [{"parts": [(diff, se, df), ...], "weight"},
    ...]}`` (or one look's ``"parts"`` and ``"weight"`` on the row itself; numbers, or arrays of draws). A card
    seen at several looks takes each statement's smallest weighted p over them: valid for the whole staged
    design, whichever looks were computed (the union over the looks)."""
    rep, against, other, part_card, equivalence, other_part = [], [], [], [], [], []
    for j, row in enumerate(rows):
        h = BY_ID[row["key"]]
        looks = [_look_p(h, look["parts"], look.get("weight", 1.0))
                 for look in row.get("looks") or [{"parts": row["parts"], "weight": row.get("weight", 1.0)}]]
        rep.append(np.min([lk[REPRODUCED] for lk in looks], axis=0))
        for k in range(len(looks[0]["parts"])):
            p = {s: np.min([lk["parts"][k][s] for lk in looks], axis=0) for s in looks[0]["parts"][k]}
            if h.rule.kind == "superiority":
                other_part.append(len(against))
                other.append(p[OTHER_WAY])
            against.append(p[SMALLER if h.rule.kind == "superiority" else OTHER_WAY])
            part_card.append(j)
            equivalence.append(h.rule.kind == "equivalence")

    def cols(values):
        return np.stack([np.atleast_1d(v) for v in values], axis=-1) if values else np.zeros((1, 0))

    return StatementTests([r["key"] for r in rows], cols(rep), cols(against), part_card, equivalence, cols(other),
                          other_part)


def headlines(tests: StatementTests, alpha: float = ALPHA_PAGE) -> np.ndarray:
    """The headline verdict of each card (draws x cards) after Holm in each family: *reproduced* where its
    family rejects; else *the other way* where a part's *not reproduced* and its *the other way* (an equivalence
    part: its *not reproduced* alone) are rejected; else *smaller here* where a part's *not reproduced* is; else
    inconclusive."""
    rep = holm_reject(tests.rep, alpha)
    # a part of a card of n parts is held to alpha / n as the card alone holds it: no headline bolder than that
    n_parts = np.bincount(tests.part_card, minlength=len(tests.keys))[tests.part_card]
    against = holm_reject(tests.against, alpha) & (tests.against <= alpha / n_parts)
    other = np.zeros_like(against)
    other[..., tests.other_part] = holm_reject(tests.other, alpha) & (
        tests.other <= alpha / n_parts[tests.other_part])
    other[..., np.array(tests.equivalence, dtype=bool)] = True
    out = np.full(rep.shape, INCONCLUSIVE, dtype=object)
    for j in range(len(tests.keys)):
        cols = [i for i, c in enumerate(tests.part_card) if c == j]
        hit = against[..., cols].any(axis=-1)
        way = (against[..., cols] & other[..., cols]).any(axis=-1)
        out[..., j] = np.where(rep[..., j], REPRODUCED, np.where(way, OTHER_WAY, np.where(hit, SMALLER, INCONCLUSIVE)))
    return out


def tested(cards) -> list:
    """The cards whose verdict rests on a test (results, at least the rule's runs, not another card's)."""
    return [c for c in cards if c.estimates and c.verdict not in UNTESTED]


def page_control(cards, *, draws: int = DRAWS, seed: int = 0) -> dict:
    """Set each card's ``headline`` (the verdict controlled across the page; an untested card keeps its own) and
    return the page: ``{"procedure", "alpha", "bound", "cards", "tested", "decided", "decided_unadjusted",
    "rates", "note"}``, per tested card its unadjusted verdict, headline, p-values and Holm-adjusted p-values
    per statement; ``rates`` from :func:`page_rates` (``draws`` per scenario)."""
    for card in cards:
        card.headline, card.page_note = card.verdict, ""
    judged = tested(cards)
    rows = [{"key": c.key, "looks": [{"parts": [(e.diff, e.se, e.df) for e in est.values()],
                                      "weight": look_weight(c.looks, i)}
                                     for i, est in (c.seen or ((c.look, c.estimates),))]} for c in judged]
    out = {}
    if judged:
        t = build_tests(rows)
        heads = headlines(t)[0]
        adj = {REPRODUCED: holm_adjusted(t.rep[0]), NOT_REPRODUCED: holm_adjusted(t.against[0]),
               OTHER_WAY: holm_adjusted(t.other[0])}
        other_of = dict(zip(t.other_part, range(len(t.other_part))))
        for j, card in enumerate(judged):
            card.headline = str(heads[j])
            cols = [i for i, c in enumerate(t.part_card) if c == j]
            ways = [other_of[i] for i in cols if i in other_of]
            p = {REPRODUCED: float(t.rep[0, j]), NOT_REPRODUCED: float(t.against[0, cols].min())}
            p_holm = {REPRODUCED: float(adj[REPRODUCED][j]), NOT_REPRODUCED: float(adj[NOT_REPRODUCED][cols].min())}
            if ways:
                p[OTHER_WAY] = float(t.other[0, ways].min())
                p_holm[OTHER_WAY] = float(adj[OTHER_WAY][ways].min())
            card.page_note = _note(card, p, p_holm, len(judged))
            out[card.key] = {"paper": card.paper, "verdict": card.verdict, "headline": card.headline, "p": p,
                             "p_holm": p_holm, "looks": [lk["weight"] for lk in rows[j]["looks"]]}
    return {"procedure": PROCEDURE, "alpha": ALPHA_PAGE,
            "bound": {"false_reproduced": ALPHA_PAGE, "false_not_reproduced": ALPHA_PAGE,
                      "false_other_way": ALPHA_PAGE},
            "cards": out, "tested": len(judged),
            "decided": sum(c.headline in DECIDED for c in cards),
            "decided_unadjusted": sum(c.verdict in DECIDED for c in cards),
            "rates": page_rates(cards, draws=draws, seed=seed),
            "note": ("Bounds per direction from Holm's procedure (the union bound: no independence assumed); the "
                     "simulated rates draw each card independently around its own sizes.")}


def _note(card, p: dict, p_holm: dict, n: int) -> str:
    """Why the headline differs from the card's own verdict, in a line ("" when it does not)."""
    if card.headline == card.verdict:
        return ""
    statement = (REPRODUCED if card.verdict == REPRODUCED else
                 OTHER_WAY if card.headline == SMALLER else NOT_REPRODUCED)
    return (f"The card alone reads '{card.verdict}' (one-sided p = {p[statement]:.2g} for '{statement}'); across "
            f"the page's {n} tested cards Holm's procedure at 2.5% per statement adjusts that to "
            f"{p_holm[statement]:.2g}, so the page reads '{card.headline}'.")


def _spec(card) -> dict | None:
    """What :func:`page_rates` needs of a card: its id, the sizes its calibration drew around, its looks."""
    if card.calibration is None or not tested([card]):
        return None
    return {"key": card.key, "sizes": card.calibration["sizes"],
            "looks": [list(x) for x in card.looks] if card.looks else None}


def page_rates(cards, *, draws: int = DRAWS, seed: int = 0) -> dict:
    """The page-wide error rates, simulated: every tested card drawn ``draws`` times around its own sizes (its
    staged looks included) with every claim true (the paper's effect in every part) and with every claim false
    at its least favourable boundary (one part at 0 or at the margin, the others true), the verdicts read as the
    page reads them (:func:`headlines`) and as each card's own rule does. Returns ``{"draws", "cards",
    "claims_true": {"any_false_against", "any_false_against_unadjusted"}, "claims_false":
    {"any_false_reproduced", ..._unadjusted, "any_false_other_way", ..._unadjusted}}``."""
    specs = [s for s in (_spec(c) for c in cards) if s]
    return _rates(json.dumps(specs, sort_keys=True), draws, seed)


@lru_cache(maxsize=16)
def _rates(specs_json: str, draws: int, seed: int) -> dict:
    specs = json.loads(specs_json)
    out = {"draws": draws, "cards": len(specs)}
    if not specs:
        return {**out, "claims_true": {"any_false_against": 0.0, "any_false_against_unadjusted": 0.0},
                "claims_false": {k: 0.0 for k in ("any_false_reproduced", "any_false_reproduced_unadjusted",
                                                  "any_false_other_way", "any_false_other_way_unadjusted")}}
    rng = np.random.default_rng(seed)
    for scenario in ("claims_true", "claims_false"):
        rows, own = [], []
        for spec in specs:
            h = BY_ID[spec["key"]]
            looks = tuple(tuple(x) for x in spec["looks"]) if spec["looks"] else None
            deltas = planted(h, len(spec["sizes"]), "paper" if scenario == "claims_true" else "null")
            card = draw_card(h, deltas, spec["sizes"], draws=draws, rng=rng, looks=looks)
            verdict, look, outs = card["verdict"], card["look"], card["outs"]
            own.append(verdict)
            at = np.arange(draws)
            parts = [tuple(np.stack([e[k] for e in o["estimates"]])[look, at] for k in ("diff", "se", "df"))
                     for o in outs]
            weight = np.array([look_weight(looks, i) for i in range(len(outs[0]["by_look"]))])[look]
            rows.append({"key": spec["key"], "parts": parts, "weight": weight})
        heads, own = headlines(build_tests(rows)), np.stack(own, axis=-1)
        if scenario == "claims_true":
            out[scenario] = {"any_false_against": float(np.isin(heads, AGAINST).any(axis=-1).mean()),
                             "any_false_against_unadjusted": float(np.isin(own, AGAINST).any(axis=-1).mean())}
        else:
            out[scenario] = {"any_false_reproduced": float((heads == REPRODUCED).any(axis=-1).mean()),
                             "any_false_reproduced_unadjusted": float((own == REPRODUCED).any(axis=-1).mean()),
                             "any_false_other_way": float((heads == OTHER_WAY).any(axis=-1).mean()),
                             "any_false_other_way_unadjusted": float((own == OTHER_WAY).any(axis=-1).mean())}
    return out
