"""Class mode: student sessions read the cache and do not change it; the teacher unlocks the owner's powers
with a key.

``headprune serve --class`` starts the dashboard in class mode (``HEADPRUNE_CLASS=1 streamlit run app.py`` without
its settings is refused: :func:`class_settings_or_stop`). A session is a *student's* until it unlocks with the
teacher's key (``HEADPRUNE_TEACHER_KEY``, or ``teacher_key`` in Streamlit's secrets), then the *teacher's*.
Without class mode every session is the owner's, as before.

A student session keeps every cached result, new-mask evaluations and sentence tagging (through the compute
queue, one at a time, capped in time), figure export, the report and links. It does not get: deleting entries,
``cache gc``, launching studies, computing missing results (training included), uploading or registering data,
timing or downloading pruned models, or models other than those the plans name. Those controls are not drawn
for it (a one-line note says why), and :func:`allowed` refuses each action again where it happens, so a forged
widget value or a crafted link does nothing.

The key is compared in constant time (``hmac.compare_digest``); it is read from a password field that is not
bound to the URL, never logged and never shown. A wrong key waits a second or more before the answer, and after
:data:`MAX_TRIES` wrong keys within :data:`WINDOW_S` from one caller (its session, or its client address where the
server sees one) no key is taken from that caller for :data:`LOCKOUT_S`: a student cannot lock the teacher out.
The teacher also has a way in no student can spend: the one-time ``?unlock=`` link ``headprune serve --class``
prints. The guard lives at module level, not in ``st.cache_resource``, so Streamlit's ``clear_cache`` message
(which any client can send) does not reset it. Class mode runs only with the class's Streamlit settings
(:func:`class_settings_or_stop`): no tracebacks for students, a small upload limit.
"""

from __future__ import annotations

import contextlib
import hmac
import os
import threading
import time
from dataclasses import dataclass, field

import streamlit as st

from headprune_core.base.defaults import (
    CLASS_ENV,
    CLASS_STREAMLIT,
    CLASS_UPLOAD_ENV,
    CLASS_UPLOAD_MB,
    STUDENT_CAP_ENV,
    TEACHER_KEY_ENV,
    UNLOCK_ENV,
)
from headprune_core.runs.store import reading_only as _reading

KEY_ENV, CAP_ENV = TEACHER_KEY_ENV, STUDENT_CAP_ENV
DEFAULT_CAP_S = 60.0  # a student's computation may hold a slot this long (a new mask's evaluation takes seconds)
MAX_TRIES, WINDOW_S, LOCKOUT_S = 5, 600.0, 300.0
TEACHER = "_teacher"  # session state: this session unlocked with the key
UNLOCK_NOTE = "_unlock_note"  # session state: why an unlock link did nothing
STUDENT_NOTE = "Class mode: students read the teacher's results and do not change them"


def class_mode() -> bool:
    """Whether the server runs in class mode (``HEADPRUNE_CLASS`` is 1, true or yes)."""
    return os.environ.get(CLASS_ENV, "").strip().lower() in ("1", "true", "yes")


def wrong_settings() -> list[str]:
    """The Streamlit settings of a class (:data:`~headprune_core.base.defaults.CLASS_STREAMLIT`, and an upload
    limit no larger than the teacher chose) this server runs without, as ``name = value (wanted ...)``."""
    wrong = []
    for name, want in CLASS_STREAMLIT.items():
        have = str(st.get_option(name)).lower()
        if have != want:
            wrong.append(f"{name} = {have} (wanted {want})")
    try:
        cap = int(os.environ.get(CLASS_UPLOAD_ENV, CLASS_UPLOAD_MB))
    except ValueError:
        cap = CLASS_UPLOAD_MB
    if int(st.get_option("server.maxUploadSize")) > cap:
        wrong.append(f"server.maxUploadSize = {st.get_option('server.maxUploadSize')} (wanted at most {cap})")
    return wrong


def class_settings_or_stop() -> None:
    """In class mode, stop every page unless the server runs with the class's settings (``HEADPRUNE_CLASS=1
    streamlit run app.py`` does not: it would show students tracebacks and take large uploads)."""
    if not class_mode():
        return
    wrong = wrong_settings()
    if wrong:
        st.error("Class mode needs its own server settings, which `headprune serve --class` applies. This server "
                 f"runs with: {'; '.join(wrong)}. Start it with `headprune serve --class` (see README, class mode).",
                 icon=":material/school:")
        st.stop()


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


READING_WHY = "this is a student's session in class mode (the teacher computes results)"
STUDENT_KINDS = frozenset({"eval"})
"""What a student's queued work may compute and store: evaluations under a new mask (tagging and attention are
not stored)."""


def reading_only():
    """For a whole page run: in a student's session, no result is computed outside the compute queue (a path that
    would compute, such as a partly cached map on the Shared heads page, raises ``NotComputedHere`` instead)."""
    return contextlib.nullcontext() if is_teacher() else _reading(READING_WHY)


def student_work():
    """Inside a student's place in the compute queue (capped in time): evaluations may be computed, nothing
    else."""
    return contextlib.nullcontext() if is_teacher() else \
        _reading(READING_WHY + "; a student's queued work computes only evaluations", allowed=STUDENT_KINDS)


STUDENT_EVALS_ENV = "HEADPRUNE_STUDENT_EVALS"
DEFAULT_STUDENT_EVALS = 40
_EVALS: dict[str, int] = {}
_EVALS_LOCK = threading.Lock()


