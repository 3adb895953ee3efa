"""Progress: the one way long work says how far it is, and its terminal adapter.

Work reports through one callback, ``on_progress(what, done, total)`` (:data:`Progress`; ``total`` None while
it is not known). The loops of :mod:`headprune_core.methods` call their ``on_step(done, total)``, a Study turns
that into its ``on_progress`` with the name of the run, and the two front ends adapt it: :class:`TqdmProgress`
draws tqdm bars in the command line, the dashboard's ``_Bar`` an ``st.progress`` bar.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

from tqdm.auto import tqdm

Progress = Callable[[str, int, int | None], None]
"""on_progress(what, done, total): called as work advances."""

Step = Callable[[int, int | None], None]
"""on_step(done, total): what a loop of :mod:`headprune_core.methods` calls after each step."""


class TqdmProgress:
    """A :data:`Progress` drawn as tqdm bars on the terminal: a count that starts again (or a new total) closes
    the bar and opens the next; a new ``what`` on the same count renames the bar. Bars go away when closed
    unless ``leave``; other keywords go to tqdm (``unit``, ``unit_scale`` ...)."""

    def __init__(self, *, leave: bool = False, **options):
        self.options = {"leave": leave, **options}
        self.bar: tqdm | None = None
        self.what: str | None = None

    def __call__(self, what: str, done: int, total: int | None) -> None:
        if self.bar is None or done < self.bar.n or total != self.bar.total:
            self.close()
            self.bar = tqdm(total=total, desc=what, **self.options)
        elif what != self.what:
            self.bar.set_description(what)
        self.what = what
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class TimeCapExceeded(RuntimeError):
    """The work ran past the time cap of the block it runs in (:func:`time_cap`); nothing of it was stored."""


_CAP: ContextVar[tuple[float, float] | None] = ContextVar("headprune_time_cap", default=None)


@contextlib.contextmanager
def time_cap(seconds: float | None) -> Iterator[None]:
    """Work inside the block that reports progress (:func:`report`) stops with :class:`TimeCapExceeded` once it
    has run ``seconds`` (None: no cap). It stops between steps, so nothing half-done is stored; the cap holds in
    this thread (context) only."""
    token = _CAP.set(None if seconds is None else (time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _CAP.reset(token)


def report(on_progress: Progress | None, what: str, done: int, total: int | None) -> None:
    """Call ``on_progress`` when there is one; past the block's :func:`time_cap`, stop the work."""
    cap = _CAP.get()
    if cap is not None and time.monotonic() > cap[0]:
        raise TimeCapExceeded(f"{what} ran past the cap of {cap[1]:.0f} s for one computation; it was stopped "
                              "and nothing of it was stored")
    if on_progress is not None:
        on_progress(what, done, total)
