"""Task affinity (GradTS): which tasks rank heads alike, which auxiliary tasks GradTS picks for a primary task,
and whether training with them helped (multi-task runs)."""

import numpy as np
import streamlit as st

from headprune_app import affinity_charts as AC
from headprune_app import affinity_view as V
from headprune_app import cached
from headprune_app.charts import png_config
from headprune_core.base.files import safe_filename
from headprune_core.methods.similarity import correlation_matrix
from headprune_core.multitask.affinity import rank_auxiliary, select_threshold
from headprune_core.multitask.gradts import validation_table

st.title("Task affinity (GradTS)")
st.markdown(
    "GradTS (Ma et al. 2021) fine-tunes the encoder on each task alone, maps how much each head matters to it "
    "(|gradient| of the head's key and value weights, per-layer normalised), and calls two tasks similar when "
    "their maps rank the heads alike (**Kendall's tau**). For a primary task it keeps the auxiliary tasks above "
    "a threshold (**GradTS-thres**) or adds them in tau order while the primary's dev score improves "
    "(**GradTS-trial**). Below, its choices are checked by real multi-task training.")
st.caption("**What the paper found.** GradTS's selections beat training with all tasks and with random ones on "
           "8 GLUE tasks (+0.33% to +17.93%), at a fraction of AUTOSEM's search time. **What you see here.** The "
           "same procedure on this model's task units, subsampled (the plan's note says how); differences of a "
           "few points are within noise at this size: the Findings page states the verdict with intervals.")

all_plans, problems = V.plans()
c1, c2, c3 = st.columns([3, 2, 2])
name = c1.selectbox("GradTS plan", list(all_plans), key="gradts_plan",
                    help="A preset or a plan file in <cache>/plans/gradts: task units, primaries, sizes.")
for p in problems:
    st.caption(f":orange[unreadable GradTS plan file {p}]")
base = all_plans[name]
method = c2.radio("Head maps", ["kv_grad", "gate_grad"], index=["kv_grad", "gate_grad"].index(base.method),
                  horizontal=True, key=f"gradts_method:{name}",
                  help="kv_grad: GradTS's key/value weight gradients; gate_grad: |d loss / d head gate|.")
kind = c3.radio("Correlation", ["Kendall tau", "Spearman rho"], horizontal=True, key="gradts_corr")
plan = base.restricted(method=method)

st.markdown(f"{cached.model_caption(plan.model)}  \n{plan.description}")
if plan.note:
    st.info(plan.note, icon=":material/science:")
st.caption("Units are task/language. 'name' = proper-name spans derived from gold proper-noun tags: a proxy for "
           "NER, not real named-entity recognition.")

gts = cached.guarded(V.gradts, plan, what="Cannot set up this GradTS plan")
if not cached.guarded(V.offer_maps, gts, key=f"{name}:{method}", what="Cannot find the head maps"):
    maps = V.maps(gts)
    if len(maps) < 2:
        st.stop()
    st.caption(f"Showing the {len(maps)} units whose maps are cached.")
else:
    maps = V.maps(gts)

names, matrix = correlation_matrix(maps, kind="kendall" if kind.startswith("Kendall") else "spearman")
res = V.result(gts)
primaries = [p for p in gts.primaries if p in names] + [n for n in names if n not in gts.primaries]
left, right = st.columns([3, 2])
with right:
    primary = st.selectbox("Primary task", primaries, key=f"gradts_primary:{name}",
                           help="The task to improve; the others are candidate auxiliary tasks.")
    threshold = st.slider(f"Threshold ({kind.split()[-1]})", -1.0, 1.0, float(plan.threshold), 0.01,
                          key=f"gradts_threshold:{name}",
                          help=f"GradTS-thres keeps every auxiliary task above it (the plan uses {plan.threshold}).")
    ranking = rank_auxiliary(names, matrix, primary)
    chosen = select_threshold(ranking, threshold)
    validated = next((v for v in (res or {}).get("result", {}).get("validation", []) if v["primary"] == primary),
                     None)
    trial = validated["trial"]["selected"] if validated else []
    st.plotly_chart(AC.ranking_chart(ranking, threshold=threshold, selected=chosen, trial=trial, kind=kind),
                    config=png_config(f"gradts_ranking_{primary.replace('/', '_')}"), key="ranking")
    st.markdown(f"**GradTS-thres at {threshold:.2f}** selects {len(chosen)} of {len(ranking)}: "
                f"{', '.join(chosen) or 'none (the primary is trained alone)'}"
                + (f"  \n**GradTS-trial** chose: {', '.join(trial) or 'none (alone was best on dev)'}"
                   if validated else ""))
with left:
    st.plotly_chart(AC.affinity_heatmap(names, matrix, primary=primary, selected=chosen, kind=kind),
                    config=png_config(f"gradts_{method}_affinity"), key="tau_heatmap")
    off = matrix[~np.eye(len(names), dtype=bool)]
    st.caption(f"{kind} between the units' head maps ({method}), clustered (average linkage). Off-diagonal: "
               f"min {off.min():.2f}, mean {off.mean():.2f}, max {off.max():.2f}. The primary's row is outlined; "
               "red labels and circles mark the auxiliary tasks above the threshold.")

