"""The Runs page's tables and its sweeps panel: the cache's entries as rows, and the progress of every sweep
that wrote to this cache (``headprune_core.plans.sweep_record``), refreshed while one runs."""

from __future__ import annotations

import time
from dataclasses import replace

import pandas as pd
import streamlit as st

from headprune_app import captions, roles
from headprune_core.plans.plan import StudyPlan
from headprune_core.plans.sweep_record import list_sweeps, progress_summary
from headprune_core.runs.inventory import collect, scan, summary


def entries_table(entries) -> pd.DataFrame:
    """One row per cache entry: kind, what it is, key, size, whether an older headprune wrote it, when."""
    return pd.DataFrame([{"kind": e.kind, "what": e.describe(), "key": e.key[:12], "size (MB)": round(e.size / 1e6, 3),
                          "stale": "older headprune: never read" if e.stale else "",
                          "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(e.created))} for e in entries])


def entry_label(e) -> str:
    """How an entry is named in the pick lists: kind, short key, description."""
    return f"{e.kind} {e.key[:12]} {e.describe()}"


def entry_details(e) -> dict:
    """What the page shows of one entry: kind, key, folder, artifacts and its configuration."""
    return {"kind": e.kind, "key": e.key, "path": str(e.path), "artifacts": list(e.artifacts), "config": e.config}


def launch_plan(plan: StudyPlan, *, tasks, langs, cap: int) -> StudyPlan:
    """The study to launch: ``plan`` on these tasks and languages (all of the plan's when none), with at most
    ``cap`` sentences per split (0: the plan's), then named ``<plan>-<cap>`` so it is saved as a plan of its own."""
    todo = plan.restricted(langs=tuple(langs) or None, tasks=tuple(tasks) or None, sentences=cap or None)
    return replace(todo, name=f"{plan.name}-{cap}") if cap else todo


def sweep_text(rec: dict, s: dict) -> str:
    """The progress bar's text of a sweep (``s``: its ``progress_summary``).

    >>> sweep_text({"name": "demo"}, {"state": "running", "finished": 3, "total": 8, "failed": 1, "skipped": 0,
    ...                               "running": 2, "eta": 600})
    '**demo**: running, 3 of 8 jobs finished (1 failed, 0 skipped, 2 running), about 10 min left at this pace'
    """
    left = f", about {s['eta'] / 60:.0f} min left at this pace" if s["eta"] else ""
    return (f"**{rec['name']}**: {s['state']}, {s['finished']} of {s['total']} jobs finished "
            f"({s['failed']} failed, {s['skipped']} skipped, {s['running']} running){left}")


def sweep_rows(rec: dict, *, now: float) -> list[dict]:
    """A sweep's jobs running now (with how long), its failed or skipped jobs (with their error), and each
    attempt redone (a lost worker or node, named, or an error) with what became of the job."""
    rows = [{"job": m["what"], "host": m["host"], "attempt": m["attempt"], "running for (s)": round(now - m["started"])}
            for m in rec["running_now"]]
    rows += [{"job": j["what"], "host": j["host"], "attempt": j["attempts"], "error": j["error"]}
             for j in rec.get("jobs", []) if j["state"] in ("failed", "skipped")]
    return rows + [{"job": j["what"], "host": r["node"], "attempt": r["attempt"],
                    "retried": f"attempt {r['attempt']} {r['reason']} on {r['node']}; then {j['state']}"}
                   for j in rec.get("jobs", []) for r in j.get("retries") or []]


def _sweeps() -> None:
    records = list_sweeps()
    if not records:
        return
    st.subheader("Sweeps")
    st.caption(captions.SWEEPS)
    for rec in records:
        s = progress_summary(rec)
        st.progress(s["finished"] / max(1, s["total"]), text=sweep_text(rec, s))
        if s["state"] == "stopped":
            st.warning(captions.sweep_stopped(rec["name"]))
        rows = sweep_rows(rec, now=time.time())
        if rows:
            st.dataframe(pd.DataFrame(rows), hide_index=True, key=f"sweep_jobs:{rec['name']}")


def sweeps_panel() -> None:
    """Sweeps (python -m headprune_core sweep) that wrote to this cache: progress, what runs where, failures.
    It refreshes itself every 5 s while one runs; their results show on every page as they land."""
    # the fragment is made on each page run: whether one runs now decides how often it refreshes
    running = any(r.get("state") == "running" for r in list_sweeps())
    st.fragment(_sweeps, run_every=5 if running else None)()


def cache_panel(root) -> None:
    """What the cache folder takes, by area and state (as ``headprune cache du``), the stale, corrupt and
    leftover items by name, and a button that removes them (``headprune cache gc``)."""
    items = scan(root)
    free = [i for i in items if i.removable]
    st.subheader("Cache space")
    st.caption(captions.cache_space(sum(i.size for i in items), sum(i.size for i in free)))
    st.dataframe(pd.DataFrame(summary(items)), hide_index=True, key="cache_du")
    if not free:
        return
    st.dataframe(pd.DataFrame([{"state": i.state, "where": str(i.path.relative_to(root)), "MB": round(i.size / 1e6, 3),
                                "why": i.reason} for i in free]), hide_index=True, key="cache_free")
    if not roles.is_teacher():
        roles.student_note("freeing the cache")
        return
    sure = st.checkbox(f"Yes, remove these {len(free)} items", key="gc_sure")
    if st.button(f"Free {sum(i.size for i in free) / 1e6:.1f} MB", disabled=not sure, key="gc"):
        roles.require("Freeing the cache")
        res = collect(root, dry_run=False)
        st.session_state.pop("gc_sure", None)
        st.success(f"Removed {len(res['removed'])} items, {res['bytes'] / 1e6:.1f} MB."
                   + (f" Left {len(res['skipped'])} (in use)." if res["skipped"] else ""))
