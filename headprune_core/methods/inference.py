"""Decisions a statistician would sign: a difference measured over training runs and test sentences, its
variance counted once, a superiority or an equivalence rule stated before the data, and a verdict that says
which way the data point.

The unit of replication is the training run. An :class:`Estimate` is a difference ``B - A`` (oriented so that
the claim says it is positive, or small for an equivalence claim) measured in ``R`` training runs on the same
test sentences, paired by run: ``runs`` holds the per-run values. Its variance comes from a two-way crossed
random-effects ANOVA of the per-(run, sentence) values of the statistic (:func:`crossed_parts`): runs, test
sentences (within each test set) and their interaction, each counted once. The arms of a difference share
their training seed, so the run effect they share cancels inside each run's value; what is left of the runs'
spread takes ``R - 1`` degrees of freedom, the sentence and run-by-sentence parts take theirs from every
(run, sentence) cell of every test set, and Satterthwaite's approximation combines them. With no sentence data
(a statistic computed per run only) the interval is exactly scipy's one-sample t interval of the per-run values.

A :class:`Rule` decides from the 95% interval alone; the minimum detectable effect is shown as information,
never as a gate (computed from the same runs it would judge, it is post-hoc power, and a gate on it hides
results and raises the error among the cards it lets through):

- **superiority** (the claim: the difference is positive; the paper's effect is ``effect``): *reproduced*
  when the interval is above 0; *the other way* when it lies wholly below 0; *not reproduced: smaller here than
  the paper's* when it lies below the paper's effect but not wholly below 0; otherwise *inconclusive*.
- **equivalence** (the claim: the difference is within ``+-margin``, "about as good as", "keeps the metric"):
  *reproduced* when the interval lies inside ``+-margin`` (two one-sided tests at 2.5% each); *the other way*
  when it lies wholly outside (a difference larger than the margin); otherwise *inconclusive*.

One gate is fixed before the data: fewer than ``min_runs`` training runs is *inconclusive: one training run*
(no replication, whatever the sentences say). A difference with no spread at all (every run and sentence the
same, as when the dev split picks the unpruned model in every run) has no interval: *inconclusive*.
:func:`draw_verdicts` measures how often a rule is wrong when a known truth is planted, per sentence;
:func:`statement_p` gives the one-sided p-value behind each statement, for the page's control across cards.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

import numpy as np

REPRODUCED = "reproduced"
SMALLER = "not reproduced: smaller here than the paper's"
OTHER_WAY = "the other way"
INCONCLUSIVE = "inconclusive"
ONE_RUN = "inconclusive: one training run"
MISSING = "not computed yet"
SAME = "one result with another card"  # its runs are another card's (the same choices trained): shown there
VERDICTS = (REPRODUCED, SMALLER, OTHER_WAY, INCONCLUSIVE, ONE_RUN, SAME, MISSING)
DECIDED = (REPRODUCED, SMALLER, OTHER_WAY)
AGAINST = (SMALLER, OTHER_WAY)  # verdicts that say the paper's effect is not here

ALPHA = 0.05
POWER = 0.8
MIN_RUNS = 3
MAX_DF = 1000.0  # beyond this Student's t is the normal to 3 decimals


def _t(q: float, df):
    from scipy import stats  # here: scipy.stats takes 1.5 s to import; only a verdict needs it
    return stats.t.ppf(q, df)


SPREAD_TOL = 1e-9  # a standard error below this share of the estimate (floating-point noise) is no spread


def has_spread(se, diff):
    """Whether an estimate varies at all: its standard error above :data:`SPREAD_TOL` of its size (runs that are
    identical up to rounding, as optimizer steps are when every run trains on the same data, have none)."""
    se, diff = np.asarray(se, dtype=float), np.asarray(diff, dtype=float)
    return se > SPREAD_TOL * np.maximum(1.0, np.abs(diff))


def interval_of(diff, se, df, level: float = 1 - ALPHA):
    """The two-sided ``level`` t interval ``diff +- t(df) * se`` (numbers or arrays of one shape): what every
    interval and verdict here is read from."""
    half = _t(0.5 + level / 2, df) * np.asarray(se, dtype=float)
    return diff - half, diff + half


def _t_sf(x, df):
    from scipy import stats  # here: as _t
    return stats.t.sf(x, df)


_DF_GRID = np.geomspace(1.0, MAX_DF, 240)


@cache
def _superiority_factor(df: float, alpha: float, power: float) -> float:
    from statsmodels.stats.power import TTestPower  # here: statsmodels imports in 3 s; only a verdict needs it
    n = df + 1
    d = TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power, alternative="two-sided")
    return float(np.ravel(d)[0]) * math.sqrt(n)


def mde_factor(df, *, alpha: float = ALPHA, power: float = POWER, kind: str = "superiority"):
    """How many standard errors the minimum detectable effect is at ``df`` degrees of freedom (a number or an
    array). Superiority: statsmodels' one-sample t-test power (noncentral t, two-sided) at ``df + 1``
    observations, as ``d * sqrt(df + 1)`` (2.8 for many). Equivalence: the margin at which two one-sided tests
    at ``alpha / 2`` each have ``power`` when the truth is 0, ``t(1 - alpha / 2) + t(1 - (1 - power) / 2)``."""
    df = np.asarray(df, dtype=float)
    if kind == "equivalence":
        out = _t(1 - alpha / 2, df) + _t(1 - (1 - power) / 2, df)
    else:  # statsmodels solves one df at a time: solved on a grid, interpolated in log df (error < 0.1%)
        grid = _DF_GRID
        factors = np.array([_superiority_factor(float(d), alpha, power) for d in grid])
        out = np.interp(np.log(np.clip(df, grid[0], grid[-1])), np.log(grid), factors)
    return out if out.ndim else float(out)


def satterthwaite(terms: Sequence[tuple], *, floor: float = 1.0):
    """Welch-Satterthwaite degrees of freedom of a sum of variance terms ``(value, df)`` (values may be arrays of
    one shape; a term with a negative coefficient enters with its negative value): ``(sum v)^2 / sum(v^2 / df)``,
    clipped to ``[floor, MAX_DF]``."""
    num = sum(np.asarray(v, dtype=float) for v, _ in terms)
    den = sum(np.asarray(v, dtype=float) ** 2 / max(1.0, d) for v, d in terms)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(den > 0, num ** 2 / np.where(den > 0, den, 1), MAX_DF)
    df = np.clip(df, floor, MAX_DF)
    return df if df.ndim else float(df)


def satterthwaite_df(sd_runs, n_runs: int, se_sentences, n_sentences: int | None):
    """Degrees of freedom of ``sd_runs**2 / n_runs + se_sentences**2``: ``n_runs - 1`` for the run part,
    ``n_sentences - 1`` (infinite when None) for the sentence part; at least ``n_runs - 1``."""
    a = np.asarray(sd_runs, dtype=float) ** 2 / n_runs
    b = np.asarray(se_sentences, dtype=float) ** 2
    return satterthwaite([(a, n_runs - 1), (b, MAX_DF if n_sentences is None else n_sentences - 1)],
                         floor=max(1, n_runs - 1))


def crossed_parts(stat, blocks: Sequence[np.ndarray]) -> dict:
    """The variance of the mean over runs of ``stat`` from a two-way crossed random-effects ANOVA: runs crossed
    with the test sentences of each test set.

    Args:
        stat: the per-run values of the statistic, shape ``(..., R)`` (leading axes: independent replicates, as
            in a simulation).
        blocks: per test set, the per-(run, sentence) values whose mean over sentences is that test set's part
            of the statistic (linearised: ``stat[r] = const + sum over sets of blocks[t][r].mean()``), shape
            ``(..., R, n_t)``.

    Returns ``{"var", "df", "run", "sentences", "residual"}`` (arrays of the leading shape). With ``MS_run``,
    ``MS_sent`` and ``MS_res`` the mean squares of a balanced two-way table, the variance of the grand mean is
    ``(MS_run + MS_sent - MS_res) / (R n)``: ``run`` is the runs' part (the per-run values' variance over
    ``R``: ``R - 1`` df), ``sentences`` the run-averaged sentences' part (``n_t - 1`` df each) and ``residual``
    the run-by-sentence part both of those hold once (``(R - 1)(n_t - 1)`` df each), subtracted once. Each
    variance component is kept non-negative (a negative estimate is set to 0, as a REML fit would), and the
    degrees of freedom are Satterthwaite's of the mean squares actually used, with one exception: a run
    component estimated below 0 and set to 0 is not known to be 0 (from three runs it cannot be told from one
    that carries most of the variance), so the run-bearing part it leaves, ``max(run, residual)``, keeps the
    ``R - 1`` degrees of freedom the runs give, and the interval never has more (``tests/unit/test_coverage.py``
    measures what that costs and buys).
    """
    stat = np.asarray(stat, dtype=float)
    n_runs = stat.shape[-1]
    run = stat.var(axis=-1, ddof=1) / n_runs if n_runs > 1 else np.zeros(stat.shape[:-1])
    sent_terms, res_terms = [], []
    for block in blocks:
        block = np.asarray(block, dtype=float)
        n = block.shape[-1]
        if n < 2:
            continue
        cols = block.mean(axis=-2)  # (..., n): each sentence's mean over runs
        sent_terms.append((cols.var(axis=-1, ddof=1) / n, n - 1))
        if n_runs > 1:
            inter = (block - block.mean(axis=-1, keepdims=True) - cols[..., None, :]
                     + cols.mean(axis=-1)[..., None, None])
            ms_res = (inter ** 2).sum(axis=(-2, -1)) / ((n_runs - 1) * (n - 1))
            res_terms.append((ms_res / (n_runs * n), (n_runs - 1) * (n - 1)))
    zero = np.zeros(stat.shape[:-1])
    sentences = sum((v for v, _ in sent_terms), zero)
    residual = sum((v for v, _ in res_terms), zero)
    run_on = run - residual > 0
    sent_on = sentences - residual > 0
    # the mean squares each case sums: both components positive: run + sentences - residual; one clipped to 0:
    # the other's mean square alone holds it and the residual; both clipped: the residual alone
    var = np.where(run_on & sent_on, run + sentences - residual,
                   np.where(run_on, run, np.where(sent_on, sentences, residual)))
    run_terms = [(run, n_runs - 1)] if n_runs > 1 else []
    neg = [(-v, d) for v, d in res_terms]
    df_both = satterthwaite(run_terms + sent_terms + neg) if run_terms and sent_terms else MAX_DF
    df_run = float(max(1, n_runs - 1))
    # the run component set to 0: what is left holds it unmeasured; the runs' df bound the interval's
    df = np.where(run_on & sent_on, df_both, df_run)
    if not blocks or not sent_terms:  # runs only
        var, df = run, np.full(stat.shape[:-1], float(max(1, n_runs - 1)))
    return {"var": var, "df": np.clip(df, 1.0, MAX_DF), "run": run, "sentences": sentences, "residual": residual}


@dataclass(frozen=True)
class Estimate:
    """A paired difference over training runs: ``runs`` the per-run values (same test sentences, paired by run).

    Its variance is either ``components`` (from :func:`crossed_parts`: ``{"var", "df", "run", "sentences",
    "residual", "n_sentences"}``), or, when built by hand, the runs' spread plus an independent sentence part
    ``se_sentences`` over ``n_sentences`` sentences (0: the statistic has no sentence sampling)."""

    runs: tuple[float, ...]
    se_sentences: float = 0.0
    n_sentences: int | None = None
    components: tuple[tuple[str, float], ...] = ()

    def __post_init__(self):
        if not self.runs:
            raise ValueError("an estimate needs at least one run")
        object.__setattr__(self, "runs", tuple(float(r) for r in self.runs))
        object.__setattr__(self, "components", tuple((str(k), float(v)) for k, v in dict(self.components).items()))

    @classmethod
    def crossed(cls, runs: Sequence[float], blocks: Sequence[np.ndarray]) -> Estimate:
        """The estimate of per-run values ``runs`` with the variance of :func:`crossed_parts` on ``blocks``."""
        parts = crossed_parts(np.asarray(runs, dtype=float), blocks)
        n = min((np.shape(b)[-1] for b in blocks), default=None)
        return cls(tuple(runs), n_sentences=n, components=tuple((k, float(v)) for k, v in parts.items()))

    @property
    def parts(self) -> dict[str, float]:
        return dict(self.components)

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
        if self.components:
            return math.sqrt(max(0.0, self.parts["var"]))
        return math.sqrt(self.sd_runs ** 2 / self.n_runs + self.se_sentences ** 2)

    @property
    def df(self) -> float:
        """Satterthwaite's degrees of freedom (``n_runs - 1`` when the runs' spread is all there is)."""
        if self.components:
            return float(self.parts["df"])
        return satterthwaite_df(self.sd_runs, self.n_runs, self.se_sentences, self.n_sentences)

    def interval(self, level: float = 1 - ALPHA) -> tuple[float, float]:
        """The two-sided ``level`` interval: ``diff +- t(df) * se``."""
        low, high = interval_of(self.diff, self.se, self.df, level)
        return float(low), float(high)

    def mde(self, kind: str = "superiority") -> float:
        """The smallest true difference this many runs and sentences detect with 80% power at the 5% level
        (for ``kind="equivalence"``: the smallest margin inside which a true 0 is shown with 80% power).
        Information only: computed from the data it would judge, it never gates a verdict."""
        return float(mde_factor(self.df, kind=kind)) * self.se

    def size(self) -> dict:
        """What a simulation needs to redraw data of this shape: runs, sentences and the variance parts of
        the mean (run, sentence and run-by-sentence; the by-hand form counts its sentence part as sentences)."""
        if self.components:
            p = self.parts
            return {"n_runs": self.n_runs, "n_sentences": self.n_sentences,
                    "run": max(0.0, p["run"] - p["residual"]), "sentences": max(0.0, p["sentences"] - p["residual"]),
                    "residual": p["residual"]}
        return {"n_runs": self.n_runs, "n_sentences": self.n_sentences if self.se_sentences else None,
                "run": self.sd_runs ** 2 / self.n_runs, "sentences": self.se_sentences ** 2, "residual": 0.0}

    def to_dict(self) -> dict:
        low, high = self.interval()
        return {"diff": self.diff, "low": low, "high": high, "se": self.se, "df": self.df, "runs": list(self.runs),
                "n_runs": self.n_runs, "sd_runs": self.sd_runs, "n_sentences": self.n_sentences,
                "variance": self.size()}


@dataclass(frozen=True)
class Rule:
    """A decision rule stated before the data. ``kind``: ``"superiority"`` (the claim: the difference is
    positive; ``effect`` is the paper's effect in the statistic's unit) or ``"equivalence"`` (the claim: within
    ``+-margin``)."""

    kind: Literal["superiority", "equivalence"]
    effect: float = 0.0
    margin: float = 0.0
    min_runs: int = MIN_RUNS
    unit: str = "points"
    alpha: float = ALPHA  # the interval's two-sided level is 1 - alpha (a staged look spends less: findings/staged)

    def __post_init__(self):
        if self.kind not in ("superiority", "equivalence"):
            raise ValueError(f"unknown rule kind {self.kind!r}; known: superiority, equivalence")
        if self.kind == "superiority" and self.effect <= 0:
            raise ValueError("a superiority rule needs the paper's effect > 0 (orient the statistic)")
        if self.kind == "equivalence" and self.margin <= 0:
            raise ValueError("an equivalence rule needs a margin > 0")
        if not 0 < self.alpha < 1:
            raise ValueError(f"a rule's alpha is a probability in (0, 1), not {self.alpha}")

    @property
    def level(self) -> float:
        """The two-sided level of the interval the rule decides from (0.95 unless a staged look spends less)."""
        return 1 - self.alpha

    @property
    def level_text(self) -> str:
        return f"{100 * self.level:g}%"

    @property
    def target(self) -> float:
        """The paper's effect, or the margin."""
        return self.effect if self.kind == "superiority" else self.margin

    def decide(self, est: Estimate, *, parts: int = 1) -> str:
        return str(decide(self, est.diff, est.se, est.df, est.n_runs, parts=parts))

    def p_value(self, est: Estimate) -> float:
        return float(p_value(self, est.diff, est.se, est.df))

    def reason(self, est: Estimate, *, parts: int = 1) -> str:
        """Why the verdict is what it is, in a line (for an inconclusive card, its reason); a part of a claim of
        ``parts`` parts is read against the paper at ``alpha / parts`` (:func:`decide`)."""
        verdict = self.decide(est, parts=parts)
        against = verdict in AGAINST and parts > 1
        level = 1 - self.alpha / parts if against else self.level
        low, high = est.interval(level)
        iv = f"the {100 * level:g}% interval [{low:+.2f}, {high:+.2f}] {self.unit}"
        if verdict == ONE_RUN:
            return f"{est.n_runs} training run(s): fewer than {self.min_runs}, no replication"
        if not has_spread(est.se, est.diff):
            return "no spread at all (every run and sentence the same): no interval to decide from"
        if self.kind == "superiority":
            return {REPRODUCED: f"{iv} lies above 0",
                    OTHER_WAY: f"{iv} lies wholly below 0: the data point the other way",
                    SMALLER: f"{iv} lies below the paper's {self.effect:+g} but holds 0: smaller here"}.get(
                verdict, f"{iv} holds both 0 and the paper's {self.effect:+g}")
        return {REPRODUCED: f"{iv} lies inside +-{self.margin:g}",
                OTHER_WAY: f"{iv} lies wholly outside +-{self.margin:g}: a difference larger than the margin"}.get(
            verdict, f"{iv} crosses the margin +-{self.margin:g}")

    def mde(self, est: Estimate) -> float:
        return est.mde(self.kind)

    def text(self) -> str:
        """The rule in words, for the card."""
        gate = (f"Fewer than {self.min_runs} training runs: inconclusive (no replication); no spread at all: "
                "inconclusive. ")
        if self.kind == "superiority":
            return gate + (f"Otherwise, from the {self.level_text} interval alone: reproduced when it is above 0; "
                           "the other way when it lies wholly below 0; not reproduced (smaller here) when it lies "
                           f"below the paper's effect ({self.effect:+g} {self.unit}) but holds 0; else inconclusive. "
                           "The minimum detectable effect is shown, never a gate.")
        return gate + (f"Otherwise, from the {self.level_text} interval alone: reproduced when it lies inside "
                       f"+-{self.margin:g} {self.unit} (two one-sided tests at {100 * self.alpha / 2:g}%); "
                       "the other way when it lies wholly outside; else inconclusive. The minimum detectable effect "
                       "is shown, never a gate.")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "effect": self.effect, "margin": self.margin, "min_runs": self.min_runs,
                "unit": self.unit, "alpha": self.alpha, "text": self.text()}


