"""A class with hostile students (issue 43): ordinary students walk the dashboard again and again on one class-mode
server while a few hostile ones loop the hostile suite (tests/app/test_class_hostile.py) against it, and the
teacher unlocks a fresh session every minute. The same class runs again without the hostile ones, on a fresh
server, for the comparison.

What a hostile student does in a loop: 5 wrong keys in a browser session; Streamlit's ``clear_cache`` from a raw
websocket client; a 1,000,000-word sentence in a raw client's address (the inspector); 3 uploads of 20 MB to
Streamlit's upload endpoint with a valid session and XSRF token; a phishing link (``?task=`` with Markdown).

Reported: cache files removed, changed or added by students (their new masks' evaluations aside), whether the
server process lived through the class, the teacher's unlocks (successes of tries), the server's peak memory, and
the ordinary students' page and server-run p95 with and without the hostile ones.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KEY = "the bench's key"
CLASS_ENV = {"HEADPRUNE_CLASS": "1", "HEADPRUNE_TEACHER_KEY": KEY}
PHISH = "x`**Session expired: re-enter the teacher key at [the teacher page](http://evil.example/unlock)**"


async def _ordinary(url: str, n: int, seconds: float) -> list[dict]:
    """``n`` students each walking the dashboard again and again until ``seconds`` have passed: every walk."""
    from playwright.async_api import async_playwright

    from bench.classroom import walk
    from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS
    deadline = time.perf_counter() + seconds

    async def student(browser, i: int) -> list[dict]:
        walks = []
        while not walks or time.perf_counter() < deadline:  # one walk at least
            walks.append(await walk(browser, url, 0.2 * i if not walks else 0.0))
        return walks

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            done = await asyncio.gather(*(student(browser, i) for i in range(n)))
        finally:
            await browser.close()
    return [w for walks in done for w in walks]


def _hostile_round(url: str, page) -> list[str]:
    """One round of the hostile suite; what went other than planned (refusals are planned)."""
    from tests.helpers import browser
    from tests.helpers.hostile import raw_session, send_clear_cache, upload, wrong_keys, xsrf
    odd = []
    browser.open_page(page, url, "home")
    wrong_keys(page, 5)
    ws, session = raw_session(url)
    send_clear_cache(ws)
    cookie, token = xsrf(url)
    codes = [upload(url, session, 20 * 1024 * 1024, cookie, token) for _ in range(3)]
    if codes != [413] * 3:
        odd.append(f"uploads answered {codes}")
    ws.close()
    big, _ = raw_session(url, query=urllib.parse.urlencode({"sentence:en": "dog " * 1_000_000}),
                          page="inspector", until="script_finished")
    big.close()
    page.goto(f"{url}/{browser.PAGES['prune']}?{urllib.parse.urlencode({'task': PHISH})}",
              wait_until="domcontentloaded")
    page.wait_for_selector("h1", timeout=600_000)
    browser.wait_idle(page, 600_000)
    if page.locator("a[href*='evil.example']").count():
        odd.append("the phishing link rendered as a link")
    return odd


def _hostile(url: str, n: int, seconds: float, out: dict) -> None:
    """``n`` hostile students (threads, a Chromium each) looping :func:`_hostile_round` for ``seconds``."""
    from playwright.sync_api import sync_playwright

    from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS
    deadline = time.perf_counter() + seconds
    rounds, odd = [0] * n, []

    def one(i: int) -> None:
        with sync_playwright() as pw:
            chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            while time.perf_counter() < deadline:
                page = chromium.new_context(viewport={"width": 1200, "height": 900}).new_page()
                try:
                    odd.extend(_hostile_round(url, page))
                    rounds[i] += 1
                except Exception as err:  # noqa: BLE001 -- a round that failed counts and the loop goes on
                    odd.append(f"{type(err).__name__}: {str(err)[:160]}")
                finally:
                    page.context.close()
            chromium.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.update({"rounds": sum(rounds), "odd": odd})


def _shown(page) -> str:
    """What a page shows when an unlock failed: its error boxes, the connection's state and the sidebar's text
    (the key is never in it: a password field)."""
    try:
        errors = page.locator("[data-testid='stAlertContentError']").all_inner_texts()
        status = page.locator("[data-testid='stStatusWidget']").all_inner_texts()
        side = page.locator("[data-testid='stSidebar']").first.inner_text(timeout=5_000)[-300:]
        return f"errors {errors[:2]}, status {status[:1]}, {_form_sent(page)}, sidebar ...{side!r}"
    except Exception as err:  # noqa: BLE001 -- the page itself may be gone
        return f"(unreadable: {type(err).__name__})"


def _form_sent(page) -> str:
    """Whether the teacher's unlock form was submitted: it clears its field when it is (clear_on_submit), so a
    field still filled was never sent."""
    try:
        field = page.get_by_label("Teacher's key").first.input_value(timeout=5_000)
    except Exception as err:  # noqa: BLE001 -- the field may be gone with the page
        return f"unlock form unreadable ({type(err).__name__})"
    return "unlock form never submitted (its key field still filled)" if field else "unlock form submitted"


def _teacher(url: str, seconds: float, every: float, out: dict) -> None:
    """A fresh teacher's session unlocking with the key every ``every`` seconds: (successes, tries)."""
    from playwright.sync_api import sync_playwright

    from tests.helpers import browser
    deadline, ok, tries, why, took, clicks = time.perf_counter() + seconds, 0, 0, [], [], []
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, args=browser.CHROMIUM_ARGS, headless=True)
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            page = chromium.new_context(viewport={"width": 1200, "height": 900}).new_page()
            tries += 1
            try:
                browser.open_page(page, url, "home", timeout=600_000)
                clicks.append(browser.unlock(page, KEY, timeout=600_000))
                ok += 1
                took.append(round(time.perf_counter() - start, 1))
            except Exception as err:  # noqa: BLE001 -- a refused or timed-out unlock is what this counts
                why.append(f"try {tries} (started at {start - deadline + seconds:.0f} s, failed after "
                           f"{time.perf_counter() - start:.0f} s): {type(err).__name__}: "
                           f"{str(err).splitlines()[0][:160]}; the page showed: {_shown(page)}")
            finally:
                page.context.close()
            now = time.perf_counter()  # the next try a minute after this one, but no wait past the end
            time.sleep(max(0.0, min(start + every, deadline) - now))
        chromium.close()
    out.update({"teacher_ok": ok, "teacher_tries": tries, "teacher_failures": why, "teacher_seconds": took,
                "teacher_clicks": clicks})


