"""The shipped lesson in a real browser: a link opens its first step, Next walks every step (each on its page, with
its choices in the address and no exception box), Back returns; and a lesson's handout opens from disk with every
network request refused, its charts drawn (plotly.js travels inside the file)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from headprune_core.plans.lessons import available
from tests.helpers import browser

ARTIFACTS = Path(os.environ.get("HEADPRUNE_ARTIFACTS", browser.REPO / "artifacts")) / "browser"
LESSON = "attention-heads-across-languages"

pytestmark = browser.browser_marks()


def _bar(page) -> str:
    return page.locator('[data-testid="stVerticalBlockBorderWrapper"]', has_text="step ").first.inner_text()


def test_the_shipped_lesson_walks_end_to_end(fixture_cache):
    pytest.importorskip("playwright", reason="playwright is not installed (pip install playwright==1.65.2)")
    lesson = available()[0][LESSON]
    n = len(lesson.steps)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    seen = []
    with browser.streamlit_server(fixture_cache["root"], log=ARTIFACTS / "streamlit-lesson.log") as url, \
            browser.browser_page(width=1400, height=1000) as page:
        page.goto(f"{url}/?lesson={LESSON}&step=1", wait_until="domcontentloaded")
        page.wait_for_selector("h1", timeout=180_000)
        browser.wait_idle(page)
        for k, step in enumerate(lesson.steps, 1):
            page.wait_for_function("want => document.body.innerText.includes(want)", arg=f"step {k} of {n}",
                                   timeout=180_000)
            browser.wait_idle(page)
            h1 = page.locator("h1").first.inner_text()
            address = urlsplit(page.url)
            query = dict(parse_qsl(address.query))
            seen.append((k, address.path.strip("/") or "home", h1, browser.exception_boxes(page)))
            # the step's page with the step's choices in the address (Copy link gives them; one equal to its
            # default is left out, as for any link), none refused, and its notes
            assert (query.get("lesson"), query.get("step")) == (LESSON, str(k)), page.url
            assert all(query.get(key, value) == value for key, value in step.params if key != "k"), (step, query)
            assert "is not available here" not in page.locator("body").inner_text()
            page.locator(".st-key-lesson_notes button").first.click()  # the step's notes, in their popover
            page.locator('[data-testid="stPopoverBody"]').first.wait_for(timeout=60_000)
            assert step.notes.splitlines()[0].replace("**", "")[:30] in page.locator("body").inner_text()
            page.keyboard.press("Escape")
            browser.full_screenshot(page, ARTIFACTS / f"lesson_step_{k}.png")
            if k < n:
                page.get_by_role("button", name="Next").click()
        page.get_by_role("button", name="Back").click()
        page.wait_for_function("want => document.body.innerText.includes(want)", arg=f"step {n - 1} of {n}",
                               timeout=180_000)
        browser.wait_idle(page)
        back = urlsplit(page.url)
    pages = [s.page for s in lesson.steps]
    assert [p for _, p, _, _ in seen] == pages
    assert all(h1.startswith(browser.H1.get(p, browser.NAV_TITLES[p])) for (_, _, h1, _), p in zip(seen, pages)), seen
    assert [k for k, _, _, boxes in seen if boxes] == []
    assert back.path.strip("/") == pages[n - 2] and f"step={n - 1}" in back.query


def test_a_lessons_handout_opens_from_disk_offline(fixture_cache, tmp_path, monkeypatch):
    pytest.importorskip("playwright", reason="playwright is not installed (pip install playwright==1.65.2)")
    from headprune_core.plans.lessons import parse
    from headprune_core.reports.handout import write_handout

    monkeypatch.setenv("HEADPRUNE_CACHE", str(fixture_cache["root"]))
    lesson = parse("---\ntitle: Offline\nplan: fixture\n---\n\n## Heads\nview: importance?lang=de\n\nLook.\n\n"
                   "## Away\nview: prune?lang=es&k=4\n\nAnd then.\n", "offline")
    out = write_handout(lesson, tmp_path / "handout.html", plan=fixture_cache["plan"])
    with browser.offline_page(out, "document.querySelectorAll('.chart .main-svg').length >= 3") as (
            page, errors, requests):
        drawn = page.locator(".chart.js-plotly-plot").count()
        sections = page.locator("section.card").evaluate_all("els => els.map(e => e.id)")
        page.screenshot(path=str(ARTIFACTS / "lesson-handout.png"), full_page=True)
    assert not errors and all(u.startswith("file://") for u in requests), (errors, requests)
    assert sections == ["step-1", "step-2"] and drawn == 3  # the German map, the languages' Spearman, the curve
