"""An opt-in record of every script run, for the classroom benchmark (``bench/classroom.py``): with
``HEADPRUNE_PAGE_LOG=FILE`` set, each run appends one JSON line ``{"page", "wall", "cpu", "end", "session",
"step", "teacher"}``: the seconds from the frame's navigation to the end of the page, the CPU seconds the run's own
thread used in them (the rest of the wall time it waited: for the cores, the GIL or a queued computation), the clock
time it ended, the session's id, the lesson step its address names (``LESSON:K``, or "") and whether the session is
the teacher's (the follow benchmark, ``bench/follow.py``, times the class's page runs after each of the teacher's
steps)."""

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
    path = os.environ.get(ENV)
    first = _who() if path else {}
    try:
        yield info
    finally:
        if path:
            try:
                who = _who()  # the address as the run left it (a step applied in the run)
            except BaseException:  # noqa: BLE001 (after st.stop() every Streamlit call raises again)
                who = first
            line = json.dumps({"page": info["page"], "wall": round(time.perf_counter() - wall, 4),
                               "cpu": round(time.thread_time() - cpu, 4), "end": round(time.time(), 3),
                               **who})
            with open(path, "a", encoding="utf-8") as f:  # one short write per run: lines do not interleave
                f.write(line + "\n")


def _who() -> dict:
    """The session's id, the lesson step its address names and whether it is the teacher's."""
    import streamlit as st

    from headprune_app import roles
    lesson, step = st.query_params.get("lesson", ""), st.query_params.get("step", "")
    return {"session": roles.session_id() or "", "step": f"{lesson}:{step}" if lesson else "",
            "teacher": roles.is_teacher()}
