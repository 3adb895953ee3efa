"""Whether the findings' 95% intervals cover: the crossed estimator's interval, measured by simulation on a grid
of designs a card meets (a few training runs, hundreds of test sentences, the runs carrying none to most of the
variance).

Each cell plants a difference of 0 in ``y[r, j] = a[r] + b[j] + e[r, j]`` (normal run, sentence and
run-by-sentence effects) with the variance of the mean split as ``run_share`` from the runs and the rest between
sentences and run by sentence, and counts how often :func:`~headprune_core.methods.inference.crossed_parts`'s
interval (through :func:`~headprune_core.methods.inference.interval_of`) holds 0: over every draw, and among
the draws where the run part was estimated below 0 and set to 0 (``truncated``). Both functions are looked up
on their module at each call, so a test can break them on purpose and see the check fail.

What no interval can do here: when the run part is truncated, the data of a design whose runs carry nothing and
of one whose runs carry 80% of the variance look alike (the ratio of the run and residual mean squares has nearly
one distribution in both), yet the second needs an interval about twice as wide. An interval that covers at
least 93% in the second covers nearly always in the first; the estimator takes that side
(:func:`~headprune_core.methods.inference.crossed_parts`: the runs' degrees of freedom when truncated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from headprune_core.methods import inference

CHUNK = 250  # draws simulated at once (memory: CHUNK x runs x sentences floats)


@dataclass(frozen=True)
class Cell:
    """One design: ``runs`` training runs, ``sentences`` test sentences, ``run_share`` of the variance of the mean
    from the runs, ``sentence_share`` of the rest from the sentences (the other part run by sentence)."""

    runs: int
    sentences: int
    run_share: float
    sentence_share: float = 0.5

    def parts(self) -> tuple[float, float, float]:
        """The variance of the mean from runs, sentences and run by sentence (summing to 1)."""
        rest = 1.0 - self.run_share
        return self.run_share, rest * self.sentence_share, rest * (1 - self.sentence_share)


def coverage(cell: Cell, *, draws: int = 4000, seed: int = 0, level: float = 0.95) -> dict:
    """How often the ``level`` interval holds the true 0 in ``cell``: ``{"cover", "truncated", "cover_truncated",
    "n_truncated", "mcse", "draws", "var_ratio", "var_ratio_se"}`` (``var_ratio``: the mean estimated variance
    over the true one, with its Monte Carlo standard error; ``cover_truncated`` nan when no draw was truncated)."""
    rng = np.random.default_rng([seed, cell.runs, cell.sentences, int(1000 * cell.run_share)])
    s_run, s_sent, s_res = cell.parts()
    r, n = cell.runs, cell.sentences
    sd_a, sd_b, sd_e = math.sqrt(s_run * r), math.sqrt(s_sent * n), math.sqrt(s_res * r * n)
    hits, cut, ratio = [], [], []
    for start in range(0, draws, CHUNK):
        d = min(CHUNK, draws - start)
        y = (sd_a * rng.standard_normal((d, r, 1)) + sd_b * rng.standard_normal((d, 1, n))
             + sd_e * rng.standard_normal((d, r, n)))  # (draws, runs, sentences)
        stat = y.mean(axis=-1)  # (draws, runs)
        parts = inference.crossed_parts(stat, [y])
        var = np.maximum(parts["var"], 0.0)
        low, high = inference.interval_of(stat.mean(axis=-1), np.sqrt(var), parts["df"], level)
        hits.append((low <= 0) & (high >= 0))
        cut.append(parts["run"] < parts["residual"])
        ratio.append(var)
    hit, trunc, var = np.concatenate(hits), np.concatenate(cut), np.concatenate(ratio)
    cover = float(hit.mean())
    return {"cover": cover, "truncated": float(trunc.mean()), "n_truncated": int(trunc.sum()),
            "cover_truncated": float(hit[trunc].mean()) if trunc.any() else float("nan"),
            "mcse": math.sqrt(level * (1 - level) / draws), "draws": draws,
            "var_ratio": float(var.mean()), "var_ratio_se": float(var.std(ddof=1) / math.sqrt(draws))}


GRID = tuple(Cell(3, n, share) for n in (100, 900) for share in (0.0, 0.2, 0.5, 0.8)) + (
    Cell(5, 100, 0.5, 0.1), Cell(8, 100, 0.5, 0.1), Cell(8, 900, 0.8))
"""The findings preset's designs (3 training runs, 100 or 900 test sentences, the runs carrying 0 to 80% of the
variance of the mean), and the staged design's later looks (5 and 8 runs) where the run-by-sentence part is
large: there a part counted twice or left out moves the interval most."""

GOALS = {"cover": 0.94, "cover_truncated": 0.93, "cover_at_most": 0.97, "var_ratio": (0.9, 1.15)}
"""Every cell covers at least 94%; at fewer than :data:`FEW_RUNS` runs, at least 93% among its truncated draws;
where the runs carry 80% (no truncation rule inflates the interval there) at most 97%; where at most
:data:`FEW_TRUNCATED` of the draws truncate, the mean estimated variance is within 0.9 to 1.15 of the true one
(truncating a negative part to 0 adds a little). At 8 runs a truncated draw covers about 90% where the
run-by-sentence part is large (``Cell(8, 100, 0.5, 0.1)``): t with 7 df is not wide enough for the run part a
truncation hides, and such draws are 14% of that design's; the cell as a whole covers 96%."""

FEW_RUNS = 5

FEW_TRUNCATED = 0.2
MIN_TRUNCATED = 100  # a cell's truncated draws are judged only when there are this many


def failures(rows: list[tuple[Cell, dict]], *, sigmas: float = 3.0) -> list[str]:
    """The goals each cell misses by more than ``sigmas`` Monte Carlo standard errors, in words ([] when none)."""
    out = []
    for cell, res in rows:
        tol = sigmas * res["mcse"]
        name = (f"{cell.runs} runs, {cell.sentences} sentences, run share {cell.run_share:g}, sentence share "
                f"{cell.sentence_share:g}")
        if res["cover"] < GOALS["cover"] - tol:
            out.append(f"{name}: covers {res['cover']:.1%} < {GOALS['cover']:.0%}")
        if cell.run_share >= 0.8 and res["cover"] > GOALS["cover_at_most"] + tol:
            out.append(f"{name}: covers {res['cover']:.1%} > {GOALS['cover_at_most']:.0%}")
        low, high = GOALS["var_ratio"]
        v_tol = sigmas * res["var_ratio_se"]
        if res["truncated"] <= FEW_TRUNCATED and not low - v_tol <= res["var_ratio"] <= high + v_tol:
            out.append(f"{name}: mean estimated variance {res['var_ratio']:.2f} x the true one, not in "
                       f"[{low:g}, {high:g}]")
        if cell.runs < FEW_RUNS and res["n_truncated"] >= MIN_TRUNCATED:
            t_tol = sigmas * math.sqrt(0.95 * 0.05 / res["n_truncated"])
            if res["cover_truncated"] < GOALS["cover_truncated"] - t_tol:
                out.append(f"{name}: covers {res['cover_truncated']:.1%} of its {res['n_truncated']} truncated "
                           f"draws < {GOALS['cover_truncated']:.0%}")
    return out


def grid(cells=GRID, *, draws: int = 4000, seed: int = 0) -> list[tuple[Cell, dict]]:
    """:func:`coverage` of every cell of ``cells``."""
    return [(cell, coverage(cell, draws=draws, seed=seed)) for cell in cells]
