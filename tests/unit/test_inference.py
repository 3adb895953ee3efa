"""The decision rules of the Findings cards, each against an independent reference: the crossed ANOVA against a
textbook computation by hand and statsmodels' MixedLM, Satterthwaite's degrees of freedom by hand, intervals and
TOST against scipy and statsmodels, the vectorised ``decide`` against a plain scalar one on random inputs, each
verdict on constructed cases, and the error rates measured by simulation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import ttost_paired

from headprune_core.methods.inference import (
    INCONCLUSIVE,
    ONE_RUN,
    OTHER_WAY,
    REPRODUCED,
    SMALLER,
    Estimate,
    Rule,
    crossed_parts,
    decide,
    mde_factor,
    p_value,
    satterthwaite,
    simulate,
)
from headprune_core.methods.uncertainty import run_estimate, sentence_values

SUPERIORITY = Rule("superiority", effect=1.0)
EQUIVALENCE = Rule("equivalence", margin=1.0)


def _two_way(rng, n_runs=4, n=30, run=1.0, sent=2.0, res=1.5):
    """y[r, i] = run effect + sentence effect + noise."""
    return (rng.normal(0, run, (n_runs, 1)) + rng.normal(0, sent, (1, n)) + rng.normal(0, res, (n_runs, n)))


def _textbook_anova(y: np.ndarray) -> tuple[float, float, float]:
    """Mean squares of a balanced two-way table with one observation a cell, written out with loops."""
    R, n = y.shape
    grand = sum(sum(row) for row in y) / (R * n)
    rows = [sum(y[r]) / n for r in range(R)]
    cols = [sum(y[r][i] for r in range(R)) / R for i in range(n)]
    ms_run = n * sum((m - grand) ** 2 for m in rows) / (R - 1)
    ms_sent = R * sum((m - grand) ** 2 for m in cols) / (n - 1)
    ms_res = sum((y[r][i] - rows[r] - cols[i] + grand) ** 2 for r in range(R) for i in range(n)) / ((R - 1) * (n - 1))
    return ms_run, ms_sent, ms_res


@pytest.mark.parametrize("seed", range(4))
def test_crossed_variance_is_the_textbook_two_way_anova(seed):
    y = _two_way(np.random.default_rng(seed))
    R, n = y.shape
    ms_run, ms_sent, ms_res = _textbook_anova(y)
    parts = crossed_parts(y.mean(axis=1), [y])
    assert parts["run"] == pytest.approx(ms_run / (R * n))
    assert parts["sentences"] == pytest.approx(ms_sent / (R * n))
    assert parts["residual"] == pytest.approx(ms_res / (R * n))
    assert parts["var"] == pytest.approx((ms_run + ms_sent - ms_res) / (R * n))
    # Satterthwaite by hand: (sum c_k MS_k)^2 / sum (c_k MS_k)^2 / df_k
    terms = [(ms_run, R - 1), (ms_sent, n - 1), (-ms_res, (R - 1) * (n - 1))]
    by_hand = sum(m for m, _ in terms) ** 2 / sum(m ** 2 / d for m, d in terms)
    assert parts["df"] == pytest.approx(min(by_hand, 1000.0))


def test_crossed_variance_matches_statsmodels_mixedlm():
    """Runs crossed with sentences, fitted by REML: in a balanced design the variance components are the
    ANOVA's (when positive), so the variance of the grand mean agrees."""
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(3)
    R, n = 5, 40
    y = _two_way(rng, R, n, run=1.2, sent=2.0, res=1.0)
    df = pd.DataFrame({"y": y.ravel(), "run": np.repeat(np.arange(R), n), "sent": np.tile(np.arange(n), R),
                       "one": 1})
    fit = smf.mixedlm("y ~ 1", df, groups="one", re_formula="0",
                      vc_formula={"run": "0 + C(run)", "sent": "0 + C(sent)"}).fit(reml=True)
    names = list(fit.model.exog_vc.names)
    vc = dict(zip(names, np.asarray(fit.vcomp)))
    mixed = vc["run"] / R + vc["sent"] / n + fit.scale / (R * n)
    ours = crossed_parts(y.mean(axis=1), [y])["var"]
    assert ours == pytest.approx(mixed, rel=0.02)


