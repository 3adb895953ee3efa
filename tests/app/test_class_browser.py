"""Class mode in a real browser: the teacher and five students on one class-mode server. A student's new-mask
evaluation is served while the teacher computes and another student asks for training (refused), and the
students change nothing in the cache but the evaluation entries of their own masks."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.helpers import browser

ARTIFACTS = Path(os.environ.get("HEADPRUNE_ARTIFACTS", browser.REPO / "artifacts")) / "browser"
KEY = "a key for the class"

pytestmark = browser.browser_marks()


def _forget_all_pruned(cache: Path) -> None:
    """Delete from a private cache copy the evaluations of masks that prune every head (a mask is rows of 0/1,
    0 pruned), which an earlier test on the shared fixture cache may have made, so that the student's mask below
    is new whatever ran first."""
    for config_file in sorted((cache / "runs" / "eval").glob("*/config.json")):
        mask = json.loads(config_file.read_text())["config"]["mask"]
        if mask and all(v == 0 for row in mask for v in row):
            shutil.rmtree(config_file.parent)


def test_teacher_and_five_students_on_one_class_mode_server(cache_copy):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _forget_all_pruned(cache_copy)
    before = browser.cache_listing(cache_copy)
    env = {"HEADPRUNE_CLASS": "1", "HEADPRUNE_TEACHER_KEY": KEY, "HEADPRUNE_STUDENT_CAP_S": "120"}
    with browser.streamlit_server(cache_copy, env=env, log=ARTIFACTS / "streamlit-class.log") as url, \
            sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, args=browser.CHROMIUM_ARGS, headless=True)
        pages = [chromium.new_context(viewport={"width": 1400, "height": 1000}).new_page() for _ in range(6)]
        teacher, evaluator, trainer, *others = pages
        browser.open_page(teacher, url, "prune")
        browser.unlock(teacher, KEY)
        browser.open_page(evaluator, url, "prune")
        browser.open_page(trainer, url, "retrain")
        for page, name in zip(others, ("home", "importance", "findings")):
            browser.open_page(page, url, name)
        # at once: the teacher times the pruned model (alone in the queue), a student asks for a new mask
        teacher.get_by_role("button", name="Measure size and latency").click()
        thumb = evaluator.locator('[data-testid="stSlider"] input[type="range"]').first
        thumb.focus()
        thumb.press("End")  # every head pruned: a mask no one evaluated yet
        k = int(thumb.get_attribute("value"))
        # served once the teacher's work is done: the new metric appears, no starvation
        evaluator.wait_for_function(
            "want => { const m = document.querySelector('[data-testid=\"stMetric\"]');"
            " return m && m.innerText.includes(want); }", arg=f"{k} of {k} heads pruned", timeout=300_000)
        browser.wait_idle(evaluator)
        browser.wait_idle(teacher)
        assert teacher.get_by_text("Speed-up").count() + teacher.get_by_text("speed-up").count() > 0
        # the student who wants to train finds no button, and a line saying whose it is
        assert trainer.get_by_role("button", name="Prune and retrain").count() == 0
        assert trainer.get_by_text("retraining is the teacher's").count() == 1
        # the teacher has the owner's controls; students have not
        browser.goto_nav(teacher, "runs")
        assert teacher.get_by_text("Delete entries").count() == 1  # the expander holding the Delete button
        assert teacher.get_by_role("button", name="Run study").count() == 1
        browser.goto_nav(others[0], "runs")
        assert others[0].get_by_text("Delete entries").count() == 0
        assert others[0].get_by_role("button", name="Run study").count() == 0
        assert others[0].get_by_text("deleting entries is the teacher's").count() == 1
        boxes = {i: browser.exception_boxes(p) for i, p in enumerate(pages)}
        browser.full_screenshot(trainer, ARTIFACTS / "class_student_retrain.png")
        chromium.close()
    assert {i: b for i, b in boxes.items() if b} == {}
    changes = browser.cache_changes(before, browser.cache_listing(cache_copy))
    assert changes["removed"] == changes["modified"] == changes["other_new"] == []
    assert changes["new_evaluations"]  # the student's new mask, cached for everyone