st.subheader(f"Training {primary} with this selection")
if not chosen:
    st.caption("Nothing is above the threshold: GradTS-thres trains the primary alone.")
else:
    now = V.run_evals(gts, primary, chosen)
    alone = V.run_evals(gts, primary, [])
    if now is not None:
        m1, m2 = st.columns(2)
        m1.metric(f"test {now['metric']} with {len(chosen)} auxiliary", f"{now['test']:.2f}",
                  delta=None if alone is None else f"{now['test'] - alone['test']:+.2f} vs alone")
        m2.metric(f"dev {now['metric']}", f"{now['dev']:.2f}",
                  delta=None if alone is None else f"{now['dev'] - alone['dev']:+.2f} vs alone")
    else:
        st.caption("This set's multi-task run is not cached (each distinct set of units is one run).")
        V.offer_selection(gts, primary, chosen, key=f"{name}:{primary}:{'+'.join(chosen)}")

st.subheader("Validation: did the selected tasks help?")
if res is None:
    V.offer_validation(gts, key=f"{name}:{method}")
    st.stop()
result = res["result"]
table = validation_table(result)
st.plotly_chart(AC.validation_chart(table), config=png_config(f"gradts_{plan.name}_validation"),
                key="validation")
trial_note = "every candidate" if plan.max_trial is None else f"up to {plan.max_trial} candidates"
st.caption("Each primary trained alone, with the GradTS-thres selection (tau > "
           f"{plan.threshold}), the GradTS-trial selection (best on dev, adding {trial_note} in tau order), "
           f"the GradTS-fg examples (auxiliary training examples whose own head map has tau > "
           f"{plan.fg_threshold} with the primary's), the bandit's choice (AUTOSEM stage 1: Thompson sampling "
           "rewarded by the primary's dev loss), all other units, and random sets of as many units as "
           f"GradTS-trial chose. Each final model is trained with {len(plan.train_seeds)} seed(s); the point is "
           "their mean, the whisker its 95% bootstrap interval (training seeds and test sentences both "
           "resampled). x = wall time on this machine to choose the auxiliaries (GradTS: every unit's single-task fine-tune and head map, plus trial's "
           "runs or fg's per-example maps; the bandit: its search) plus training the final model. Hover for the "
           "auxiliary units and the change vs alone." + (f" {plan.note}" if plan.note else ""))
frame = AC.validation_frame(table)
st.dataframe(frame, hide_index=True)
st.caption("vs alone: bootstrap difference from the primary trained alone (the same resamples of test sentences "
           "and of training seeds for both), * = distinguishable from 0. Costs in wall seconds, measured when "
           "computed.")
st.download_button("Download the validation table (CSV)", frame.to_csv(index=False).encode(),
                   file_name=safe_filename(f"gradts_{plan.name}_{method}.csv"), mime="text/csv", key="gradts_csv")
with st.expander("GradTS-trial: every trial's dev score"):
    for v in result["validation"]:
        st.markdown(f"**{v['primary']}**: " + "; ".join(
            f"{' + '.join(t['aux']) or 'alone'}: {t['dev']:.2f}" for t in v["trial"]["trials"])
            + f" → {', '.join(v['trial']['selected']) or 'alone'}")
with st.expander("GradTS-fg: which auxiliary examples were kept"):
    for v in result["validation"]:
        fg = v.get("fg")
        if fg:
            st.markdown(f"**{v['primary']}** (tau > {fg['threshold']}):")
            st.plotly_chart(AC.fg_chart(fg), config=png_config(f"gradts_fg_{v['primary'].replace('/', '_')}"),
                            key=f"fg:{v['primary']}")
with st.expander("Bandit (AUTOSEM stage 1): posterior utility of each unit"):
    for v in result["validation"]:
        if v.get("bandit"):
            st.markdown(f"**{v['primary']}**")
            st.dataframe(AC.bandit_frame(v["bandit"]), hide_index=True)
    st.caption("Posterior mean of each arm (the probability that training it lowers the primary's dev loss) "
               "per training seed, and how many rounds chose it; units above the keep level are selected.")
s = result["seconds"]
st.caption(f"Stored time of the parts: training + scoring of the maps {s['maps_total']:.0f} s; multi-task "
           f"training {s['multitask_total']:.0f} s over {len(s['multitask_runs'])} runs. This result was assembled "
           f"in {s['wall'] / 60:.1f} min of wall time ({s['wall_maps'] / 60:.1f} min for the "
           f"{len(result['units'])} head maps, {s['wall_multitask'] / 60:.1f} min for everything after; parts "
           f"cached by earlier runs take no time here), CPU time {s.get('cpu', 0) / 60:.1f} min.")
