"""Following the teacher's lesson step: one step per server, held at module level, that the teacher's sessions
move and other windows follow.

* The teacher's step (:class:`TeacherStep`) is the lesson and step the teacher last went to by Back, Next, Start
  or a link (in class mode a session unlocked with the key; without class mode every session is the owner's).
  It lives beside the key guard and the compute queue (:mod:`headprune_app.resident`), where no client's
  ``clear_cache`` reaches; students cannot move it.
* A window *follows* (``?follow=true``, or the Follow toggle) or *presents notes* (``?presenter=true``: the
  presenter view). Such a window watches the teacher's step with a fragment that reruns every :data:`TICK_S`
  seconds and reads one module-level value; when the step changed since the window last applied it, the
  fragment switches the window to that step (its page and its choices). Between two of the teacher's
  steps, a student's own choices inside the step stay.
* A student who presses Back or Next leaves follow mode (and stays where they went); the Follow toggle rejoins.
  A teacher's window that follows (the projector's) moves the class by its own Back and Next, so the presenter
  view and the projected window stay on one step whichever is pressed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import streamlit as st

from headprune_app import roles
from headprune_app.resident import resident

FOLLOW = "follow"  # URL parameter: this window follows the teacher's step
FOLLOWING = "_following"  # whether this window follows: a plain session value (no widget's), set from the URL once
TOGGLE = "follow_toggle"  # the Follow toggle's widget key (it shows and sets FOLLOWING)
PRESENTER = "presenter"  # URL parameter: the presenter view (notes; follows and moves the teacher's step)
SEEN = "_follow_seen"  # the version of the teacher's step this session last applied or made
LEAVE = "_follow_leave"  # set by a student's own Back / Next: the next run leaves follow mode
RUNS = "_follow_runs"  # this session's full runs that drew the following fragment
TICK_S = 1.0  # how often a following window looks at the teacher's step


@dataclass(frozen=True)
class Position:
    lesson: str
    step: int
    version: int  # goes up by one at each move


class TeacherStep:
    """The lesson step the teacher is at, for the whole server (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at: Position | None = None

    def move(self, lesson: str, step: int) -> Position:
        """The teacher went to ``step`` of ``lesson``; a new version unless that is where the class already is."""
        with self._lock:
            if self._at is None or (self._at.lesson, self._at.step) != (lesson, step):
                self._at = Position(lesson, step, (self._at.version if self._at else 0) + 1)
            return self._at

    def now(self) -> Position | None:
        with self._lock:
            return self._at


@resident()
def teacher_step() -> TeacherStep:
    """The server's one :class:`TeacherStep` (module level: ``clear_cache`` cannot reset it)."""
    return TeacherStep()


def following() -> bool:
    """Whether this window follows the teacher's step: on a session's first look the link's ``follow``, then
    what the Follow toggle or a student's own Back / Next made it. A plain session value, not the toggle's own
    state: Streamlit drops a widget's state in a run that does not draw it (the toggle moves between the step's
    line and the sidebar, and a page switched to from the following fragment starts from no widget states), and
    a window that lost it stopped following for good."""
    if FOLLOWING not in st.session_state:
        st.session_state[FOLLOWING] = st.query_params.get(FOLLOW, "").lower() == "true"
    return bool(st.session_state[FOLLOWING])


def _set_following(on: bool) -> None:
    """Follow or not, and say so in the address (a reload or a copied link keeps it)."""
    st.session_state[FOLLOWING] = on
    if on:
        st.query_params[FOLLOW] = "true"
    elif FOLLOW in st.query_params:
        del st.query_params[FOLLOW]


def presenter() -> bool:
    """Whether this window is the presenter view (``?presenter=true``)."""
    return st.query_params.get(PRESENTER, "").lower() == "true"


def watching() -> bool:
    return following() or presenter()


def leave_if_asked() -> None:
    """At the start of a run, before the toggle is drawn: a student's own Back / Next of the last run leaves
    follow mode."""
    if st.session_state.pop(LEAVE, False):
        _set_following(False)


def due() -> Position | None:
    """The teacher's step, when this window watches it and has not applied it yet (None otherwise)."""
    if not watching():
        return None
    at = teacher_step().now()
    if at is None or st.session_state.get(SEEN) == at.version:
        return None
    return at


def applied(at: Position) -> None:
    st.session_state[SEEN] = at.version


def arrived(lesson: str, step: int, *, by_hand: bool) -> None:
    """This session went to ``step`` of ``lesson``: by its own Back / Next / Start (``by_hand``) or by a link. The
    teacher's session moves the class (a link only where the window does not follow: the projector's window
    opens on a link and follows); a following student who moved by hand leaves follow mode."""
    if roles.is_teacher() and (by_hand or not following()):
        applied(teacher_step().move(lesson, step))
    elif by_hand and following():
        st.session_state[LEAVE] = True


def carried() -> dict[str, list[str]]:
    """The URL parameters a lesson's step switch keeps: following and the presenter view."""
    out = {}
    if following() and not st.session_state.get(LEAVE):
        out[FOLLOW] = ["true"]
    if presenter():
        out[PRESENTER] = ["true"]
    return out


def toggle(where) -> None:
    """The Follow toggle: it shows :func:`following` and sets it (and the URL's ``follow``)."""
    st.session_state[TOGGLE] = following()
    where.toggle("Follow the teacher", key=TOGGLE, on_change=_toggled,
                 help="Move to the teacher's lesson step a few seconds after the teacher does (this page looks "
                      "every second); your own Back or Next leaves follow mode.")


def _toggled() -> None:
    _set_following(bool(st.session_state[TOGGLE]))


def _watcher(run: int):
    """The following fragment of this session's ``run``-th full run. Streamlit names a fragment by its function
    and its place on the page, the same on every page; so a look the browser sent before it showed the page
    switched to would run after the switch with the old page's address, and the browser went back to the old
    step for seconds. A new name at each full run makes Streamlit drop such a stale look."""
    def look(go_to) -> None:
        at = due()
        if at is not None:
            go_to(at)  # switch to the teacher's step's page with its choices, from here: one run, not two
    look.__qualname__ = f"watch_{run}"
    return st.fragment(look, run_every=TICK_S)


def watch(where, go_to) -> None:
    """In ``where``: while this window watches the teacher's step, the fragment that looks at it every
    :data:`TICK_S` s and calls ``go_to(position)`` when it moved; and a line when no lesson has started yet."""
    if not watching():
        return
    with where:
        run = st.session_state[RUNS] = st.session_state.get(RUNS, 0) + 1
        _watcher(run)(go_to)
        if teacher_step().now() is None:
            st.caption(":material/groups: Following the teacher: no lesson step yet. This page moves to the "
                       "teacher's step once the teacher starts a lesson.")
