"""Bootstrap intervals over sentences: counts equal the metric, intervals behave, paired differences are paired."""

import numpy as np
import pytest
from seqeval.metrics import f1_score
from seqeval.scheme import IOB2

from headprune_core.methods.evaluate import score_predictions
from headprune_core.methods.uncertainty import (
    bootstrap_ci,
    describe_diff,
    metric_of,
    paired_bootstrap,
    resamples,
    run_estimate,
)

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def _random_bio(rng, n):
    """n sentences of random label ids, including ill-formed I- tags that strict IOB2 does not count."""
    return [list(rng.integers(0, len(LABELS), size=rng.integers(1, 12))) for _ in range(n)]


def test_entity_counts_give_seqeval_strict_micro_f1():
    rng = np.random.default_rng(3)
    gold = _random_bio(rng, 60)
    pred = [[g if rng.random() < 0.7 else int(rng.integers(0, len(LABELS))) for g in s] for s in gold]
    res = score_predictions(gold, pred, LABELS, kind="token")
    ref = 100 * f1_score([[LABELS[i] for i in s] for s in gold], [[LABELS[i] for i in s] for s in pred],
                         mode="strict", scheme=IOB2, zero_division=0)
    assert res["metric"] == "entity F1"
    assert metric_of(res["units"]) == pytest.approx(ref, abs=1e-9) == pytest.approx(res["score"], abs=1e-9)
    assert len(res["units"]["tp"]) == 60
    assert res["ci"][0] <= res["score"] <= res["ci"][1]


def test_accuracy_counts_for_token_and_sentence_tasks():
    gold = [[0, 1, 1], [2], [0, 0]]
    pred = [[0, 1, 0], [2], [1, 1]]
    res = score_predictions(gold, pred, ["A", "B", "C"], kind="token")
    assert res["units"] == {"correct": [2, 1, 0], "total": [3, 1, 2]}
    assert metric_of(res["units"]) == pytest.approx(res["score"]) == pytest.approx(50.0)
    res = score_predictions([0, 1, 1, 0], [0, 1, 0, 0], ["neg", "pos"], kind="sentence")
    assert res["units"] == {"correct": [1, 1, 0, 1], "total": [1, 1, 1, 1]}
    assert res["score"] == 75.0


def test_interval_shrinks_with_more_sentences_and_is_reproducible():
    rng = np.random.default_rng(0)
    def units(n):
        return {"correct": list(rng.binomial(10, 0.8, size=n)), "total": [10] * n}
    small, big = bootstrap_ci(units(50)), bootstrap_ci(units(2000))
    assert small["low"] < small["score"] < small["high"]
    assert (big["high"] - big["low"]) < 0.4 * (small["high"] - small["low"])  # ~ 1/sqrt(40) = 0.16
    u = units(100)
    assert bootstrap_ci(u) == bootstrap_ci(u)
    # a binomial proportion of 1000 tokens at 0.8: the normal interval is +-2.5 points
    width = bootstrap_ci({"correct": [1] * 800 + [0] * 200, "total": [1] * 1000})
    assert width["high"] - width["low"] == pytest.approx(2 * 1.96 * 100 * np.sqrt(0.8 * 0.2 / 1000), rel=0.15)


def test_paired_bootstrap_sees_a_small_consistent_gain_that_unpaired_intervals_miss():
    rng = np.random.default_rng(1)
    n = 200
    total = rng.integers(5, 30, size=n)
    base = rng.binomial(total, rng.uniform(0.5, 1.0, size=n))  # sentences differ a lot in difficulty
    better = np.minimum(total, base + (rng.random(n) < 0.3))  # one more correct token in 30% of sentences
    a = {"correct": list(base), "total": list(total)}
    b = {"correct": list(better), "total": list(total)}
    ca, cb = bootstrap_ci(a), bootstrap_ci(b)
    assert cb["low"] < ca["high"]  # the unpaired intervals overlap ...
    diff = paired_bootstrap(a, b)
    assert diff["diff"] == pytest.approx(metric_of(b) - metric_of(a))
    assert diff["distinguishable"] and diff["low"] > 0 and diff["p"] < 0.01  # ... the paired one does not
    same = paired_bootstrap(a, a)
    assert same["diff"] == 0 and same["low"] == same["high"] == 0 and not same["distinguishable"]
    assert "not distinguishable" in describe_diff(same)
    noise = {"correct": list(np.maximum(0, base - (rng.random(n) < 0.5) + (rng.random(n) < 0.5))),
             "total": list(total)}
    noise["correct"] = list(np.minimum(noise["correct"], total))
    assert not paired_bootstrap(a, noise)["distinguishable"]


def test_seeds_are_averaged_on_the_same_resamples():
    rng = np.random.default_rng(2)
    runs = [{"correct": list(rng.binomial(10, p, size=80)), "total": [10] * 80} for p in (0.7, 0.75, 0.8)]
    res = bootstrap_ci(runs)
    assert res["seeds"] == 3 and res["score"] == pytest.approx(np.mean([metric_of(r) for r in runs]))
    assert res["spread"] == [min(res["per_seed"]), max(res["per_seed"])]
    assert res["low"] < res["score"] < res["high"]
    with pytest.raises(ValueError, match="different sentences"):
        bootstrap_ci([runs[0], {"correct": [1], "total": [1]}])
    with pytest.raises(ValueError, match="same sentences"):
        paired_bootstrap(runs[0], {"correct": [1], "total": [1]})
    with pytest.raises(ValueError, match="not per-sentence metric counts"):
        bootstrap_ci({"score": 1.0})
    assert resamples(5, n_boot=3, seed=4).shape == (3, 5)