def test_variance_counted_once_not_twice():
    """The old way (runs' spread / R plus the run-mean's sentence variance) counts the run-by-sentence noise
    twice; the crossed ANOVA once. With pure noise (no run or sentence effect) the truth is sigma^2 / (R n)."""
    rng = np.random.default_rng(0)
    R, n, draws = 3, 200, 400
    y = rng.normal(0, 1.0, (draws, R, n))
    parts = crossed_parts(y.mean(axis=-1), [y])
    twice = parts["run"] + parts["sentences"]  # what the old estimate amounted to
    once = parts["run"] + parts["sentences"] - parts["residual"]  # before components are kept non-negative
    assert np.mean(once) == pytest.approx(1 / (R * n), rel=0.1)
    assert np.mean(twice) == pytest.approx(2 / (R * n), rel=0.1)
    # a negative component set to 0 can only add (the conservative side), well short of counting twice
    assert np.mean(once) <= np.mean(parts["var"]) < 0.8 * np.mean(twice)


def test_several_test_sets_share_the_runs():
    """Two languages tested on the same fine-tunes: the run part is taken on the per-run statistic (so a run
    effect shared by both languages counts with its covariance), each language's sentences on their own."""
    rng = np.random.default_rng(5)
    R = 4
    shared = rng.normal(0, 2.0, (R, 1))
    a = shared + rng.normal(0, 1, (1, 50)) + rng.normal(0, 0.5, (R, 50))
    b = shared + rng.normal(0, 1, (1, 80)) + rng.normal(0, 0.5, (R, 80))
    stat = a.mean(axis=1) + b.mean(axis=1)
    parts = crossed_parts(stat, [a, b])
    assert parts["run"] == pytest.approx(stat.var(ddof=1) / R)
    sent = a.mean(axis=0).var(ddof=1) / 50 + b.mean(axis=0).var(ddof=1) / 80
    assert parts["sentences"] == pytest.approx(sent)


@pytest.mark.parametrize("runs", [(0.3, 1.1, 0.7), (2.0, -1.0, 0.5, 0.1, 0.9), (-0.2, -0.4)])
def test_interval_without_sentence_part_is_scipys_one_sample_t(runs):
    ours = Estimate(runs).interval(0.95)
    ref = stats.ttest_1samp(runs, 0.0).confidence_interval(0.95)
    assert ours == pytest.approx((ref.low, ref.high))
    assert Estimate.crossed(runs, []).interval(0.95) == pytest.approx((ref.low, ref.high))


@pytest.mark.parametrize("seed", range(8))
def test_equivalence_is_statsmodels_paired_tost(seed):
    rng = np.random.default_rng(seed)
    base = rng.normal(80, 2, size=6)
    other = base + rng.normal(rng.choice([0.0, 0.6, 1.5]), 0.3, size=6)
    p, _, _ = ttost_paired(other, base, -1.0, 1.0)
    est = Estimate(tuple(other - base))
    assert EQUIVALENCE.p_value(est) == pytest.approx(p)
    for alpha in (0.05, 0.025):  # our rule: TOST at 2.5% each side, the 95% interval inside the margin
        inside = est.interval(1 - 2 * alpha)
        assert (p < alpha) == (inside[0] > -1.0 and inside[1] < 1.0)


def test_superiority_p_value_is_scipys_one_sided_t_and_agrees_with_the_verdict():
    rng = np.random.default_rng(2)
    for _ in range(40):
        runs = tuple(rng.normal(rng.choice([0.0, 0.8, 2.0]), 0.5, size=rng.integers(3, 7)))
        est = Estimate(runs)
        ref = stats.ttest_1samp(runs, 0.0, alternative="greater").pvalue
        assert SUPERIORITY.p_value(est) == pytest.approx(ref)
        assert (SUPERIORITY.decide(est) == REPRODUCED) == (ref < 0.025)


