"""Files built on a click (a chart's PNG or SVG, the findings report), one at a time per server.

Each chart export starts a headless Chromium (through kaleido) and a report draws every card's chart: a class
clicking at once would start dozens. :func:`one_at_a_time` runs one build at a time on this server (the others
wait their turn) and serves a repeat of the same build from the last :data:`KEEP` results, so a second click costs
nothing. The gate lives at module level: Streamlit's ``clear_cache`` message does not reset it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable

KEEP = 32
"""How many finished builds are kept for repeat clicks (the newest)."""

_GATE = threading.Lock()
_DONE: OrderedDict[str, bytes | str] = OrderedDict()


def build_key(*parts) -> str:
    """A short key of what a build reads (a chart's JSON and format, the report's cards ...): each part a string,
    or a callable giving one."""
    h = hashlib.sha256()
    for part in parts:
        h.update((part() if callable(part) else str(part)).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def one_at_a_time(key: str, build: Callable[[], bytes | str]) -> bytes | str:
    """``build()``'s result, built alone on this server (a build waits for the one before it), or the kept result
    of the same ``key``."""
    with _GATE:
        if key in _DONE:
            _DONE.move_to_end(key)
            return _DONE[key]
        out = build()
        _DONE[key] = out
        while len(_DONE) > KEEP:
            _DONE.popitem(last=False)
        return out


def deferred(key: Callable[[], str], build: Callable[[], bytes | str]) -> Callable[[], bytes | str]:
    """For ``st.download_button``'s deferred data: the build, gated by :func:`one_at_a_time` (its ``key()`` too is
    worked out only on the click)."""
    return lambda: one_at_a_time(key(), build)
