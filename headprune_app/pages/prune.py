"""Prune & evaluate: choose which heads to remove, see the metric, the report, the curves, size and speed."""

import json

import numpy as np
import streamlit as st

from headprune_app import cached, charts, prune_view
from headprune_app import selection as S
from headprune_core.base.choices import LAYER_PARTS
from headprune_core.base.files import safe_filename
from headprune_core.methods.uncertainty import describe_diff

sel: S.Selection = cached.selection()
study = cached.study_for(sel)
ss = st.session_state

st.title("Prune & evaluate")
st.markdown(f"{cached.model_caption(sel.model)}  \n**Task:** {S.task_label(sel.task)} · **evaluated on** "
            f"{S.lang_label(sel.lang)} · fine-tuned on {'+'.join(sel.train_langs())}")
for note in S.language_notes(sel.task, [sel.lang]):
    st.caption(note)
st.caption("**What the papers found.** Michel et al. 2019: many heads can be switched off at test time with "
           "little loss, least important first; Ma et al. 2021: the same ranking transfers across languages "
           "(prune a target by the source's ranking). **What you see here.** Heads switched off without "
           "retraining (for pruning then retraining see Prune & retrain), on this language's test sentences; "
           "curves carry 95% bootstrap intervals over sentences.")
if not sel.langs:
    st.warning(f"No language selected, or no corpus of task '{sel.task}' is prepared in this cache.")
    cached.offer_prepare()
    st.stop()

ft = cached.guarded(S.finetune_config, study, sel, what="Cannot set up the fine-tuned model")
base_cfg = S.eval_config(study, sel, sel.lang)
if not cached.offer_compute(study, [(f"fine-tuned model ({sel.task}, {'+'.join(sel.train_langs())})", ft),
                                    (f"unpruned evaluation {sel.task}/{sel.lang}", base_cfg)], key="prune-base"):
    st.stop()
info = cached.model_info(sel.model)
shape = (int(info["n_layers"]), int(info["n_heads"]))
total = shape[0] * shape[1]

# Apply what a click on the mask grid asked for, before the widgets it changes are drawn.
for name in ("strategy", "custom_heads"):
    if f"_pending_{name}" in ss:
        ss[name] = ss.pop(f"_pending_{name}")

c1, c2, c3 = st.columns([2, 2, 3])
strategy = c1.selectbox("Strategy", prune_view.STRATEGIES, format_func=S.STRATEGY_LABELS.get, key="strategy")
rank_options, rank_default = prune_view.ranking_choices(sel)
rank_lang, seed, part, custom, target = rank_options[rank_default], 0, "middle", None, 0.5
if strategy in ("importance", "reverse"):
    rank_lang = c2.selectbox("Ranking of", rank_options, index=rank_default,
                             format_func=lambda l: prune_view.rank_label(sel, l),
                             key=f"rank_lang:{sel.setting}:{sel.source}:{sel.lang}",
                             help="Prune by this language's head ranking. Cross-lingual: the source's by default "
                                  "(zero-shot has no target labels, as in Ma et al.); the target's own ranking "
                                  "is the comparison.")
elif strategy == "random":
    seed = int(c2.number_input("Seed", min_value=0, value=0, step=1, key="seed"))
elif strategy == "layers":
    part = c2.radio("Layers", LAYER_PARTS, index=1, horizontal=True, key="part",
                    help="Prune every head of the bottom, middle or top third of the layers.")
elif strategy == "learned":
    target = c2.select_slider("Learned pruning removes", prune_view.LEARNED_TARGETS, value=0.5,
                              format_func=lambda v: f"{v:.0%}", key="learned_target",
                              help="A learned-pruning run continues this fine-tune for one epoch with a "
                                   "hard-concrete gate on every head and an L0 term until it removes this share "
                                   "(Louizos et al. 2018; Voita et al. 2019; He & Choi 2021).")

