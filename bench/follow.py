"""Following the teacher (issue 46): a class-mode server; the teacher presents the shipped lesson and presses Next
(Back past the last step) every :data:`EVERY` seconds for :data:`SECONDS`; N students opened the class link with
``?follow=true``, each a context of one Chromium at nice 19 (the server first, as when each student's browser runs
on the student's own machine).

Measured: the delay from the teacher's click to each student's window showing that step (p50, p95; a student who
had not arrived when the teacher moved on counts as missed), and the server's CPU seconds per student per minute,
beside the same class not following (the students opened the lesson's first step and stay there).

``python -m bench.follow [CACHE]`` runs it alone; ``python -m bench --only classroom`` runs it after the walks.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

from bench.classroom import CLASS_ENV, cpu_seconds, percentile
from bench.report import Goal
from headprune_app.follow import TICK_S
from headprune_app.timing import ENV as PAGE_LOG

REPO = Path(__file__).resolve().parents[1]
LESSON = "attention-heads-across-languages"
N, EVERY, SECONDS = 30, 20.0, 300.0
QUICK = (2, 8.0, 24.0)  # in `python -m bench --quick` (CI): under 3 minutes for the three classes
LOOK_S = 0.25  # how often the bench reads each student's step (a delay is at most this much late)
SETTLE_S = 10.0  # after every student shows a step, before the measured time begins
GRACE_S = 20.0  # after the teacher's last move, how long the students get to arrive (at most the time between moves)
STEP_JS = """() => { const m = (document.querySelector('[data-testid="stMain"]') || document.body).innerText
                       .match(/step (\\d+) of (\\d+):/); return m ? Number(m[1]) : null; }"""


def moves(start: int, steps: int, count: int) -> list[int]:
    """The teacher's steps after ``start``: Next to the last, then Back to the first, and so on."""
    out, at, way = [], start, 1
    for _ in range(count):
        if not 1 <= at + way <= steps:
            way = -way
        at += way
        out.append(at)
    return out


def delays(clicks: list[tuple[float, int]], seen: list[list[tuple[float, int]]], end: float) -> dict:
    """For each of the teacher's clicks (time, step) and each student's changes of the step shown (time, step):
    the seconds until the student showed that step, before the teacher's next click (or ``end``); else missed."""
    out, missed = [], 0
    for i, (t, k) in enumerate(clicks):
        until = clicks[i + 1][0] if i + 1 < len(clicks) else end
        for changes in seen:
            arrived = next((when for when, step in changes if step == k and t <= when < until), None)
            if arrived is None:
                missed += 1
            else:
                out.append(arrived - t)
    return {"delays": out, "missed": missed, "pairs": len(clicks) * len(seen)}


def server_seen(runs: list[dict]) -> list[list[tuple[float, int]]]:
    """From the server's page log (:mod:`headprune_app.timing`): for each student's session, the (end, step) of
    each script run whose address names a step of the lesson; the teacher's runs left out."""
    by: dict[str, list[tuple[float, int]]] = {}
    for r in runs:
        if not r.get("teacher") and r.get("step", "").startswith(f"{LESSON}:"):
            by.setdefault(r["session"], []).append((r["end"], int(r["step"].split(":")[1])))
    return [sorted(v) for v in by.values()]


async def _students(url: str, n: int, follow: bool, stop: Path, ready: Path,
                    grace: float) -> list[list[tuple[float, int]]]:
    from playwright.async_api import async_playwright

    from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS

    query = "follow=true" if follow else f"lesson={LESSON}&step=1"
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        pages = []
        for _ in range(n):  # students arrive one after another
            context = await browser.new_context(viewport={"width": 1280, "height": 720})
            context.set_default_timeout(600_000)
            page = await context.new_page()
            await page.goto(f"{url}/?{query}", wait_until="domcontentloaded")
            pages.append(page)
        for page in pages:
            await page.wait_for_function(STEP_JS, polling=500, timeout=600_000)  # every window shows a step
        ready.write_text("ready")
        seen: list[list[tuple[float, int]]] = [[] for _ in pages]
        done_at = None
        while done_at is None or time.time() < done_at:
            if done_at is None and stop.exists():
                done_at = time.time() + grace
            for i, page in enumerate(pages):
                step = await page.evaluate(STEP_JS)
                if step is not None and (not seen[i] or seen[i][-1][1] != step):
                    seen[i].append((time.time(), step))
            await asyncio.sleep(LOOK_S)
        await browser.close()
    return seen