def test_mde_is_statsmodels_power_in_standard_errors():
    for n in (2, 3, 4, 5, 7, 10, 30, 200):
        d = TTestPower().solve_power(effect_size=None, nobs=n, alpha=0.05, power=0.8, alternative="two-sided")
        assert mde_factor(n - 1) == pytest.approx(d * np.sqrt(n), rel=1e-3)
    assert mde_factor(2) > mde_factor(9) > mde_factor(1000) == pytest.approx(2.8, abs=0.01)


def test_equivalence_mde_has_the_stated_power_by_simulation():
    """The equivalence MDE factor: with the margin at that many standard errors and a true 0, two one-sided
    tests at 2.5% succeed 80% of the time (checked by drawing t statistics, not by the formula)."""
    rng = np.random.default_rng(4)
    for df in (4, 30):
        factor = mde_factor(df, kind="equivalence")
        draws = 200_000
        z = rng.standard_normal(draws)
        s = np.sqrt(rng.chisquare(df, draws) / df)  # the estimated se over the true one
        t = stats.t.ppf(0.975, df)
        inside = (np.abs(z) + t * s) < factor
        assert inside.mean() == pytest.approx(0.8, abs=0.03)


def test_satterthwaite_by_hand():
    # two terms: 0.04 with 2 df and 0.01 with 199 df: (0.05)^2 / (0.04^2/2 + 0.01^2/199)
    assert satterthwaite([(0.04, 2), (0.01, 199)]) == pytest.approx(0.05 ** 2 / (0.0016 / 2 + 0.0001 / 199))
    assert Estimate((0.3, 1.1, 0.7)).df == 2
    sentences = Estimate((0.30, 0.31, 0.29), se_sentences=0.4, n_sentences=900)
    assert sentences.df > 100 and sentences.mde() < 3.0 * sentences.se


def _decide_scalar(rule: Rule, diff: float, se: float, df: float, n_runs: int) -> str:
    """The rule written out for one estimate, as a reader would apply it to the interval."""
    if n_runs < rule.min_runs:
        return ONE_RUN
    if se <= 0:
        return INCONCLUSIVE
    half = stats.t.ppf(0.975, df) * se
    low, high = diff - half, diff + half
    if rule.kind == "superiority":
        if low > 0:
            return REPRODUCED
        if high < 0:
            return OTHER_WAY
        if high < rule.effect:
            return SMALLER
        return INCONCLUSIVE
    if -rule.margin < low and high < rule.margin:
        return REPRODUCED
    if low > rule.margin or high < -rule.margin:
        return OTHER_WAY
    return INCONCLUSIVE


@pytest.mark.parametrize("rule", [SUPERIORITY, EQUIVALENCE, Rule("superiority", effect=0.15)],
                         ids=["superiority", "equivalence", "small effect"])
def test_vectorised_decide_equals_a_scalar_one_on_random_inputs(rule):
    rng = np.random.default_rng(9)
    diff = rng.normal(0, 2, 3000)
    se = np.abs(rng.normal(0, 0.8, 3000))
    se[:20] = 0.0
    df = rng.uniform(1, 300, 3000)
    for n_runs in (2, 3, 5):
        vec = decide(rule, diff, se, df, n_runs)
        assert list(vec) == [_decide_scalar(rule, d, s, f, n_runs) for d, s, f in zip(diff, se, df)]
    # p-values agree with reproduced: below 2.5% exactly when the rule says reproduced
    p = p_value(rule, diff, se, df)
    vec = decide(rule, diff, se, df, 3)
    assert np.array_equal((p < 0.025) & (se > 0), vec == REPRODUCED)


def test_fewer_than_three_runs_is_one_training_run_whatever_the_sentences_say():
    huge = Estimate((10.0,), se_sentences=0.1)
    assert SUPERIORITY.decide(huge) == ONE_RUN
    assert SUPERIORITY.decide(Estimate((10.0, 10.2), se_sentences=0.1)) == ONE_RUN


