"""Following the teacher in Chromium (issue 46): on a class-mode server the teacher and 5 students who opened the
class link with ``?follow=true``; the teacher presses Next three times and every student shows the teacher's
step within :data:`FOLLOW_WITHIN_S` each time; a student who left follow mode stays where they are; a
student's Next does not move the class. Without class mode, the presenter view and the projector's window stay
in step across Back and Next, whichever is pressed."""

from __future__ import annotations

import time

import pytest

from tests.helpers import browser

LESSON = "follow-test"
# light views, so that the five students' browsers and the server, on the same two cores, measure the following
# and not the drawing of heavy charts (bench/follow.py times the shipped lesson with 30 students)
LESSON_FILE = """---
title: Following
plan: fixture
---

## One
view: home

First.

## Two
view: lessons

Second.

## Three
view: runs

Third.

## Four
view: lessons

Fourth.

## Five
view: home

Fifth.
"""
STEPS = 5
# The bound. Measured here (2 cores shared by the server and six browsers): 1.0 to 1.7 s from the click
# to all five students showing the step (24 moves). Before three fixes it was 2 to 19 s and, once in CI, never (a
# window lost its follow state at a page switch; a stale look sent it back; a full garbage collection after each
# script run took 0.15 s of CPU, once a second for each following window). bench/follow.py measures 30 students.
FOLLOW_WITHIN_S = 5.0
SHIPPED, SHIPPED_STEPS = "attention-heads-across-languages", 8
KEY = "the follow test's key"
CLASS = {"HEADPRUNE_CLASS": "1", "HEADPRUNE_TEACHER_KEY": KEY}

pytestmark = [*browser.browser_marks(), pytest.mark.alone]  # students follow within 5 s: timed, so alone


def _step_of(page, of: int = STEPS) -> int | None:
    text = page.locator('[data-testid="stMain"]').first.inner_text()
    marker = text.find(f" of {of}:")
    if marker < 0:
        return None
    return int(text[:marker].rsplit("step ", 1)[1])


def _waits_for(pages, k: int, within: float, of: int = STEPS) -> float:
    """Seconds until every page shows step ``k`` (at most ``within``; the test fails past it)."""
    start = time.perf_counter()
    while True:
        got = [_step_of(p, of) for p in pages]
        if got == [k] * len(pages):
            return time.perf_counter() - start
        if time.perf_counter() - start > within:
            raise AssertionError(f"after {within} s the students show steps {got}, not {k}")
        time.sleep(0.2)


def _niced_chromium(pw, tmp_path):
    """Chromium at the lowest CPU priority (nice 19), as the students' browsers on their own machines leave the
    server's cores to the server (the five browsers share this machine's two cores with it)."""
    wrapper = tmp_path / "chromium-niced"
    wrapper.write_text(f'#!/bin/sh\nexec nice -n 19 {browser.CHROMIUM} "$@"\n')
    wrapper.chmod(0o755)
    return pw.chromium.launch(executable_path=str(wrapper), args=browser.CHROMIUM_ARGS, headless=True)


def _open(chromium, url: str, query: str):
    page = chromium.new_context(viewport={"width": 1280, "height": 720}).new_page()
    page.goto(f"{url}/?{query}", wait_until="domcontentloaded")
    page.wait_for_selector("h1", timeout=180_000)
    browser.wait_idle(page, 300_000)
    return page


def test_five_students_follow_the_teacher_within_5_s(cache_copy, tmp_path):
    pytest.importorskip("playwright", reason="playwright is not installed (pip install playwright==1.65.2)")
    from playwright.sync_api import sync_playwright
    (cache_copy / "lessons").mkdir(exist_ok=True)
    (cache_copy / "lessons" / f"{LESSON}.md").write_text(LESSON_FILE)
    with browser.streamlit_server(cache_copy, env=CLASS) as url, sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, args=browser.CHROMIUM_ARGS, headless=True)
        teacher = _open(chromium, url, "")
        browser.unlock(teacher, KEY)
        browser.present_lesson(teacher, "Following")  # in the unlocked session (a new address: a new session)
        niced = _niced_chromium(pw, tmp_path)
        students = [_open(niced, url, "follow=true") for _ in range(5)]
        _waits_for(students, 1, 60)  # they join the teacher's step at once on opening
        delays = []
        for k in (2, 3, 4):
            teacher.locator(".st-key-lesson_next button").first.click()
            delays.append(_waits_for(students, k, FOLLOW_WITHIN_S))
            print(f"step {k}: every student followed in {delays[-1]:.1f} s", flush=True)
            _waits_for([teacher], k, 60)
            browser.wait_idle(teacher)
        # one student leaves follow mode (the toggle in the step's line): stays where they are
        leaver = students[0]
        leaver.get_by_text("Follow the teacher").first.click()
        browser.wait_idle(leaver)
        # another presses their own Next: only they move, and they leave follow mode
        mover = students[1]
        mover.locator(".st-key-lesson_next button").first.click()
        mover.wait_for_function(f"() => document.body.innerText.includes('step 5 of {STEPS}')", timeout=60_000)
        browser.wait_idle(mover)
        time.sleep(4)  # more than two of the followers' looks at the teacher's step
        assert _step_of(teacher) == 4 and _waits_for(students[2:], 4, FOLLOW_WITHIN_S) >= 0
        teacher.locator(".st-key-lesson_back button").first.click()
        _waits_for(students[2:], 3, FOLLOW_WITHIN_S)
        _waits_for([teacher], 3, 60)
        time.sleep(4)
        assert _step_of(leaver) == 4 and _step_of(mover) == 5  # neither follows any more
        assert not [p for p in [teacher, *students] if browser.exception_boxes(p)]
        chromium.close()
    assert max(delays) < FOLLOW_WITHIN_S, delays


def test_the_presenter_view_and_the_projector_stay_in_step(fixture_cache):
    pytest.importorskip("playwright", reason="playwright is not installed (pip install playwright==1.65.2)")
    from playwright.sync_api import sync_playwright
    with browser.streamlit_server(fixture_cache["root"]) as url, sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, args=browser.CHROMIUM_ARGS, headless=True)
        presenter = _open(chromium, url, f"lesson={SHIPPED}&step=2&presenter=true")
        assert "Presenter view" in presenter.locator("body").inner_text()
        link = presenter.locator('[data-testid="stCode"] code').first.inner_text().replace("\n", "")
        assert "present=true" in link and "follow=true" in link
        projector = chromium.new_context(viewport={"width": 1280, "height": 720}).new_page()
        projector.goto(link, wait_until="domcontentloaded")
        _waits_for([projector], 2, 120, SHIPPED_STEPS)
        for button, k in (("Next", 3), ("Next", 4), ("Back", 3)):
            presenter.get_by_role("button", name=button).click()
            _waits_for([presenter, projector], k, FOLLOW_WITHIN_S, SHIPPED_STEPS)
        # the projector's own Next (the teacher's window too) moves the presenter view
        projector.locator(".st-key-lesson_next button").first.click()
        _waits_for([presenter, projector], 4, FOLLOW_WITHIN_S, SHIPPED_STEPS)
        assert not browser.exception_boxes(projector) and not browser.exception_boxes(presenter)
        chromium.close()