def student_evals() -> int:
    """How many new evaluations one student's browser may store on this server (``HEADPRUNE_STUDENT_EVALS``):
    each is a small entry kept for everyone, but a script could ask for thousands of masks."""
    try:
        return max(0, int(os.environ.get(STUDENT_EVALS_ENV, DEFAULT_STUDENT_EVALS)))
    except ValueError:
        return DEFAULT_STUDENT_EVALS


def take_evaluation(owner: str | None) -> tuple[bool, int]:
    """Count one new stored evaluation against a student's browser (``owner``): (allowed, how many it stored).
    Module level, like the guard: ``clear_cache`` does not reset it."""
    bound = student_evals()
    with _EVALS_LOCK:
        used = _EVALS.get(owner or "?", 0)
        if used >= bound:
            return False, used
        _EVALS[owner or "?"] = used + 1
        return True, used + 1


def student_note(what: str) -> None:
    """The one line a student sees where an owner's control would be."""
    st.caption(f":material/lock: {STUDENT_NOTE}: {what} is the teacher's.")


@dataclass
class KeyGuard:
    """Wrong keys counted per caller: a delay on each, and no key taken from that caller for a while after too
    many. A caller is every identity it has (its browser session, and its client address where the server sees
    one): one session's wrong keys never block another session's right key, and a student who opens session after
    session is still held by the address they share."""

    max_tries: int = MAX_TRIES
    window_s: float = WINDOW_S
    lockout_s: float = LOCKOUT_S
    delay_s: float = 1.0
    _wrong: dict[str, list[float]] = field(default_factory=dict)
    _locked_until: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self, given: str, key: str | None, *, who: tuple[str, ...] = ("server",), now: float | None = None,
              sleep=time.sleep) -> tuple[bool, str]:
        """(unlocked, message) for the caller ``who``. Constant-time comparison; a wrong key sleeps ``delay_s``
        times the caller's recent wrong tries (at most 5 s) before it answers."""
        now = time.monotonic() if now is None else now
        with self._lock:
            until = max((self._locked_until.get(w, 0.0) for w in who), default=0.0)
            if now < until:
                return False, f"Too many wrong keys from here: no key is taken from here for {until - now:.0f} s more."
        if key is None:
            return False, (f"No teacher's key is set on this server ({KEY_ENV} or teacher_key in Streamlit's "
                           "secrets): restart it with one.")
        if hmac.compare_digest(given.encode(), key.encode()):
            return True, "Unlocked: this session has the teacher's powers."
        recent = self.wrong(who, now=now)
        sleep(min(5.0, self.delay_s * recent))
        if recent >= self.max_tries:
            return False, (f"Wrong key. Too many wrong keys from here: no key is taken from here for "
                           f"{self.lockout_s:.0f} s.")
        return False, f"Wrong key ({recent} of {self.max_tries} tries within {self.window_s / 60:.0f} min)."

    def wrong(self, who: tuple[str, ...], *, now: float | None = None) -> int:
        """Count one wrong try against each identity of ``who``; lock those that reach :attr:`max_tries`. The
        most recent wrong tries of any of them."""
        now = time.monotonic() if now is None else now
        with self._lock:
            recent = 0
            for w in who:
                tries = [t for t in self._wrong.get(w, []) if now - t < self.window_s] + [now]
                if len(tries) >= self.max_tries:
                    self._locked_until[w] = now + self.lockout_s
                    tries = []
                self._wrong[w] = tries
                recent = max(recent, len(tries) or self.max_tries)
            return recent


_GUARD = KeyGuard()
_UNLOCK_SPENT = threading.Event()


def key_guard() -> KeyGuard:
    """The server's one :class:`KeyGuard`: a module-level object, not an ``st.cache_resource``, so Streamlit's
    ``clear_cache`` message (which any client can send, menu or no menu) does not reset it."""
    return _GUARD


def session_id() -> str | None:
    """This browser session's id (None outside a script run)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx  # here: Streamlit's runtime, only in a session
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def caller() -> tuple[str, ...]:
    """This session's identities for the key guard: its session id, and its client address where known."""
    who = f"session:{session_id() or '?'}"
    try:
        address = st.context.ip_address
    except Exception:  # no request context (a test's AppTest): the session alone
        address = None
    return (who, f"address:{address}") if address else (who,)


def unlock_from_link() -> None:
    """The teacher's way in that students cannot exhaust: ``headprune serve --class`` prints a link with a
    one-time token (``?unlock=...``); the first session that opens it gets the teacher's powers, whatever the
    wrong keys before. The token leaves the address at once; a wrong or spent one counts as a wrong key."""
    given = st.query_params.get("unlock")
    if given is None:
        return
    del st.query_params["unlock"]
    token = os.environ.get(UNLOCK_ENV, "")
    if not class_mode():
        return
    if token and not _UNLOCK_SPENT.is_set() and hmac.compare_digest(given.encode(), token.encode()):
        _UNLOCK_SPENT.set()
        st.session_state[TEACHER] = True
        return
    key_guard().wrong(caller())
    st.session_state[UNLOCK_NOTE] = "This unlock link is not valid (spent, or from another start of the server)."


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
    if st.session_state.get(UNLOCK_NOTE):
        st.caption(f":orange[{st.session_state.pop(UNLOCK_NOTE)}]")
    with st.expander(":material/school: Class mode: teacher", expanded=False):
        with st.form("teacher_unlock", clear_on_submit=True, border=False):
            given = st.text_input("Teacher's key", type="password", key="teacher_key_input")
            if st.form_submit_button("Unlock"):
                ok, message = key_guard().check(given or "", teacher_key(), who=caller())
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
