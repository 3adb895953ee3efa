"""A class on one server: N browser sessions (Playwright contexts of one headless Chromium) walk the dashboard at
once, as students would: open the Overview, Head importance, move the prune slider one step, open the Head
inspector. Measured per N (1, 10, 30 by default): exceptions, time from a click to the rendered page (p50 and
p95), the server's peak resident memory, and the server's CPU time against the wall time (the browsers run on the
same cores, so the rest of the machine's time is theirs).

``python -m bench --only classroom`` runs it on the cache of this checkout (the demo, after ``scripts/start.sh``);
``--quick`` on a small fixture cache with N = 1 and 3.

Class mode (``headprune serve --class``) gets its own runs (N = 1 and 30): the walk goes on to the Findings
page, the server's CPU seconds on that page are counted per student, and the cache is listed before and after
(students may add the evaluation entries of their new masks, nothing else). Then a hostile class
(:mod:`bench.hostile`) and a class following the teacher's lesson steps (:mod:`bench.follow`).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.demo import peak_rss_mb
from bench.report import Goal, Section
from tests.helpers.browser import IDLE_JS

REPO = Path(__file__).resolve().parents[1]

SIZES = (1, 10, 30)
NICED_SIZES = (10,)
QUICK_SIZES = (2,)  # --quick (CI): one class per mode, every code path; the sizes are the full run's
NAV = {"importance": "Head importance", "prune": "Prune & evaluate", "inspector": "Head inspector",
       "findings": "Findings"}  # = page titles
CLASS_SIZES = (1, 30)
CLASS_ENV = {"HEADPRUNE_CLASS": "1", "HEADPRUNE_TEACHER_KEY": "the bench's key"}
STEP_TIMEOUT = 600_000  # ms: 30 sessions on 2 cores can make one step wait minutes
CORES = os.cpu_count() or 1  # the shares below are of every core's time (the machine's busy time counts them all)
POLL = 100  # ms between checks of a page (Playwright's default checks every animation frame: 60 times a second in
# every context, CPU that students' browsers never spend)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu_seconds() -> float:
    """Busy CPU seconds of the whole machine since boot (every core: user, nice, system, irq, softirq, steal)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    busy = fields[0] + fields[1] + fields[2] + sum(fields[5:8])
    return busy / os.sysconf("SC_CLK_TCK")


async def _wait(page, js: str) -> None:
    await page.wait_for_function(js, polling=POLL, timeout=STEP_TIMEOUT)


async def _idle(page) -> None:
    await page.wait_for_timeout(300)
    await _wait(page, IDLE_JS)
    await page.wait_for_timeout(300)
    await _wait(page, IDLE_JS)