def decide(rule: Rule, diff, se, df, n_runs: int, *, parts: int = 1):
    """The verdicts of ``rule`` for one estimate or many at once (``diff``, ``se``, ``df`` numbers or arrays of one
    shape, all with ``n_runs`` runs): what :meth:`Rule.decide` and the simulations both use. For one part of a
    claim of ``parts`` parts (every part must hold), *not reproduced* and *the other way* are read from the
    ``1 - alpha / parts`` interval: the claim fails when any part does, and Bonferroni over its parts keeps that
    at ``alpha / 2`` a side; *reproduced* needs every part, at ``alpha`` each (an intersection-union test)."""
    diff, se, df = (np.asarray(x, dtype=float) for x in (diff, se, df))
    out = np.full(np.broadcast(diff, se, df).shape, INCONCLUSIVE, dtype=object)
    if n_runs < rule.min_runs:
        out[...] = ONE_RUN
        return out if out.ndim else out.item()
    ok = has_spread(se, diff)  # no spread: no interval to decide from
    low, high = interval_of(diff, se, df, rule.level)
    wide_low, wide_high = (low, high) if parts == 1 else interval_of(diff, se, df, 1 - rule.alpha / parts)
    if rule.kind == "superiority":
        out[ok & (wide_high < rule.effect)] = SMALLER
        out[ok & (wide_high < 0)] = OTHER_WAY
        out[ok & (low > 0)] = REPRODUCED
    else:
        out[ok & ((wide_low > rule.margin) | (wide_high < -rule.margin))] = OTHER_WAY
        out[ok & (low > -rule.margin) & (high < rule.margin)] = REPRODUCED
    return out if out.ndim else out.item()


