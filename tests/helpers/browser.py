"""Drive the real dashboard in headless Chromium (Debian's /usr/bin/chromium through Playwright).

Used by the browser test and to take the README's screenshots:
``python -m tests.helpers.browser --cache DIR --out docs/screenshots`` starts ``streamlit run app.py`` on a free
localhost port with ``HEADPRUNE_CACHE=DIR``, opens every page and saves one PNG per page.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-dev-shm-usage", "--disable-extensions", "--no-first-run", "--mute-audio"]
PAGES = {"home": "", "importance": "importance", "prune": "prune", "retrain": "retrain", "inspector": "inspector",
         "findings": "findings",
         "task_affinity": "task_affinity", "shared_heads": "shared_heads", "runs": "runs", "add_data": "add_data",
         "lessons": "lessons"}


def browser_marks() -> list:
    """The marks of a test file that drives Chromium: ``browser``, and skipped (with why) where it is absent."""
    import pytest

    return [pytest.mark.browser,
            pytest.mark.skipif(not Path(CHROMIUM).exists(),
                               reason=f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run installs it)")]


@contextlib.contextmanager
def offline_page(path: Path, ready_js: str) -> Iterator[tuple[object, list[str], list[str]]]:
    """A file opened in Chromium with every request but ``file://`` refused, once ``ready_js`` holds; yields
    (page, page errors, requested URLs)."""
    errors, requests = [], []
    with browser_page() as page:
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route("**/*", lambda route: (requests.append(route.request.url), route.continue_()
                                          if route.request.url.startswith("file://") else route.abort()))
        page.goto(Path(path).as_uri())
        page.wait_for_function(ready_js)
        yield page, errors, requests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(cache: str | Path, *, port: int | None = None, log: Path | None = None,
                     timeout: float = 90, on_start: Callable[[subprocess.Popen], None] | None = None,
                     env: dict | None = None) -> Iterator[str]:
    """``streamlit run app.py`` on localhost with ``HEADPRUNE_CACHE=cache`` (and ``env`` on top, e.g. class
    mode's); yields its base URL.

    ``on_start(process)`` is called once the server process exists (the benchmark reads its peak memory)."""
    port = port or free_port()
    env = {**os.environ, "HEADPRUNE_CACHE": str(cache), "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1",
           **(env or {})}
    out = open(log, "w") if log else subprocess.DEVNULL
    # class mode with the settings `headprune serve --class` gives it (the app refuses class mode without them)
    from headprune_core.cli.serve import class_args
    extra = class_args() if env.get("HEADPRUNE_CLASS") == "1" else []
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.address", "localhost", "--server.headless", "true",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", *extra],
                            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    if on_start is not None:
        on_start(proc)
    url = f"http://localhost:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"streamlit did not start on {url} (exit code {proc.poll()}); see {log}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log:
            out.close()


@contextlib.contextmanager
def browser_page(width: int = 1500, height: int = 1100):
    """A Playwright page in headless Debian Chromium (no downloaded browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            yield page
        finally:
            browser.close()


IDLE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const state = app && app.getAttribute('data-test-script-state');
  const busy = document.querySelector('[data-testid="stSpinner"], [data-testid="stSkeleton"]');
  const stale = document.querySelector('[data-stale="true"]');
  return state === 'notRunning' && !busy && !stale;
}"""


def wait_idle(page, timeout: float = 180_000) -> None:
    """Wait until the script run is over (the app's script state, no spinner, skeleton or stale element)."""
    page.wait_for_timeout(400)
    page.wait_for_function(IDLE_JS, timeout=timeout)
    page.wait_for_timeout(400)
    page.wait_for_function(IDLE_JS, timeout=timeout)


def full_screenshot(page, path: Path) -> None:
    """The whole page: Streamlit scrolls inside its main container, so grow the viewport to fit it first."""
    size = page.viewport_size
    height = page.evaluate("() => Math.max(...[...document.querySelectorAll("
                           "'[data-testid=\"stMain\"], [data-testid=\"stSidebarContent\"]')]"
                           ".map(e => e.scrollHeight))")
    page.set_viewport_size({"width": size["width"], "height": int(min(max(height, size["height"]), 8000))})
    page.wait_for_timeout(800)  # let plotly re-layout
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(size)


def open_page(page, url: str, name: str, *, timeout: float = 180_000) -> float:
    """Open one dashboard page by URL (a new session); returns seconds until its script run finished."""
    start = time.perf_counter()
    page.goto(f"{url}/{PAGES[name]}", wait_until="domcontentloaded")
    page.wait_for_selector("h1", timeout=timeout)
    wait_idle(page, timeout)
    return time.perf_counter() - start


NAV_TITLES = {"home": "Overview", "importance": "Head importance", "prune": "Prune & evaluate",
              "inspector": "Head inspector", "task_affinity": "Task affinity", "shared_heads": "Shared heads",
              "runs": "Runs", "add_data": "Add data", "retrain": "Prune & retrain", "findings": "Findings",
              "lessons": "Lessons"}
H1 = {"home": "headprune", "task_affinity": "Task affinity"}  # titles that differ from the nav label


def goto_nav(page, name: str, *, timeout: float = 180_000) -> float:
    """Switch page with the sidebar navigation (same session); seconds until the run finished."""
    start = time.perf_counter()
    page.locator('[data-testid="stSidebarNav"] a', has_text=NAV_TITLES[name]).first.click()
    page.wait_for_function(f"() => [...document.querySelectorAll('h1')].some(h => h.innerText.includes("
                           f"{H1.get(name, NAV_TITLES[name])!r}))", timeout=timeout)
    wait_idle(page, timeout)
    return time.perf_counter() - start


def metric_text(page, index: int = 0) -> str:
    return page.locator('[data-testid="stMetricValue"]').nth(index).inner_text()


def move_slider(page, key: str, wait_change_of: str | None = None, timeout: float = 120_000) -> None:
    """Press ``key`` (Home, End, ArrowRight ...) on the first slider, then wait for the rerun."""
    thumb = page.locator('[data-testid="stSlider"] input[type="range"]').first
    thumb.focus()
    thumb.press(key)
    if wait_change_of is not None:
        page.wait_for_function(
            "old => { const m = document.querySelector('[data-testid=\"stMetricValue\"]');"
            " return m && m.innerText !== old; }", arg=wait_change_of, timeout=timeout)
    wait_idle(page, timeout)


def click_head(page, layer: int, head: int, shape: tuple[int, int], *, chart: int = 0,
               timeout: float = 120_000) -> None:
    """Click the cell of (layer, head) on the ``chart``-th Plotly chart of the page (the mask grid)."""
    plot = page.locator('[data-testid="stPlotlyChart"]').nth(chart)
    plot.scroll_into_view_if_needed()
    box = plot.locator(".nsewdrag").first.bounding_box()
    layers, heads = shape
    x = box["x"] + (head + 0.5) / heads * box["width"]
    y = box["y"] + box["height"] - (layer + 0.5) / layers * box["height"]
    page.mouse.click(x, y)
    page.wait_for_timeout(500)
    wait_idle(page, timeout)


def set_slider(page, value: int, timeout: float = 300_000) -> None:
    """Set the first slider to ``value`` in one step (keyboard steps would rerun the page for every value)."""
    thumb = page.locator('[data-testid="stSlider"] input[type="range"]').first
    thumb.focus()
    current = int(thumb.get_attribute("value"))
    key = "ArrowRight" if value > current else "ArrowLeft"
    page.keyboard.down("Shift")  # react-aria: Shift+Arrow moves by a page, fewer reruns
    for _ in range(abs(value - current) // 10):
        thumb.press(key)
    page.keyboard.up("Shift")
    current = int(thumb.get_attribute("value"))
    while current != value:
        thumb.press("ArrowRight" if value > current else "ArrowLeft")
        current = int(thumb.get_attribute("value"))
    wait_idle(page, timeout)


UNLOCK_CLICKS, UNLOCK_RETRY_MS = 3, 20_000
"""How often :func:`unlock` clicks Unlock at most, and how long it waits before it clicks again."""


def unlock(page, key: str, timeout: float = 60_000) -> int:
    """Unlock the teacher's powers in this session (class mode): the sidebar's key field, then Unlock; the number
    of clicks it took. A click the form never received (seen on a loaded machine: the sidebar re-rendered under
    it) leaves the key in the field, which a submitted form clears (``clear_on_submit``): after
    :data:`UNLOCK_RETRY_MS` with the key still there it clicks again, as a teacher would, at most
    :data:`UNLOCK_CLICKS` times. A form that was submitted is waited on for the rest of ``timeout``."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.get_by_text("Class mode: teacher").first.click()
    field = page.get_by_label("Teacher's key").first
    field.fill(key)
    shown = page.get_by_text("Teacher's session").first
    deadline, clicks = time.monotonic() + timeout / 1000, 0
    while True:
        page.get_by_role("button", name="Unlock").click()
        clicks += 1
        left_ms = max(1.0, (deadline - time.monotonic()) * 1000)
        try:
            shown.wait_for(timeout=min(UNLOCK_RETRY_MS, left_ms))
            break
        except PlaywrightTimeout:
            if clicks >= UNLOCK_CLICKS or left_ms <= UNLOCK_RETRY_MS or not _still_holds(field, key):
                shown.wait_for(timeout=max(1.0, (deadline - time.monotonic()) * 1000))  # sent: its answer
                break
    wait_idle(page)
    return clicks


def _still_holds(field, key: str) -> bool:
    """Whether the unlock form's field still holds ``key`` (the form was not sent); a field gone with a rerun that
    unlocked, or unreadable, counts as sent."""
    try:
        return field.input_value(timeout=5_000) == key
    except Exception:  # noqa: BLE001 -- replaced by the teacher's view, or the page is busy: wait for the answer
        return False


def present_lesson(page, title: str, timeout: float = 300_000) -> None:
    """In this session (the owner's, or a teacher's unlocked one): the Lessons page, the lesson titled ``title``,
    Present it; returns once step 1 shows and the run is over."""
    goto_nav(page, "lessons", timeout=timeout)
    page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]', has_text="Lesson").first.click()
    page.get_by_role("option", name=title).first.click()
    wait_idle(page)
    page.get_by_role("button", name="Present it").click()
    page.wait_for_function("() => /step 1 of \\d+:/.test(document.body.innerText)", timeout=timeout)
    wait_idle(page, timeout)


def cache_listing(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under a cache folder with its size and modification time (locks left out)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(Path(root).rglob("*")) if p.is_file() and not p.name.endswith(".lock")}


def cache_changes(before: dict, after: dict) -> dict[str, list[str]]:
    """What changed in a cache between two listings: files removed, files changed, new evaluation entries
    (what a student's new mask adds) and anything else new."""
    added = sorted(set(after) - set(before))
    return {"removed": sorted(set(before) - set(after)),
            "modified": sorted(k for k in set(before) & set(after) if before[k] != after[k]),
            "new_evaluations": [k for k in added if k.startswith("runs/eval/")],
            "other_new": [k for k in added if not k.startswith("runs/eval/")]}


def exception_boxes(page) -> list[str]:
    """The text of every exception box (Streamlit's ``stException``) on the page."""
    return [box.inner_text() for box in page.locator('[data-testid="stException"]').all()]


def tour(url: str, out: Path | None = None, *, rounds: int = 2, k: int | None = None,
         exceptions: dict[str, list[str]] | None = None) -> dict[str, list[float]]:
    """Visit every page through the sidebar, ``rounds`` times; the first round is cold (fresh server
    process), later ones warm. Saves one full-page PNG per page (last round) under ``out``, with ``k`` heads
    pruned on the prune page (and so on the inspector) if given. ``exceptions``, when given, gets each page's
    exception boxes (:func:`exception_boxes`) of every visit."""
    times: dict[str, list[float]] = {n: [] for n in PAGES}
    with browser_page() as page:
        for r in range(rounds):
            if r == 0:
                times["home"].append(open_page(page, url, "home"))
            else:
                times["home"].append(goto_nav(page, "home"))
            if exceptions is not None:
                exceptions.setdefault("home", []).extend(exception_boxes(page))
            if out is not None and r == rounds - 1:
                full_screenshot(page, out / "home.png")
            for name in [n for n in PAGES if n != "home"]:
                times[name].append(goto_nav(page, name))
                if exceptions is not None:
                    exceptions.setdefault(name, []).extend(exception_boxes(page))
                if out is not None and r == rounds - 1:
                    if name == "prune":
                        if k is not None:
                            set_slider(page, k)
                        page.get_by_role("button", name="Measure size and latency").click()
                        wait_idle(page)
                        if exceptions is not None:
                            exceptions[name].extend(exception_boxes(page))
                    full_screenshot(page, out / f"{name}.png")
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=str(REPO / "cache"), help="cache folder (HEADPRUNE_CACHE)")
    ap.add_argument("--out", default=str(REPO / "docs" / "screenshots"))
    ap.add_argument("--k", type=int, default=None, help="heads to prune on the prune page's screenshot")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with streamlit_server(args.cache, log=out / "streamlit.log") as url:
        times = tour(url, out, k=args.k)
    print("page          cold (s)  warm (s)")
    for name, t in times.items():
        print(f"{name:12} {t[0]:8.1f} {min(t[1:]) if len(t) > 1 else float('nan'):9.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def timed_slider_press(page, key: str, total: int, timeout: float = 300_000) -> tuple[int, float]:
    """Press ``key`` on the prune page's k slider; seconds until the new metric for that k is on screen and the
    run is over (no fixed sleeps: the clock stops when the metric's label names the new k). Returns (k, s)."""
    thumb = page.locator('[data-testid="stSlider"] input[type="range"]').first
    before = int(thumb.get_attribute("value"))
    thumb.focus()
    start = time.perf_counter()
    thumb.press(key)
    k = int(thumb.get_attribute("value"))
    if k == before:
        raise ValueError(f"pressing {key} left the slider at k = {k}")
    page.wait_for_function(
        "want => { const m = document.querySelector('[data-testid=\"stMetric\"]');"
        f" return m && m.innerText.includes(want) && ({IDLE_JS})(); }}",
        arg=f"{k} of {total} heads pruned", timeout=timeout)
    return k, time.perf_counter() - start
