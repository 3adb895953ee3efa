"""How often each card's rule is wrong, measured by simulation around the card's own sizes.

A card's rule runs on its measured estimate(s): so many training runs and test sentences, and the variance parts
of its mean (runs, sentences, run by sentence). :func:`calibrate` plants a known truth (the claim false at its
boundary, the paper's effect, the opposite), draws per-sentence data around those sizes
(:func:`~headprune_core.methods.inference.draw_verdicts`: heavy tails, true sizes 0.5x to 3x the recorded ones)
and counts the verdicts: false *reproduced* under the null, false *not reproduced* (smaller here, or the other
way) when the paper's effect is true, false *the other way* where the true difference is 0, and power. Each is a
one-sided error of the rule's 95% interval, so each has the goal 2.5% (:data:`ONE_SIDED`); a staged design
spends 2.5% + 0.5% + 0.5% per side over its looks, and its goal is their sum (:func:`goal`). A rate counts as a
miss only beyond 3 Monte Carlo standard errors of its goal (:data:`MC_SIGMAS`): at 1,000 draws a 2.5% rate is
known to 0.5 points. A card whose claim has several parts (every part must hold: an intersection-union test) is
simulated jointly, the null being the least favourable one: one part at its boundary, the others true.

What a page of many cards risks as a whole, and the headline verdicts controlled across the page, are
:mod:`headprune_core.findings.page`'s.
"""

from __future__ import annotations

import math

import numpy as np

from headprune_core.findings.hypotheses import Hypothesis
from headprune_core.findings.power import worth_more_runs
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

DRAWS = 1000
ONE_SIDED = ALPHA / 2  # each verdict rests on one side of the 95% interval
MC_SIGMAS = 3.0


def goal(looks: tuple[tuple[int, float], ...] | None = None) -> float:
    """The goal of each one-sided error: the alpha the rule spends on one side, summed over a staged design's
    looks (2.5% for one look; 2.5% + 0.5% + 0.5% = 3.5% for the staged Findings design)."""
    return sum(a / 2 for _, a in looks) if looks else ONE_SIDED


def missed(rate: float, target: float, draws: int) -> bool:
    """Whether a simulated ``rate`` misses ``target`` by more than :data:`MC_SIGMAS` Monte Carlo standard errors
    of ``draws`` draws."""
    return rate > target + MC_SIGMAS * math.sqrt(target * (1 - target) / draws)


def combine(verdicts: list[np.ndarray], *, scales: bool = False) -> np.ndarray:
    """The verdict of several parts that must all hold (an intersection-union test): reproduced only when every
    part is; the other way when any part is; else smaller here when any part is; too few runs when any part
    has too few; else inconclusive. With ``scales`` (one claim on several scales), a verdict only where every
    scale gives it: reproduced, or the other way, when all do; smaller here when all say smaller or the other
    way; else inconclusive."""
    out = np.array(verdicts[0], dtype=object)
    if len(verdicts) == 1:
        return out
    stack = np.stack(verdicts)
    out = np.full(stack.shape[1:], INCONCLUSIVE, dtype=object)
    if scales:
        out[np.isin(stack, (SMALLER, OTHER_WAY)).all(axis=0)] = SMALLER
        for verdict in (OTHER_WAY, REPRODUCED):
            out[(stack == verdict).all(axis=0)] = verdict
        out[(stack == ONE_RUN).any(axis=0)] = ONE_RUN
        return out
    out[(stack == REPRODUCED).all(axis=0)] = REPRODUCED
    out[(stack == ONE_RUN).any(axis=0)] = ONE_RUN
    out[(stack == SMALLER).any(axis=0)] = SMALLER
    out[(stack == OTHER_WAY).any(axis=0)] = OTHER_WAY
    return out


