"""Prune & evaluate: choose which heads to remove, see the metric, the report, the curves, size and speed."""

import streamlit as st

from headprune_app import cached, captions, figures, links, panels, state, tables
from headprune_app import prune_view as V
from headprune_app.page_end import end_page
from headprune_core.methods.uncertainty import describe_ci, describe_diff
from headprune_core.plans import selection as S

sel: S.Selection = cached.selection()
study = cached.study_for(sel)

about = figures.heading("Prune & evaluate")
with about:
    st.markdown(f"{panels.model_caption(sel.model)}  \n**Task:** {S.task_label(sel.task)} · **evaluated on** "
                f"{S.lang_label(sel.lang)} · fine-tuned on {'+'.join(sel.train_langs())}")
    for note in S.language_notes(sel.task, [sel.lang]):
        st.caption(note)
    st.caption(captions.PRUNE)
panels.need_languages(sel)

ft = panels.guarded(S.finetune_config, study, sel, what="Cannot set up the fine-tuned model")
base_cfg = S.eval_config(study, sel, sel.lang)
if not panels.offer_compute(study, [(f"fine-tuned model ({sel.task}, {'+'.join(sel.train_langs())})", ft),
                                    (f"unpruned evaluation {sel.task}/{sel.lang}", base_cfg)], key="prune-base"):
    end_page()
shape = cached.head_shape(sel.model)

V.apply_grid_click()
c1, c2, c3 = st.columns([2, 2, 3])
strategy = links.selectbox("Strategy", V.STRATEGIES, format_func=S.STRATEGY_LABELS.get, key="strategy", where=c1)
params = V.read_params(c2, sel, strategy)
ranking, learned = V.ranking_for(study, sel, ft, params)
mask = V.read_mask(c3, shape, params, ranking, learned, before=state.current_mask(ft.key(), sel.task))
k = int((mask == 0).sum())
label = params.label(k)
state.remember_mask(state.MaskChoice.from_mask(mask, finetune_key=ft.key(), task=sel.task, label=label))

base = cached.evaluation(study, base_cfg)
now = cached.evaluation(study, S.eval_config(study, sel, sel.lang, mask))
change = V.change(base, now)
numbers, charts_row = figures.figure_first()
with numbers:
    V.metrics(sel, k, mask.size, base, now, change)
    st.caption(f"Mask: {label}. This mask: {describe_ci(now, digits=2)}; change vs unpruned "
               f"{describe_diff(change)}.")
    if strategy == "learned":
        V.learned_model_panel(study, sel, ft, params, learned, base)

left, right = charts_row.columns(2)
with left:
    st.subheader("Which heads are pruned")
    V.mask_grid(mask, ranking)
with right:
    st.subheader("All computed strategies")
    V.curves_panel(study, sel, params, k, now)

st.subheader("Report under this mask")
st.dataframe(tables.report_table(now, base), hide_index=True)

st.subheader("Physically pruned model")
V.measure_panel(study, sel, ft, mask)
V.downloads(study, sel, ft, mask, strategy=strategy, label=label)
