"""How often each card's rule is wrong, measured by simulation around the card's own sizes, and what a page of
many verdicts risks as a whole.

A card's rule runs on its measured estimate(s): so many training runs and test sentences, and the variance parts
of its mean (runs, sentences, run by sentence). :func:`calibrate` plants a known truth (the claim false at its
boundary, the paper's effect, the opposite), draws per-sentence data around those sizes
(:func:`~headprune_core.methods.inference.draw_verdicts`: heavy tails, true sizes 0.5x to 3x the recorded ones)
and counts the verdicts: false *reproduced* under the null (goal <= 5%), false *not reproduced* (smaller here,
or the other way) when the paper's effect is true (goal <= 5%), and power. Each rate is counted over every draw
and among the draws that passed every gate the rule has (``*_given_gate``), which is what a reader sees; the
rules' only gates are fixed before the data (the number of runs) or cannot pass a continuous draw (no spread at
all), so the two agree. A card whose claim has several parts (every part must hold: an intersection-union test)
is simulated jointly, the null being the least favourable one: one part at its boundary, the others true.

:func:`family` is the page: each card's p-value, Holm within each paper's family and Benjamini-Hochberg across
cards (statsmodels' ``multipletests``), the verdicts after each, and the chance that at least one *reproduced*
on the page is false when every claim is false.
"""

from __future__ import annotations

import numpy as np

from headprune_core.findings.hypotheses import Hypothesis
from headprune_core.methods.inference import (
    ALPHA,
    INCONCLUSIVE,
    ONE_RUN,
    OTHER_WAY,
    REPRODUCED,
    SMALLER,
    Estimate,
    draw_verdicts,
    error_rates,
    rates,
    sequential,
    truths,
)

GOAL = 0.05
DRAWS = 1000
ONE_SIDED = ALPHA / 2  # what *reproduced* rests on: the 95% interval's one side


def combine(verdicts: list[np.ndarray]) -> np.ndarray:
    """The verdict of several parts that must all hold (an intersection-union test): reproduced only when every
    part is; the other way when any part is; else smaller here when any part is; too few runs when any part
    has too few; else inconclusive."""
    out = np.array(verdicts[0], dtype=object)
    if len(verdicts) == 1:
        return out
    stack = np.stack(verdicts)
    out = np.full(stack.shape[1:], INCONCLUSIVE, dtype=object)
    out[(stack == REPRODUCED).all(axis=0)] = REPRODUCED
    out[(stack == ONE_RUN).any(axis=0)] = ONE_RUN
    out[(stack == SMALLER).any(axis=0)] = SMALLER
    out[(stack == OTHER_WAY).any(axis=0)] = OTHER_WAY
    return out


def calibrate(h: Hypothesis, estimates: list[Estimate | dict], *, draws: int = DRAWS, seed: int = 0,
              looks: tuple[tuple[int, float], ...] | None = None) -> dict:
    """The error rates of ``h``'s rule around the sizes of ``estimates`` (one per part: an estimate, or its
    :meth:`~headprune_core.methods.inference.Estimate.size` as recorded in a design file): ``false_reproduced``,
    ``false_not_reproduced`` (and both ``*_given_gate``), ``power``, ``rates`` (every verdict's share under each
    truth), ``draws``, ``sizes`` and ``goals_missed`` (which 5% goals the rule misses here, after its gates).

    ``looks`` (``[(runs, alpha), ...]``): the staged design's looks, from the sizes' runs on; every part is
    judged at each look, the parts combined per look, and the first look that decides counts
    (:func:`~headprune_core.methods.inference.sequential`): the rates are those of the whole staged design, every
    extra look counted."""
    rule = h.rule
    planted = truths(rule)
    rng = np.random.default_rng(seed)
    sizes = [e.size() if isinstance(e, Estimate) else dict(e) for e in estimates]

    def verdicts(deltas: list[float]) -> tuple[np.ndarray, np.ndarray]:
        outs = [draw_verdicts(rule, d, s, draws=draws, rng=rng, looks=looks) for d, s in zip(deltas, sizes)]
        passed = np.all([o["passed"] for o in outs], axis=0)
        if looks is None:
            return combine([o["verdict"] for o in outs]), passed
        per_look = np.stack([combine([o["by_look"][i] for o in outs]) for i in range(len(looks))])
        return sequential(per_look)[0], passed

    n = len(estimates)
    plain, given = {}, {}
    for name, deltas in (("null", [planted["null"]] + [planted["paper"]] * (n - 1)),
                         ("paper", [planted["paper"]] * n), ("opposite", [planted["opposite"]] * n)):
        v, passed = verdicts(deltas)
        plain[name], given[name] = rates(v), rates(v, passed)
    out = error_rates(plain, draws, given)
    out["goals_missed"] = [name for name, key in (("false reproduced <= 5%", "false_reproduced_given_gate"),
                                                  ("false not reproduced <= 5%", "false_not_reproduced_given_gate"))
                           if not out[key] <= GOAL]
    out["sizes"] = sizes
    if looks is not None:
        out["looks"] = [list(x) for x in looks]
    return out


