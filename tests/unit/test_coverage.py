"""The findings' 95% intervals cover on the designs the cards meet (3 runs, 100 or 900 sentences, the runs
carrying 0 to 80% of the variance; the staged design's 5 and 8 runs), and the check fails on each estimator
broken on purpose: variance counted twice, the run part or the sentence part ignored, variance 25% too small, a
normal quantile in place of t."""

from __future__ import annotations

import pytest

from headprune_core.methods import coverage
from tests.helpers.mutations import NAMES, broken


def test_the_intervals_cover_on_every_design_of_the_grid():
    rows = coverage.grid()
    assert coverage.failures(rows) == []
    by_cell = {cell: res for cell, res in rows}
    # the run part truncated at 0 is not taken as known: at 80% run share the truncated draws still cover
    assert by_cell[coverage.Cell(3, 100, 0.8)]["cover_truncated"] >= 0.9
    # and the price, stated in the module: where runs carry nothing, truncation makes the interval wide
    assert by_cell[coverage.Cell(3, 100, 0.0)]["cover"] > 0.98


@pytest.mark.parametrize("name", NAMES)
def test_the_coverage_check_fails_on_a_broken_estimator(name):
    with broken(name):
        missed = coverage.failures(coverage.grid())
    assert missed, f"the coverage check passed with the estimator broken: {name}"


def test_a_truncated_run_part_keeps_the_runs_degrees_of_freedom():
    """Three runs whose spread is below the run-by-sentence noise: the run part is set to 0, and the interval
    keeps 2 degrees of freedom (it had the sentences' 99 before)."""
    import numpy as np

    from headprune_core.methods.inference import crossed_parts

    rng = np.random.default_rng(4)
    y = rng.normal(0, 1, (3, 100))
    y -= y.mean(axis=1, keepdims=True)  # runs exactly alike: the run mean square is 0
    y += rng.normal(0, 1, (1, 100))  # sentences differ
    parts = crossed_parts(y.mean(axis=1), [y])
    assert parts["run"] < parts["residual"] and parts["df"] == 2.0
    assert parts["var"] == pytest.approx(parts["sentences"])
