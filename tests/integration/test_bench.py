"""``python -m bench --quick --only classroom``: the classroom section (a class walking the dashboard, class mode, a
hostile class, a class following the teacher) runs on the fixture cache with real browsers, and what it must hold
whatever the timing noise does holds. The other sections run in ``test_bench_compute.py``. Quick judges no timing
goal, but following the teacher must be served before the teacher's next move (10 s): beside CI's slow computations
the server's page runs came late (2 of 4 served, measured), so this runs alone (marked ``alone``)."""

from __future__ import annotations

import os

import pytest

from tests.helpers.bench_run import check_written, run_quick

pytestmark = [pytest.mark.slow, pytest.mark.alone]


@pytest.fixture(scope="module")
def quick(tmp_path_factory, fixture_cache):
    out = tmp_path_factory.mktemp("bench")
    env = {**os.environ, "HEADPRUNE_BENCH_FIXTURE_CACHE": str(fixture_cache["root"])}  # built once per session
    return out, run_quick(out, "classroom", env)


def test_the_classroom_section_is_written(quick):
    out, sections = quick
    assert set(sections) == {"classroom"}
    check_written(out, sections)


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