def test_resampling_seeds_widens_intervals_by_the_spread_between_training_runs():
    """Two methods whose runs differ only by run-to-run noise: on many sentences the sentence-only paired
    interval calls the gap real, the two-level one (seeds resampled too) does not; one run is unchanged."""
    rng = np.random.default_rng(5)
    n = 1000
    total = np.full(n, 10)
    def run(p):
        return {"correct": list(rng.binomial(total, p)), "total": list(total)}
    a = [run(p) for p in (0.70, 0.80, 0.72)]  # alone: three seeds that differ by up to 10 points
    b = [run(p) for p in (0.79, 0.71, 0.80)]  # the method: the same spread, a mean 2.7 points higher
    plain, both = paired_bootstrap(a, b), paired_bootstrap(a, b, resample_seeds=True)
    assert plain["diff"] == both["diff"]
    assert plain["distinguishable"] and plain["high"] - plain["low"] < 2.0
    assert not both["distinguishable"] and both["high"] - both["low"] > 5.0
    ca, cb = bootstrap_ci(a), bootstrap_ci(a, resample_seeds=True)
    assert ca["score"] == cb["score"] and (cb["high"] - cb["low"]) > 5 * (ca["high"] - ca["low"])
    assert bootstrap_ci(a, resample_seeds=True) == cb  # reproducible
    same_models = paired_bootstrap(a, a, resample_seeds=True)  # a method that trained the same models
    assert same_models["diff"] == same_models["low"] == same_models["high"] == 0
    one = run(0.75)
    assert bootstrap_ci(one, resample_seeds=True) == bootstrap_ci(one)
    same = [run(0.75)] * 3  # identical runs: nothing between seeds to add
    assert bootstrap_ci(same, resample_seeds=True)["low"] == pytest.approx(bootstrap_ci(same)["low"])


def test_curve_means_pair_every_point_on_the_same_resamples():
    from headprune_core.methods.uncertainty import curve_mean_ci, paired_curves
    rng = np.random.default_rng(5)
    n = 120
    total = [10] * n

    def point(p, seeds=1):
        return [{"correct": list(rng.binomial(10, p, size=n)), "total": total} for _ in range(seeds)]

    good = {"k": [0, 4, 8], "units": [point(0.9), point(0.85), point(0.8)]}
    bad = {"k": [0, 4, 8], "units": [point(0.9, 3), point(0.7, 3), point(0.6, 3)]}
    mean = curve_mean_ci(good, [4, 8])
    assert mean["score"] == pytest.approx(np.mean([metric_of(good["units"][i][0]) for i in (1, 2)]))
    assert mean["low"] < mean["score"] < mean["high"] and mean["points"] == 2
    d = paired_curves(bad, good, [4, 8])
    expected = np.mean([metric_of(good["units"][i][0]) - np.mean([metric_of(u) for u in bad["units"][i]])
                        for i in (1, 2)])
    assert d["diff"] == pytest.approx(expected) and d["distinguishable"] and d["low"] > 0
    with pytest.raises(ValueError, match=r"no point at \[6\] heads"):
        curve_mean_ci(good, [6])


def _sentences(rng, n, p):
    total = rng.integers(5, 30, size=n)
    return total, {"correct": list(rng.binomial(total, p)), "total": list(total)}


def test_run_estimate_takes_training_runs_as_the_unit_and_pairs_sentences():
    rng = np.random.default_rng(4)
    total = rng.integers(5, 30, size=300)
    base = rng.binomial(total, rng.uniform(0.5, 1.0, size=300))
    runs = []
    for gain in (0.2, 0.35, 0.1):  # three training runs, each one token better in a share of sentences
        better = np.minimum(total, base + (rng.random(300) < gain))
        runs.append({"a": ("pos/en", {"correct": list(base), "total": list(total)}),
                     "b": ("pos/en", {"correct": list(better), "total": list(total)})})
    est = run_estimate(runs, lambda m: m["b"] - m["a"])
    per_run = [metric_of(r["b"][1]) - metric_of(r["a"][1]) for r in runs]
    assert est.runs == pytest.approx(tuple(per_run)) and est.n_runs == 3 and est.n_sentences == 300
    # the ANOVA's sentence mean square (run-mean differences over sentences) is what a paired bootstrap of the
    # run mean over sentences measures: an independent reference by resampling
    paired = paired_bootstrap([r["a"][1] for r in runs], [r["b"][1] for r in runs])
    assert np.sqrt(est.parts["sentences"]) == pytest.approx((paired["high"] - paired["low"]) / 3.92, rel=0.2)
    # the variance counts the run-by-sentence part once: it is below the runs' part plus the sentence part
    assert est.se ** 2 < est.parts["run"] + est.parts["sentences"]
    # identical results: no spread at all
    same = run_estimate(runs, lambda m: m["a"] - m["a"])
    assert same.se == 0 and same.runs == (0.0, 0.0, 0.0)


def test_run_estimate_resamples_test_sets_independently_and_refuses_mismatched_sets():
    rng = np.random.default_rng(5)
    _, en = _sentences(rng, 200, 0.8)
    # the same counts named as two test sets are two samples of sentences: the difference has a sentence part
    apart = run_estimate([{"x": ("pos/en", en), "y": ("pos/de", en)}], lambda m: m["y"] - m["x"])
    together = run_estimate([{"x": ("pos/en", en), "y": ("pos/en", en)}], lambda m: m["y"] - m["x"])
    assert apart.parts["sentences"] > 0.25 and together.se == 0
    short = {"correct": en["correct"][:50], "total": en["total"][:50]}
    with pytest.raises(ValueError, match="test set 'pos/en' have different numbers of sentences"):
        run_estimate([{"x": ("pos/en", en), "y": ("pos/en", short)}], lambda m: m["y"] - m["x"])
    with pytest.raises(ValueError, match="no training runs"):
        run_estimate([], lambda m: 0)