async def walk(browser, url: str, stagger: float, findings: bool = False) -> dict:
    """One student's walk in its own context; each step's seconds from the click to the rendered page (the
    Findings page last, with ``findings``)."""
    await asyncio.sleep(stagger)
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(STEP_TIMEOUT)  # clicks and loads too: a class on 2 cores waits minutes
    page = await context.new_page()
    cdp = await context.new_cdp_session(page)  # the page's renderer reports its main thread's busy seconds
    await cdp.send("Performance.enable")
    render = 0.0
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    steps: dict[str, float] = {}
    try:
        start = time.perf_counter()
        await page.goto(url, wait_until="domcontentloaded", timeout=STEP_TIMEOUT)
        await page.wait_for_selector("h1", timeout=STEP_TIMEOUT)
        await _idle(page)
        steps["overview"] = time.perf_counter() - start
        for name in ("importance", "prune"):
            start = time.perf_counter()
            await page.locator('[data-testid="stSidebarNav"] a', has_text=NAV[name]).first.click()
            await _wait(page, f"() => [...document.querySelectorAll('h1')].some(h => h.innerText.includes("
                              f"{NAV[name]!r}))")
            await _idle(page)
            steps[name] = time.perf_counter() - start
        thumb = page.locator('[data-testid="stSlider"] input[type="range"]').first
        start = time.perf_counter()
        await thumb.focus()
        await thumb.press("ArrowRight")
        await _wait(page, "() => document.body.innerText.includes('1 of ')")
        await _idle(page)
        steps["slider"] = time.perf_counter() - start
        start = time.perf_counter()
        await page.locator('[data-testid="stSidebarNav"] a', has_text=NAV["inspector"]).first.click()
        await _wait(page, "() => [...document.querySelectorAll('h1')].some(h => h.innerText.includes('Head "
                          "inspector'))")
        await _idle(page)
        steps["inspector"] = time.perf_counter() - start
        if findings:
            start = time.perf_counter()
            await page.locator('[data-testid="stSidebarNav"] a', has_text=NAV["findings"]).first.click()
            await _wait(page, "() => [...document.querySelectorAll('h1')].some(h => h.innerText.includes("
                              "'Findings'))")
            await _idle(page)
            steps["findings"] = time.perf_counter() - start
        exceptions = await page.locator('[data-testid="stException"]').count()
        metrics = (await cdp.send("Performance.getMetrics"))["metrics"]
        render = next(m["value"] for m in metrics if m["name"] == "TaskDuration")
    except Exception as err:  # noqa: BLE001 -- a step that failed or timed out counts, and the walk ends
        errors.append(f"{type(err).__name__}: {str(err)[:200]}")
        exceptions = 0
    finally:
        await context.close()
    return {"steps": steps, "exceptions": exceptions, "errors": errors, "render_cpu": render}


async def _class(url: str, n: int, findings: bool = False) -> list[dict]:
    from playwright.async_api import async_playwright

    from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:  # students arrive within a few seconds of each other
            return await asyncio.gather(*(walk(browser, url, 0.2 * i, findings) for i in range(n)))
        finally:
            await browser.close()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def _niced_class(url: str, n: int, log_dir: Path) -> list[dict]:
    """The class's browsers in a child process at the lowest CPU priority (nice 19): the server gets the cores
    first, as when each student's browser runs on the student's own machine."""
    out = log_dir / f"walks-{n}.json"
    subprocess.run(["nice", "-n", "19", sys.executable, "-m", "bench.classroom", url, str(n), str(out)],
                   cwd=REPO, check=True)
    return json.loads(out.read_text())


