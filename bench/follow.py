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
import urllib.parse
from pathlib import Path

from bench.classroom import CLASS_ENV, cpu_seconds, percentile
from bench.report import Goal
from headprune_app.follow import TICK_S
from headprune_app.timing import ENV as PAGE_LOG

REPO = Path(__file__).resolve().parents[1]
LESSON = "attention-heads-across-languages"
N, EVERY, SECONDS = 30, 20.0, 300.0
QUICK = (2, 10.0, 20.0)  # `python -m bench --quick` (CI): two classes (the full run adds the one not following),
# two moves each, 10 s apart: a step's page runs arrive before the next move on a loaded CI machine too
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


async def _protocol_student(url: str, follow: bool, seen: list[tuple[float, int]], state: dict) -> None:
    """One student as Streamlit's own browser code talks to the server, without drawing: opens the class link,
    then sends the following fragment's look every interval it was given (``auto_rerun``), one at a time, with
    the page and address the server last named. ``seen``: (time, step) whenever a script run ends on a new step
    of the address: a whole page run ended, what the student's window has then drawn (not the look that
    switched to it). Stops when ``state["stop"]``."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.asyncio.client import connect

    from tests.helpers.hostile import rerun_message, stream_url

    query = "follow=true" if follow else f"lesson={LESSON}&step=1"
    page_hash, look, every, busy, due, sent = "", "", 0.0, True, float("inf"), 0.0
    async with connect(stream_url(url), subprotocols=["streamlit"], origin=url, max_size=None,
                       ping_interval=None) as ws:
        await ws.send(rerun_message(query, page_hash=page_hash))
        while not state["stop"]:
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=max(0.01, min(due - time.monotonic(), 0.5)))
            except TimeoutError:
                raw = None
            if raw is not None:
                msg = ForwardMsg()
                msg.ParseFromString(raw)
                kind = msg.WhichOneof("type")
                if kind == "new_session":
                    page_hash = msg.new_session.page_script_hash or page_hash
                elif kind == "page_info_changed":
                    query = msg.page_info_changed.query_string
                elif kind == "auto_rerun":  # a full run (re)names the fragment that looks
                    look, every = msg.auto_rerun.fragment_id, msg.auto_rerun.interval
                    due = min(due, time.monotonic() + every)
                elif kind == "script_finished":
                    busy = False
                    step = dict(urllib.parse.parse_qsl(query)).get("step", "")
                    whole = msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY  # not a look that switched
                    if whole and step.isdigit() and (not seen or seen[-1][1] != int(step)):
                        seen.append((time.time(), int(step)))
            if look and time.monotonic() >= due and (not busy or time.monotonic() >= sent + 10 * every):
                busy, sent, due = True, time.monotonic(), time.monotonic() + every  # a look dropped: again
                await ws.send(rerun_message(query, page_hash=page_hash, fragment=look))


async def _protocol_students(url: str, n: int, follow: bool, stop: Path, ready: Path,
                             grace: float) -> list[list[tuple[float, int]]]:
    """:func:`_students` as protocol clients (:func:`_protocol_student`): the server's part alone, as when each
    student's browser runs on the student's own machine."""
    seen: list[list[tuple[float, int]]] = [[] for _ in range(n)]
    state = {"stop": False}
    tasks = []
    for i in range(n):  # students arrive one after another
        tasks.append(asyncio.create_task(_protocol_student(url, follow, seen[i], state)))
        await asyncio.sleep(0.5)
    while not all(seen) and not stop.exists():  # every student shows a step
        await asyncio.sleep(0.5)
    ready.write_text("ready")
    while not stop.exists():
        await asyncio.sleep(LOOK_S)
    await asyncio.sleep(grace)
    state["stop"] = True
    await asyncio.gather(*tasks)
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


def measure(cache: Path, work: Path, *, n: int, follow: bool, every: float, seconds: float,
            clients: str = "protocol") -> dict:
    """One class on a fresh class-mode server: the students (following or not; ``clients``: ``protocol``,
    :func:`_protocol_students`, or ``chromium``, :func:`_students`); the teacher staying on step 1 for
    ``seconds / 5`` (following, what the windows' looks cost alone), then the teacher's moves. Written to
    ``work`` as it ends (a long run keeps what it measured)."""
    from playwright.sync_api import sync_playwright

    from headprune_core.plans.lessons import available
    from tests.helpers import browser

    lesson = available(cache)[0][LESSON]
    tag = f"{n}-{'following' if follow else 'staying'}-{clients}"
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
                                     str(min(GRACE_S, every)), clients], cwd=REPO)
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
    res = {"n": n, "follow": follow, "clients": clients, "moves": len(clicks), "wall_s": wall, "server_cpu_s": cpu,
           "cpu_per_student_minute": cpu / n / (wall / 60), "still_s": still_wall, "still_cpu_s": still_cpu,
           "still_cpu_per_student_minute": still_cpu / n / (still_wall / 60), **found,
           "p50": percentile(found["delays"], 50), "p95": percentile(found["delays"], 95),
           "max": max(found["delays"], default=float("nan")), "server_delays": served["delays"],
           "server_missed": served["missed"], "server_pairs": served["pairs"],
           "server_p50": percentile(served["delays"], 50), "server_p95": percentile(served["delays"], 95)}
    (work / f"follow-{tag}-result.json").write_text(json.dumps(res))
    return res


def run(cache: Path, work: Path, *, quick: bool = False) -> tuple[list[list], list[Goal], list[str]]:
    """Three classes: following and not following as protocol clients (the server's part, as when every student
    has a machine), and following in Chromium windows that share this machine's cores with the server: table rows
    (:data:`COLUMNS`), the goals and the notes of the classroom section (the last note is the table)."""
    n, every, seconds = QUICK if quick else (N, EVERY, SECONDS)
    classes = ((True, "protocol"), (True, "chromium")) if quick else \
        ((True, "protocol"), (False, "protocol"), (True, "chromium"))  # --quick: the baseline in the full run only
    found = [measure(cache, work, n=n, follow=follow, every=every, seconds=seconds, clients=clients)
             for follow, clients in classes]
    on, windows, off = found[0], found[-1], (None if quick else found[1])
    rows = [[f"{r['n']} {'following' if r['follow'] else 'not following'}, {LABEL[r['clients']]}", r["moves"],
             *((f"{r['pairs'] - r['missed']}/{r['pairs']}", *(round(r[q], 1) for q in ("p50", "p95", "max")),
                f"{r['server_pairs'] - r['server_missed']}/{r['server_pairs']}",
                *(round(r[q], 1) for q in ("server_p50", "server_p95")))
               if r["follow"] else ["-"] * 7),
             round(r["server_cpu_s"], 1), round(r["cpu_per_student_minute"], 2),
             round(r["still_cpu_per_student_minute"], 2)] for r in found]
    goals = [Goal(f"p95 delay from the teacher's Next to a following student's step ({n} students, each with "
                  "a machine: protocol clients)", "< 5 s", f"{on['p95']:.1f} s ({on['missed']} of {on['pairs']} "
                  "missed)", (on["p95"] < 5 and on["missed"] == 0) if not quick else None),
             Goal(f"the same, {n} Chromium windows on the server's own 2 cores (informative: a class's browsers "
                  "are on the students' machines)", "-", f"{windows['p95']:.1f} s ({windows['missed']} of "
                  f"{windows['pairs']} missed)", None)]
    notes = [f"Following (issue 46, `python -m bench.follow`): a class-mode server, the teacher presenting the "
             f"lesson {LESSON!r} in Chromium and pressing Next (Back past the last step) every {every:.0f} s for "
             f"{seconds:.0f} s; {n} students opened the class link with ?follow=true (or, not following, the "
             f"lesson's first step). 'protocol': each student a client of Streamlit's websocket protocol that "
             f"does what the browser does (the following fragment's look every {TICK_S:.0f} s, the page and address "
             f"the server names) but draws nothing, all at nice 19: the server's part, as in a room where each "
             f"student's browser runs on the student's own machine. 'Chromium': {n} contexts of one Chromium at "
             f"nice 19 on this machine, whose drawing competes with the server for its cores. A delay runs from "
             f"the teacher's click to the student showing that step (protocol: the end of the page run for it; "
             f"Chromium: the window's step line, read every {LOOK_S} s); one not there before the teacher's next "
             f"click counts as missed. 'served' times the same from the server's page log (HEADPRUNE_PAGE_LOG). "
             f"Server CPU: the streamlit process's user+system seconds over the teacher's moves, per student per "
             f"minute: {on['cpu_per_student_minute']:.2f} s following"
             + (f", {off['cpu_per_student_minute']:.2f} s not following" if off else "") + " (protocol). Before "
             f"the first move the teacher stays on step 1 for {seconds / 5:.0f} s: then the following students' "
             f"looks cost {on['still_cpu_per_student_minute']:.2f} s per student per minute"
             + (f", against {off['still_cpu_per_student_minute']:.2f} s for students who do not follow; the rest of "
                "following's cost is each follower's page run at each of the teacher's steps." if off else
                ". (--quick: the class that does not follow, the baseline of both, runs in the full bench only.)")]
    table = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    table += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return rows, goals, [*notes, "\n  ".join(table)]


LABEL = {"protocol": "protocol clients", "chromium": "Chromium windows"}
COLUMNS = ["class", "teacher's moves", "arrived", "delay p50 s", "delay p95 s", "delay max s",
           "served", "server delay p50 s", "server delay p95 s", "server CPU s",
           "server CPU s / student / min", "same, teacher still"]


if __name__ == "__main__":
    if sys.argv[1] == "--students":  # python -m bench.follow --students URL N FOLLOW STOP READY OUT GRACE KIND (niced)
        url, n, follow, stop, ready, out, grace, kind = sys.argv[2:10]
        students = _protocol_students if kind == "protocol" else _students
        seen = asyncio.run(students(url, int(n), follow == "1", Path(stop), Path(ready), float(grace)))
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
