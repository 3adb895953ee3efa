"""``python -m bench --quick``: every benchmark section runs on the real model at small sizes (so the benchmark
code cannot rot), and what each must hold whatever the timing noise does holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick(tmp_path_factory, fixture_cache):
    out = tmp_path_factory.mktemp("bench")
    env = {**os.environ, "HEADPRUNE_BENCH_FIXTURE_CACHE": str(fixture_cache["root"])}  # built once per session
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--results", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=1800, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return out, {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}


def test_every_section_is_written(quick):
    out, sections = quick
    assert set(sections) == {"scoring", "masks", "pruning", "panel", "demo", "bigdata", "classroom", "findings"}
    text = (out / "RESULTS.md").read_text()
    for s in sections.values():
        assert f"## {s['title']}" in text and s["command"].startswith("python -m bench --quick")
        assert s["rows"] and s["machine"]


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


def test_a_small_class_walks_the_dashboard_on_one_server(quick):
    section = quick[1]["classroom"]
    rows = section["rows"]
    assert [r[0] for r in rows] == ["2", "2 (class mode)"]
    for sessions, complete, exceptions, failed, p50, p95, _, _, run50, run95, run_cpu95, rss, wall, machine, server, \
            browsers, render, warmup in rows:
        assert complete == int(sessions.split()[0]) and exceptions == failed == 0  # every walk reached its end
        assert 0 < p50 <= p95 and warmup > 0 and rss > 100 and wall > 0
        assert 0 < run50 <= run95 and run_cpu95 >= 0  # the server logged its script runs
        machine, server, browsers = (int(v.rstrip("%")) for v in (machine, server, browsers))
        assert machine >= server and machine >= browsers and server > 0 and render > 0
    # class mode: students walked on to the Findings page and changed nothing in the cache
    (changed,) = [g for g in section["goals"] if g["what"].startswith("class mode") and "cache files" in g["what"]]
    assert changed["measured"] == "0, 0, 0" and changed["met"] is True
    assert any("Server CPU on that page per student: 2 session(s)" in n for n in section["notes"])
    # the hostile class: students beside a hostile one change nothing, the server lives, the teacher unlocks
    hostile = {g["what"].split(": ", 1)[1]: g for g in section["goals"] if g["what"].startswith("hostile class")}
    assert hostile["server restarts"]["met"] is True
    assert hostile["the teacher unlocked at every try (a fresh session each minute)"]["met"] is True
    (students,) = [g for w, g in hostile.items() if w.startswith("cache files")]
    assert students["measured"] == "0, 0, 0" and students["met"] is True
    assert any(n.startswith("Hostile class:") and "Unplanned outcomes: none" in n for n in section["notes"])


def test_findings_reads_every_card(quick):
    from headprune_core.findings.hypotheses import HYPOTHESES
    section = quick[1]["findings"]
    assert [r[0] for r in section["rows"]] == [h.id for h in HYPOTHESES]
    # quick computes nothing: every card of the empty cache is not computed yet, and no goal is judged
    assert all(r[1] == "not computed yet" for r in section["rows"])
    assert all(g["met"] is None for g in section["goals"])


def test_the_class_follows_the_teacher_and_the_bench_says_what_it_cost(quick):
    classroom = quick[1]["classroom"]
    goal = next(g for g in classroom["goals"] if g["what"].startswith("p95 delay from the teacher's Next"))
    assert goal["met"] is None  # two students on a loaded machine: measured, not judged
    table = next(n for n in classroom["notes"] if n.startswith("| class |")).splitlines()
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in table[2:]]
    # --quick: the class that does not follow (the CPU baseline) runs in the full bench only
    assert [r[0] for r in rows] == ["2 following, protocol clients", "2 following, Chromium windows"]
    for row in rows:
        assert int(row[1]) == 2 and row[2].endswith("/4")  # two moves, two students: four arrivals to wait for
        assert row[6] == "4/4"  # every follower's page run for each step, in the server's page log
    assert rows[0][2] == "4/4"  # a protocol client is the server's part alone: every step arrives
    assert all(float(r[-2]) > 0 and float(r[-1]) > 0 for r in rows)  # server CPU / student / min, moving or not
