"""The decision rules of the Findings cards: intervals and TOST against scipy and statsmodels, the gates (runs,
minimum detectable effect), each rule on constructed null / true / opposite cases, and the error rates measured
by simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import ttost_paired

from headprune_core.methods.inference import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    ONE_RUN,
    REPRODUCED,
    Estimate,
    Rule,
    mde_factor,
    simulate,
)

SUPERIORITY = Rule("superiority", effect=1.0)
EQUIVALENCE = Rule("equivalence", margin=1.0)


@pytest.mark.parametrize("runs", [(0.3, 1.1, 0.7), (2.0, -1.0, 0.5, 0.1, 0.9), (-0.2, -0.4)])
def test_interval_without_sentence_part_is_scipys_one_sample_t(runs):
    ours = Estimate(runs).interval(0.95)
    ref = stats.ttest_1samp(runs, 0.0).confidence_interval(0.95)
    assert ours == pytest.approx((ref.low, ref.high))


def test_sentence_part_widens_the_interval_in_quadrature():
    a, b = Estimate((0.3, 1.1, 0.7)), Estimate((0.3, 1.1, 0.7), se_sentences=0.5)
    assert b.se == pytest.approx(np.sqrt(a.se ** 2 + 0.25))
    assert b.interval()[1] - b.interval()[0] > a.interval()[1] - a.interval()[0]


@pytest.mark.parametrize("seed", range(8))
def test_equivalence_is_statsmodels_paired_tost(seed):
    rng = np.random.default_rng(seed)
    base = rng.normal(80, 2, size=6)
    other = base + rng.normal(rng.choice([0.0, 0.6, 1.5]), 0.3, size=6)
    p, _, _ = ttost_paired(other, base, -1.0, 1.0)
    for alpha in (0.05, 0.025):  # our rule: TOST at 2.5% each side, the 95% interval inside the margin
        inside = Estimate(tuple(other - base)).interval(1 - 2 * alpha)
        assert (p < alpha) == (inside[0] > -1.0 and inside[1] < 1.0)


def test_mde_is_statsmodels_power_in_standard_errors():
    for n in (2, 3, 4, 5, 7, 10, 30, 200):
        d = TTestPower().solve_power(effect_size=None, nobs=n, alpha=0.05, power=0.8, alternative="two-sided")
        assert mde_factor(n - 1) == pytest.approx(d * np.sqrt(n), rel=1e-3)
    assert mde_factor(2) > mde_factor(9) > mde_factor(1000) == pytest.approx(2.8, abs=0.01)  # few runs: far more
    assert mde_factor(np.array([2.0, 9.0])) == pytest.approx([mde_factor(2), mde_factor(9)])


def test_degrees_of_freedom_are_welch_satterthwaites():
    runs_only = Estimate((0.3, 1.1, 0.7))
    assert runs_only.df == 2
    # the sentence part dominates: its many degrees of freedom take over, and the MDE shrinks toward 2.8 SE
    sentences = Estimate((0.30, 0.31, 0.29), se_sentences=0.4, n_sentences=900)
    assert sentences.df > 100 and sentences.mde() < 3.0 * sentences.se


def test_fewer_than_three_runs_is_one_training_run_whatever_the_sentences_say():
    huge = Estimate((10.0,), se_sentences=0.1)  # one run, a sentence interval far from 0
    assert SUPERIORITY.decide(huge) == ONE_RUN
    assert SUPERIORITY.decide(Estimate((10.0, 10.2), se_sentences=0.1)) == ONE_RUN


def test_no_spread_at_all_is_inconclusive():
    """Every run the same difference and no sentence part (the dev split kept the unpruned model in every run):
    a zero-width interval decides nothing, whichever side of the target it sits."""
    for value in (0.0, 5.0, -5.0):
        flat = Estimate((value,) * 3, se_sentences=0.0)
        assert flat.se == 0 and SUPERIORITY.decide(flat) == INCONCLUSIVE and EQUIVALENCE.decide(flat) == INCONCLUSIVE
    assert SUPERIORITY.decide(Estimate((5.0, 5.0, 5.0), se_sentences=0.1)) == REPRODUCED  # a sentence part decides


def test_superiority_on_constructed_cases():
    assert SUPERIORITY.decide(Estimate((1.5, 1.6, 1.4), se_sentences=0.05)) == REPRODUCED  # the effect
    assert SUPERIORITY.decide(Estimate((0.02, -0.03, 0.01), se_sentences=0.05)) == NOT_REPRODUCED  # null, precise
    assert SUPERIORITY.decide(Estimate((-1.5, -1.4, -1.6), se_sentences=0.05)) == NOT_REPRODUCED  # opposite
    # a big point estimate, but an MDE above the paper's effect: inconclusive, whatever the estimate
    noisy = Estimate((4.0, 0.5, 2.5), se_sentences=0.6)
    assert noisy.mde() > 1.0 and SUPERIORITY.decide(noisy) == INCONCLUSIVE
    # precise enough, between 0 and the effect, the interval holding both: inconclusive
    between = Estimate((0.5, 0.45, 0.55), se_sentences=0.3)
    assert between.mde() <= 1.0 and SUPERIORITY.decide(between) == INCONCLUSIVE
    # above 0 but below the paper's effect: the direction is reproduced (the numbers say it is smaller)
    smaller = Estimate((0.5, 0.45, 0.55), se_sentences=0.1)
    assert smaller.interval()[1] < 1.0 and SUPERIORITY.decide(smaller) == REPRODUCED


def test_equivalence_on_constructed_cases():
    assert EQUIVALENCE.decide(Estimate((0.1, -0.1, 0.05), se_sentences=0.05)) == REPRODUCED  # no difference
    assert EQUIVALENCE.decide(Estimate((2.5, 2.6, 2.4), se_sentences=0.05)) == NOT_REPRODUCED  # beyond the margin
    assert EQUIVALENCE.decide(Estimate((-2.5, -2.6, -2.4), se_sentences=0.05)) == NOT_REPRODUCED  # the other side
    # "not distinguishable from 0" is not equivalence: a wide interval around 0 is inconclusive
    wide = Estimate((0.5, -0.6, 0.2), se_sentences=0.5)
    lo, hi = wide.interval()
    assert lo < 0 < hi and EQUIVALENCE.decide(wide) == INCONCLUSIVE


def test_rules_refuse_what_cannot_be_decided():
    with pytest.raises(ValueError, match="effect > 0"):
        Rule("superiority", effect=-1.0)
    with pytest.raises(ValueError, match="margin > 0"):
        Rule("equivalence")
    with pytest.raises(ValueError, match="unknown rule kind 'better'"):
        Rule("better", effect=1.0)
    assert "95% interval lies inside" in EQUIVALENCE.text() and "below the paper's effect (+1 points)" in SUPERIORITY.text()


@pytest.mark.parametrize("rule", [SUPERIORITY, EQUIVALENCE], ids=["superiority", "equivalence"])
def test_simulated_error_rates_meet_the_goals(rule):
    # 3 runs, sd between runs 0.3, sentence part 0.15 points: precise enough for the paper's effect of 1
    cal = simulate(rule, n_runs=3, sd_runs=0.3, se_sentences=0.15, draws=2000, seed=1)
    assert cal["false_reproduced"] <= 0.05 and cal["false_not_reproduced"] <= 0.05
    assert cal["rates"]["opposite"][REPRODUCED] == 0.0
    assert cal["power"] > 0.5


def test_simulation_at_a_hopeless_size_says_inconclusive_not_wrong():
    cal = simulate(SUPERIORITY, n_runs=3, sd_runs=3.0, se_sentences=1.0, draws=1000)
    assert cal["rates"]["paper"][INCONCLUSIVE] > 0.9 and cal["false_reproduced"] <= 0.05
    one = simulate(SUPERIORITY, n_runs=1, sd_runs=0.0, se_sentences=0.1, draws=100)
    assert one["rates"]["paper"][ONE_RUN] == 1.0
