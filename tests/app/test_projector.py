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


def test_every_page_and_lesson_step_shows_its_figure_on_the_first_screen(fixture_cache):
    pytest.importorskip("playwright", reason="playwright is not installed (pip install playwright==1.65.2)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    seen = {}
    with browser.streamlit_server(fixture_cache["root"], log=ARTIFACTS / "streamlit-projector.log") as url, \
            sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, args=browser.CHROMIUM_ARGS, headless=True)
        for width, height in SIZES:
            page = chromium.new_context(viewport={"width": width, "height": height}).new_page()
            for name, page_name, address, wait in layout.views(url, LESSON, available()[0][LESSON].steps,
                                                               plain=width == 1280, skip=NO_RESULTS):
                found = layout.measure(page, address, page_name, wait)
                assert browser.exception_boxes(page) == [], (name, width)
                seen[(width, name)] = found
                if not (seen[(width, name)] or {}).get("ok"):
                    page.screenshot(path=str(ARTIFACTS / f"projector-{width}-{name.replace(' ', '_')}.png"))
            page.context.close()
        chromium.close()
    bad = {view: got for view, got in seen.items() if not (got or {}).get("ok")}
    assert not bad, bad
    steps = [s for s in available()[0][LESSON].steps if s.page not in NO_RESULTS]
    assert len(seen) == 2 * (len(browser.PAGES) - len(NO_RESULTS) + len(steps)) + len(steps) == 37, len(seen)
