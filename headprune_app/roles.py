"""Class mode: student sessions read the cache and do not change it; the teacher unlocks the owner's powers
with a key.

``headprune serve --class`` (or ``HEADPRUNE_CLASS=1 streamlit run app.py``) starts the dashboard in class mode.
A session is a *student's* until it unlocks with the teacher's key (``HEADPRUNE_TEACHER_KEY``, or ``teacher_key``
in Streamlit's secrets), then the *teacher's*. Without class mode every session is the owner's, as before.

A student session keeps every cached result, new-mask evaluations and sentence tagging (through the compute
queue, one at a time, capped in time), figure export, the report and links. It does not get: deleting entries,
``cache gc``, launching studies, computing missing results (training included), uploading or registering data,
timing or downloading pruned models, or models other than those the plans name. Those controls are not drawn
for it (a one-line note says why), and :func:`allowed` refuses each action again where it happens, so a forged
widget value or a crafted link does nothing.

The key is compared in constant time (``hmac.compare_digest``); it is read from a password field that is not
bound to the URL, never logged and never shown. A wrong key waits a second or more before the answer, and after
:data:`MAX_TRIES` wrong keys within :data:`WINDOW_S` the server takes no key for :data:`LOCKOUT_S`.
"""

from __future__ import annotations

import hmac
import os
import threading
import time
from dataclasses import dataclass, field

import streamlit as st

from headprune_core.base.defaults import CLASS_ENV, STUDENT_CAP_ENV, TEACHER_KEY_ENV

KEY_ENV, CAP_ENV = TEACHER_KEY_ENV, STUDENT_CAP_ENV
DEFAULT_CAP_S = 60.0  # a student's computation may hold a slot this long (a new mask's evaluation takes seconds)
MAX_TRIES, WINDOW_S, LOCKOUT_S = 5, 600.0, 300.0
TEACHER = "_teacher"  # session state: this session unlocked with the key
STUDENT_NOTE = "Class mode: students read the teacher's results and do not change them"


def class_mode() -> bool:
    """Whether the server runs in class mode (``HEADPRUNE_CLASS`` is 1, true or yes)."""
    return os.environ.get(CLASS_ENV, "").strip().lower() in ("1", "true", "yes")


def student_cap_s() -> float:
    """How long one student computation may hold a slot of the compute queue (``HEADPRUNE_STUDENT_CAP_S``)."""
    try:
        return max(1.0, float(os.environ.get(CAP_ENV, DEFAULT_CAP_S)))
    except ValueError:
        return DEFAULT_CAP_S


def teacher_key() -> str | None:
    """The teacher's key: ``HEADPRUNE_TEACHER_KEY``, else ``teacher_key`` in Streamlit's secrets; None if unset."""
    key = os.environ.get(KEY_ENV)
    if not key:
        try:
            key = st.secrets.get("teacher_key")
        except Exception:  # no secrets file, or an unreadable one: no key from there
            key = None
    return str(key) if key else None


def is_teacher() -> bool:
    """Whether this session has the owner's powers: always outside class mode, else once unlocked."""
    return not class_mode() or st.session_state.get(TEACHER) is True


def allowed(what: str, *, show: bool = True) -> bool:
    """Whether this session may ``what`` (a destructive or costly action); a student's session is refused,
    with a one-line note when ``show``. Called where the action happens, not only where its control is drawn."""
    if is_teacher():
        return True
    if show:
        st.caption(f":material/lock: {what}: {STUDENT_NOTE.lower()} (the teacher unlocks it).")
    return False


class NotForStudents(PermissionError):
    """An owner's action asked for by a student's session in class mode (refused; nothing was changed)."""


def require(what: str) -> None:
    """Raise :class:`NotForStudents` unless this session has the owner's powers (the server side of an absent
    control)."""
    if not is_teacher():
        raise NotForStudents(f"{what}: {STUDENT_NOTE.lower()}; nothing was changed")


def student_note(what: str) -> None:
    """The one line a student sees where an owner's control would be."""
    st.caption(f":material/lock: {STUDENT_NOTE}: {what} is the teacher's.")


@dataclass
class KeyGuard:
    """Wrong keys of the whole server: a delay on each, and no key taken for a while after too many."""

    max_tries: int = MAX_TRIES
    window_s: float = WINDOW_S
    lockout_s: float = LOCKOUT_S
    delay_s: float = 1.0
    _wrong: list[float] = field(default_factory=list)
    _locked_until: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self, given: str, key: str | None, *, now: float | None = None, sleep=time.sleep) -> tuple[bool, str]:
        """(unlocked, message). Constant-time comparison; a wrong key sleeps ``delay_s`` times the recent wrong
        tries (at most 5 s) before it answers."""
        now = time.monotonic() if now is None else now
        with self._lock:
            if now < self._locked_until:
                return False, (f"Too many wrong keys: no key is taken for {self._locked_until - now:.0f} s more.")
        if key is None:
            return False, (f"No teacher's key is set on this server ({KEY_ENV} or teacher_key in Streamlit's "
                           "secrets): restart it with one.")
        if hmac.compare_digest(given.encode(), key.encode()):
            return True, "Unlocked: this session has the teacher's powers."
        with self._lock:
            self._wrong = [t for t in self._wrong if now - t < self.window_s] + [now]
            recent = len(self._wrong)
            if recent >= self.max_tries:
                self._locked_until = now + self.lockout_s
                self._wrong.clear()
        sleep(min(5.0, self.delay_s * recent))
        if recent >= self.max_tries:
            return False, f"Wrong key. Too many wrong keys: no key is taken for {self.lockout_s:.0f} s."
        return False, f"Wrong key ({recent} of {self.max_tries} tries within {self.window_s / 60:.0f} min)."


@st.cache_resource(show_spinner=False)
def key_guard() -> KeyGuard:
    """The server's one :class:`KeyGuard` (shared by every session)."""
    return KeyGuard()


def teacher_panel() -> None:
    """In the sidebar, in class mode: the teacher's unlock form (a password field, never in the URL), or, once
    unlocked, a line saying so and a button to lock the session again."""
    if not class_mode():
        return
    if is_teacher():
        st.caption(":material/school: Teacher's session: the owner's controls are on.")
        if st.button("Lock (back to a student's view)", key="teacher_lock"):
            st.session_state[TEACHER] = False
            st.rerun()
        return
    with st.expander(":material/school: Class mode: teacher", expanded=False):
        with st.form("teacher_unlock", clear_on_submit=True, border=False):
            given = st.text_input("Teacher's key", type="password", key="teacher_key_input")
            if st.form_submit_button("Unlock"):
                ok, message = key_guard().check(given or "", teacher_key())
                if ok:
                    st.session_state[TEACHER] = True
                    st.rerun()
                st.error(message)


def owner_button(label: str, *, key: str, what: str, **kwargs) -> bool:
    """``st.button`` for the owner's actions (compute, delete, register, launch ...): drawn for the teacher (and
    outside class mode); for a student, a one-line note instead, and False."""
    if is_teacher():
        return st.button(label, key=key, **kwargs)
    student_note(what)
    return False
