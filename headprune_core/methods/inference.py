"""Decisions a statistician would sign: a difference measured over training runs, a superiority or an
equivalence rule stated before the data, its minimum detectable effect, and a verdict.

The unit of replication is the training run. An :class:`Estimate` is a difference ``B - A`` (metric points,
oriented so that the claim says it is positive, or small for an equivalence claim) measured in ``S`` training
runs on the same test sentences, paired by run: ``runs`` holds the per-run differences. Its standard error has
two parts: runs differ (``var(runs) / S``) and the test sentences are a sample (``se_sentences``: the standard
deviation of the run-mean difference over sentence resamples, a paired bootstrap). Intervals take Student's t
with ``S - 1`` degrees of freedom, which is conservative for the sentence part; with ``se_sentences = 0`` they are
exactly scipy's one-sample t interval of the per-run differences, and the equivalence rule is statsmodels'
paired TOST.

A :class:`Rule` decides:

- **superiority** (the claim: the difference is positive; the paper's effect is ``effect``): *reproduced* when
  the 95% interval is above 0; *not reproduced* when it is below the paper's effect (the data rule out an effect
  that large, including any effect the other way); otherwise *inconclusive at this data size*.
- **equivalence** (the claim: the difference is within ``+-margin``, "about as good as", "keeps the metric"):
  *reproduced* when the 95% interval lies inside ``+-margin`` (two one-sided tests at 2.5% each: at 5% they
  would have no slack for the liberal degrees of freedom of three runs, measured at 6% false *reproduced*);
  *not reproduced* when the 95% interval lies wholly outside it; otherwise *inconclusive at this data size*.

Before either, two gates: fewer than ``min_runs`` training runs is *inconclusive: one training run* (there is no
replication, whatever the sentences say), and a **minimum detectable effect** (80% power, 5% level) larger than
the paper's effect (superiority) or than the margin (equivalence) is *inconclusive at this data size*, whatever
the point estimate. A difference with no spread at all (every run and every sentence the same, as when the dev
split picks the unpruned model in every run) has no interval to decide from: also *inconclusive at this data size*. :func:`simulate` measures how often a rule is wrong when a known truth is planted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive at this data size"
ONE_RUN = "inconclusive: one training run"
MISSING = "not computed yet"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, ONE_RUN, MISSING)

ALPHA = 0.05
POWER = 0.8
MIN_RUNS = 3
MAX_DF = 1000.0  # beyond this Student's t is the normal to 3 decimals


def _t(q: float, df):
    from scipy import stats  # here: scipy.stats takes 1.5 s to import; only a verdict needs it
    return stats.t.ppf(q, df)


_DF_GRID = np.geomspace(1.0, MAX_DF, 240)


@lru_cache(maxsize=None)
def _superiority_factor(df: float, alpha: float, power: float) -> float:
    from statsmodels.stats.power import TTestPower  # here: statsmodels imports in 3 s; only a verdict needs it
    n = df + 1
    d = TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power, alternative="two-sided")
    return float(np.ravel(d)[0]) * math.sqrt(n)


def mde_factor(df, *, alpha: float = ALPHA, power: float = POWER, kind: str = "superiority"):
    """How many standard errors the minimum detectable effect is at ``df`` degrees of freedom (a number or an
    array). Superiority: statsmodels' one-sample t-test power (noncentral t, two-sided) at ``df + 1``
    observations, as ``d * sqrt(df + 1)`` (2.8 for many). Equivalence: the margin at which two one-sided tests
    have ``power`` when the truth is 0, ``t(1 - alpha) + t(1 - (1 - power) / 2)``."""
    df = np.asarray(df, dtype=float)
    if kind == "equivalence":
        out = _t(1 - alpha / 2, df) + _t(1 - (1 - power) / 2, df)
    else:  # statsmodels solves one df at a time: solved on a grid, interpolated in log df (error < 0.1%)
        grid = _DF_GRID
        factors = np.array([_superiority_factor(float(d), alpha, power) for d in grid])
        out = np.interp(np.log(np.clip(df, grid[0], grid[-1])), np.log(grid), factors)
    return out if out.ndim else float(out)


def satterthwaite_df(sd_runs, n_runs: int, se_sentences, n_sentences: int | None):
    """Welch-Satterthwaite degrees of freedom of ``sd_runs**2 / n_runs + se_sentences**2``: ``n_runs - 1`` for the
    run part, ``n_sentences - 1`` (infinite when None) for the sentence part."""
    a = np.asarray(sd_runs, dtype=float) ** 2 / n_runs
    b = np.asarray(se_sentences, dtype=float) ** 2
    sent = 0.0 if n_sentences is None else b ** 2 / max(1, n_sentences - 1)
    denom = a ** 2 / max(1, n_runs - 1) + sent
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(denom > 0, (a + b) ** 2 / np.where(denom > 0, denom, 1), np.inf)
    df = np.clip(df, max(1, n_runs - 1), MAX_DF)
    return df if df.ndim else float(df)


@dataclass(frozen=True)
class Estimate:
    """A paired difference over training runs: ``runs`` the per-run differences (same test sentences, paired by
    run), ``se_sentences`` the sentence-sampling standard error of their mean (0 when the statistic has no
    sentence sampling, or it is inside ``runs`` already) over ``n_sentences`` test sentences."""

    runs: tuple[float, ...]
    se_sentences: float = 0.0
    n_sentences: int | None = None

    def __post_init__(self):
        if not self.runs:
            raise ValueError("an estimate needs at least one run")
        object.__setattr__(self, "runs", tuple(float(r) for r in self.runs))

    @property
    def diff(self) -> float:
        return float(np.mean(self.runs))

    @property
    def n_runs(self) -> int:
        return len(self.runs)

    @property
    def sd_runs(self) -> float:
        return float(np.std(self.runs, ddof=1)) if self.n_runs > 1 else 0.0

    @property
    def se(self) -> float:
        return math.sqrt(self.sd_runs ** 2 / self.n_runs + self.se_sentences ** 2)

    @property
    def df(self) -> float:
        """Welch-Satterthwaite degrees of freedom (``n_runs - 1`` when the runs' spread is all there is)."""
        return satterthwaite_df(self.sd_runs, self.n_runs, self.se_sentences, self.n_sentences)

    def interval(self, level: float = 1 - ALPHA) -> tuple[float, float]:
        """The two-sided ``level`` interval: ``diff +- t(df) * se``."""
        half = float(_t(0.5 + level / 2, self.df)) * self.se
        return self.diff - half, self.diff + half

    def mde(self, kind: str = "superiority") -> float:
        """The smallest true difference this many runs and sentences detect with 80% power at the 5% level
        (for ``kind="equivalence"``: the smallest margin inside which a true 0 is shown with 80% power)."""
        return float(mde_factor(self.df, kind=kind)) * self.se

    def to_dict(self) -> dict:
        low, high = self.interval()
        return {"diff": self.diff, "low": low, "high": high, "se": self.se, "df": self.df, "runs": list(self.runs),
                "n_runs": self.n_runs, "sd_runs": self.sd_runs, "se_sentences": self.se_sentences,
                "n_sentences": self.n_sentences}


@dataclass(frozen=True)
class Rule:
    """A decision rule stated before the data. ``kind``: ``"superiority"`` (the claim: the difference is
    positive; ``effect`` is the paper's effect in the statistic's unit, what the MDE must reach) or
    ``"equivalence"`` (the claim: within ``+-margin``)."""

    kind: Literal["superiority", "equivalence"]
    effect: float = 0.0
    margin: float = 0.0
    min_runs: int = MIN_RUNS
    unit: str = "points"

    def __post_init__(self):
        if self.kind not in ("superiority", "equivalence"):
            raise ValueError(f"unknown rule kind {self.kind!r}; known: superiority, equivalence")
        if self.kind == "superiority" and self.effect <= 0:
            raise ValueError("a superiority rule needs the paper's effect > 0 (orient the statistic)")
        if self.kind == "equivalence" and self.margin <= 0:
            raise ValueError("an equivalence rule needs a margin > 0")

    @property
    def target(self) -> float:
        """What the MDE is compared with: the paper's effect, or the margin."""
        return self.effect if self.kind == "superiority" else self.margin

    def decide(self, est: Estimate) -> str:
        return str(decide(self, est.diff, est.se, est.df, est.n_runs))

    def mde(self, est: Estimate) -> float:
        return est.mde(self.kind)

    def text(self) -> str:
        """The rule in words, for the card."""
        gates = (f"Fewer than {self.min_runs} training runs: inconclusive (no replication). Minimum detectable "
                 f"effect (80% power, 5% level) above {self._target_text()}, or no spread at all: inconclusive at "
                 "this data size. ")
        if self.kind == "superiority":
            return gates + (f"Otherwise reproduced when the 95% interval is above 0; not reproduced when it is "
                            f"below the paper's effect ({self.effect:+g} {self.unit}); else inconclusive.")
        return gates + (f"Otherwise reproduced when the 95% interval lies inside +-{self.margin:g} {self.unit} "
                        "(two one-sided tests at 2.5%); not reproduced when it lies wholly outside; else "
                        "inconclusive.")

    def _target_text(self) -> str:
        return (f"the paper's effect ({self.effect:g} {self.unit})" if self.kind == "superiority"
                else f"the margin ({self.margin:g} {self.unit})")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "effect": self.effect, "margin": self.margin, "min_runs": self.min_runs,
                "unit": self.unit, "text": self.text()}


