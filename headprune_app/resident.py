"""Objects the server builds once and shares with every session, kept at module level.

``st.cache_resource`` would do the sharing, but Streamlit's ``clear_cache`` message empties it, and any client
can send that message (menu or no menu: a raw websocket client does). A rebuilt Study loads its model again while
the pages still running hold the old one: a class-mode server with two students and one client sending
``clear_cache`` every few seconds grew from 0.6 GB to 9 GB in three minutes (issue 43). What is kept here stays
until the server stops (or, with ``max_entries``, until newer keys push it out); ``clear_cache`` still empties the
cached reads of stored results (``st.cache_data``), which are cheap to read again.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


def resident(max_entries: int | None = None) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Decorate ``build(*args)``: one value per (hashable) argument tuple for the whole server process, built once
    even when sessions ask at the same time (the others wait for it); the least recently used key leaves first
    once there are more than ``max_entries``."""

    def wrap(build: Callable[P, T]) -> Callable[P, T]:
        kept: OrderedDict[Hashable, T] = OrderedDict()
        lock = threading.Lock()
        building: dict[Hashable, threading.Lock] = {}

        @functools.wraps(build)
        def get(*args: P.args, **kwargs: P.kwargs) -> T:
            key = (args, tuple(sorted(kwargs.items())))
            with lock:
                if key in kept:
                    kept.move_to_end(key)
                    return kept[key]
                key_lock = building.setdefault(key, threading.Lock())
            with key_lock:  # one build per key; a second caller waits here, then finds it kept
                with lock:
                    if key in kept:
                        return kept[key]
                value = build(*args, **kwargs)
                with lock:
                    kept[key] = value
                    building.pop(key, None)
                    while max_entries is not None and len(kept) > max_entries:
                        kept.popitem(last=False)
            return value

        get.kept = kept  # type: ignore[attr-defined] -- what is held (tests read it)
        return get

    return wrap
