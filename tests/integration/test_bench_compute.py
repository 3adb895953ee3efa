"""``python -m bench --quick`` less its classroom section: scoring, masks, pruning, the panel's estimators, the demo
commands, a big corpus and the Findings section run on the real model at small sizes (so the benchmark code cannot
rot), and what each must hold whatever the timing noise does holds (quick judges no timing goal). Nothing here times
a class, so it runs two at a time with the other slow computations; the classroom section is ``test_bench.py``."""

from __future__ import annotations

import pytest

from bench.__main__ import SECTIONS
from tests.helpers.bench_run import check_written, run_quick

pytestmark = [pytest.mark.slow, pytest.mark.parallel]
COMPUTE = ("scoring", "masks", "pruning", "panel", "demo", "bigdata", "findings")


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-compute")
    return out, run_quick(out, ",".join(COMPUTE))


def test_every_section_is_written(quick):
    out, sections = quick
    assert set(sections) == set(COMPUTE) and set(COMPUTE) | {"classroom"} == set(SECTIONS)  # none left out
    check_written(out, sections)


def test_scoring_maps_agree_with_the_reference(quick):
    goals = {g["what"]: g for g in quick[1]["scoring"]["goals"]}
    assert goals["Spearman, gate_grad vs reference (same batches)"]["met"] is True
    assert goals["Spearman, gate_grad one sentence a batch vs bertology's protocol"]["met"] is True


def test_pruned_parameter_counts_are_exact(quick):
    rows = quick[1]["pruning"]["rows"]
    assert {r[0] for r in rows} == {"sdpa", "eager"} and all(r[-1] is True for r in rows)
    for r in rows:
        assert r[7] > 1.0  # FLOP limit of removing half the heads


def test_demo_commands_ran_cold_then_warm(quick):
    rows = quick[1]["demo"]["rows"]
    assert [r[0] for r in rows] == ["cold", "cold", "warm", "warm"]
    assert all(r[2] > 0 and r[3] > 100 for r in rows)  # seconds, and a Python process with torch is > 100 MiB


def test_a_big_corpus_is_registered_and_scored_with_its_peaks(quick):
    rows = {r[0]: r for r in quick[1]["bigdata"]["rows"]}
    assert list(rows)[:2] == ["register 20,000 sentences", "register them from a Hub-format copy"]
    assert len(rows) == 5
    assert all(r[2] > 0 and r[3] > 100 for r in rows.values())
    # reading the registered corpus again (everything cached) loads no model: far below a run that trains
    assert rows["score them again (cached: loading only)"][3] < rows["fine-tune and score them"][3] / 2


def test_findings_reads_every_card(quick):
    from headprune_core.findings.hypotheses import HYPOTHESES
    section = quick[1]["findings"]
    assert [r[0] for r in section["rows"]] == [h.id for h in HYPOTHESES]
    # quick computes nothing: every card of the empty cache is not computed yet, and no goal is judged
    assert all(r[1] == "not computed yet" for r in section["rows"])
    assert all(g["met"] is None for g in section["goals"])


