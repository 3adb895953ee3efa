"""The dashboard's queue for model work, shared by every browser session of one server.

Reading cached results never queues. Short model work (an evaluation under a new mask, tagging a sentence, one
head's attention, building a pruned model) runs up to ``slots`` at a time: head gates are per call, so sessions
do not disturb each other's models. Work that needs the machine to itself (training jobs, whose progress bar
hooks the shared Study; timing the pruned model; preparing the embedded default) runs alone. Everyone is
served first come, first served, and a waiting session is told its place in the line.

In class mode (:mod:`headprune_app.roles`) the teacher's work goes before every student's (``priority`` 0
before 1, first come first served within each), and a student's session holds at most one place
(``one_per_session``): a second request while the first waits or runs is refused with :class:`AlreadyQueued`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

DEFAULT_SLOTS = 2  # on 2 CPU cores two evaluations at once still finish sooner than one after the other


def slots_from_env() -> int:
    """``HEADPRUNE_COMPUTE_SLOTS`` (at least 1), else :data:`DEFAULT_SLOTS`."""
    try:
        return max(1, int(os.environ.get("HEADPRUNE_COMPUTE_SLOTS", DEFAULT_SLOTS)))
    except ValueError:
        return DEFAULT_SLOTS


class AlreadyQueued(RuntimeError):
    """This session already has a computation waiting or running (one at a time per student)."""


@dataclass(eq=False)
class _Ticket:
    what: str
    exclusive: bool
    priority: int = 1
    session: str | None = None


@dataclass
class ComputeQueue:
    """First come, first served: up to ``slots`` shared computations at once, an exclusive one alone."""

    slots: int = DEFAULT_SLOTS
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _waiting: list = field(default_factory=list)
    _running: list = field(default_factory=list)
    _held: threading.local = field(default_factory=threading.local)

    def _line(self) -> list[_Ticket]:
        """The waiting tickets in serving order: by priority, then first come, first served."""
        return sorted(self._waiting, key=lambda t: t.priority)  # stable: arrival order within a priority

    def _can_start(self, ticket: _Ticket) -> bool:
        if self._line()[0] is not ticket or any(t.exclusive for t in self._running):
            return False
        return not self._running if ticket.exclusive else len(self._running) < self.slots

    def state(self) -> dict:
        """What runs and waits now (for a status line): ``{"running": [...], "waiting": [...]}``."""
        with self._cond:
            return {"running": [t.what for t in self._running], "waiting": [t.what for t in self._waiting]}

    @contextlib.contextmanager
    def slot(self, what: str, *, exclusive: bool = False, on_wait: Callable[[int, int], None] | None = None,
             priority: int = 1, session: str | None = None, one_per_session: bool = False) -> Iterator[None]:
        """Hold a place to compute ``what``; while waiting, ``on_wait(position in line, computations running)``
        is called about twice a second. Re-entrant within one thread (work inside work does not queue again).
        ``priority`` 0 is served before 1; with ``one_per_session``, a ``session`` that already holds a place
        is refused (:class:`AlreadyQueued`)."""
        if getattr(self._held, "depth", 0):
            self._held.depth += 1
            try:
                yield
            finally:
                self._held.depth -= 1
            return
        ticket = _Ticket(what, exclusive, priority, session)
        with self._cond:
            if one_per_session and session is not None:
                mine = [t.what for t in self._waiting + self._running if t.session == session]
                if mine:
                    raise AlreadyQueued(f"you already have a computation in line ({mine[0]}): ask again when it "
                                        "is done")
            self._waiting.append(ticket)
        try:
            while True:
                with self._cond:
                    if self._can_start(ticket):
                        self._waiting.remove(ticket)
                        self._running.append(ticket)
                        self._cond.notify_all()
                        break
                    position, running = self._line().index(ticket) + 1, len(self._running)
                if on_wait is not None:
                    on_wait(position, running)
                with self._cond:
                    self._cond.wait(0.5)
        except BaseException:
            with self._cond:
                if ticket in self._waiting:
                    self._waiting.remove(ticket)
                self._cond.notify_all()
            raise
        self._held.depth = 1
        try:
            yield
        finally:
            self._held.depth = 0
            with self._cond:
                self._running.remove(ticket)
                self._cond.notify_all()


def waiting_text(position: int, running: int) -> str:
    """``"Waiting for the machine: 2 computations of other sessions run, you are 3rd in line."``"""
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(position if position < 20 else position % 10, "th")
    return (f"Waiting for the machine: {running} computation{'s' if running != 1 else ''} of other sessions "
            f"run{'s' if running == 1 else ''}, you are {position}{suffix} in line.")


XSRF_COOKIE = "_streamlit_xsrf"


def place_owner(cookies, session_id: str | None) -> str | None:
    """Who holds a place in the compute queue: the browser (its XSRF cookie, which every tab of one browser shares,
    so two tabs are one place), else the session. A client that drops its cookies is a new browser each time: the
    per-session place is then what holds it."""
    token = (cookies or {}).get(XSRF_COOKIE)
    if token:
        return "browser:" + hashlib.sha256(str(token).encode()).hexdigest()[:16]
    return None if session_id is None else f"session:{session_id}"