def card_p_value(h: Hypothesis, estimates: list[Estimate]) -> float:
    """The p-value the card's *reproduced* rests on: its rule's one-sided p, the largest over its parts (an
    intersection-union test rejects only when every part does)."""
    return max(h.rule.p_value(e) for e in estimates)


def family(cards) -> dict:
    """The page as a whole, from cards with ``hypothesis``, ``estimates``, ``verdict`` and ``calibration``.

    Returns ``{"alpha", "cards", "false_reproduced_any", "bound", "after_holm", "note"}``: per decided card its
    p-value, the Holm-adjusted p within its paper's family and the Benjamini-Hochberg-adjusted p across every
    card with results, and the verdict after each (a *reproduced* whose adjusted p is above ``alpha`` becomes
    inconclusive; other verdicts are kept); the chance that at least one *reproduced* is false when every claim
    is false at its boundary (from each card's measured rate, the cards taken as independent), the union
    bound (their sum), and the same chance after Holm (at most ``1 - (1 - alpha)^families``).
    """
    from statsmodels.stats.multitest import multipletests  # here: statsmodels imports in 3 s; only the page needs it

    decided = [c for c in cards if c.estimates and c.verdict not in (ONE_RUN,)]
    rows = {c.key: {"paper": c.paper, "verdict": c.verdict, "p": card_p_value(c.hypothesis, list(c.estimates.values())),
                    "alpha": c.hypothesis.rule.alpha / 2} for c in decided}
    for paper in sorted({r["paper"] for r in rows.values()}):
        keys = [k for k, r in rows.items() if r["paper"] == paper]
        adj = multipletests([rows[k]["p"] for k in keys], alpha=ONE_SIDED, method="holm")[1]
        for k, p in zip(keys, adj):
            rows[k]["p_holm"] = float(p)
    if rows:
        adj = multipletests([r["p"] for r in rows.values()], alpha=ONE_SIDED, method="fdr_bh")[1]
        for r, p in zip(rows.values(), adj):
            r["p_bh"] = float(p)
    for r in rows.values():
        for method in ("holm", "bh"):  # a staged look's card is held to its own (smaller) alpha
            keep = r["verdict"] != REPRODUCED or r[f"p_{method}"] <= min(ONE_SIDED, r["alpha"])
            r[f"verdict_{method}"] = r["verdict"] if keep else INCONCLUSIVE
    rates_ = [c.calibration["false_reproduced_given_gate"] for c in cards if c.calibration]
    families = len({c.paper for c in cards if c.calibration})
    return {"alpha": ONE_SIDED, "cards": rows, "n_calibrated": len(rates_),
            "false_reproduced_any": float(1 - np.prod([1 - r for r in rates_])) if rates_ else 0.0,
            "bound": float(min(1.0, sum(rates_))),
            "after_holm": float(1 - (1 - ONE_SIDED) ** families) if families else 0.0,
            "families": families,
            "note": ("If every claim on the page were false at its boundary, the chance that at least one card reads "
                     "'reproduced' is the first number (each card's measured rate, the cards taken as independent; "
                     "cards that share training runs are not, and the union bound holds either way). Holm within "
                     "each paper's family keeps it at most the last number; Benjamini-Hochberg across cards keeps "
                     "the expected share of false 'reproduced' among those shown at most 2.5%.")}
