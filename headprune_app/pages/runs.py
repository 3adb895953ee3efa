"""Runs: what is in the cache (config, size, date), deleting entries, and launching a whole study."""

import time
from dataclasses import replace

import pandas as pd
import streamlit as st

from headprune_app import cached
from headprune_app import selection as S
from headprune_core.plans.presets import available_plans
from headprune_core.plans.progress import list_sweeps, progress_summary

sel: S.Selection = cached.selection()
ss = st.session_state


st.title("Runs")
entries = cached.entries()
st.caption(f"Cache folder `{cached.root()}`: {len(entries)} entries, "
           f"{sum(e.size for e in entries) / 1e6:.1f} MB.")
kinds = sorted({e.kind for e in entries})
shown_kinds = st.multiselect("Kinds", kinds, default=kinds, key="kinds")
shown = [e for e in entries if e.kind in shown_kinds]
if not entries:
    st.info("The cache holds no results yet: launch a study below, or use the Overview page's button.")
else:
    st.dataframe(pd.DataFrame([{"kind": e.kind, "what": e.describe(), "key": e.key[:12],
                                "size (MB)": round(e.size / 1e6, 3),
                                "stale": "older headprune: never read" if e.stale else "",
                                "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(e.created))}
                               for e in shown]), hide_index=True, height=min(420, 36 + 35 * len(shown)))
    labels = {f"{e.kind} {e.key[:12]} {e.describe()}": e for e in shown}
    with st.expander("Configuration of an entry"):
        pick = st.selectbox("Entry", list(labels), key="show_entry")
        if pick:
            st.json({"kind": labels[pick].kind, "key": labels[pick].key, "path": str(labels[pick].path),
                     "artifacts": list(labels[pick].artifacts), "config": labels[pick].config}, expanded=False)
    with st.expander("Delete entries"):
        doomed = st.multiselect("Entries to delete", list(labels), key="doomed")
        sure = st.checkbox("Yes, delete them (they are recomputed when next needed)", key="sure")
        if st.button("Delete", disabled=not (doomed and sure), key="delete"):
            for name in doomed:
                cached.delete(labels[name])
            ss.pop("doomed", None)
            st.success(f"Deleted {len(doomed)} entries.")
            st.rerun()


@st.fragment(run_every=5 if any(r.get("state") == "running" for r in list_sweeps()) else None)
def sweeps_panel() -> None:
    """Sweeps (python -m headprune_core sweep) that wrote to this cache: progress, what runs where, failures.
    It refreshes itself every 5 s while one runs; their results show on every page as they land."""
    records = list_sweeps()
    if not records:
        return
    st.subheader("Sweeps")
    st.caption("Grids of studies run on Ray (`python -m headprune_core sweep SPEC.json`, README: Sweeps); each "
               "finished job is in the cache above and on the other pages at once.")
    for rec in records:
        s = progress_summary(rec)
        left = f", about {s['eta'] / 60:.0f} min left at this pace" if s["eta"] else ""
        st.progress(s["finished"] / max(1, s["total"]),
                    text=f"**{rec['name']}**: {s['state']}, {s['finished']} of {s['total']} jobs finished "
                         f"({s['failed']} failed, {s['skipped']} skipped, {s['running']} running){left}")
        if s["state"] == "stopped":
            st.warning(f"Sweep '{rec['name']}' stopped before it finished (its driver process is gone): run the "
                       "same command again to go on from what is cached.")
        rows = [{"job": m["what"], "host": m["host"], "attempt": m["attempt"],
                 "running for (s)": round(time.time() - m["started"])} for m in rec["running_now"]]
        rows += [{"job": j["what"], "host": j["host"], "attempt": j["attempts"], "error": j["error"]}
                 for j in rec.get("jobs", []) if j["state"] in ("failed", "skipped")]
        if rows:
            st.dataframe(pd.DataFrame(rows), hide_index=True, key=f"sweep_jobs:{rec['name']}")


sweeps_panel()

st.subheader("Launch a study")
plans, _ = available_plans()
name = st.selectbox("Plan", list(plans), index=list(plans).index(sel.plan.name) if sel.plan.name in plans else 0,
                    key="launch_plan")
plan = plans[name]
st.caption(plan.description)
c1, c2, c3 = st.columns(3)
tasks = c1.multiselect("Tasks", list(plan.tasks), default=list(plan.tasks), key=f"launch_tasks:{name}")
langs = c2.multiselect("Languages", list(plan.langs), default=list(plan.langs), key=f"launch_langs:{name}")
cap = int(c3.number_input("Sentences per split (0 = the plan's)", min_value=0, value=0, step=100,
                          key="launch_cap", help="A smaller number gives a quick look, saved as a new plan."))
todo = plan.restricted(langs=tuple(langs) or None, tasks=tuple(tasks) or None, sentences=cap or None)
if cap:
    todo = replace(todo, name=f"{plan.name}-{cap}")
study = cached.study(todo.model, sources=todo.sources, finetuned=todo.finetuned)
rows = cached.guarded(cached.plan_status, study, todo, what="Cannot plan this study")
missing = sum(r["status"] != "ok" for r in rows)
st.write(f"{len(rows)} jobs, {missing} to compute.")
if st.button(f"Run study '{todo.name}'", type="primary", disabled=not (tasks and langs), key="launch"):
    if cap:
        S.save_plan_file(todo)
    if cached.run_plan(study, todo, rows):
        st.success(f"Study '{todo.name}' is complete.")
