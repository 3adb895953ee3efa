"""Shared heads: which heads many tasks (or languages) count among their most important ("stem cells",
He & Choi 2021), and how much the top sets overlap."""

import streamlit as st

from headprune_app import affinity_view as V
from headprune_app import cached, captions, figures, links, panels, shared_view
from headprune_app.page_end import end_page
from headprune_core.multitask.affinity import shared_heads
from headprune_core.plans import selection as S

about = figures.heading("Shared heads")
with about:
    st.markdown(captions.SHARED)
    st.caption(captions.SHARED_PAPER)

c1, c2 = st.columns([2, 3])
GROUPS = {"tasks": "tasks (GradTS plan)", "languages": "languages (sidebar choices)"}
group = links.radio("Compare", list(GROUPS), format_func=GROUPS.get, key="shared_group", where=c1,
                    help=captions.GROUP_HELP, horizontal=figures.focused())
top_p = c2.slider("Top p% of heads per map", 1, 50, 10, 1, key="shared_top_p", bind="query-params")

if group == "tasks":
    d1, d2 = st.columns([3, 2])
    plan = V.pick_plan(d1, d2, key="shared")
    with figures.aside(about):
        st.markdown(panels.model_caption(plan.model))
        if plan.note:
            st.caption(plan.note)
        st.caption(captions.GRADTS_MAPS)
    gts = panels.guarded(V.gradts, plan, what="Cannot set up this GradTS plan")
    complete = panels.guarded(V.offer_maps, gts, key=f"shared:{plan.name}:{plan.method}",
                              what="Cannot find the head maps")
    maps = V.maps(gts)
    what = "tasks"
else:
    sel: S.Selection = cached.selection()
    study = cached.study_for(sel)
    with figures.aside(about):
        st.markdown(f"{panels.model_caption(sel.model)}  \n**Task:** {S.task_label(sel.task)} · **method:** "
                    f"{sel.method} · **normalisation:** {sel.normalize}")
        for note in S.language_notes(sel.task, sel.langs):
            st.caption(note)
    panels.need_languages(sel, offer=False)
    _, maps, items = panels.guarded(cached.importance_maps, study, sel, what="Cannot find the head scores")
    complete = panels.offer_compute(study, items, key="shared-langs", note="head scores")
    what = "languages"

if len(maps) < 2:
    if maps:
        st.info(f"Only one map is cached: shared heads need at least two {what}.")
    end_page()
if not complete:
    st.caption(f"Showing the {len(maps)} {what} whose maps are cached.")
shared_view.top_sets(shared_heads(maps, top_percent=top_p), what=what, top_p=top_p)

if group != "tasks":
    end_page()
st.header("Learned pruning: stem cells (He & Choi)")
st.markdown(captions.STEM_CELLS)
target = links.select_slider("Share of heads learned pruning removes", [0.25, 0.5, 0.75], value=0.5,
                             key="stem_target", format_func=lambda v: f"{v:.0%}")
cells = panels.guarded(V.stemcells, gts, target, what="Cannot set up learned pruning")
summary = V.stemcells_summary(cells)
if summary is None:
    V.offer_stemcells(cells, key=f"{plan.name}:{target}")
    end_page()
shared_view.stem_cells(summary, target=target)
