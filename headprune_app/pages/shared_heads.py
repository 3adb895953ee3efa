"""Shared heads: which heads many tasks (or languages) count among their most important ("stem cells",
He & Choi 2021), and how much the top sets overlap."""

import numpy as np
import streamlit as st

from headprune_app import affinity_charts as AC
from headprune_app import affinity_view as V
from headprune_app import cached
from headprune_app import selection as S
from headprune_app.charts import png_config
from headprune_core.multitask.affinity import shared_heads

st.title("Shared heads")
st.markdown("Take each map's top **p%** heads. A head in many top sets is one that many tasks (or languages) "
            "rely on at once; the Jaccard overlap says how alike two top sets are.")
st.caption("**What the paper found.** He & Choi 2021: forcing each task to keep as few heads as possible "
           "(learned pruning), a few heads are kept by most tasks ('stem cells'); multi-task training on all "
           "tasks scored below single-task training. **What you see here.** First each task's top p% heads by "
           "gradient importance (a related but different quantity); below, for the tasks of a GradTS plan, the "
           "heads that learned pruning (hard-concrete gates with an L0 term) keeps, side by side with gradient "
           "top sets of the same size, against random sets.")

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

if not group.startswith("tasks"):
    st.stop()
st.header("Learned pruning: stem cells (He & Choi)")
st.markdown("Each unit's own fine-tune continues for one epoch with a **hard-concrete gate** on every head and a "
            "penalty on the expected number of open gates (Louizos et al. 2018; Voita et al. 2019) until it keeps "
            "the share asked for; the multi-task run on all units does the same with one set of gates. A head kept "
            "by most tasks is a **stem cell**.")
target = st.select_slider("Share of heads learned pruning removes", [0.25, 0.5, 0.75], value=0.5,
                          key="stem_target", format_func=lambda v: f"{v:.0%}")
cells = cached.guarded(V.stemcells, gts, target, what="Cannot set up learned pruning")
summary = V.stemcells_summary(cells)
if summary is None:
    V.offer_stemcells(cells, key=f"{name}:{target}")
    st.stop()
units = summary["units"]
n_units, count = len(units), np.asarray(summary["count"])
majority, share = summary["majority"], summary["share_kept"]
kept_k = int(round(share * count.size))
grad_count = np.asarray(summary["gradient_count"])
chance = summary["claimed_chance"][majority]
overlap = summary["stem_vs_gradient"]
s1, s2, s3 = st.columns(3)
s1.metric(f"stem cells: kept by ≥ {majority} of {n_units} tasks", overlap["learned"],
          help=f"random sets of {kept_k} heads per task: {chance:.1f} expected")
s2.metric(f"gradient top-{kept_k}: in ≥ {majority} of {n_units}", overlap["gradient"])
s3.metric("in both", overlap["both"], help=f"Jaccard {overlap['jaccard']:.2f}")
left, right = st.columns(2)
with left:
    st.subheader("Learned pruning keeps")
    learned_owners = {(a, b): [u for u in units if summary["kept"][u][a][b]] for a in range(count.shape[0])
                      for b in range(count.shape[1])}
    st.plotly_chart(AC.count_heatmap(count, learned_owners, n_maps=n_units), key="learned_count",
                    config=png_config(f"stem_cells_learned_{int(target * 100)}"))
with right:
    st.subheader(f"Gradient top {kept_k} heads")
    grad_sets = {u: {tuple(h) for h in summary["gradient_sets"][u]} for u in units}
    grad_owners = {(a, b): [u for u in units if (a, b) in grad_sets[u]] for a in range(count.shape[0])
                   for b in range(count.shape[1])}
    st.plotly_chart(AC.count_heatmap(grad_count, grad_owners, n_maps=n_units), key="gradient_count",
                    config=png_config(f"stem_cells_gradient_{int(target * 100)}"))
st.caption(f"How many of the {n_units} tasks keep each head: left, under learned pruning ({1 - share:.0%} of "
           f"the heads removed per task); right, in each task's {kept_k} heads of highest GradTS importance (the "
           f"same size). If every task kept a random {share:.0%}, {chance:.1f} heads would be kept by at least "
           f"{majority} tasks on average.")
st.dataframe(AC.stem_table(summary), hide_index=True)
st.caption("Per task: heads kept; how many of them are also among its gradient top heads of the same size "
           "(chance: the kept share); the test metric fine-tuned alone (all heads), after learned pruning alone, "
           "and after learned pruning under multi-task training on all units, with 95% bootstrap intervals; the "
           "paired change from multi-task to single-task learned pruning (* = distinguishable from 0). Learned "
           "pruning trains its gates for more epochs after the fine-tune (the L0 run continues it), so 'alone, "
           "learned pruning' has more training than 'alone, all heads': a gain there is not a gain from pruning.")
c1, c2 = st.columns([3, 2])
with c1:
    st.plotly_chart(AC.jaccard_heatmap(units, np.asarray(summary["jaccard"]),
                                       chance=AC.chance_jaccard(count.size, kept_k)), key="learned_jaccard",
                    config=png_config(f"stem_cells_jaccard_{int(target * 100)}"))
    st.caption("Jaccard overlap of the tasks' learned kept sets, clustered.")
with c2:
    multi = np.asarray(summary["multi_kept"])
    st.plotly_chart(AC.count_heatmap(multi.astype(int), {}, n_maps=1), key="multi_kept",
                    config=png_config(f"stem_cells_multitask_{int(target * 100)}"))
    st.caption(f"Heads kept under multi-task learned pruning ({summary['multi_kept_n']} of {multi.size}); "
               "Jaccard with each task's own set is in the table.")