def measure(cache: Path, sizes, log_dir: Path, *, niced: bool = False, class_mode: bool = False) -> list[dict]:
    """One fresh server per class size; each class walks at once (its browsers niced, or not; in class mode on to
    the Findings page, with the cache listed before and after)."""
    from headprune_app.timing import ENV
    from tests.helpers import browser

    out = []
    for n in sizes:
        tag = f"{n}{'-niced' if niced else ''}{'-class' if class_mode else ''}"
        procs, runs_log = [], log_dir / f"script-runs-{tag}.jsonl"
        os.environ[ENV] = str(runs_log)  # the server appends each script run's page, wall and CPU seconds
        try:
            with browser.streamlit_server(cache, log=log_dir / f"streamlit-{tag}.log", on_start=procs.append,
                                          timeout=180, env=CLASS_ENV if class_mode else None) as url:
                pid = procs[0].pid
                warm = time.perf_counter()  # the teacher opens the server before class: imports, model, caches
                warmup = asyncio.run(_class(url, 1, class_mode))[0]
                warm = time.perf_counter() - warm
                skip = len(runs_log.read_text().splitlines()) if runs_log.exists() else 0
                listed = browser.cache_listing(cache) if class_mode else {}
                cpu0, all0, wall0 = cpu_seconds(pid), machine_cpu_seconds(), time.perf_counter()
                walks = _niced_class(url, n, log_dir) if niced else asyncio.run(_class(url, n, class_mode))
                wall, cpu = time.perf_counter() - wall0, cpu_seconds(pid) - cpu0
                machine = machine_cpu_seconds() - all0
                rss = peak_rss_mb(pid)
                changes = browser.cache_changes(listed, browser.cache_listing(cache)) if class_mode else {}
        finally:
            os.environ.pop(ENV, None)
        lines = [json.loads(line) for line in runs_log.read_text().splitlines()] if runs_log.exists() else []
        runs = lines[skip:]
        warm_findings = sum(r["cpu"] for r in lines[:skip] if r["page"] == "Findings")
        steps = [s for w in walks for s in w["steps"].items()]
        pages = [t for name, t in steps if name != "slider"]
        n_steps = 6 if class_mode else 5
        out.append({"n": n, "niced": niced, "class_mode": class_mode, "walks": walks, "warmup_s": warm,
                    "changes": changes, "warm_findings_cpu": warm_findings,
                    "findings_cpu_per_student": sum(r["cpu"] for r in runs if r["page"] == "Findings") / n,
                    "warmup_ok": len(warmup["steps"]) == n_steps and not warmup["errors"], "wall": wall,
                    "server_cpu": cpu,
                    "machine_cpu": machine, "script_runs": len(runs),
                    "run_p50": percentile([r["wall"] for r in runs], 50),
                    "run_p95": percentile([r["wall"] for r in runs], 95),
                    "run_cpu_p95": percentile([r["cpu"] for r in runs], 95), "rss_mb": rss,
                    "render_cpu": statistics.median([w["render_cpu"] for w in walks if w["render_cpu"]] or [0.0]),
                    "exceptions": sum(w["exceptions"] for w in walks),  # raised in the app, shown on a page
                    "failed": sum(bool(w["errors"]) for w in walks),  # a browser error or a step's timeout
                    "complete": sum(len(w["steps"]) == n_steps for w in walks),
                    "p50": percentile(pages, 50), "p95": percentile(pages, 95),
                    "slider_p50": percentile([t for name, t in steps if name == "slider"], 50),
                    "slider_p95": percentile([t for name, t in steps if name == "slider"], 95),
                    "errors": [e for w in walks for e in w["errors"]][:5]})
    return out


def shares(r: dict) -> tuple[float, float, float]:
    """The machine's, the server's and the rest's (the browsers') shares of the cores' wall time over a class."""
    cores = r["wall"] * CORES
    return r["machine_cpu"] / cores, r["server_cpu"] / cores, max(0.0, r["machine_cpu"] - r["server_cpu"]) / cores


def limit_note(by_n: dict[int, dict]) -> str:
    """What limits a class on this machine, from the measured shares: the browsers when they take most of the
    cores' time while the server's runs need little CPU, else the server."""
    big = by_n[max(by_n)]
    alone = by_n[min(by_n)]
    busy, server, browsers = shares(big)
    who = "the browsers" if browsers > 2 * server else "the server"
    return (f"The limit on {CORES} cores: {who}. With {big['n']} sessions the cores were "
            f"{busy:.0%} busy, {browsers:.0%} of their time the browsers' and "
            f"{server:.0%} the server's; a script run used {big['run_cpu_p95']:.2f} s of CPU at p95 and took "
            f"{big['run_p95']:.1f} s at p95 (the rest waiting for a core), while one browser alone spends "
            f"{alone['render_cpu']:.1f} s of its page's main thread on a walk. With each student's browser on their "
            "own machine, the server's part is what a page waits for.")


def _fixture_cache(work: Path) -> Path:
    """The quick run's cache: a copy of the test session's fixture cache when the slow test tier gives one
    (``HEADPRUNE_BENCH_FIXTURE_CACHE``: built once for the dashboard tests and this run), else one built here."""
    from tests.helpers.app import copy_cache
    from tests.helpers.fixture_cache import build_fixture_cache

    root = work / "fixture-cache"
    given = os.environ.get("HEADPRUNE_BENCH_FIXTURE_CACHE")
    if not given:
        return build_fixture_cache(root)["root"]
    return copy_cache({"root": Path(given)}, root, runs=True)  # its plan names the model in the given cache


HEADERS = ["sessions", "walks complete", "app exceptions", "walks failed", "page p50 s", "page p95 s",
           "slider p50 s", "slider p95 s", "server run p50 s", "server run p95 s", "server run CPU p95 s",
           "server peak MiB", "wall s", "machine CPU", "server CPU", "browsers' CPU", "page main thread s per walk",
           "warm-up walk s"]


