"""Lesson files: Markdown with a front matter and '## ' steps, each with a 'view:' line; bad files and bad steps
get a clear line naming the lesson and the step, never an exception; the shipped lesson reads cleanly."""

from __future__ import annotations

import pytest

from headprune_app.nav import NAMES as PAGES  # the app's pages, as the app hands them to the core
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
    lesson = L.parse(text.replace("view: http", "notes without a view\nview: http"), "mixed", pages=PAGES)
    assert [s.problem != "" for s in lesson.steps] == [True, True]
    assert lesson.problems[0].startswith("step 1 (Heads in German): unknown page 'secret-admin'")
    assert "first line is not 'view:" in lesson.problems[1]
    ok = L.parse(GOOD.replace("view: importance", "view: nowhere"), "one-bad", pages=PAGES)
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


def test_a_written_lesson_reads_back_the_same():
    lesson = L.parse(GOOD, "two")
    again = L.parse(L.render(lesson), "two")
    assert (again.title, again.plan, again.steps) == (lesson.title, lesson.plan, lesson.steps)


def test_adding_steps_writes_atomically_and_never_replaces_without_asking(tmp_path):
    step = L.make_step("Heads in Dutch", "http://host:8501/importance?task=pos&lang=nl&present=true&step=3",
                       "Look at layer 6.")
    assert (step.page, step.params) == ("importance", (("task", "pos"), ("lang", "nl")))
    lesson, path = L.add_step("mine", step, tmp_path, title="My lesson\nline two", plan="demo", new=True)
    assert path == tmp_path / "lessons" / "mine.md" and L.read(path).title == "My lesson line two"
    with pytest.raises(L.LessonError, match="exists; add to it"):  # a second new lesson of that name: asked first
        L.add_step("mine", step, tmp_path, title="Other", new=True)
    assert L.read(path).steps == (step,)
    second = L.make_step("", "prune?k=3")
    lesson, _ = L.add_step("mine", second, tmp_path)
    assert [s.title for s in L.read(path).steps] == ["Heads in Dutch", "prune"]
    L.add_step("mine", second, tmp_path, title="Fresh", new=True, replace_existing=True)
    assert L.read(path).title == "Fresh" and len(L.read(path).steps) == 1
    assert [p.name for p in path.parent.iterdir()] == ["mine.md"]  # no temp file left


def test_a_shipped_lesson_changed_is_saved_as_the_caches_copy(tmp_path):
    preset = L.available(tmp_path)[0]["attention-heads-across-languages"]
    assert L.is_preset(preset)
    moved = L.move_step(preset, 2, +1)
    assert [s.title for s in moved.steps[:3]] == [preset.steps[0].title, preset.steps[2].title,
                                                   preset.steps[1].title]
    assert L.move_step(preset, 1, -1).steps == preset.steps  # kept within the lesson
    path = L.save(L.drop_step(moved, 8), tmp_path, replace_existing=True)
    mine = L.available(tmp_path)[0]["attention-heads-across-languages"]
    assert not L.is_preset(mine) and len(mine.steps) == 7 and mine.source == str(path)
    assert len(L.read(L.PRESET_DIR / "attention-heads-across-languages.md").steps) == 8  # the package untouched
    L.delete("attention-heads-across-languages", tmp_path)
    assert L.is_preset(L.available(tmp_path)[0]["attention-heads-across-languages"])
    with pytest.raises(L.LessonError, match="shipped lessons cannot be deleted"):
        L.delete("attention-heads-across-languages", tmp_path)


@pytest.mark.parametrize("call, message", [
    (lambda: L.make_step("t", "admin?x=1", pages=PAGES), "unknown page 'admin'"),
    (lambda: L.make_step("t", "course/admin?x=1", pages=PAGES), "unknown page 'course/admin'"),
    (lambda: L.make_step("t", "home", "fine\n## a new step"), "starts a new step"),
    (lambda: L.lesson_path("../etc/passwd"), "use letters, digits"),
    (lambda: L.save(L.Lesson("empty", "t", "demo", "", ()), None), "at least one step"),
])
def test_bad_writes_say_what_is_wrong(call, message):
    with pytest.raises(L.LessonError, match=message):
        call()


@pytest.mark.parametrize("link", ["https://uni.example/course/prune?k=3", "https://uni.example/course/prune/?k=3",
                                  "https://uni.example/prune?k=3", "/course/prune?k=3", "prune?k=3", "prune/?k=3"])
def test_a_link_from_a_server_under_a_sub_path_reads_its_page(link):
    """Behind a reverse proxy the dashboard lives under a sub-path: the page is the last part of the path that
    names one of the app's pages, with or without a trailing slash."""
    assert L.parse_view(link, PAGES) == ("prune", (("k", "3"),), "")
    assert L.make_step("", link, pages=PAGES).page == "prune"


def test_the_core_checks_pages_only_against_the_list_the_app_gives():
    # the server's own address, at its root or under a sub-path, with or without the slash: its first page
    for base in ("https://uni.example/course/?k=3", "https://uni.example/course?k=3", "https://uni.example/?k=3",
                 "/course/?k=3", "?k=3"):
        assert L.parse_view(base, PAGES) == ("home", (("k", "3"),), ""), base
    assert L.parse_view("nowhere?k=3", PAGES)[2] == f"unknown page 'nowhere' (pages: {', '.join(PAGES)})"
    assert L.parse_view("mine?k=3", ("home", "mine")) == ("mine", (("k", "3"),), "")  # another app's pages
    assert L.parse_view("mine?k=3") == ("mine", (("k", "3"),), "")  # no list given: not checked
