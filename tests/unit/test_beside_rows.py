"""One reported number beside ours (findings/beside.py, BesideRow): the difference, our 95% interval and whether
the paper's number lies inside it, as the table shows them; without an interval (one run) nothing is claimed."""

from __future__ import annotations

import pytest

from headprune_core.findings.beside import BesideRow, beside_markdown, beside_rows
from headprune_core.findings.paper_numbers import select
from headprune_core.methods.inference import Estimate


def _cell() -> object:
    (n,) = [n for n in select(paper="ma2021", where="Table 5", task="NER", row="Max-Pruning",
                              setting="cross-lingual", column="EN->ZH")]
    return n  # -1.74 F1 points


def test_inside_and_outside_our_interval():
    n = _cell()
    near = BesideRow(n, "computed", Estimate((-1.0, -2.0, -1.5), se_sentences=0.2, n_sentences=500))
    low, high = near.interval
    assert low < -1.74 < high and near.inside is True
    assert near.diff == pytest.approx(-1.5 - (-1.74))
    far = BesideRow(n, "computed", Estimate((3.0, 3.2, 3.1), se_sentences=0.05, n_sentences=500))
    assert far.inside is False and far.diff == pytest.approx(3.1 + 1.74)
    one = BesideRow(n, "computed", Estimate((0.5,)))
    assert one.interval is None and one.inside is None and one.cells()["ours"] == "0.50 (one run: no interval)"
    cells = near.cells()
    assert cells["paper"] == "-1.74 F1 points" and cells["paper inside ours"] == "yes"
    assert cells["ours"].startswith("-1.50 [") and cells["difference"] == "+0.24"
    missing = BesideRow(n, "missing: prune reverse (0, 1, 2) then re-fine-tune ner (cross)")
    assert missing.cells()["ours"] == "-" and missing.inside is None
    text = beside_markdown([missing, far, near])
    assert text.index("3.10") < text.index("missing: prune")  # computed rows first
    assert "2 of 3 reported numbers computed; the paper's number lies inside our 95% interval in 1 of 2" in text
    # a job name from the sweep as run (a file in cache/sweeps) cannot break the table: its pipe is escaped
    odd = BesideRow(n, "missing: fine-tune a|b\nnext")
    (line,) = [x for x in beside_markdown([odd]).splitlines() if "a\\|b" in x]
    assert line.count(" | ") == len(line.split(" | ")) - 1 and "next" in line and line.count("|") - line.count(
        "\\|") == 11  # 10 columns: 11 bars, the escaped one aside


def test_an_unknown_plan_is_named():
    from headprune_core.runs.store import Store
    with pytest.raises(ValueError, match="no paper plan 'ma2099'; known: ma2021-pos"):
        beside_rows("ma2099", Store())
