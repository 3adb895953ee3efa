"""Prune & retrain: heads removed before fine-tuning (Ma et al. 2021; Budhraja et al. 2020/2021), tested in every
language against the unpruned model, with intervals."""

import streamlit as st

from headprune_app import cached, captions, computing, figures, panels, retrain_view, roles
from headprune_app.page_end import end_page
from headprune_core.base.choices import RETRAIN_STRATEGIES
from headprune_core.figures.curves import retrain_chart, thirds_chart
from headprune_core.plans import selection as S
from headprune_core.runs.jobs import study_jobs

sel: S.Selection = cached.selection()
study = cached.study_for(sel)

about = figures.heading("Prune & retrain")
with about:
    st.markdown(f"{panels.model_caption(sel.model)}  \n**Task:** {S.task_label(sel.task)} · {sel.setting}-lingual"
                f" · fine-tuned on {'+'.join(sel.train_langs())}")
    st.caption(captions.RETRAIN)
panels.need_languages(sel)

found = panels.guarded(retrain_view.results, study, sel.task, what="Cannot list the re-fine-tunings")
if found:
    names = [name for name, _, _ in found]
    pick = st.selectbox("Re-fine-tuning", names, key="retrain", bind="query-params",
                        help="Every prune-then-retrain run of this model and task in the cache, newest first.")
    _, rc, res = found[names.index(pick)]
    langs = [lang for lang in sel.langs if lang in res["test"]] or list(res["test"])
    with figures.aside(about):
        st.markdown(retrain_view.picked_text(res))
    figures.show(retrain_chart(res, langs=langs), key="retrain_chart",
                 name=f"retrain_{sel.task}_{res['strategy']}", title=f"Prune, then retrain: {pick}",
                 caption=captions.retrain_caption(res["dev_lang"]))
    if res["strategy"] == "layers":
        st.subheader("Which third hurts which language (Budhraja et al. 2021)")
        figures.show(thirds_chart(retrain_view.thirds_rows(res, langs)), key="thirds_chart",
                     name=f"thirds_{sel.task}", title="Which third hurts which language (Budhraja et al. 2021)",
                     caption=captions.THIRDS)
    else:
        st.subheader("Target language: unpruned -> pruned (best k)")
        st.dataframe(retrain_view.table(res, langs), hide_index=True)
    with st.expander("Every level against the unpruned model"):
        st.dataframe(retrain_view.levels_table(res, langs), hide_index=True)
        st.caption(captions.LEVELS)
else:
    st.info(captions.NO_RETRAIN)

with st.expander("Run a new prune-then-retrain experiment", expanded=not found):
    c1, c2, c3 = st.columns(3)
    strategy = c1.selectbox("Prune", RETRAIN_STRATEGIES, format_func=retrain_view.STRATEGY_TEXT.get,
                            key="rt_strategy")
    levels_text = c2.text_input("Heads pruned (k)", "6, 12", key="rt_levels", disabled=strategy == "layers",
                                help=captions.LEVELS_HELP)
    seeds_text = c3.text_input("Training seeds", "13", key="rt_seeds", help="e.g. 13,14,15 for 3 seeds")
    d1, d2, d3 = st.columns(3)
    train = retrain_view.default_train()
    n_train = d1.number_input("Training sentences", 10, 100000, int(train["max_train_sentences"]), key="rt_n")
    epochs = d2.number_input("Epochs", 0.5, 20.0, float(train["epochs"]), step=0.5, key="rt_epochs")
    sentences = d3.number_input("Test sentences per language", 20, 100000, int(sel.plan.eval_sentences), key="rt_eval")
    try:
        levels = () if strategy == "layers" else retrain_view.int_list(levels_text)
        seeds = retrain_view.int_list(seeds_text)
        rc = retrain_view.new_experiment(study, sel, strategy=strategy, levels=levels, seeds=seeds,
                                         train={**train, "max_train_sentences": int(n_train), "epochs": float(epochs)},
                                         sentences=int(sentences))
    except ValueError as err:
        st.error(f"Cannot set up this experiment: {err}")
        end_page()
    n_runs = len(rc.points()) * len(rc.train_seeds())
    if study.store.has(rc):
        st.success("This experiment is cached: pick it above.")
    elif roles.owner_button(f"Prune and retrain ({n_runs} fine-tunings, {computing.estimate_text(study, [rc])})",
                            type="primary", key="rt_run", what="retraining"):
        if computing.compute_jobs(study, study_jobs(study, [rc], names=[retrain_view.describe(rc)]),
                               title="Prune & retrain"):
            st.rerun()
