"""The room sees the figure first (issue 46), in Chromium on the fixture cache: at 1280 x 720 and 1920 x 1080, every
page in presentation mode and every step of the shipped lesson (presenting, and at 1280 x 720 also as a plain
lesson step) shows its main figure (its first chart or table; the Lessons page its steps, Add data its uploader)
within the first screen, with at least 300 px of it visible (tests/helpers/layout.py).

The fixture cache holds no re-fine-tuning and no GradTS maps of its plans, so Prune & retrain, Task affinity and
Shared heads (and the lesson's step on Task affinity) show a "not computed" panel there, not a figure: those are
measured on the demo cache, where they have results (``python -m tests.helpers.layout --cache DIR``; the numbers
are in bench/RESULTS.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from headprune_core.plans.lessons import available
from tests.helpers import browser, layout

ARTIFACTS = Path(os.environ.get("HEADPRUNE_ARTIFACTS", browser.REPO / "artifacts")) / "browser"
LESSON = "attention-heads-across-languages"
SIZES = [(1280, 720), (1920, 1080)]
NO_RESULTS = {"retrain", "task_affinity", "shared_heads"}  # the fixture cache has none of their results

pytestmark = browser.browser_marks()


def _views(url: str, width: int) -> list[tuple[str, str, str]]:
    """(name, page, address) of every view measured at this width."""
    steps = available()[0][LESSON].steps
    out = [(f"{name} presenting", name, f"{url}/{path}?present=true") for name, path in browser.PAGES.items()
           if name not in NO_RESULTS]
    out += [(f"step {k} presenting", s.page, f"{url}/?lesson={LESSON}&step={k}&present=true")
            for k, s in enumerate(steps, 1) if s.page not in NO_RESULTS]
    if width == 1280:
        out += [(f"step {k}", s.page, f"{url}/?lesson={LESSON}&step={k}") for k, s in enumerate(steps, 1)
                if s.page not in NO_RESULTS]
    return out


def test_every_page_and_lesson_step_shows_its_figure_on_the_first_screen(fixture_cache):
    pytest.importorskip("playwright", reason="playwright is not installed (pip install playwright==1.65.2)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    seen, n = {}, len(available()[0][LESSON].steps)
    with browser.streamlit_server(fixture_cache["root"], log=ARTIFACTS / "streamlit-projector.log") as url, \
            sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, args=browser.CHROMIUM_ARGS, headless=True)
        for width, height in SIZES:
            page = chromium.new_context(viewport={"width": width, "height": height}).new_page()
            for name, page_name, address in _views(url, width):
                page.goto(address, wait_until="domcontentloaded")
                page.wait_for_selector("h1", timeout=180_000)
                if name.startswith("step"):
                    k = int(name.split()[1])
                    page.wait_for_function("want => document.body.innerText.includes(want)",
                                           arg=f"step {k} of {n}", timeout=180_000)
                browser.wait_idle(page, 300_000)
                assert browser.exception_boxes(page) == [], (name, width)
                seen[(width, name)] = layout.first_figure(page, page_name)
                if not (seen[(width, name)] or {}).get("ok"):
                    page.screenshot(path=str(ARTIFACTS / f"projector-{width}-{name.replace(' ', '_')}.png"))
            page.context.close()
        chromium.close()
    bad = {view: got for view, got in seen.items() if not (got or {}).get("ok")}
    assert not bad, bad
    steps = [s for s in available()[0][LESSON].steps if s.page not in NO_RESULTS]
    assert len(seen) == 2 * (len(browser.PAGES) - len(NO_RESULTS) + len(steps)) + len(steps) == 37, len(seen)