def decide(rule: Rule, diff, se, df, n_runs: int):
    """The verdicts of ``rule`` for one estimate or many at once (``diff``, ``se``, ``df`` numbers or arrays of one
    shape, all with ``n_runs`` runs): what :meth:`Rule.decide` and :func:`simulate` both use."""
    diff, se, df = (np.asarray(x, dtype=float) for x in (diff, se, df))
    out = np.full(np.broadcast(diff, se, df).shape, INCONCLUSIVE, dtype=object)
    if n_runs < rule.min_runs:
        out[...] = ONE_RUN
        return out if out.ndim else out.item()
    ok = (mde_factor(df, kind=rule.kind) * se <= rule.target) & (se > 0)  # no spread: no interval to decide from
    if rule.kind == "superiority":
        half = _t(1 - ALPHA / 2, df) * se
        out[ok & (diff - half > 0)] = REPRODUCED
        out[ok & (diff - half <= 0) & (diff + half < rule.effect)] = NOT_REPRODUCED
    else:
        half = _t(1 - ALPHA / 2, df) * se
        out[ok & (diff - half > -rule.margin) & (diff + half < rule.margin)] = REPRODUCED
        out[ok & ((diff - half > rule.margin) | (diff + half < -rule.margin))] = NOT_REPRODUCED
    return out if out.ndim else out.item()