ranking = None
if strategy in ("importance", "reverse") or strategy == "custom":
    ranking = cached.ranking(study, sel, rank_lang)
    if ranking is None and strategy != "custom":
        cached.offer_compute(study, [(f"head scores {sel.task}/{rank_lang} ({sel.method})",
                                      S.score_config(study, sel, rank_lang))], key="ranking",
                             note="the ranking this strategy prunes by")
        st.stop()

learned_ft = learned = None
if strategy == "learned":
    learned_ft = prune_view.learned_config(ft, target)
    if not cached.offer_compute(study, [(f"learned pruning of {sel.task} ({target:.0%} of the heads)", learned_ft)],
                                key=f"learned:{target}",
                                note="hard-concrete head gates trained for one epoch after this fine-tune"):
        st.stop()
    learned = study.learned(learned_ft)  # reads the run's log, not its weights
    ranking = learned.ranking()

if strategy == "custom":
    options = [f"L{l}H{h}" for l in range(shape[0]) for h in range(shape[1])]
    if "custom_heads" not in ss:  # start from the mask shown before switching to custom
        last = np.asarray(ss.get("last_mask", np.ones(shape)))
        ss["custom_heads"] = [f"L{l}H{h}" for l, h in zip(*np.where(last == 0))] if last.shape == shape else []
    chosen = c3.multiselect("Pruned heads (or click squares below)", options, key="custom_heads")
    custom = np.ones(shape, dtype=np.float32)
    for item in chosen:
        l, h = item[1:].split("H")
        custom[int(l), int(h)] = 0
    k = int((custom == 0).sum())
elif strategy == "layers":
    c3.caption(f"Every head of the {part} third of the layers.")
elif strategy == "learned":
    removed = int((learned.kept == 0).sum())
    k = c3.slider("Heads pruned (k)", 0, total, value=removed, key=f"k_learned:{target}",
                  help=f"Starts at the learned set ({removed} heads removed); other k prune by the learned gates.")
else:
    k = c3.slider("Heads pruned (k)", 0, total, value=0, key="k",
                  help="Starts at 0 (the cached unpruned evaluation); each new k is evaluated once, then cached.")

mask = cached.mask(shape, "importance" if strategy == "learned" else strategy, 0 if strategy == "layers" else k,
                   ranking=ranking, seed=seed, part=part, custom=custom)
k = int((mask == 0).sum())
if strategy != "custom":
    ss["last_mask"] = mask.tolist()
label = prune_view.mask_label(strategy, k, rank_lang=rank_lang, seed=seed, part=part, target=target)
ss["current_mask"] = {"mask": mask.tolist(), "label": label, "ft": ft.key(), "task": sel.task}

base = cached.evaluation(study, base_cfg)
now = cached.evaluation(study, S.eval_config(study, sel, sel.lang, mask))
m1, m2, m3 = st.columns(3)
change = prune_view.change(base, now)
m1.metric(f"{now['metric']}, {k} of {total} heads pruned", f"{now['score']:.2f}",
          delta=f"{change['diff']:+.2f} vs unpruned [{change['low']:+.2f}, {change['high']:+.2f}]",
          delta_color="normal" if change["distinguishable"] else "off",
          help="The change with its 95% paired-bootstrap interval over the test sentences; grey when the "
               "interval includes 0 (not distinguishable from no change).")
m2.metric(f"{base['metric']}, unpruned", f"{base['score']:.2f}", delta=prune_view.interval_text(base),
          delta_color="off", help="95% bootstrap interval over the test sentences.")
m3.metric("evaluated on", f"{now['n']} {'tokens' if now['metric'] == 'accuracy' else 'gold tokens'}",
          help=f"test split of {sel.lang}, first {sel.plan.eval_sentences} sentences")
st.caption(f"Mask: {label}. This mask: {prune_view.interval_text(now)}; change vs unpruned "
           f"{describe_diff(change)}.")
