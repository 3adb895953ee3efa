"""The server's compute queue: a few short computations at once, exclusive work alone, first come first served,
and a waiting session told its place in line."""

from __future__ import annotations

import threading
import time

import pytest

from headprune_app.compute_queue import ComputeQueue, slots_from_env, waiting_text


def _hold(queue: ComputeQueue, what: str, events: list, release: threading.Event, *, exclusive=False, waits=None,
          **kw):
    def on_wait(position, running):
        if waits is not None:
            waits.append((position, running))
    with queue.slot(what, exclusive=exclusive, on_wait=on_wait, **kw):
        events.append(("start", what))
        release.wait(10)
        events.append(("end", what))


def _start(queue, what, events, release, **kw) -> threading.Thread:
    t = threading.Thread(target=_hold, args=(queue, what, events, release), kwargs=kw, daemon=True)
    t.start()
    return t


def _until(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_two_slots_then_a_line_first_come_first_served():
    queue, events = ComputeQueue(slots=2), []
    first, third_waits = threading.Event(), []
    a = _start(queue, "a", events, first)
    b = _start(queue, "b", events, first)
    _until(lambda: len(queue.state()["running"]) == 2)
    later = threading.Event()
    c = _start(queue, "c", events, later, waits=third_waits)
    _until(lambda: third_waits)
    assert third_waits[0] == (1, 2) and queue.state() == {"running": ["a", "b"], "waiting": ["c"]}
    first.set()  # a and b finish: c starts
    for t in (a, b):
        t.join(5)
    _until(lambda: ("start", "c") in events)
    later.set()
    c.join(5)
    assert queue.state() == {"running": [], "waiting": []}


def test_exclusive_work_runs_alone_and_keeps_its_place():
    queue, events = ComputeQueue(slots=2), []
    short = threading.Event()
    a = _start(queue, "a", events, short)
    _until(lambda: queue.state()["running"] == ["a"])
    alone, waits = threading.Event(), []
    x = _start(queue, "train", events, alone, exclusive=True, waits=waits)
    _until(lambda: queue.state()["waiting"] == ["train"])
    after = threading.Event()
    b = _start(queue, "b", events, after)  # a free slot, but 'train' came first: b waits behind it
    _until(lambda: queue.state()["waiting"] == ["train", "b"])
    assert ("start", "b") not in events
    short.set()
    a.join(5)
    _until(lambda: queue.state()["running"] == ["train"])
    time.sleep(0.2)
    assert queue.state()["running"] == ["train"]  # b does not join exclusive work
    alone.set()
    x.join(5)
    _until(lambda: ("start", "b") in events)
    after.set()
    b.join(5)
    assert [e for e in events if e[0] == "start"] == [("start", "a"), ("start", "train"), ("start", "b")]


def test_reentrant_within_a_thread_and_released_on_error():
    queue = ComputeQueue(slots=1)
    with queue.slot("outer"), queue.slot("inner"):  # work inside work does not wait for itself
        assert queue.state()["running"] == ["outer"]
    with pytest.raises(RuntimeError), queue.slot("fails"):
        raise RuntimeError("boom")
    assert queue.state() == {"running": [], "waiting": []}
    with queue.slot("next"):  # the failed one let go of its slot
        pass


def test_waiting_text_and_slots_from_the_environment(monkeypatch):
    assert waiting_text(1, 2) == ("Waiting for the machine: 2 computations of other sessions run, you are 1st "
                                  "in line.")
    assert waiting_text(3, 1).endswith("1 computation of other sessions runs, you are 3rd in line.")
    assert waiting_text(12, 2).endswith("12th in line.") and waiting_text(22, 2).endswith("22nd in line.")
    monkeypatch.setenv("HEADPRUNE_COMPUTE_SLOTS", "4")
    assert slots_from_env() == 4
    monkeypatch.setenv("HEADPRUNE_COMPUTE_SLOTS", "zero")
    assert slots_from_env() == 2


def test_class_mode_the_teacher_goes_first_and_a_student_holds_one_place():
    from headprune_app.compute_queue import AlreadyQueued

    queue, events = ComputeQueue(slots=1), []
    busy = threading.Event()
    a = _start(queue, "a", events, busy, session="s1", priority=1, one_per_session=True)
    _until(lambda: queue.state()["running"] == ["a"])
    # the same student asks again while theirs runs: refused, nothing queued
    with pytest.raises(AlreadyQueued, match="already have a computation in line"):
        with queue.slot("a again", session="s1", priority=1, one_per_session=True):
            pass
    assert queue.state()["waiting"] == []
    done = threading.Event()
    student_waits, teacher_waits = [], []
    b = _start(queue, "student b", events, done, session="s2", priority=1, one_per_session=True, waits=student_waits)
    _until(lambda: student_waits)
    t = _start(queue, "teacher", events, done, session="t", priority=0, waits=teacher_waits)
    _until(lambda: teacher_waits)
    assert teacher_waits[-1][0] == 1  # first in line, ahead of the student who came earlier
    _until(lambda: student_waits[-1][0] == 2)
    busy.set()
    a.join(5)
    _until(lambda: ("start", "teacher") in events)
    assert ("start", "student b") not in events
    done.set()
    for th in (b, t):
        th.join(5)
    assert [e for e in events if e[0] == "start"] == [("start", "a"), ("start", "teacher"), ("start", "student b")]


def test_two_tabs_of_one_browser_hold_one_place():
    """A place in line belongs to the browser (its XSRF cookie, shared by its tabs), else to the session: a student
    who opens a second tab does not get a second place; two browsers, or two sessions without cookies, are two."""
    from headprune_app.compute_queue import AlreadyQueued, place_owner
    cookie = {"_streamlit_xsrf": "2|ab|cd|1"}
    tab1, tab2 = place_owner(cookie, "s1"), place_owner(cookie, "s2")
    other = place_owner({"_streamlit_xsrf": "2|ef|gh|1"}, "s3")
    assert tab1 == tab2 != other and place_owner({}, "s4") == "session:s4" != place_owner(None, "s5")
    queue, held, done = ComputeQueue(slots=2), threading.Event(), threading.Event()

    def first_tab():
        with queue.slot("evaluate", session=tab1, one_per_session=True):
            held.set()
            done.wait(10)

    worker = threading.Thread(target=first_tab)
    worker.start()
    held.wait(10)
    outcomes = {}
    for name, owner in (("second tab", tab2), ("other browser", other)):
        def ask(name=name, owner=owner):
            try:
                with queue.slot("evaluate", session=owner, one_per_session=True):
                    outcomes[name] = "served"
            except AlreadyQueued:
                outcomes[name] = "refused"
        t = threading.Thread(target=ask)
        t.start()
        t.join(10)
    done.set()
    worker.join(10)
    assert outcomes == {"second tab": "refused", "other browser": "served"}