def test_no_spread_at_all_is_inconclusive():
    for value in (0.0, 5.0, -5.0):
        flat = Estimate((value,) * 3, se_sentences=0.0)
        assert flat.se == 0 and SUPERIORITY.decide(flat) == INCONCLUSIVE and EQUIVALENCE.decide(flat) == INCONCLUSIVE
        assert "no spread" in SUPERIORITY.reason(flat)
    assert SUPERIORITY.decide(Estimate((5.0, 5.0, 5.0), se_sentences=0.1)) == REPRODUCED


def test_superiority_says_which_way_the_data_point():
    assert SUPERIORITY.decide(Estimate((1.5, 1.6, 1.4), se_sentences=0.05)) == REPRODUCED
    smaller = Estimate((0.02, -0.03, 0.01), se_sentences=0.05)  # holds 0, rules out the paper's 1
    assert SUPERIORITY.decide(smaller) == SMALLER and "smaller here" in SUPERIORITY.reason(smaller)
    opposite = Estimate((-1.5, -1.4, -1.6), se_sentences=0.05)
    assert SUPERIORITY.decide(opposite) == OTHER_WAY and "other way" in SUPERIORITY.reason(opposite)
    # no gate hides a direction: a noisy estimate whose interval still lies wholly below 0 is the other way
    noisy_below = Estimate((-10.0, -7.0, -13.0), se_sentences=0.5)
    assert noisy_below.mde() > 1.0 and SUPERIORITY.decide(noisy_below) == OTHER_WAY
    wide = Estimate((4.0, -1.5, 2.5), se_sentences=0.6)
    assert SUPERIORITY.decide(wide) == INCONCLUSIVE and "holds both 0 and" in SUPERIORITY.reason(wide)
    above_but_smaller = Estimate((0.5, 0.45, 0.55), se_sentences=0.1)  # the direction, smaller than the paper
    assert above_but_smaller.interval()[1] < 1.0 and SUPERIORITY.decide(above_but_smaller) == REPRODUCED


def test_equivalence_on_constructed_cases():
    assert EQUIVALENCE.decide(Estimate((0.1, -0.1, 0.05), se_sentences=0.05)) == REPRODUCED
    assert EQUIVALENCE.decide(Estimate((2.5, 2.6, 2.4), se_sentences=0.05)) == OTHER_WAY
    assert EQUIVALENCE.decide(Estimate((-2.5, -2.6, -2.4), se_sentences=0.05)) == OTHER_WAY
    wide = Estimate((0.5, -0.6, 0.2), se_sentences=0.5)  # "not distinguishable from 0" is not equivalence
    lo, hi = wide.interval()
    assert lo < 0 < hi and EQUIVALENCE.decide(wide) == INCONCLUSIVE


def test_rules_refuse_what_cannot_be_decided():
    with pytest.raises(ValueError, match="effect > 0"):
        Rule("superiority", effect=-1.0)
    with pytest.raises(ValueError, match="margin > 0"):
        Rule("equivalence")
    with pytest.raises(ValueError, match="unknown rule kind 'better'"):
        Rule("better", effect=1.0)
    assert "lies inside +-1" in EQUIVALENCE.text() and "never a gate" in SUPERIORITY.text()


def test_sentence_values_average_to_the_metric():
    acc = {"correct": [3, 5, 0, 9], "total": [4, 5, 2, 10]}
    assert sentence_values(acc).mean() == pytest.approx(100 * 17 / 21)
    f1 = {"tp": [1, 0, 2, 3], "pred": [2, 1, 2, 3], "gold": [1, 1, 3, 4]}
    assert sentence_values(f1).mean() == pytest.approx(200 * 6 / (8 + 9))


