"""Driving the dashboard in tests: an AppTest of app.py on a cache folder, switching pages, reading metrics."""

from __future__ import annotations

import base64
import json
import shutil
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np

from headprune_core.plans.plan import plan_jobs
from headprune_core.runs.study import Study

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
TIMEOUT = 180  # seconds per script run; the first one loads torch and transformers
PAGES = ["home", "importance", "prune", "retrain", "inspector", "findings", "runs"]
AFFINITY_PAGES = ["task_affinity", "shared_heads"]  # tested on their own in test_affinity_pages.py


_COMPILING = threading.Lock()


def make_app(cache: Path, monkeypatch):
    """An AppTest of app.py reading ``cache``.

    A server compiles its page scripts into one ScriptCache, under its lock; AppTest gives every run a fresh
    cache, so sessions driven from threads (two sessions at once, a class following the teacher) would compile
    at the same moment, which CPython 3.11's ast module does not survive: its recursion counter is the
    interpreter's, not the thread's ("SystemError: AST constructor recursion depth mismatch", seen in CI; the
    message of python/cpython#106905). The scripts compile one at a time here, as in the server."""
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import AppTest

    compile_one = ScriptCache.get_bytecode
    if not getattr(compile_one, "one_at_a_time", False):
        def one_at_a_time(self, script_path):
            with _COMPILING:
                return compile_one(self, script_path)

        one_at_a_time.one_at_a_time = True
        monkeypatch.setattr(ScriptCache, "get_bytecode", one_at_a_time)
    monkeypatch.setenv("HEADPRUNE_CACHE", str(cache))
    return AppTest.from_file(APP, default_timeout=TIMEOUT)


def plan_size(plan, **restrict) -> int:
    """How many jobs the plan has for the dashboard's default choices (task pos), as the core expands it."""
    plan = replace(plan, tasks=("pos",), **restrict)
    return len(plan_jobs(Study(plan.model, progress=False), plan))


def run_page(at, page: str):
    """Switch to ``page`` (a file name in headprune_app/pages, without .py) and run."""
    at.switch_page(f"headprune_app/pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def plotly_charts(at) -> list:
    return at.get("plotly_chart")


def plotly_array(value) -> np.ndarray:
    """An array of a figure's JSON (a chart's spec, a handout's figure), also where Plotly wrote it as typed
    binary data (``{"dtype", "bdata", "shape"}``: how plotly 6 and later write numpy arrays)."""
    if isinstance(value, dict) and "bdata" in value:
        shape = tuple(int(v) for v in value.get("shape", "-1").split(","))
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"])).reshape(shape)
    return np.asarray(value)


def shown_numbers(at) -> dict:
    """What a page shows in numbers: its metrics, tables (Markdown ones too) and charts' data (to compare two
    caches' pages)."""
    return {"metrics": [(m.label, m.value) for m in at.metric],
            "tables": [d.value.to_json() for d in at.dataframe],
            "markdown_tables": [m.value for m in at.markdown if m.value.startswith("| ")],
            "charts": [json.loads(c.proto.spec)["data"] for c in plotly_charts(at)]}


def summary_counts(at) -> dict[str, int]:
    """How many cards the Findings page's opening table shows with each verdict (every verdict listed)."""
    from headprune_core.findings.cards import VERDICTS

    (table,) = [m.value for m in at.markdown if m.value.startswith("| card | claim |")]
    header, _, *rows = table.splitlines()
    col = [c.strip() for c in header.strip("|").split("|")].index("verdict")
    verdicts = [[c.strip() for c in row.strip("|").split(" | ")][col] for row in rows]
    return {v: verdicts.count(v) for v in VERDICTS}


def metric_value(at, prefix: str) -> float:
    hits = [m for m in at.metric if m.label.startswith(prefix)]
    assert hits, [m.label for m in at.metric]
    return float(hits[0].value.rstrip("xM "))


def cache_with_lessons(fixture_cache, dest: Path, lessons: dict[str, str]) -> Path:
    """A cache folder at ``dest`` that reads the fixture cache's results, plans, corpora and model (linked) and
    holds ``lessons`` (name -> the lesson file's text) of its own."""
    dest.mkdir()
    for part in ("runs", "plans", "corpora", "models"):
        (dest / part).symlink_to(fixture_cache["root"] / part)
    (dest / "lessons").mkdir()
    for name, text in lessons.items():
        (dest / "lessons" / f"{name}.md").write_text(text)
    return dest


def copy_cache(fixture_cache, dest: Path, *, runs: bool) -> Path:
    for part in ("runs", "plans", "corpora") if runs else ("plans", "corpora"):
        shutil.copytree(fixture_cache["root"] / part, dest / part)
    return dest