def p_value(rule: Rule, diff, se, df):
    """The one-sided p-value of the claim's test, the one the rule's *reproduced* rests on (< 2.5% exactly when
    it says reproduced): superiority, H0 difference <= 0; equivalence, the larger of the two one-sided tests'
    (TOST) p-values against ``+-margin``."""
    diff, se, df = (np.asarray(x, dtype=float) for x in (diff, se, df))
    with np.errstate(divide="ignore", invalid="ignore"):
        safe = np.where(has_spread(se, diff), se, np.nan)
        if rule.kind == "superiority":
            p = _t_sf(diff / safe, df)
        else:
            p = np.maximum(_t_sf((diff + rule.margin) / safe, df), _t_sf((rule.margin - diff) / safe, df))
    p = np.where(np.isnan(p), 1.0, p)
    return p if p.ndim else float(p)


def statement_p(rule: Rule, diff, se, df) -> dict[str, np.ndarray | float]:
    """The one-sided p-value behind each statement a verdict can make, so that the rule's verdict at level
    ``1 - alpha`` is exactly "the statement's p < alpha / 2": ``REPRODUCED`` (:func:`p_value`); for a superiority
    rule ``SMALLER`` (H0: the difference is at least the paper's effect) and ``OTHER_WAY`` (H0: it is at least 0);
    for an equivalence rule ``OTHER_WAY`` (H0: it lies within the margin; the smaller of the two sides' p, the
    two regions being disjoint). The page's control (:mod:`headprune_core.findings.page`) adjusts these."""
    diff, se, df = (np.asarray(x, dtype=float) for x in (diff, se, df))
    with np.errstate(divide="ignore", invalid="ignore"):
        safe = np.where(has_spread(se, diff), se, np.nan)
        if rule.kind == "superiority":
            out = {SMALLER: _t_sf((rule.effect - diff) / safe, df), OTHER_WAY: _t_sf(-diff / safe, df)}
        else:
            out = {OTHER_WAY: np.minimum(_t_sf((diff - rule.margin) / safe, df),
                                         _t_sf((-rule.margin - diff) / safe, df))}
    out = {k: np.where(np.isnan(v), 1.0, v) for k, v in out.items()}
    out[REPRODUCED] = np.asarray(p_value(rule, diff, se, df), dtype=float)
    return {k: v if v.ndim else float(v) for k, v in out.items()}


