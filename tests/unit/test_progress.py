"""The one progress callback: a Study reports its runs through ``on_progress``, and the terminal adapter draws
them as tqdm bars (one per count, renamed when the work's name changes)."""

from __future__ import annotations

import io

from headprune_core.base.progress import TqdmProgress, report


def test_tqdm_adapter_opens_a_bar_per_count_and_renames_on_a_new_what():
    out = io.StringIO()
    bar = TqdmProgress(file=out, mininterval=0)
    bar("scoring heads: pos/en", 0, 3)
    first = bar.bar
    bar("scoring heads: pos/en", 2, 3)
    assert bar.bar is first and first.n == 2
    bar("scoring heads: pos/de", 3, 3)  # the same count goes on under a new name
    assert bar.bar is first and first.n == 3 and first.desc.startswith("scoring heads: pos/de")
    bar("fine-tuning", 1, 10)  # a new count: a new bar
    assert bar.bar is not first and bar.bar.n == 1 and bar.bar.total == 10
    bar.close()
    assert bar.bar is None and "scoring heads: pos/de" in out.getvalue()


def test_report_calls_only_when_there_is_a_callback():
    seen = []
    report(None, "x", 1, 2)
    report(lambda *a: seen.append(a), "x", 1, 2)
    assert seen == [("x", 1, 2)]