def class_goals(res: list[dict], quick: bool) -> tuple[list[Goal], list[str]]:
    """Class mode's goals and notes: no exception, no change to the cache by students (evaluation entries of
    their new masks aside), and the Findings page's server CPU per student at each class size."""
    runs = [r for r in res if r["class_mode"]]
    if not runs:
        return [], []
    big = max(runs, key=lambda r: r["n"])
    changed = {k: len(v) for k, v in big["changes"].items()}
    goals = [Goal(f"class mode, {big['n']} sessions: exceptions; walks failed", "0",
                  f"{big['exceptions']}; {big['failed']}",
                  big["exceptions"] + big["failed"] == 0 if not quick else None),
             Goal(f"class mode, {big['n']} sessions: cache files removed, changed or added by students (their new "
                  "masks' evaluation entries aside)", "0",
                  f"{changed['removed']}, {changed['modified']}, {changed['other_new']}",
                  changed["removed"] + changed["modified"] + changed["other_new"] == 0)]
    per = "; ".join(f"{r['n']} session(s): {r['findings_cpu_per_student']:.2f} s" for r in runs)
    first = ", ".join(f"{r['warm_findings_cpu']:.1f} s" for r in runs)
    notes = [f"Class mode (HEADPRUNE_CLASS=1): the walk goes on to the Findings page. Server CPU on that page per "
             f"student: {per}; the first visit, in the warm-up walk before each class, computed the cards once for "
             f"the server: {first}. New evaluation entries "
             f"by the {big['n']} students (their new masks, cached for everyone): {changed['new_evaluations']}."]
    return goals, notes