def measure(cache: Path, log_dir: Path, *, ordinary: int, hostile: int, seconds: float) -> dict:
    """One fresh class-mode server: the ordinary class for ``seconds``, with ``hostile`` hostile students and the
    teacher's unlocks beside it."""
    from bench.classroom import percentile
    from bench.demo import peak_rss_mb
    from headprune_app.timing import ENV
    from tests.helpers import browser
    tag = f"hostile-{hostile}"
    procs, runs_log = [], log_dir / f"script-runs-{tag}.jsonl"
    os.environ[ENV] = str(runs_log)
    side: dict = {}
    try:
        with browser.streamlit_server(cache, log=log_dir / f"streamlit-{tag}.log", on_start=procs.append,
                                      timeout=180, env=CLASS_ENV) as url:
            warm = subprocess.run([sys.executable, "-m", "bench.hostile", "walk", url, "1", "0"], cwd=REPO,
                                  capture_output=True, text=True)
            skip = len(runs_log.read_text().splitlines()) if runs_log.exists() else 0
            listed = browser.cache_listing(cache)
            helpers = [threading.Thread(target=_teacher, args=(url, seconds, 60.0, side))]
            if hostile:
                helpers.append(threading.Thread(target=_hostile, args=(url, hostile, seconds, side)))
            for t in helpers:
                t.start()
            walks = asyncio.run(_ordinary(url, ordinary, seconds))
            for t in helpers:
                t.join()
            alive = procs[0].poll() is None
            rss = peak_rss_mb(procs[0].pid)
            changes = browser.cache_changes(listed, browser.cache_listing(cache))
    finally:
        os.environ.pop(ENV, None)
    runs = [json.loads(x) for x in runs_log.read_text().splitlines()][skip:] if runs_log.exists() else []
    pages = [t for w in walks for name, t in w["steps"].items() if name != "slider"]
    return {"ordinary": ordinary, "hostile": hostile, "seconds": seconds, "walks": len(walks),
            "walks_failed": sum(bool(w["errors"]) for w in walks), "exceptions": sum(w["exceptions"] for w in walks),
            "p95": percentile(pages, 95), "run_p95": percentile([r["wall"] for r in runs], 95), "rss_mb": rss,
            "alive": alive,
            "changes": {k: len(v) for k, v in changes.items()}, "warm_ok": warm.returncode == 0, **side}


