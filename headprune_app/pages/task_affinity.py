"""Task affinity (GradTS): which tasks rank heads alike, which auxiliary tasks GradTS picks for a primary task,
and whether training with them helped (multi-task runs)."""

import streamlit as st

from headprune_app import affinity_view as V
from headprune_app import captions, figures, links, panels, tables
from headprune_app.page_end import end_page
from headprune_core.base.files import safe_filename
from headprune_core.figures.affinity import affinity_heatmap, ranking_chart, validation_chart
from headprune_core.methods.similarity import correlation_matrix
from headprune_core.multitask.affinity import primary_order, rank_auxiliary, select_threshold
from headprune_core.multitask.gradts import validation_table

about = figures.heading("Task affinity (GradTS)")
with about:
    st.markdown(captions.AFFINITY)
    st.caption(captions.AFFINITY_PAPER)

c1, c2, c3 = st.columns([3, 2, 2])
plan = V.pick_plan(c1, c2, key="gradts")
CORRELATIONS = {"kendall": "Kendall tau", "spearman": "Spearman rho"}
kind = CORRELATIONS[links.radio("Correlation", list(CORRELATIONS), format_func=CORRELATIONS.get, horizontal=True,
                                key="gradts_corr", where=c3)]
name, method = plan.name, plan.method
with figures.aside(about):
    st.markdown(f"{panels.model_caption(plan.model)}  \n{plan.description}")
    if plan.note:
        st.info(plan.note, icon=":material/science:")
    st.caption(captions.UNITS)

gts = panels.guarded(V.gradts, plan, what="Cannot set up this GradTS plan")
complete = panels.guarded(V.offer_maps, gts, key=f"{name}:{method}", what="Cannot find the head maps")
maps = V.maps(gts)
if not complete:
    if len(maps) < 2:
        end_page()
    st.caption(f"Showing the {len(maps)} units whose maps are cached.")

names, matrix = correlation_matrix(maps, kind="kendall" if kind.startswith("Kendall") else "spearman")
res = V.result(gts)
left, right = st.columns([3, 2])
with right:
    primary = st.selectbox("Primary task", primary_order(gts.primaries, names), key="primary", bind="query-params",
                           help="The task to improve; the others are candidate auxiliary tasks.")
    threshold = st.slider(f"Threshold ({kind.split()[-1]})", -1.0, 1.0, float(plan.threshold), 0.01,
                          key="threshold", bind="query-params",
                          help=f"GradTS-thres keeps every auxiliary task above it (the plan uses {plan.threshold}).")
    ranking = rank_auxiliary(names, matrix, primary)
    chosen = select_threshold(ranking, threshold)
    validated = V.validated(res, primary)
    trial = validated["trial"]["selected"] if validated else None
    figures.show(ranking_chart(ranking, threshold=threshold, selected=chosen, trial=trial or [], kind=kind),
                 name=f"gradts_ranking_{primary.replace('/', '_')}", key="ranking",
                 title=f"Auxiliary tasks for {primary}, ranked by {kind}")
    st.markdown(captions.selection_text(threshold, chosen, len(ranking), trial))
with left:
    figures.show(affinity_heatmap(names, matrix, primary=primary, selected=chosen, kind=kind),
                 name=f"gradts_{method}_affinity", key="tau_heatmap", title=f"Task affinity ({kind}, {method} maps)",
                 caption=captions.affinity_caption(kind, method, V.off_diagonal(matrix)))

st.subheader(f"Training {primary} with this selection")
V.selection_panel(gts, primary, chosen, key=f"{name}:{primary}:{'+'.join(chosen)}")

st.subheader("Validation: did the selected tasks help?")
if res is None:
    V.offer_validation(gts, key=f"{name}:{method}")
    end_page()
result = res["result"]
table = validation_table(result)
figures.show(validation_chart(table), name=f"gradts_{plan.name}_validation", key="validation",
             title=f"Training {primary} with each selection (test metric)", caption=captions.validation_caption(plan))
frame = tables.validation_frame(table)
st.dataframe(frame, hide_index=True)
st.caption(captions.VALIDATION_TABLE)
st.download_button("Download the validation table (CSV)", frame.to_csv(index=False).encode(),
                   file_name=safe_filename(f"gradts_{plan.name}_{method}.csv"), mime="text/csv", key="gradts_csv")
V.validation_details(result)
st.caption(captions.seconds_caption(result))
