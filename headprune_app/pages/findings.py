"""Findings: one card per claim of the papers behind headprune, checked on this model and data."""

import streamlit as st

from headprune_app import cached, findings_view
from headprune_app import selection as S
from headprune_core.findings.cards import VERDICTS

sel: S.Selection = cached.selection()
st.title("Findings")
st.markdown(
    "What the papers behind headprune found, checked on the model you run here. Each card gives the paper's "
    "claim and number, what this model and data give (every metric with its 95% bootstrap interval over test "
    "sentences, every difference with a paired bootstrap), a **verdict**, the rule it follows, and how this "
    "check differs from the paper's protocol. A verdict is about this model, these languages and this much data: "
    "*inconclusive at this data size* means the intervals cannot tell.")
if not cached.model_info(sel.model)["ready"] or not sel.langs:
    st.warning(f"The model {sel.model} or the corpora of task '{sel.task}' are not prepared in this cache: the "
               "findings need both.")
    cached.offer_prepare()
    st.stop()
f = cached.guarded(findings_view.findings, sel, what="Cannot set up the findings")
st.markdown(f"{cached.model_caption(f.plan.model)}  \n**Plan:** {f.plan.name}: {f.plan.description}")
if f.plan.model != sel.model:
    st.caption(f"The findings run on {f.plan.model}, the plan's model.")
findings_view.offer(f)
cards = cached.guarded(findings_view.cards, f, what="Cannot read the findings")
counts = {v: sum(c.verdict == v for c in cards) for v in VERDICTS}
cols = st.columns(len(VERDICTS))
for col, (verdict, n) in zip(cols, counts.items()):
    col.metric(verdict, n)
for card in cards:
    findings_view.render_card(card)
