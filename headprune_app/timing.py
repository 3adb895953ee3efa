"""An opt-in record of every script run, for the classroom benchmark (``bench/classroom.py``): with
``HEADPRUNE_PAGE_LOG=FILE`` set, each run appends one JSON line ``{"page", "wall", "cpu"}``: the seconds from the
frame's navigation to the end of the page, and the CPU seconds the run's own thread used in them (the rest of the wall
time it waited: for the cores, the GIL or a queued computation)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

ENV = "HEADPRUNE_PAGE_LOG"


@contextmanager
def script_run() -> Iterator[dict]:
    """Time the block; set ``info["page"]`` inside (the page is known only once navigation ran)."""
    info = {"page": ""}
    wall, cpu = time.perf_counter(), time.thread_time()
    try:
        yield info
    finally:
        path = os.environ.get(ENV)
        if path:
            line = json.dumps({"page": info["page"], "wall": round(time.perf_counter() - wall, 4),
                               "cpu": round(time.thread_time() - cpu, 4)})
            with open(path, "a", encoding="utf-8") as f:  # one short write per run: lines do not interleave
                f.write(line + "\n")