def truths(rule: Rule) -> dict[str, float]:
    """The differences :func:`simulate` plants: ``null`` (the claim is false at its boundary: no effect, or a
    difference at the margin), ``paper`` (the claim is true: the paper's effect, or no difference) and
    ``opposite``."""
    if rule.kind == "superiority":
        return {"null": 0.0, "paper": rule.effect, "opposite": -rule.effect}
    return {"null": rule.margin, "paper": 0.0, "opposite": 2 * rule.margin}


def draw_verdicts(rule: Rule, delta: float, *, n_runs: int, sd_runs: float, se_sentences: float,
                  n_sentences: int | None, draws: int, rng: np.random.Generator) -> np.ndarray:
    """``draws`` verdicts of ``rule`` when the true difference is ``delta``: per draw a test-set effect common to
    every run, ``N(0, se_sentences)``, plus each run's own ``N(0, sd_runs)``; the rule sees the runs' sample
    spread and ``se_sentences``, as it does on real results."""
    test = rng.normal(0.0, se_sentences, size=(draws, 1))
    runs = delta + test + rng.normal(0.0, sd_runs, size=(draws, n_runs))
    sd = runs.std(axis=1, ddof=1) if n_runs > 1 else np.zeros(draws)
    se = np.sqrt(sd ** 2 / n_runs + se_sentences ** 2)
    return decide(rule, runs.mean(axis=1), se, satterthwaite_df(sd, n_runs, se_sentences, n_sentences), n_runs)


def rates(verdicts: np.ndarray) -> dict[str, float]:
    """The share of each verdict among ``verdicts``."""
    return {v: float(np.mean(verdicts == v)) for v in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, ONE_RUN)}


def error_rates(by_truth: dict[str, dict[str, float]], draws: int) -> dict:
    """The calibration summary of verdict shares under each planted truth (``null``, ``paper``, ``opposite``)."""
    return {"false_reproduced": by_truth["null"][REPRODUCED], "false_not_reproduced": by_truth["paper"][NOT_REPRODUCED],
            "power": by_truth["paper"][REPRODUCED], "rates": by_truth, "draws": draws}


def simulate(rule: Rule, *, n_runs: int, sd_runs: float, se_sentences: float, n_sentences: int | None = None,
             draws: int = 1000, seed: int = 0) -> dict:
    """How often ``rule`` is wrong, measured: each planted truth (:func:`truths`) is drawn ``draws`` times at
    this many runs and these variances (:func:`draw_verdicts`), and the verdicts counted.

    Returns ``{"false_reproduced", "false_not_reproduced", "power", "rates", "draws", ...}``: the share of
    *reproduced* when the claim is false (null), of *not reproduced* when the paper's effect is true, of
    *reproduced* when it is true, and every verdict's share under each truth.
    """
    rng = np.random.default_rng(seed)
    by_truth = {name: rates(draw_verdicts(rule, delta, n_runs=n_runs, sd_runs=sd_runs, se_sentences=se_sentences,
                                          n_sentences=n_sentences, draws=draws, rng=rng))
                for name, delta in truths(rule).items()}
    return {**error_rates(by_truth, draws), "n_runs": n_runs, "sd_runs": sd_runs, "se_sentences": se_sentences}