def probe(cache: Path, action: str, seconds: float, log: Path) -> dict:
    """One hostile action alone, looped beside 2 students walking, on a fresh class-mode server: the server's
    peak memory and its resident memory every 10 s. ``action``: ``clear`` (a raw ``clear_cache`` every 5 s),
    ``big`` (the 1,000,000-word sentence), ``upload`` (three 20 MB uploads) or ``none``."""
    from bench.demo import peak_rss_mb
    from tests.helpers import browser
    from tests.helpers.hostile import raw_session, rss_mb, send_clear_cache, upload, xsrf
    procs, samples = [], []
    with browser.streamlit_server(cache, log=log, on_start=procs.append, timeout=180, env=CLASS_ENV) as url:
        start = time.perf_counter()
        stop = start + seconds

        def act() -> None:
            while time.perf_counter() < stop:
                if action == "clear":
                    ws, _ = raw_session(url)
                    send_clear_cache(ws)
                    ws.close()
                    time.sleep(5)
                elif action == "big":
                    ws, _ = raw_session(url, query=urllib.parse.urlencode({"sentence:en": "dog " * 1_000_000}),
                                        page="inspector", until="script_finished")
                    ws.close()
                elif action == "upload":
                    ws, session = raw_session(url)
                    cookie, token = xsrf(url)
                    for _ in range(3):
                        upload(url, session, 20 * 1024 * 1024, cookie, token)
                    ws.close()
                else:
                    time.sleep(5)
                if time.perf_counter() - start >= 10 * len(samples):
                    samples.append(round(rss_mb(procs[0].pid)))

        actor = threading.Thread(target=act)
        actor.start()
        asyncio.run(_ordinary(url, 2, seconds))
        actor.join()
        return {"action": action, "seconds": seconds, "peak_mb": round(peak_rss_mb(procs[0].pid)),
                "rss_mb_every_10_s": samples}


if __name__ == "__main__":
    # python -m bench.hostile walk URL N SECONDS: N students walking (the warm-up: one walk)
    # python -m bench.hostile probe CACHE ACTION SECONDS: one hostile action's memory (:func:`probe`)
    if sys.argv[1] == "probe":
        print(json.dumps(probe(Path(sys.argv[2]), sys.argv[3], float(sys.argv[4]),
                               Path(tempfile.gettempdir()) / f"streamlit-probe-{sys.argv[3]}.log")))
    else:
        _, _, url, n, seconds = sys.argv
        asyncio.run(_ordinary(url, int(n), float(seconds)))


def goals_and_notes(quiet: dict | None, loud: dict, quick: bool) -> tuple[list, list[str]]:
    """The section's goals and notes from the class without (``quiet``) and with (``loud``) the hostile ones.
    ``quiet`` is None in ``--quick``: the comparison is reported, never judged, so CI starts one server, not two."""
    from bench.report import Goal
    from tests.helpers.browser import UNLOCK_RETRY_MS
    ch = loud["changes"]
    students = ch["removed"] + ch["modified"] + ch["other_new"]
    goals = [
        Goal(f"hostile class ({loud['ordinary']} students + {loud['hostile']} hostile, {loud['seconds']:.0f} "
             "s): cache files removed, changed or added by students (their masks' evaluations aside)", "0",
             f"{ch['removed']}, {ch['modified']}, {ch['other_new']}", students == 0),
        Goal("hostile class: server restarts", "0", "0" if loud["alive"] else "the server died", loud["alive"]),
        Goal("hostile class: the teacher unlocked at every try (a fresh session each minute)", "every try",
             f"{loud.get('teacher_ok', 0)} of {loud.get('teacher_tries', 0)}",
             loud.get("teacher_ok", 0) == loud.get("teacher_tries", -1) > 0),
        Goal("hostile class: ordinary students' page p95 (server script-run p95), beside the same class without "
             "the hostile ones", "reported",
             f"{loud['p95']:.1f} s ({loud['run_p95']:.2f} s) vs "
             + (f"{quiet['p95']:.1f} s ({quiet['run_p95']:.2f} s)" if quiet else "(the full run only)"), None)]
    q = ({"walks": f"; without the hostile ones {quiet['walks']} walks, {quiet['walks_failed']} failed",
          "rss": f" (without them {quiet['rss_mb']:.0f} MiB)",
          "teacher": f" (without the hostile ones {quiet.get('teacher_seconds')} s)"} if quiet
         else dict.fromkeys(("walks", "rss", "teacher"), ""))
    notes = [f"Hostile class: {loud['ordinary']} ordinary students walk the dashboard again and again for "
             f"{loud['seconds']:.0f} s ({loud['walks']} walks, {loud['walks_failed']} failed, {loud['exceptions']} "
             f"app exceptions{q['walks']}) while "
             f"{loud['hostile']} hostile students loop the hostile suite ({loud.get('rounds', 0)} rounds: 5 wrong "
             "keys, a raw clear_cache, three 20 MB uploads, a 1,000,000-word sentence, a phishing link); server "
             f"peak memory {loud['rss_mb']:.0f} MiB{q['rss']}. Unplanned outcomes: "
             f"{'; '.join(sorted(set(loud.get('odd', []))))[:600] or 'none'}. The teacher's failed unlocks: "
             f"{'; '.join(loud.get('teacher_failures', []))[:900] or 'none'}; the successful ones took "
             f"{loud.get('teacher_seconds')} s{q['teacher']}, with {loud.get('teacher_clicks')} clicks on Unlock "
             f"(a click the form never received, its key still in the field, is clicked again after "
             f"{UNLOCK_RETRY_MS / 1000:.0f} s)."
             + ("" if quiet else " (--quick: the same class without the hostile ones runs in the full bench only.)")]
    return goals, notes
