"""Overview: what the app shows, what is cached for the current choices, and a button computing the rest."""

import pandas as pd
import streamlit as st

from headprune_app import cached, charts
from headprune_app import selection as S
from headprune_core.plans.progress import running_sweeps

sel: S.Selection = cached.selection()

st.title("headprune")
st.markdown(
    "Which attention heads of a multilingual encoder does a task need, and are they the same in every "
    "language? headprune fine-tunes the encoder on a task in one language, **scores every head's importance** "
    "in each language, **prunes** heads (least important first, or by another language's ranking, at random, "
    "by whole layers, or by hand) and **evaluates** what is left.\n\n"
    "- **Head importance**: layer × head maps per language, how similar the languages' rankings are, where in "
    "the stack importance sits.\n"
    "- **Prune & evaluate**: choose k heads to remove and see the metric, the per-tag report, the curves of all "
    "strategies, and the size and speed of the physically pruned model.\n"
    "- **Prune & retrain**: remove heads, then fine-tune again (Ma et al.; Budhraja et al.), tested in every "
    "language against the unpruned model, with intervals.\n"
    "- **Head inspector**: tag your own sentence with and without the mask; look at one head's attention.\n"
    "- **Findings**: the papers' claims checked on this model, each with numbers, intervals and a verdict.\n"
    "- **Runs**: what is in the cache; delete entries; launch a whole study.")
st.markdown(cached.model_caption(sel.model))
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
        st.progress(s["finished"] / max(1, s["total"]), text=cached.sweep_line(rec, s))


background()
study = cached.study_for(sel)
if not sel.langs:
    st.warning(f"No language selected, or no corpus of task '{sel.task}' is prepared in this cache.")
    cached.offer_prepare()
    st.stop()

st.subheader("What is computed for these choices")
st.caption(f"Study plan **{sel.plan.name}**, task {S.task_label(sel.task)}, {sel.setting}-lingual setting"
           f", fine-tuned on {'+'.join(sel.train_langs())}, languages {', '.join(sel.langs)}, "
           f"method {sel.method}. Nothing is computed until you press the button.")
rows = cached.guarded(cached.plan_status, study, sel.study_plan(), what="Cannot list the study's results")
done = sum(r["status"] == "ok" for r in rows)
c1, c2, c3 = st.columns(3)
c1.metric("results cached", f"{done} of {len(rows)}")
c2.metric("missing", sum(r["status"] == "missing" for r in rows))
c3.metric("corrupt", sum(r["status"] == "corrupt" for r in rows))
st.dataframe(charts.status_matrix(rows), hide_index=True)
with st.expander("Every result of the plan"):
    st.dataframe(pd.DataFrame([{"result": r["job"], "kind": r["kind"], "status": r["status"]} for r in rows]),
                 hide_index=True)
todo = [r for r in rows if r["status"] != "ok"]
if todo:
    if st.button(f"Compute the {len(todo)} missing result(s)", type="primary", key="compute_missing"):
        if cached.run_plan(study, sel.study_plan(), rows):
            st.rerun()
    st.caption("Fine-tuning me5-small takes a few minutes on a CPU; scoring and evaluation seconds per language.")
else:
    st.success("Everything for these choices is cached: every page renders without computing.")
