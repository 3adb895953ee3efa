"""Shared heads: which heads many tasks (or languages) count among their most important ("stem cells",
He & Choi 2021), and how much the top sets overlap."""

import numpy as np
import streamlit as st

from headprune_app import affinity_charts as AC
from headprune_app import affinity_view as V
from headprune_app import cached
from headprune_app import selection as S
from headprune_app.charts import png_config
from headprune_core.affinity import shared_heads

st.title("Shared heads")
st.markdown("Take each map's top **p%** heads. A head in many top sets is one that many tasks (or languages) "
            "rely on at once; the Jaccard overlap says how alike two top sets are.")
st.caption("**What the paper found.** He & Choi 2021: forcing each task to keep as few heads as possible "
           "(learned pruning), a few heads are kept by most tasks ('stem cells'). **What you see here.** Each "
           "task's top p% heads by gradient importance, not learned pruning: a related but different quantity. "
           "The Findings page compares the count with random top-p sets.")

c1, c2 = st.columns([2, 3])
group = c1.radio("Compare", ["tasks (GradTS plan)", "languages (sidebar choices)"], key="shared_group",
                 help="Tasks: the GradTS plan's units, each fine-tuned alone. Languages: the sidebar's task, "
                      "model and importance method, one map per selected language.")
top_p = c2.slider("Top p% of heads per map", 1, 50, 10, 1, key="shared_top_p")

if group.startswith("tasks"):
    all_plans, problems = V.plans()
    d1, d2 = st.columns([3, 2])
    name = d1.selectbox("GradTS plan", list(all_plans), key="shared_plan")
    for p in problems:
        st.caption(f":orange[unreadable GradTS plan file {p}]")
    base = all_plans[name]
    method = d2.radio("Head maps", ["kv_grad", "gate_grad"], index=["kv_grad", "gate_grad"].index(base.method),
                      horizontal=True, key=f"shared_method:{name}")
    plan = base.restricted(method=method)
    st.markdown(cached.model_caption(plan.model))
    if plan.note:
        st.caption(plan.note)
    st.caption("Maps: GradTS normalisation (each layer divided by its sum, then min-max). 'name' = proper-name "
               "spans, a proxy for NER.")
    gts = cached.guarded(V.gradts, plan, what="Cannot set up this GradTS plan")
    complete = cached.guarded(V.offer_maps, gts, key=f"shared:{name}:{method}", what="Cannot find the head maps")
    maps = V.maps(gts)
    what = "tasks"
else:
    sel: S.Selection = cached.selection()
    study = cached.study_for(sel)
    st.markdown(f"{cached.model_caption(sel.model)}  \n**Task:** {S.task_label(sel.task)} · **method:** "
                f"{sel.method} · **normalisation:** {sel.normalize}")
    for note in S.language_notes(sel.task, sel.langs):
        st.caption(note)
    if not sel.langs:
        st.warning(f"No language selected, or no corpus of task '{sel.task}' is prepared in this cache.")
        st.stop()
    _, maps, items = cached.guarded(cached.importance_maps, study, sel, what="Cannot find the head scores")
    complete = cached.offer_compute(study, items, key="shared-langs", note="head scores")
    what = "languages"

if len(maps) < 2:
    if maps:
        st.info(f"Only one map is cached: shared heads need at least two {what}.")
    st.stop()
if not complete:
    st.caption(f"Showing the {len(maps)} {what} whose maps are cached.")

shared = shared_heads(maps, top_percent=top_p)
n_maps = len(maps)
count = shared["count"]
n_heads = int(count.size)
k = max(1, int(round(n_heads * top_p / 100)))
owners = AC.owners_of(shared["heads"])
everywhere = int((count == n_maps).sum())
m1, m2, m3 = st.columns(3)
m1.metric(f"heads in every top set ({n_maps} {what})", everywhere)
m2.metric("heads in no top set", int((count == 0).sum()), help=f"of {n_heads}")
m3.metric("top set size", f"{k} head{'s' if k != 1 else ''}", help=f"{top_p}% of {n_heads}")

left, right = st.columns([3, 2])
with left:
    st.subheader(f"How many {what} claim each head")
    st.plotly_chart(AC.count_heatmap(count, owners, n_maps=n_maps), key="count_map",
                    config=png_config(f"shared_heads_{what}_top{top_p}"))
    expected = n_maps * k / n_heads
    st.caption(f"Count of {what} with the head in their top {top_p}% ({k} heads each). If the top sets were "
               f"independent and random, a head would be claimed {expected:.2f} times on average and by all "
               f"{n_maps} with probability {(k / n_heads) ** n_maps:.1e}.")
with right:
    st.subheader("Most-claimed heads")
    st.dataframe(AC.claimed_table(shared["heads"], n_maps), hide_index=True, height=440)

st.subheader("Overlap of the top sets (Jaccard)")
chance = AC.chance_jaccard(n_heads, k)
st.plotly_chart(AC.jaccard_heatmap(shared["names"], shared["jaccard"], chance=chance), key="jaccard",
                config=png_config(f"shared_heads_{what}_jaccard"))
off = shared["jaccard"][~np.eye(n_maps, dtype=bool)]
st.caption(f"|A ∩ B| / |A ∪ B| of two top sets, clustered. Off-diagonal mean {off.mean():.2f} "
           f"(two random sets of {k} of {n_heads}: about {chance:.2f}).")
