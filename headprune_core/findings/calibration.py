"""How often each card's rule is wrong, measured by simulation at the card's own sizes.

A card's rule runs on its measured estimate(s): so many training runs, the runs' spread and the sentence part of
the standard error. :func:`calibrate` plants a known truth at exactly those sizes (the claim false at its
boundary, the paper's effect, the opposite), draws the card's inputs ``draws`` times and counts the verdicts:
false *reproduced* under the null (goal <= 5%), false *not reproduced* when the paper's effect is true (goal
<= 5%), and power. A card whose claim has several parts (every part must hold: an intersection-union test) is
simulated jointly, the null being the least favourable one: one part at its boundary, the others true.
"""

from __future__ import annotations

import numpy as np

from headprune_core.findings.hypotheses import Hypothesis
from headprune_core.methods.inference import (
    NOT_REPRODUCED,
    ONE_RUN,
    REPRODUCED,
    Estimate,
    draw_verdicts,
    error_rates,
    rates,
    truths,
)

GOAL = 0.05
DRAWS = 1000


def combine(verdicts: list[np.ndarray]) -> np.ndarray:
    """The verdict of several parts that must all hold: reproduced only when every part is, not reproduced when
    any part is not, too few runs when any part has too few; else inconclusive."""
    out = np.array(verdicts[0], dtype=object)
    if len(verdicts) == 1:
        return out
    stack = np.stack(verdicts)
    out = np.full(stack.shape[1:], "inconclusive at this data size", dtype=object)
    out[(stack == REPRODUCED).all(axis=0)] = REPRODUCED
    out[(stack == NOT_REPRODUCED).any(axis=0)] = NOT_REPRODUCED
    out[(stack == ONE_RUN).any(axis=0)] = ONE_RUN
    return out


def calibrate(h: Hypothesis, estimates: list[Estimate], *, draws: int = DRAWS, seed: int = 0) -> dict:
    """The error rates of ``h``'s rule at the sizes of ``estimates`` (one per part): ``false_reproduced``,
    ``false_not_reproduced``, ``power``, ``rates`` (every verdict's share under each truth), ``draws`` and
    ``goals_missed`` (which of the two 5% goals the rule misses at this size)."""
    rule = h.rule
    planted = truths(rule)
    rng = np.random.default_rng(seed)

    def verdicts(deltas: list[float]) -> np.ndarray:
        return combine([draw_verdicts(rule, d, n_runs=e.n_runs, sd_runs=e.sd_runs, se_sentences=e.se_sentences,
                                      n_sentences=e.n_sentences, draws=draws, rng=rng)
                        for d, e in zip(deltas, estimates)])

    n = len(estimates)
    by_truth = {"null": rates(verdicts([planted["null"]] + [planted["paper"]] * (n - 1))),
                "paper": rates(verdicts([planted["paper"]] * n)),
                "opposite": rates(verdicts([planted["opposite"]] * n))}
    out = error_rates(by_truth, draws)
    out["goals_missed"] = [name for name, key in (("false reproduced <= 5%", "false_reproduced"),
                                                  ("false not reproduced <= 5%", "false_not_reproduced"))
                           if out[key] > GOAL]
    out["sizes"] = [{"n_runs": e.n_runs, "sd_runs": e.sd_runs, "se_sentences": e.se_sentences,
                     "n_sentences": e.n_sentences} for e in estimates]
    return out