def truths(rule: Rule) -> dict[str, float]:
    """The differences a simulation plants: ``null`` (the claim is false at its boundary: no effect, or a
    difference at the margin), ``paper`` (the claim is true: the paper's effect, or no difference) and
    ``opposite``."""
    if rule.kind == "superiority":
        return {"null": 0.0, "paper": rule.effect, "opposite": -rule.effect}
    return {"null": rule.margin, "paper": 0.0, "opposite": 2 * rule.margin}


SIM_SENTENCES = 300  # sentences simulated per draw: the variance parts of the mean are kept, their df nearly
SCALE_RANGE = (0.5, 3.0)  # each true standard deviation is drawn log-uniformly in this range around the recorded
FLOOR = 0.05  # a recorded variance part below this share of the total is simulated at this share (a run part
# estimated at 0 from three runs is not known to be 0)


def _heavy(rng: np.random.Generator, dof: float, size) -> np.ndarray:
    """Student-t draws scaled to unit variance: heavier tails than the normal the interval assumes."""
    x = rng.standard_t(dof, size=size)
    x *= math.sqrt((dof - 2) / dof)  # in place: the same values, one large array less
    return x


def draw_estimates(delta: float, size: dict, *, runs: Sequence[int], draws: int, rng: np.random.Generator,
                   spread: tuple[float, float] = SCALE_RANGE) -> list[dict]:
    """``draws`` estimates when the true difference is ``delta``, simulated per sentence, judged on the first
    ``runs[i]`` runs at each look ``i``: per look ``{"runs", "diff", "se", "df"}`` (arrays of ``draws``).

    Data-generating model, per draw: ``y[r, j] = delta + a[r] + b[j] + e[r, j]`` for ``R`` runs and up to
    :data:`SIM_SENTENCES` test sentences, with run, sentence and run-by-sentence effects from heavy-tailed
    Student-t distributions (5, 4 and 4 df), each standard deviation the recorded one (``size``, as
    :meth:`Estimate.size`) times a factor drawn log-uniformly in ``spread`` (0.5x to 3x): the true sizes are
    drawn around the estimates, not fixed at them. The estimate is what real results give: the per-run means
    and the crossed ANOVA of the per-(run, sentence) values (or the runs alone when ``size`` has no sentences),
    with its variance parts (``size``: as :meth:`Estimate.size`, arrays of draws).
    """
    n_runs, r_max = int(size["n_runs"]), max(runs)
    parts = np.array([size["run"], size["sentences"], size["residual"]], dtype=float)
    total = parts.sum()
    if total <= 0:
        parts = np.array([1.0, 0.0, 0.0])
        total = 1.0
    runs_only = not size.get("n_sentences")
    if runs_only:
        parts = np.array([total, 0.0, 0.0])
    else:
        parts = np.maximum(parts, FLOOR * total)
    lo, hi = np.log(spread[0]), np.log(spread[1])
    scale = np.exp(rng.uniform(lo, hi, size=(draws, 3)))  # per draw, per part: the true sd's factor
    n = 1 if runs_only else min(SIM_SENTENCES, int(size["n_sentences"]))
    sd_a = np.sqrt(parts[0] * n_runs) * scale[:, 0]  # per run: the recorded part of the mean times its runs
    a = sd_a[:, None] * _heavy(rng, 5, (draws, r_max))
    if runs_only:
        return _looks((delta + a)[:, :, None], runs, runs_only=True)
    sd_b = np.sqrt(parts[1] * n) * scale[:, 1]
    sd_e = np.sqrt(parts[2] * n_runs * n) * scale[:, 2]
    b = sd_b[:, None] * _heavy(rng, 4, (draws, n))
    chunks = []
    for lo in range(0, draws, CHUNK_DRAWS):  # e, the last draw, in chunks: the same stream, a cache-sized array
        hi = min(draws, lo + CHUNK_DRAWS)
        y = delta + a[lo:hi, :, None] + b[lo:hi, None, :]
        e = _heavy(rng, 4, (hi - lo, r_max, n))
        e *= sd_e[lo:hi, None, None]
        y += e  # the same sums as y + sd_e * e (draws x runs x sentences): two large arrays instead of four
        chunks.append(_looks(y, runs, runs_only=False))
    return [{"runs": look[0]["runs"], "diff": np.concatenate([c[i]["diff"] for c in chunks]),
             "se": np.concatenate([c[i]["se"] for c in chunks]), "df": np.concatenate([c[i]["df"] for c in chunks]),
             "size": {k: np.concatenate([c[i]["size"][k] for c in chunks]) for k in look[0]["size"]}}
            for i, look in enumerate(zip(*chunks))]


