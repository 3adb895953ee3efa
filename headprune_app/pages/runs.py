"""Runs: what is in the cache (config, size, date), deleting entries, and launching a whole study."""

from pathlib import Path

import streamlit as st

from headprune_app import cached, computing, panels, roles, runs_view
from headprune_app.page_end import end_page
from headprune_core.plans import selection as S
from headprune_core.plans.presets import available_plans

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
    st.dataframe(runs_view.entries_table(shown), hide_index=True, height=min(420, 36 + 35 * len(shown)))
    labels = {runs_view.entry_label(e): e for e in shown}
    with st.expander("Configuration of an entry"):
        pick = st.selectbox("Entry", list(labels), key="show_entry")
        if pick:
            st.json(runs_view.entry_details(labels[pick]), expanded=False)
    if not roles.is_teacher():
        roles.student_note("deleting entries")
    else:
        with st.expander("Delete entries"):
            doomed = st.multiselect("Entries to delete", list(labels), key="doomed")
            sure = st.checkbox("Yes, delete them (they are recomputed when next needed)", key="sure")
            if st.button("Delete", disabled=not (doomed and sure), key="delete"):
                for name in doomed:
                    cached.delete(labels[name])
                ss.pop("doomed", None)
                st.success(f"Deleted {len(doomed)} entries.")
                st.rerun()

runs_view.sweeps_panel()
runs_view.cache_panel(Path(cached.root()))

st.subheader("Launch a study")
if not roles.is_teacher():
    roles.student_note("launching a study")
    end_page()
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
todo = runs_view.launch_plan(plan, tasks=tasks, langs=langs, cap=cap)
study = cached.study(todo.model, sources=todo.sources, finetuned=todo.finetuned)
rows = panels.guarded(computing.plan_status, study, todo, what="Cannot plan this study")
missing = sum(r["status"] != "ok" for r in rows)
st.write(f"{len(rows)} jobs, {missing} to compute.")
if st.button(f"Run study '{todo.name}'", type="primary", disabled=not (tasks and langs), key="launch"):
    if cap:
        S.save_plan_file(todo)
    if computing.compute_plan(study, todo, rows):
        st.success(f"Study '{todo.name}' is complete.")
