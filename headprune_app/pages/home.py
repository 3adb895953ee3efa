"""Overview: what the app shows, what is cached for the current choices, and a button computing the rest."""

import streamlit as st

from headprune_app import cached, captions, computing, figures, panels, roles, tables
from headprune_core.plans import selection as S
from headprune_core.plans.sweep_record import running_sweeps

sel: S.Selection = cached.selection()

about = figures.heading("headprune")
with about:
    st.markdown(captions.OVERVIEW)
    st.markdown(panels.model_caption(sel.model))
    for note in S.language_notes(sel.task, sel.langs):
        st.caption(note)


@st.fragment(run_every=5 if running_sweeps() else None)
def background() -> None:
    """While a sweep (start.sh's demo curves) runs on this cache: its progress, refreshed every 5 s; the page
    reruns when a job lands, so the table below counts it, and once more when the sweep ends."""
    live = running_sweeps()
    finished = sum(s["finished"] for _, s in live)
    seen, was_live = st.session_state.get("_sweeps_seen", finished), st.session_state.get("_sweeps_live")
    st.session_state["_sweeps_seen"], st.session_state["_sweeps_live"] = finished, bool(live)
    if seen != finished or (was_live and not live):
        st.rerun(scope="app")
    for rec, s in live:
        st.progress(s["finished"] / max(1, s["total"]), text=panels.sweep_line(rec, s))


background()
study = cached.study_for(sel)
panels.need_languages(sel)

st.subheader("What is computed for these choices")
figures.aside(about).caption(captions.overview_status(sel.plan.name, S.task_label(sel.task), sel.setting,
                                                    sel.train_langs(), sel.langs, sel.method))
rows = panels.guarded(computing.plan_status, study, sel.study_plan(), what="Cannot list the study's results")
done = sum(r["status"] == "ok" for r in rows)
counts, table = figures.figure_first()
table.dataframe(tables.status_matrix(rows), hide_index=True)
c1, c2, c3 = counts.columns(3)
c1.metric("results cached", f"{done} of {len(rows)}")
c2.metric("missing", sum(r["status"] == "missing" for r in rows))
c3.metric("corrupt", sum(r["status"] == "corrupt" for r in rows))
with st.expander("Every result of the plan"):
    st.dataframe(tables.plan_table(rows), hide_index=True)
todo = [r for r in rows if r["status"] != "ok"]
if todo:
    if roles.owner_button(f"Compute the {len(todo)} missing result(s)", type="primary", key="compute_missing",
                          what="computing missing results"):
        if computing.compute_plan(study, sel.study_plan(), rows):
            st.rerun()
    st.caption(captions.COMPUTE_TIME)
else:
    st.success("Everything for these choices is cached: every page renders without computing.")
