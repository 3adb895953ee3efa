"""Progress: the one way long work says how far it is, and its terminal adapter.

Every loop that reports (training, scoring, evaluation, curves, the E5S1 conversion, job lists, GradTS, sweeps)
takes one callback, ``on_progress(what, done, total)`` (:data:`Progress`; ``total`` None while it is not known),
and calls it through :func:`report`, which also enforces the block's :func:`time_cap`. A job list reports its
jobs (``done`` = jobs before this one, the label ``cached: ...`` for a job read from the cache); a Study
reports the steps inside the running job under the run's name (:func:`named`). The two front ends adapt it:
:class:`TqdmProgress` draws tqdm bars in the command line, the dashboard's ``headprune_app.computing.ProgressBar`` an
``st.progress`` bar.

>>> seen = []
>>> report(named(lambda what, done, total: seen.append((what, done, total)), "training"), "step", 3, 10)
>>> seen
[('training', 3, 10)]
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

from tqdm.auto import tqdm

Progress = Callable[[str, int, int | None], None]
"""on_progress(what, done, total): called as work advances."""


def named(on_progress: Progress | None, what: str) -> Progress | None:
    """``on_progress`` with every report under the label ``what`` (a Study names the run its loop belongs to)."""
    if on_progress is None:
        return None
    return lambda _what, done, total: on_progress(what, done, total)


def cached_label(what: str, cached: bool) -> str:
    """The label a job list reports for one job: ``cached: what`` when it is read from the cache."""
    return f"cached: {what}" if cached else what


class TqdmProgress:
    """A :data:`Progress` drawn as tqdm bars on the terminal: a count that starts again closes the bar and opens
    the next; a new total or ``what`` on the same count updates the bar. With a ``title`` (a job list's bar) the
    bar keeps the title and shows ``what`` beside the count; without, ``what`` names the bar. A ``what`` that
    starts with one of ``lines`` is also printed as a line above the bar. Bars go away when closed unless
    ``leave``; other keywords go to tqdm (``unit``, ``unit_scale`` ...)."""

    def __init__(self, title: str | None = None, *, leave: bool = False, lines: tuple[str, ...] = (), **options):
        self.title, self.lines = title, lines
        self.options = {"leave": leave, **options}
        self.bar: tqdm | None = None
        self.what: str | None = None

    def __call__(self, what: str, done: int, total: int | None) -> None:
        if self.bar is None or done < self.bar.n:
            self.close()
            self.bar = tqdm(total=total, desc=self.title or what, **self.options)
        elif total != self.bar.total:
            self.bar.total = total
        if what != self.what:
            if self.lines and what.startswith(self.lines):  # a line to keep (a sweep's retry)
                self.write(what)
            if self.title:
                self.bar.set_postfix_str(what[:80])
            else:
                self.bar.set_description(what)
        self.what = what
        self.bar.update(done - self.bar.n)

    def write(self, line: str, file=None) -> None:
        """Print ``line`` above the bars (to ``file``, default stdout)."""
        tqdm.write(line, file=file)

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