CHUNK_DRAWS = 1000
"""Draws simulated at once (per-sentence arrays of about 12 MB at 5 runs and 300 sentences, not 240 MB at 20,000):
every statistic is a draw's own, so the values are those of one array, bit for bit, with far less memory traffic."""


def _looks(y: np.ndarray, runs: Sequence[int], *, runs_only: bool) -> list[dict]:
    """The estimates of simulated per-(run, sentence) values ``y`` (draws x runs x sentences) at each look."""
    draws = y.shape[0]
    out = []
    for r in runs:
        yr = y[:, :r]  # (draws, runs, sentences)
        stat = yr.mean(axis=-1)
        est = crossed_parts(stat, [] if runs_only else [yr])
        res = np.zeros(draws) if runs_only else est["residual"]
        size = {"run": est["var"] if runs_only else np.maximum(est["run"] - res, 0.0),
                "sentences": np.zeros(draws) if runs_only else np.maximum(est["sentences"] - res, 0.0),
                "residual": res}  # the parts of the mean, as Estimate.size gives them
        out.append({"runs": int(r), "diff": stat.mean(axis=-1), "se": np.sqrt(np.maximum(est["var"], 0.0)),
                    "df": est["df"], "size": size})
    return out


def draw_verdicts(rule: Rule, delta: float, size: dict, *, draws: int, rng: np.random.Generator,
                  spread: tuple[float, float] = SCALE_RANGE, looks: Sequence[tuple[int, float]] | None = None,
                  parts: int = 1) -> dict:
    """``draws`` verdicts of ``rule`` when the true difference is ``delta``, on estimates simulated per sentence
    (:func:`draw_estimates`).

    ``looks`` (``[(runs, alpha), ...]``, runs rising): a staged design. The draw is judged on its first runs at
    each look with that look's alpha, and keeps the first verdict that decides (reproduced, smaller here, the
    other way); a draw open at the last look stays inconclusive. Default: one look, ``size``'s runs at the rule's
    alpha. ``parts``: the draw is one part of a claim of that many (:func:`decide`). Returns ``{"verdict", "look",
    "by_look", "estimates"}``: the verdicts, the index of the look each came from, every look's verdicts and every
    look's estimates.
    """
    looks = tuple((int(r), float(a)) for r, a in looks) if looks else ((int(size["n_runs"]), rule.alpha),)
    estimates = draw_estimates(delta, size, runs=[r for r, _ in looks], draws=draws, rng=rng, spread=spread)
    by_look = np.stack([np.asarray(decide(replace(rule, alpha=alpha), e["diff"], e["se"], e["df"], r, parts=parts),
                                   dtype=object).reshape(draws) for (r, alpha), e in zip(looks, estimates)])
    verdict, look = sequential(by_look)
    return {"verdict": verdict, "look": look, "by_look": by_look, "estimates": estimates}


