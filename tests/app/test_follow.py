"""Following the teacher's lesson step (issue 46), in AppTest sessions of one process (one server): the teacher's
Back and Next move the server's step, a following window applies it on its next run (the browser's fragment
reruns every second: tests/app/test_follow_browser.py), a student's own Next moves only the student and leaves
follow mode, and the presenter view and the projector's window stay on one step whichever is pressed."""

from __future__ import annotations

import threading

import pytest

from headprune_app import follow
from tests.helpers.app import make_app

LESSON = "attention-heads-across-languages"
KEY = "the follow test's key"


@pytest.fixture(autouse=True)
def fresh_step(monkeypatch):
    """A fresh server's teacher step (the module-level one outlives a test)."""
    one = follow.TeacherStep()
    monkeypatch.setattr(follow, "teacher_step", lambda: one)
    return one


def _ok(at):
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _step(at) -> int:
    bar = next(m.value for m in at.markdown if ":material/school:" in m.value)
    return int(bar.split("step ")[1].split(" of")[0])


def _click(at, key):
    next(b for b in at.button if b.key == key).click()
    return _ok(at)


def _open(cache, monkeypatch, **params):
    at = make_app(cache, monkeypatch)
    for key, value in params.items():
        at.query_params[key] = value
    return _ok(at)


def test_the_teacher_step_moves_once_per_change_and_is_thread_safe():
    step = follow.TeacherStep()
    assert step.now() is None
    first = step.move("a", 1)
    assert step.move("a", 1) is first and first.version == 1  # the same step: no new version
    threads = [threading.Thread(target=step.move, args=("a", k)) for k in range(2, 12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert step.now().version == 11  # ten different steps: ten moves, none lost


def test_presenter_and_projector_stay_in_step(fixture_cache, monkeypatch, fresh_step):
    """Without class mode every session is the owner's: the presenter view's Next moves the projector's window
    (which follows), and the projector's own Back moves the presenter view."""
    cache = fixture_cache["root"]
    presenter = _open(cache, monkeypatch, lesson=LESSON, step="2", presenter="true")
    assert (fresh_step.now().lesson, fresh_step.now().step) == (LESSON, 2)  # the presenter's link moves the class
    notes = " ".join(m.value for m in presenter.markdown)
    assert "Presenter view" in notes and "**Next:**" in notes  # the next step's title
    assert any("present=true" in c.value and "follow=true" in c.value for c in presenter.code)  # projector's link
    projector = _open(cache, monkeypatch, lesson=LESSON, step="1", present="true", follow="true")
    assert _step(projector) == 2  # opened on an older link, it joins the teacher's step
    _click(presenter, "lesson_next")
    assert _step(presenter) == 3 and fresh_step.now().step == 3
    assert _step(_ok(projector)) == 3
    _click(projector, "lesson_back")
    assert _step(projector) == 2 and fresh_step.now().step == 2
    assert _step(_ok(presenter)) == 2
    # still following (and the address says so), still presenting
    assert projector.session_state["_following"] is True and projector.session_state["present"] is True
    assert projector.query_params["follow"] in ("true", ["true"])


@pytest.fixture
def class_mode(monkeypatch, class_settings):
    from headprune_app import roles

    monkeypatch.setenv("HEADPRUNE_CLASS", "1")
    monkeypatch.setenv("HEADPRUNE_TEACHER_KEY", KEY)
    monkeypatch.setattr(roles, "_GUARD", roles.KeyGuard(delay_s=0.0))
    monkeypatch.setattr(roles, "_UNLOCK_SPENT", threading.Event())
    monkeypatch.setattr(roles, "_EVALS", {})


def test_students_follow_the_teacher_and_cannot_move_the_class(fixture_cache, monkeypatch, class_mode,
                                                               fresh_step):
    cache = fixture_cache["root"]
    waiting = _open(cache, monkeypatch, follow="true")  # before the lesson starts: a line says so
    assert any("no lesson step yet" in c.value for c in waiting.caption)
    teacher = _open(cache, monkeypatch)
    teacher.text_input(key="teacher_key_input").input(KEY)
    _click(teacher, next(b.key for b in teacher.button if b.label == "Unlock"))
    assert teacher.session_state["_teacher"] is True
    teacher.query_params["lesson"], teacher.query_params["step"] = LESSON, "1"
    _ok(teacher)
    assert fresh_step.now().step == 1
    students = [_open(cache, monkeypatch, follow="true") for _ in range(3)]
    assert [_step(s) for s in students] == [1, 1, 1]
    assert _step(_ok(waiting)) == 1
    for k in (2, 3, 4):
        _click(teacher, "lesson_next")
        assert fresh_step.now().step == k
        assert [_step(_ok(s)) for s in students] == [k, k, k]
    # a student's Next moves only that student, who leaves follow mode and stays there
    mover = students[0]
    _click(mover, "lesson_next")
    assert _step(mover) == 5 and fresh_step.now().step == 4
    assert not mover.session_state["_following"] and "follow" not in mover.query_params
    assert _step(_ok(students[1])) == 4 and _step(_ok(teacher)) == 4
    _click(teacher, "lesson_back")
    assert _step(_ok(mover)) == 5  # left follow mode: stays where it went
    assert _step(_ok(students[1])) == 3
    # a choice made inside the step (the focus language) stays through the follow checks until the step changes
    student = students[2]
    assert _step(_ok(student)) == 3
    box = student.selectbox(key="lang")
    from headprune_core.plans.selection import lang_label
    other = next(c for c in ("de", "es", "tr", "fr", "ru") if c != box.value and lang_label(c) in box.options)
    box.select(other)
    _ok(student)
    chosen = student.session_state["lang"]
    assert chosen != "en" and _step(_ok(student)) == 3 and student.session_state["lang"] == chosen
    _click(teacher, "lesson_next")
    assert _step(_ok(student)) == 4 and student.session_state["lang"] == "en"  # step 4's own choice
    # a student's session cannot move the class whatever it sends: the server's step is the teacher's
    students[1].query_params["step"] = "7"
    _ok(students[1])
    assert fresh_step.now().step == 4


def test_a_switch_lost_to_a_stale_request_is_made_again_and_a_page_opened_later_is_left(fixture_cache, monkeypatch):
    """A page switch lost to a request the browser sent before it leaves a run on the old page with the new step's
    address (30 followers: runs of Head importance with step 4, a Prune step); that run switches again. Once the
    step showed on its page, a page the student opens with the same address is left alone."""
    from headprune_app import lessons_view
    at = _open(fixture_cache["root"], monkeypatch, lesson=LESSON, step="4")
    assert _step(at) == 4 and at.title[0].value.startswith("Prune")
    at.switch_page("headprune_app/pages/importance.py")  # later, by the student's own choice: stays
    at.query_params["lesson"], at.query_params["step"] = LESSON, "4"
    _ok(at)
    assert at.title[0].value.startswith("Head importance")
    at.session_state[lessons_view.SWITCHING] = (LESSON, 4)  # what a switch to step 4 that did not land leaves
    _ok(at)
    assert _step(at) == 4 and at.title[0].value.startswith("Prune"), at.title[0].value
    assert lessons_view.SWITCHING not in at.session_state  # landed
