"""A mean change pooled over experiments trained apart (findings/evidence.py: pooled_change), as the paper-beside-
ours table reads Ma et al.'s averages over three source languages: the training seed is the unit, so the interval
is Student's t on the per-seed means over every experiment (scipy's, when the test sentences add no spread), and
an experiment's seed missing elsewhere leaves that seed out."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from headprune_core.findings.evidence import pooled_change


class _Experiment:
    """What pooled_change reads of a re-fine-tuning: seeds, per-(level, seed, language) units and test sets. Every
    sentence of a (level, seed, language) has the same accuracy, so only the training runs vary."""

    def __init__(self, name: str, accuracy: dict[tuple[str, int, str], float], n: int = 40):
        self.job = SimpleNamespace(what=name)
        self.seeds = sorted({s for _, s, _ in accuracy})
        self._acc, self._n = accuracy, n

    def test_set(self, lang: str) -> str:
        return f"pos/{lang}"

    def units(self, label: str, seed: int, lang: str) -> dict:
        correct = round(self._acc[(label, seed, lang)] * 10)
        return {"correct": [correct] * self._n, "total": [10] * self._n}


def _experiments(rng, seeds=(13, 14, 15)) -> list[tuple[_Experiment, list[str]]]:
    out = []
    for i, langs in enumerate((["zh", "ar"], ["en", "ar"], ["en", "zh"])):  # three sources, their targets
        acc = {}
        for s in seeds:
            for g in langs:
                acc[("0", s, g)] = rng.integers(3, 7) / 10
                acc[("2", s, g)] = rng.integers(3, 8) / 10
        out.append((_Experiment(f"source {i}", acc), langs))
    return out


def test_the_pooled_interval_is_students_t_on_the_per_seed_means():
    rng = np.random.default_rng(0)
    parts = _experiments(rng)
    est = pooled_change([(ex, langs, lambda s: "2") for ex, langs in parts])
    per_seed = [np.mean([100 * (ex._acc[("2", s, g)] - ex._acc[("0", s, g)]) for ex, langs in parts for g in langs])
                for s in (13, 14, 15)]
    assert list(est.runs) == pytest.approx(per_seed)
    assert est.diff == pytest.approx(np.mean(per_seed)) and est.df == pytest.approx(2)
    low, high = stats.t.interval(0.95, 2, loc=np.mean(per_seed), scale=stats.sem(per_seed))
    assert est.interval() == pytest.approx((low, high))
    # each experiment alone is its own change: the pool's mean is their mean (equal numbers of languages)
    alone = [pooled_change([(ex, langs, lambda s: "2")]) for ex, langs in parts]
    assert est.diff == pytest.approx(np.mean([a.diff for a in alone]))


def test_a_seed_one_experiment_lacks_is_left_out_and_no_common_seed_is_an_error():
    rng = np.random.default_rng(1)
    parts = _experiments(rng)
    short = _experiments(rng, seeds=(13, 14))[0]
    est = pooled_change([(ex, langs, lambda s: "2") for ex, langs in parts + [short]])
    assert est.n_runs == 2
    apart = _experiments(rng, seeds=(99,))[0]
    with pytest.raises(ValueError, match="share no training seed: source 0: \\[13, 14, 15\\]; source 0: \\[99\\]"):
        pooled_change([(parts[0][0], parts[0][1], lambda s: "2"), (apart[0], apart[1], lambda s: "2")])
