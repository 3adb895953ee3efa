"""What more training runs could buy a card: the staged design's looks, and the power to decide at the paper's
effect from a card's variance parts (its own look-1 estimate, or a recorded size), for one card or for many
simulated draws at once (every function takes numbers or arrays of draws).

The staged mode (:mod:`headprune_core.findings.staged`) gives more runs only to an open card whose own look-1
estimate projects at least :data:`MIN_POWER` at the last look; the calibration
(:func:`~headprune_core.findings.calibration.calibrate`) makes that same choice on each simulated draw from the
draw's own look 1, so the staged rates count the choice the data make.
"""

from __future__ import annotations

import numpy as np

from headprune_core.findings.hypotheses import BY_ID
from headprune_core.methods.inference import satterthwaite

LOOKS: tuple[tuple[int, float], ...] = ((3, 0.05), (5, 0.01), (8, 0.01))
"""(training runs, two-sided alpha) of each look; the first is the findings preset's own."""

MORE_SENTENCES = 1000
"""Test sentences per target language at a later look where the sentence part binds."""

TARGET_CARDS = ("a1", "b2", "b3", "d", "h")
"""Cards whose test sets are the target languages' held-out sentences (the ones a later look can enlarge)."""

MIN_POWER = 0.2
"""A card gets more runs only when its look-1 estimate projects at least this power at the last look: compute
goes where it can decide. The choice reads the runs it later judges, and the calibration simulates it so."""


def _scalar(x):
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def variance_at(size: dict, runs: int, sentences: int | None):
    """The variance of the mean and its Satterthwaite df at ``runs`` runs and ``sentences`` sentences, from a
    size (its parts of the mean at its own runs and sentences, as
    :meth:`~headprune_core.methods.inference.Estimate.size`; numbers or arrays of draws). As the interval does
    (:func:`~headprune_core.methods.inference.crossed_parts`), a run or sentence part recorded at 0 leaves the
    runs' ``runs - 1`` degrees of freedom."""
    r0, n0 = int(size["n_runs"]), size.get("n_sentences")
    run = np.asarray(size["run"], dtype=float) * r0 / runs
    if not n0:
        return _scalar(run), _scalar(np.full(run.shape, max(1.0, runs - 1.0)))
    n = sentences or n0
    sent = np.asarray(size["sentences"], dtype=float) * n0 / n
    res = np.asarray(size["residual"], dtype=float) * r0 * n0 / (runs * n)
    df = satterthwaite([(run, runs - 1), (sent, n - 1), (res, (runs - 1) * (n - 1))], floor=runs - 1)
    df = np.where((run > 0) & (sent > 0), df, max(1.0, runs - 1.0))
    return _scalar(run + sent + res), _scalar(df)


def power(card_id: str, sizes: list[dict], runs: int, *, sentences: int | None = None, alpha: float = 0.05):
    """Power to decide the claim when the paper's effect is true, at ``runs`` runs (and ``sentences`` sentences
    per test set), the weakest part of the card: superiority, the noncentral t at Satterthwaite's df (for runs
    alone, exactly the one-sample t-test's power); equivalence, both one-sided tests at a true 0 (normal
    approximation with t quantiles)."""
    from scipy import stats  # here: scipy.stats takes 1.5 s to import

    rule = BY_ID[card_id].rule
    out = 1.0
    for size in sizes:
        var, df = variance_at(size, runs, sentences)
        se = np.sqrt(np.maximum(var, 1e-300))
        t = stats.t.ppf(1 - alpha / 2, df)
        if rule.kind == "superiority":
            p = stats.nct.sf(t, df, rule.effect / se)
        else:
            p = np.maximum(0.0, 2 * stats.t.cdf(rule.margin / se - t, df) - 1)
        out = np.minimum(out, p)
    return _scalar(out)


def runs_needed(card_id: str, sizes: list[dict], *, sentences: int | None = None, alpha: float = 0.01,
                power_goal: float = 0.8, most: int = 200) -> int | None:
    """The fewest training runs with ``power_goal`` at the paper's effect at a later look's ``alpha`` (None:
    more than ``most``, e.g. when the sentence part alone is too large)."""
    for runs in range(3, most + 1):
        if power(card_id, sizes, runs, sentences=sentences, alpha=alpha) >= power_goal:
            return runs
    return None


def sentence_binds(card_id: str, sizes: dict[str, list[dict]]):
    """Whether the test sentences make at least half of the card's variance (any part), on target languages
    whose held-out sentences a later look can enlarge (``sizes``: per card its parts' sizes)."""
    parts = sizes.get(card_id) or []
    if card_id not in TARGET_CARDS or not parts:
        return False
    out = np.zeros(np.shape(parts[0]["run"]), dtype=bool)
    for s in parts:
        if s.get("n_sentences"):
            out = out | (np.asarray(s["sentences"]) >= np.asarray(s["run"]))
    return bool(out) if out.ndim == 0 else out


def worth_more_runs(card_id: str, sizes: dict[str, list[dict]]):
    """Whether more training runs could decide the card: projected power at the last look at least
    :data:`MIN_POWER`, with up to :data:`MORE_SENTENCES` held-out sentences where they bind (a card ``sizes``
    does not list is tried)."""
    if card_id not in sizes:
        return True
    runs, alpha = LOOKS[-1]
    binds = sentence_binds(card_id, sizes)
    plain = power(card_id, sizes[card_id], runs, alpha=alpha)
    more = power(card_id, sizes[card_id], runs, sentences=MORE_SENTENCES, alpha=alpha)
    out = np.where(binds, more, plain) >= MIN_POWER
    return bool(out) if np.ndim(out) == 0 else out
