"""Estimators broken on purpose, for the tests that must fail on them: each a context manager that patches
:mod:`headprune_core.methods.inference` (every interval, verdict and simulation reads these two functions there)."""

from __future__ import annotations

from contextlib import contextmanager
from unittest import mock

from scipy import stats

from headprune_core.methods import inference

_crossed = inference.crossed_parts


def _with_var(change):
    def broken(stat, blocks):
        parts = _crossed(stat, blocks)
        return {**parts, "var": change(parts)}
    return broken


BREAKS = {
    # the run-by-sentence part counted twice: the runs' spread plus the sentences' part (the last round's fault)
    "variance counted twice": _with_var(lambda p: p["run"] + p["sentences"]),
    "run part ignored": _with_var(lambda p: p["sentences"]),
    "sentence part ignored": _with_var(lambda p: p["run"]),
    "variance 25% too small": _with_var(lambda p: 0.75 * p["var"]),
}


@contextmanager
def broken(name: str):
    """Inside the block, ``inference`` computes with the fault ``name`` (a key of :data:`BREAKS`, or
    ``"normal quantile for t"``)."""
    if name == "normal quantile for t":
        with mock.patch.object(inference, "_t", lambda q, df: stats.norm.ppf(q) + 0 * df):
            yield
        return
    with mock.patch.object(inference, "crossed_parts", BREAKS[name]):
        yield


NAMES = (*BREAKS, "normal quantile for t")