def staged_verdicts(h: Hypothesis, outs: list[dict], sizes: list[dict], *,
                    select: bool) -> tuple[np.ndarray, np.ndarray]:
    """The card's verdicts and deciding looks from its parts' simulated draws (``outs``, as
    :func:`~headprune_core.methods.inference.draw_verdicts` gives them): the parts combined per look, the first
    look that decides. With ``select``, a draw goes on past look 1 only where its own look-1 estimate projects
    enough power (:func:`~headprune_core.findings.power.worth_more_runs`), as the staged mode chooses on real
    results: the rates then count the choice the data make."""
    per_look = np.stack([combine([o["by_look"][i] for o in outs], scales=h.scales)
                         for i in range(len(outs[0]["by_look"]))])
    if select and len(per_look) > 1:
        first = [{"n_runs": o["estimates"][0]["runs"], "n_sentences": s.get("n_sentences"),
                  **o["estimates"][0]["size"]} for o, s in zip(outs, sizes)]
        stop = ~np.asarray(worth_more_runs(h.id, {h.id: first}), dtype=bool)
        per_look[1:, stop] = per_look[0, stop]
    return sequential(per_look)


def planted(h: Hypothesis, n: int, truth: str) -> list[float]:
    """The true difference of each of a card's ``n`` parts under ``truth`` (:func:`~headprune_core.methods.
    inference.truths`): ``paper`` and ``opposite`` in every part; ``null``, the least favourable null of a claim
    that every part must hold: one part at its boundary, the others true."""
    t = truths(h.rule)
    return [t["null"]] + [t["paper"]] * (n - 1) if truth == "null" else [t[truth]] * n


def draw_card(h: Hypothesis, deltas: list[float], sizes: list[dict], *, draws: int, rng: np.random.Generator,
              looks: tuple[tuple[int, float], ...] | None = None, select: bool = True) -> dict:
    """``draws`` simulated verdicts of a card whose parts' true differences are ``deltas``, around ``sizes``:
    ``{"verdict", "look", "outs"}`` (the card's verdicts, the look each came from, each part's draws as
    :func:`~headprune_core.methods.inference.draw_verdicts` gives them); with ``looks``, the staged design, its
    choice of which draws go on simulated when ``select`` (:func:`staged_verdicts`)."""
    outs = [draw_verdicts(h.rule, d, s, draws=draws, rng=rng, looks=looks, parts=h.split(len(sizes)))
            for d, s in zip(deltas, sizes)]
    verdict, look = staged_verdicts(h, outs, sizes, select=select and looks is not None)
    return {"verdict": verdict, "look": look, "outs": outs}


def calibrate(h: Hypothesis, estimates: list[Estimate | dict], *, draws: int = DRAWS, seed: int = 0,
              looks: tuple[tuple[int, float], ...] | None = None, select: bool = True) -> dict:
    """The error rates of ``h``'s rule around the sizes of ``estimates`` (one per part: an estimate, or its
    :meth:`~headprune_core.methods.inference.Estimate.size` as recorded in a design file): ``false_reproduced``,
    ``false_not_reproduced``, ``false_other_way``, ``power``, ``rates`` (every verdict's share under each truth),
    ``draws``, ``goal``, ``sizes`` and ``goals_missed`` (which one-sided goals the rule misses here, beyond the
    Monte Carlo error).

    ``looks`` (``[(runs, alpha), ...]``): the staged design's looks, from the sizes' runs on; every part is
    judged at each look, the parts combined per look, and the first look that decides counts
    (:func:`~headprune_core.methods.inference.sequential`): the rates are those of the whole staged design, every
    extra look counted, and (``select``) the staged mode's choice of which cards get more runs made on each draw
    from its own look 1 (:func:`staged_verdicts`)."""
    rng = np.random.default_rng(seed)
    sizes = [e.size() if isinstance(e, Estimate) else dict(e) for e in estimates]
    by_truth = {name: rates(draw_card(h, planted(h, len(sizes), name), sizes, draws=draws, rng=rng, looks=looks,
                                      select=select)["verdict"]) for name in ("null", "paper", "opposite")}
    out = error_rates(h.rule, by_truth, draws)
    target = goal(looks)
    out["goal"] = target
    out["goals_missed"] = [f"{name} <= {target:.1%}" for name, key in (
        ("false reproduced", "false_reproduced"), ("false not reproduced", "false_not_reproduced"),
        ("false the other way", "false_other_way")) if missed(out[key], target, draws)]
    out["sizes"] = sizes
    if looks is not None:
        out["looks"] = [list(x) for x in looks]
    return out


def card_p_value(h: Hypothesis, estimates: list[Estimate]) -> float:
    """The p-value the card's *reproduced* rests on: its rule's one-sided p, the largest over its parts (an
    intersection-union test rejects only when every part does)."""
    return max(h.rule.p_value(e) for e in estimates)
