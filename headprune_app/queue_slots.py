"""A session's place in the server's one compute queue (:mod:`headprune_app.compute_queue`): short work (an
evaluation, tagging, attention) a few at a time, training jobs and timings alone, first come first served, with
the waiting session told its place (:func:`queued`); in class mode a student's work goes after the teacher's, one
at a time per browser, under the student cap."""

from __future__ import annotations

import contextlib
import threading

import streamlit as st

from headprune_app import roles
from headprune_app.compute_queue import ComputeQueue, place_owner, slots_from_env, waiting_text
from headprune_core.base.progress import time_cap

_QUEUE: list[ComputeQueue] = []
_QUEUE_LOCK = threading.Lock()


def compute_queue() -> ComputeQueue:
    """The server's queue for model work (``HEADPRUNE_COMPUTE_SLOTS`` short computations at once): one per server
    process, at module level (not in ``st.cache_resource``, which Streamlit's ``clear_cache`` message rebuilds, so a
    student could start work beside the teacher's exclusive job)."""
    with _QUEUE_LOCK:
        if not _QUEUE:
            _QUEUE.append(ComputeQueue(slots_from_env()))
        return _QUEUE[0]


def place() -> str | None:
    try:
        cookies = st.context.cookies
    except Exception:  # no request context (a test's AppTest): the session alone
        cookies = {}
    return place_owner(cookies, roles.session_id())


@contextlib.contextmanager
def slot(what: str, *, exclusive: bool = False, on_wait=None):
    """A place in the compute queue for ``what``: in class mode a student's browser holds one place at a time,
    after the teacher's work, its work stops at the student cap and computes evaluations only."""
    student = not roles.is_teacher()
    with compute_queue().slot(what, exclusive=exclusive, on_wait=on_wait, priority=1 if student else 0,
                              session=place(), one_per_session=student), \
            time_cap(roles.student_cap_s() if student else None), roles.student_work():
        yield


def queued(what: str, *, exclusive: bool = False):
    """A place in the compute queue for ``what`` (:func:`slot`), telling this session its place in line while it
    waits, and a student the cap (:func:`~headprune_app.roles.student_cap_s`)."""
    box = st.empty()
    student = not roles.is_teacher()
    cap = roles.student_cap_s() if student else None

    def on_wait(position: int, running: int) -> None:
        extra = f" The teacher's work goes first; each of yours may take up to {cap:.0f} s." if student else ""
        box.info(waiting_text(position, running) + extra, icon=":material/hourglass_top:")

    @contextlib.contextmanager
    def held():
        with slot(what, exclusive=exclusive, on_wait=on_wait):
            box.empty()
            yield
    return held()