def test_run_estimate_of_a_difference_is_the_crossed_anova_of_per_sentence_differences():
    """For accuracy on the same sentences in both arms, the linearised (delta-method) per-sentence difference is
    100 (c_b - c_a) / mean(t) + (M_b - M_a)(1 - t / mean(t)), written out here: the estimate is the crossed
    ANOVA of those."""
    rng = np.random.default_rng(1)
    total = rng.integers(5, 30, 60)
    runs, rows = [], []
    for _ in range(3):
        a = rng.binomial(total, 0.9)
        b = rng.binomial(total, 0.85)
        runs.append({"a": ("pos/en", {"correct": a.tolist(), "total": total.tolist()}),
                     "b": ("pos/en", {"correct": b.tolist(), "total": total.tolist()})})
        m_a, m_b = 100 * a.sum() / total.sum(), 100 * b.sum() / total.sum()
        rows.append(100 * (b - a) / total.mean() + (m_b - m_a) * (1 - total / total.mean()))
    est = run_estimate(runs, lambda m: m["b"] - m["a"])
    rows = np.array(rows)
    assert est.runs == pytest.approx(tuple(rows.mean(axis=1)))
    ref = crossed_parts(rows.mean(axis=1), [rows])
    assert est.se == pytest.approx(np.sqrt(ref["var"])) and est.df == pytest.approx(ref["df"])


@pytest.mark.parametrize("rule", [SUPERIORITY, EQUIVALENCE], ids=["superiority", "equivalence"])
def test_simulated_error_rates_meet_the_goals(rule):
    size = {"n_runs": 3, "n_sentences": 200, "run": 0.03, "sentences": 0.01, "residual": 0.01}
    cal = simulate(rule, size, draws=2000, seed=1)
    mc = 3 * (0.025 * 0.975 / 2000) ** 0.5  # 3 Monte Carlo standard errors of a 2.5% rate
    assert max(cal["false_reproduced"], cal["false_not_reproduced"], cal["false_other_way"]) <= 0.025 + mc, cal
    zero = "null" if rule.kind == "superiority" else "paper"  # where the true difference is 0
    assert cal["false_other_way"] == cal["rates"][zero][OTHER_WAY]
    assert cal["rates"]["opposite"][REPRODUCED] == 0.0
    assert cal["power"] > 0.3


def test_simulation_at_a_hopeless_size_says_inconclusive_not_wrong():
    cal = simulate(SUPERIORITY, {"n_runs": 3, "n_sentences": 200, "run": 3.0, "sentences": 1.0, "residual": 0.5},
                   draws=1000)
    assert cal["rates"]["paper"][INCONCLUSIVE] > 0.8 and cal["false_reproduced"] <= 0.05
    one = simulate(SUPERIORITY, {"n_runs": 1, "n_sentences": 200, "run": 0.0, "sentences": 0.01, "residual": 0.0},
                   draws=100)
    assert one["rates"]["paper"][ONE_RUN] == 1.0


def test_a_part_of_a_claim_of_several_reads_against_the_paper_at_alpha_over_parts():
    """The claim fails when any of its parts does, so each part says 'not reproduced' only from the 1 - alpha/2
    interval of a two-part claim: an interval just below the paper's effect at 95% but not at 97.5% says
    'smaller here' alone and is inconclusive as one part of two; 'reproduced' still reads the 95% interval."""
    rule = Rule("superiority", effect=1.0)
    se, df = 0.45, 10.0
    diff = 1.0 - 0.5 * (stats.t.ppf(0.975, df) + stats.t.ppf(0.9875, df)) * se  # between the two upper ends
    assert decide(rule, diff, se, df, 3) == SMALLER and decide(rule, diff, se, df, 3, parts=2) == INCONCLUSIVE
    assert decide(rule, 0.6, 0.2, df, 3, parts=2) == REPRODUCED  # 95% interval above 0, as with one part


def test_runs_identical_up_to_rounding_have_no_spread():
    """Per-run values equal but for floating-point noise (optimizer steps when every run trains on the same
    data): no interval to decide from, inconclusive, whichever side the estimate lies on."""
    rule = Rule("superiority", effect=21.32)
    runs = (-124.13586, -124.13586 + 1e-13, -124.13586 - 1e-13)
    est = Estimate(runs)
    assert 0 < est.se < 1e-12
    assert rule.decide(est) == INCONCLUSIVE and "no spread" in rule.reason(est)
    assert rule.p_value(est) == 1.0