def _teacher(pw, url: str, title: str):
    """The teacher's window: unlocked, presenting the lesson at step 1."""
    from tests.helpers import browser

    chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, args=browser.CHROMIUM_ARGS, headless=True)
    page = chromium.new_context(viewport={"width": 1280, "height": 720}).new_page()
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("h1", timeout=300_000)
    browser.wait_idle(page, 300_000)
    browser.unlock(page, CLASS_ENV["HEADPRUNE_TEACHER_KEY"])
    browser.present_lesson(page, title)
    return page


def measure(cache: Path, work: Path, *, n: int, follow: bool, every: float, seconds: float) -> dict:
    """One class on a fresh class-mode server: the students (following or not); the teacher staying on step 1 for
    ``seconds / 5`` (following, what the windows' looks cost alone), then the teacher's moves. Written to
    ``work`` as it ends (a long run keeps what it measured)."""
    from playwright.sync_api import sync_playwright

    from headprune_core.plans.lessons import available
    from tests.helpers import browser

    lesson = available(cache)[0][LESSON]
    tag = f"{n}-{'following' if follow else 'staying'}"
    stop, ready, out = (work / f"follow-{tag}.{name}" for name in ("stop", "ready", "json"))
    for path in (stop, ready, out):
        path.unlink(missing_ok=True)
    procs: list[subprocess.Popen] = []
    page_log = work / f"script-runs-follow-{tag}.jsonl"
    page_log.unlink(missing_ok=True)
    with browser.streamlit_server(cache, log=work / f"streamlit-follow-{tag}.log", on_start=procs.append,
                                  timeout=180, env={**CLASS_ENV, PAGE_LOG: str(page_log)}) as url, \
            sync_playwright() as pw:
        teacher = _teacher(pw, url, lesson.title)
        students = subprocess.Popen(["nice", "-n", "19", sys.executable, "-m", "bench.follow", "--students", url,
                                     str(n), "1" if follow else "0", str(stop), str(ready), str(out),
                                     str(min(GRACE_S, every))], cwd=REPO)
        while not ready.exists():
            if students.poll() is not None:
                raise RuntimeError(f"the students' browsers ended before the class began (exit {students.returncode})")
            time.sleep(0.5)
        time.sleep(min(SETTLE_S, every / 2))  # the students' first page runs end (the step line comes first)
        pid = procs[0].pid
        cpu0, wall0 = cpu_seconds(pid), time.time()
        time.sleep(seconds / 5)
        still_cpu, still_wall = cpu_seconds(pid) - cpu0, time.time() - wall0
        cpu0, wall0 = cpu_seconds(pid), time.time()
        clicks, at = [], 1
        for k in moves(1, len(lesson.steps), int(seconds // every)):
            button, at = ("lesson_next" if k > at else "lesson_back"), k
            clicks.append((time.time(), k))
            teacher.locator(f".st-key-{button} button").first.click()
            teacher.wait_for_function(f"() => ({STEP_JS})() === {k}", timeout=600_000)
            time.sleep(max(0.0, clicks[-1][0] + every - time.time()))
        cpu, wall = cpu_seconds(pid) - cpu0, time.time() - wall0
        stop.write_text("stop")
        students.wait(timeout=600)
        end = time.time()
    seen = [[tuple(c) for c in changes] for changes in json.loads(out.read_text())]
    runs = [json.loads(line) for line in page_log.read_text().splitlines()] if page_log.exists() else []
    found = delays(clicks, seen, end) if follow else {"delays": [], "missed": 0, "pairs": 0}
    served = delays(clicks, server_seen(runs), end) if follow else {"delays": [], "missed": 0, "pairs": 0}
    res = {"n": n, "follow": follow, "moves": len(clicks), "wall_s": wall, "server_cpu_s": cpu,
           "cpu_per_student_minute": cpu / n / (wall / 60), "still_s": still_wall, "still_cpu_s": still_cpu,
           "still_cpu_per_student_minute": still_cpu / n / (still_wall / 60), **found,
           "p50": percentile(found["delays"], 50), "p95": percentile(found["delays"], 95),
           "max": max(found["delays"], default=float("nan")), "server_delays": served["delays"],
           "server_missed": served["missed"], "server_pairs": served["pairs"],
           "server_p50": percentile(served["delays"], 50), "server_p95": percentile(served["delays"], 95)}
    (work / f"follow-{tag}-result.json").write_text(json.dumps(res))
    return res


def run(cache: Path, work: Path, *, quick: bool = False) -> tuple[list[list], list[Goal], list[str]]:
    """The two classes (following, not following): table rows (:data:`COLUMNS`),
    the goal and the notes of the classroom section (the last note is the table)."""
    n, every, seconds = QUICK if quick else (N, EVERY, SECONDS)
    on, off = (measure(cache, work, n=n, follow=follow, every=every, seconds=seconds) for follow in (True, False))
    rows = [[f"{r['n']} {'following' if r['follow'] else 'not following'}", r["moves"],
             *((f"{r['pairs'] - r['missed']}/{r['pairs']}", *(round(r[q], 1) for q in ("p50", "p95", "max")),
                f"{r['server_pairs'] - r['server_missed']}/{r['server_pairs']}",
                *(round(r[q], 1) for q in ("server_p50", "server_p95")))
               if r["follow"] else ["-"] * 7),
             round(r["server_cpu_s"], 1), round(r["cpu_per_student_minute"], 2),
             round(r["still_cpu_per_student_minute"], 2)] for r in (on, off)]
    goals = [Goal(f"p95 delay from the teacher's Next to a following student's step ({n} students)", "< 5 s",
                  f"{on['p95']:.1f} s ({on['missed']} of {on['pairs']} missed)",
                  (on["p95"] < 5 and on["missed"] == 0) if not quick else None),
             Goal(f"p95 delay from the teacher's Next to the server's run of that step for a follower ({n})",
                  "< 5 s", f"{on['server_p95']:.1f} s ({on['server_missed']} of {on['server_pairs']} missed)",
                  (on["server_p95"] < 5 and on["server_missed"] == 0) if not quick else None)]
    notes = [f"Following (issue 46, `python -m bench.follow`): a class-mode server, the teacher presenting the "
             f"lesson {LESSON!r} and pressing Next (Back past the last step) every {every:.0f} s for "
             f"{seconds:.0f} s; {n} students in one Chromium at nice 19, each a context, opened with ?follow=true "
             f"(or, not following, on the lesson's first step). A delay runs from the teacher's click to the "
             f"student's window showing that step (read every {LOOK_S} s); a student not there before the "
             f"teacher's next click counts as missed. The browsers of the whole class share this machine's cores "
             f"with the server, so the window's delay holds the drawing of {n} pages at once; 'served' times the "
             f"same from the server's page log (HEADPRUNE_PAGE_LOG): the end of the student's script run for that "
             f"step, what a student's own machine then draws. Server CPU: the streamlit process's user+system "
             f"seconds over the teacher's moves, per student per minute: {on['cpu_per_student_minute']:.2f} s "
             f"following, {off['cpu_per_student_minute']:.2f} s not following. Before the first move the teacher "
             f"stays on step 1 for {seconds / 5:.0f} s: then the following windows' looks (every {TICK_S:.0f} s) cost "
             f"{on['still_cpu_per_student_minute']:.2f} s per student per minute, against "
             f"{off['still_cpu_per_student_minute']:.2f} s for windows that do not follow; the rest of following's "
             "cost is each follower's page run at each of the teacher's steps."]
    table = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    table += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return rows, goals, [*notes, "\n  ".join(table)]


COLUMNS = ["class", "teacher's moves", "arrived", "delay p50 s", "delay p95 s", "delay max s",
           "served", "server delay p50 s", "server delay p95 s", "server CPU s",
           "server CPU s / student / min", "same, teacher still"]


if __name__ == "__main__":
    if sys.argv[1] == "--students":  # python -m bench.follow --students URL N FOLLOW STOP READY OUT GRACE (niced)
        url, n, follow, stop, ready, out, grace = sys.argv[2:9]
        seen = asyncio.run(_students(url, int(n), follow == "1", Path(stop), Path(ready), float(grace)))
        Path(out).write_text(json.dumps(seen))
    else:  # python -m bench.follow [CACHE] [--quick]: both classes, printed as JSON lines
        import tempfile

        from headprune_core.base.cache import cache_root

        args = [a for a in sys.argv[1:] if a != "--quick"]
        where = Path(args[0]) if args else cache_root()
        rows, goals, notes = run(where, Path(tempfile.mkdtemp(prefix="headprune-bench-follow-")),
                                 quick="--quick" in sys.argv)
        print(json.dumps({"columns": COLUMNS, "rows": rows, "goals": [g.__dict__ for g in goals], "notes": notes},
                         indent=1))
