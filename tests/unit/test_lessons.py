"""Lesson files: Markdown with a front matter and '## ' steps, each with a 'view:' line; bad files and bad steps
get a clear line naming the lesson and the step, never an exception; the shipped lesson reads cleanly."""

from __future__ import annotations

import pytest

from headprune_core.plans import lessons as L

GOOD = """---
title: Two steps
plan: demo
---

## Heads in German
view: importance?task=pos&lang=de

Look at the **dark** squares.

## Pasted link
view: http://localhost:8501/prune?strategy=random&k=3&lesson=old&step=9

Random heads.
"""


def test_a_lesson_reads_its_steps_views_and_notes():
    lesson = L.parse(GOOD, "two")
    assert (lesson.title, lesson.plan, len(lesson.steps), lesson.problems) == ("Two steps", "demo", 2, ())
    first, second = lesson.steps
    assert (first.page, first.params, first.notes) == ("importance", (("task", "pos"), ("lang", "de")),
                                                       "Look at the **dark** squares.")
    # a full link pasted: its page and choices, not its host or an old lesson position
    assert (second.page, second.params) == ("prune", (("strategy", "random"), ("k", "3")))
    assert lesson.step_link(2) == "/prune?strategy=random&k=3&lesson=two&step=2"


@pytest.mark.parametrize("text, message", [
    ("no front matter\n## a\nview: home\n", "no front matter"),
    ("---\nplan: demo\n---\n## a\nview: home\n", "has no title"),
    ("---\ntitle: t\n---\nno steps here\n", "no steps"),
    ("---\ntitle t\n---\n## a\nview: home\n", "is not 'key: value'"),
])
def test_unreadable_lessons_say_what_is_wrong(text, message):
    with pytest.raises(L.LessonError, match=message):
        L.parse(text, "bad", "lessons/bad.md")


def test_a_bad_step_says_why_and_the_others_work():
    text = GOOD.replace("view: importance?task=pos&lang=de", "view: secret-admin?x=1")
    lesson = L.parse(text.replace("view: http", "notes without a view\nview: http"), "mixed")
    assert [s.problem != "" for s in lesson.steps] == [True, True]
    assert lesson.problems[0].startswith("step 1 (Heads in German): unknown page 'secret-admin'")
    assert "first line is not 'view:" in lesson.problems[1]
    ok = L.parse(GOOD.replace("view: importance", "view: nowhere"), "one-bad")
    assert [s.problem == "" for s in ok.steps] == [False, True]


def test_files_too_big_not_text_or_badly_named_are_listed_not_raised(tmp_path):
    folder = L.lessons_dir(tmp_path)
    folder.mkdir(parents=True)
    (folder / "huge.md").write_text("---\ntitle: t\n---\n## a\nview: home\n" + "x" * (L.MAX_BYTES + 1))
    (folder / "binary.md").write_bytes(b"\xff\xfe\x00bad")
    (folder / "..hidden.md").write_text(GOOD)
    (folder / "mine.md").write_text(GOOD)
    found, problems = L.available(tmp_path)
    assert "mine" in found and "attention-heads-across-languages" in found  # the preset too
    text = "\n".join(problems)
    assert "huge.md: " in text and "too big for a lesson" in text
    assert "binary.md: not UTF-8 text" in text and "..hidden.md: a lesson's file name" in text


def test_the_shipped_lesson_reads_cleanly():
    found, problems = L.available()
    lesson = found["attention-heads-across-languages"]
    assert problems == [] and lesson.problems == () and lesson.plan == "demo"
    assert len(lesson.steps) == 8 and all(s.notes for s in lesson.steps)
    assert {s.page for s in lesson.steps} >= {"importance", "prune", "findings", "task_affinity"}
    assert any("findings preset" in s.notes for s in lesson.steps if s.page == "findings")