def sequential(by_look: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The verdicts of a staged design from each look's verdicts (``looks x draws``): the first look that
    decides (reproduced, smaller here, the other way) gives the verdict; a draw that no look decides keeps the
    last look's. Returns the verdicts and the index of the look each came from."""
    by_look = np.asarray(by_look, dtype=object)
    decided = np.isin(by_look, DECIDED)
    first = np.where(decided.any(axis=0), decided.argmax(axis=0), len(by_look) - 1)
    return by_look[first, np.arange(by_look.shape[1])], first


def rates(verdicts: np.ndarray) -> dict[str, float]:
    """The share of each verdict among ``verdicts`` (nan when there are none)."""
    v = np.asarray(verdicts, dtype=object)
    if not v.size:
        return {k: float("nan") for k in (*DECIDED, INCONCLUSIVE, ONE_RUN)}
    return {k: float(np.mean(v == k)) for k in (*DECIDED, INCONCLUSIVE, ONE_RUN)}


def error_rates(rule: Rule, by_truth: dict[str, dict[str, float]], draws: int) -> dict:
    """The calibration summary of verdict shares under each planted truth (``null``, ``paper``, ``opposite``):
    false *reproduced* under the null, false *not reproduced* (smaller or the other way) under the paper's
    effect, false *the other way* where the true difference is 0 (a superiority rule's null; an equivalence
    rule's claim), and power. The rules have no gate that depends on the data (fewer than ``min_runs`` runs is
    known before them), so these are also the rates among the verdicts a reader sees."""
    zero = "null" if rule.kind == "superiority" else "paper"
    return {"false_reproduced": by_truth["null"][REPRODUCED],
            "false_not_reproduced": sum(by_truth["paper"][k] for k in AGAINST),
            "false_other_way": by_truth[zero][OTHER_WAY],
            "power": by_truth["paper"][REPRODUCED], "rates": by_truth, "draws": draws}


def simulate(rule: Rule, size: dict, *, draws: int = 1000, seed: int = 0) -> dict:
    """How often ``rule`` is wrong at ``size`` (as :meth:`Estimate.size`), measured: each planted truth
    (:func:`truths`) drawn ``draws`` times per sentence (:func:`draw_verdicts`), and the verdicts counted."""
    rng = np.random.default_rng(seed)
    by_truth = {name: rates(draw_verdicts(rule, delta, size, draws=draws, rng=rng)["verdict"])
                for name, delta in truths(rule).items()}
    return {**error_rates(rule, by_truth, draws), "size": dict(size)}