if strategy == "learned":
    own_cfg = study.eval_config(learned_ft, sel.task, sel.lang, max_sentences=sel.plan.eval_sentences)
    own = cached.read(study, own_cfg)
    if own is None:
        cached.offer_compute(study, [(f"the learned-pruning model on {sel.lang}", own_cfg)], key=f"learned-eval:{target}",
                             note="the model trained with its gates (He & Choi's protocol)")
    else:
        d = prune_view.change(base, own["result"])
        st.info(f"The learned-pruning model itself (fine-tuned on with its gates, {int(learned.kept.sum())} heads "
                f"kept): {own['result']['score']:.2f} ({prune_view.interval_text(own['result'])}), "
                f"{describe_diff(d)} vs the unpruned model. Above, the same heads are switched off in the model "
                "fine-tuned without gates.", icon=":material/school:")

left, right = st.columns(2)
with left:
    st.subheader("Which heads are pruned")
    grid_key = f"grid:{ss.get('grid_version', 0)}"
    event = st.plotly_chart(charts.mask_grid(mask, ranking), on_select="rerun", selection_mode="points",
                            key=grid_key, config=charts.png_config("mask"))
    clicked = charts.clicked_heads(event)
    if clicked:  # a click toggles that head: switch to a custom mask starting from this one
        new = charts.toggle(mask, clicked)
        ss["_pending_strategy"] = "custom"
        ss["_pending_custom_heads"] = [f"L{l}H{h}" for l, h in zip(*np.where(new == 0))]
        ss["grid_version"] = ss.get("grid_version", 0) + 1
        st.rerun()
    st.caption("Click a square to toggle that head (the strategy becomes custom).")
with right:
    st.subheader("All computed strategies")
    curves, configs = cached.curves(study, sel, sel.lang)
    st.plotly_chart(charts.curves_chart(curves, current_k=k, current_score=now["score"], metric=now["metric"]),
                    config=charts.png_config(f"curves_{sel.task}_{sel.lang}"), key="curves")
    wanted = {"importance": S.importance_curve_name(sel, rank_lang),
              "reverse": "most important first", "random": "random order", "layers": "whole layers"}.get(strategy)
    if wanted and wanted in configs and wanted not in {c["name"] for c in curves}:
        cached.offer_compute(study, [(f"curve: {wanted}", configs[wanted])], key="curve")
    if not curves:
        st.caption("No curve is cached for this language yet.")
    else:
        st.caption("Bands: 95% bootstrap intervals over the test sentences (random: of the mean over "
                   f"{len(sel.plan.random_seeds)} draws). The y-axis spans the values, not 0-100, so a drop of a "
                   "point or two looks steep: read the axis.")

st.subheader("Report under this mask")
st.dataframe(charts.report_table(now, base), hide_index=True)

st.subheader("Physically pruned model")
speed_key = (ft.key(), tuple(map(tuple, mask.astype(int).tolist())))
if st.button("Measure size and latency", key="measure") or ss.get("measured") == speed_key:
    ss["measured"] = speed_key
    with st.spinner("Pruning a copy and timing both models ..."):
        sp = cached.measure(study, ft, mask, sel.task, sel.lang)
    prune_view.speed_panel(sp)
else:
    st.caption("Removes the pruned heads for real (a copy; the shared model is untouched) and times both models.")

d1, d2 = st.columns(2)
payload = prune_view.mask_payload(mask, sel, strategy=strategy, label=label, finetune_key=ft.key())
d1.download_button("Download mask (JSON)", json.dumps(payload, indent=1), file_name=safe_filename(f"mask_{sel.task}_{k}.json"),
                   mime="application/json", key="dl_mask")
d2.download_button("Download pruned model (zip)", cached.pruned_zip(study, ft, mask, {"mask_label": label}),
                   file_name=safe_filename(f"pruned_{sel.task}_{k}.zip"), mime="application/zip", key="dl_model",
                   help="Built when you click (a few seconds). Load it with headprune_core.encoders.pruned.load_pruned().")
