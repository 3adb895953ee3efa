"""Findings: one card per claim of the papers behind headprune, checked on this model and data."""

import streamlit as st

from headprune_app import cached, captions, figures, findings_view, panels, papers_view
from headprune_app.page_end import end_page
from headprune_core.plans import selection as S

sel: S.Selection = cached.selection()
about = figures.heading("Findings")
with about:
    st.markdown(captions.FINDINGS)
if not cached.model_info(sel.model)["ready"] or not sel.langs:
    st.warning(captions.findings_unprepared(sel.model, sel.task))
    panels.offer_prepare()
    end_page()
f = panels.guarded(findings_view.findings, sel, what="Cannot set up the findings")
with about:
    st.markdown(f"{panels.model_caption(f.plan.model)}  \n**Plan:** {f.plan.name}: {f.plan.description}")
    if f.plan.model != sel.model:
        st.caption(f"The findings run on {f.plan.model}, the plan's model.")
cards = panels.guarded(findings_view.cards, f, what="Cannot read the findings")
missing, picture = figures.figure_first()
with missing:
    findings_view.offer(f)
with picture:
    findings_view.overview(cards)
    findings_view.summary(cards)
findings_view.staged_caption()
findings_view.report_buttons(f, cards)
for card in cards:
    findings_view.render_card(card)
table = findings_view.calibration_frame(cards)
if not table.empty:
    st.markdown(captions.CALIBRATION)
    st.dataframe(table, hide_index=True)
papers_view.section(f.study.store)