def run(*, quick: bool = False, model: str = "me5-small", device: str = "auto") -> Section:
    from headprune_core.base.cache import cache_root

    work = Path(tempfile.mkdtemp(prefix="headprune-bench-class-"))
    cache = _fixture_cache(work) if quick else Path(os.environ.get("HEADPRUNE_BENCH_CLASS_CACHE") or cache_root())
    sizes = QUICK_SIZES if quick else SIZES
    only_class = os.environ.get("HEADPRUNE_BENCH_CLASS_ONLY") == "1"  # the class-mode runs alone
    res = [] if only_class else measure(cache, sizes, work)
    if not quick and not only_class:  # the server's own capacity: the same walks with the browsers niced
        res += measure(cache, NICED_SIZES, work, niced=True)
    res += measure(cache, QUICK_SIZES if quick else CLASS_SIZES, work, class_mode=True)
    rows = [[f"{r['n']}{' (browsers niced)' if r['niced'] else ''}{' (class mode)' if r['class_mode'] else ''}",
             r["complete"], r["exceptions"], r["failed"],
             round(r["p50"], 1), round(r["p95"], 1), round(r["slider_p50"], 1), round(r["slider_p95"], 1),
             round(r["run_p50"], 2), round(r["run_p95"], 2), round(r["run_cpu_p95"], 2), round(r["rss_mb"]),
             round(r["wall"], 1), *(f"{s:.0%}" for s in shares(r)), round(r["render_cpu"], 1),
             round(r["warmup_s"], 1)]
            for r in res]
    by_n = {r["n"]: r for r in res if not r["niced"] and not r["class_mode"]}
    niced = {r["n"]: r for r in res if r["niced"]}
    goals, class_notes = class_goals(res, quick)
    if os.environ.get("HEADPRUNE_BENCH_HOSTILE", "1") != "0":  # the hostile class, against the same class alone
        from bench import hostile
        seconds = float(os.environ.get("HEADPRUNE_BENCH_HOSTILE_S") or (20 if quick else 600))
        size = (2, 1) if quick else (25, 5)
        quiet = None if quick else hostile.measure(cache, work, ordinary=size[0], hostile=0, seconds=seconds)
        loud = hostile.measure(cache, work, ordinary=size[0], hostile=size[1], seconds=seconds)
        more_goals, more_notes = hostile.goals_and_notes(quiet, loud, quick)
        goals, class_notes = goals + more_goals, class_notes + more_notes
    if os.environ.get("HEADPRUNE_BENCH_FOLLOW", "1") != "0":  # following the teacher (issue 46)
        from bench import follow
        _, more_goals, more_notes = follow.run(cache, work, quick=quick)
        goals, class_notes = goals + more_goals, class_notes + more_notes
    if not by_n:
        return Section("classroom", "A class on one server: class mode", HEADERS, rows, goals, class_notes)
    big, ten = by_n[max(by_n)], by_n.get(10)
    goals = [Goal(f"exceptions with {big['n']} sessions (in the app; walks failed)", "0",
                  f"{big['exceptions']}; {big['failed']}",
                  big["exceptions"] + big["failed"] == 0 if not quick else None), *goals]
    if ten is not None:
        goals.append(Goal("p95 time to a rendered page, 10 sessions (cached results)", "< 10 s",
                          f"{ten['p95']:.1f} s", ten["p95"] < 10))
    if 10 in niced:
        goals.append(Goal("p95 time to a rendered page, 10 sessions, browsers niced (the server first)", "< 10 s",
                          f"{niced[10]['p95']:.1f} s", niced[10]["p95"] < 10))
    goals.append(Goal(f"server peak RSS with {big['n']} sessions", "< 6 GB", f"{big['rss_mb'] / 1024:.2f} GB",
                      big["rss_mb"] < 6144 if not quick else None))
    notes = [f"Cache: {'a fixture cache (tiny model)' if quick else cache}. Each class size gets a fresh server, "
             "warmed up by one walk before the class (as a teacher opens it before the lesson: the first run "
             "imports torch and loads the model; its time is the last column); then every session walks "
             "Overview -> Head importance -> Prune & evaluate -> the k slider one step -> Head inspector "
             "through the sidebar, starting 0.2 s after the previous one.",
             "Page times run from the click to the end of the script run with nothing stale on screen (two idle "
             "checks 0.3 s apart: 0.6 s of each time is that settling). The slider's new k is the same for every "
             "session: it is evaluated once (the per-key lock), the others read it.",
             "Server script runs: every run of the app's script during the class, timed inside the server (from "
             "the frame's navigation to the end of the page; HEADPRUNE_PAGE_LOG): wall seconds, and the CPU "
             "seconds the run's own thread used (the rest of its wall time it waited for the cores, the GIL or a "
             "queued computation). A page time above it is the browser's: loading the app's JavaScript into a fresh "
             "context, the websocket, drawing.",
             f"CPU shares are of the {CORES} cores' wall time over the class: the whole machine (busy time in "
             "/proc/stat), the streamlit process (user+system), and the rest (the browsers, one Chromium with a "
             "context per session, and Playwright). Pages are checked every 0.1 s, not on every animation frame. "
             "'Page main thread s per walk': the median over sessions of the seconds the page's renderer main "
             "thread spent in tasks (Chromium's TaskDuration, through the DevTools protocol) over the whole walk: "
             "JavaScript, style, layout, painting; rasterising and compositing threads come on top. It is wall time "
             "inside tasks, so on busy cores it includes waiting for one: one session's value is what a page costs "
             "a browser alone.",
             "'browsers niced': the same walks with the browsers in a process at nice 19, so the server gets the "
             "cores first, as in a class where each student's browser runs on the student's own machine."]
    notes.append(limit_note(by_n))
    notes += class_notes
    for r in res:
        if r["errors"]:
            notes.append(f"N = {r['n']}: first errors: {'; '.join(r['errors'])}")
    return Section("classroom", "A class on one server: N sessions walking the dashboard at once", HEADERS, rows,
                   goals, notes)


if __name__ == "__main__":  # python -m bench.classroom URL N OUT: one class's walks, as JSON (niced by the caller)
    url, n, out = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    out.write_text(json.dumps(asyncio.run(_class(url, n))))
