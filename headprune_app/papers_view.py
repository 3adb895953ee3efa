"""The Findings page's section on the papers' own experiments (findings/paper_plans.py): which sweep answers each
card at the paper's size and, per paper plan, the numbers the paper reports beside ours with the cards' verdicts
on that plan, or the command that computes it. Read only when the reader opens it: a class's page does no more
work than before."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from headprune_app.resident import resident
from headprune_core.findings.beside import beside_summary
from headprune_core.findings.paper_plans import (
    PAPERS_INTRO,
    PaperResults,
    answered_by,
    not_started_text,
    paper_results,
    started,
    verdicts_summary,
)
from headprune_core.plans.papers import PAPER_PLANS
from headprune_core.runs.store import Store


def card_caption(card_id: str) -> str:
    """A card's line on the sweeps that answer it at the paper's size ("" when none does)."""
    sweeps = answered_by().get(card_id)
    return (f"At the papers' own size: {', '.join(f'`{s}`' for s in sweeps)} (see *The papers' own experiments* "
            "below).") if sweeps else ""


def results_signature(store: Store) -> tuple:
    """What changes when a paper plan's results change: the count and newest of the fine-tunes and
    re-fine-tunings."""
    entries = store.entries("finetune") + store.entries("refinetune")
    return len(entries), max((e.created for e in entries), default=0.0)


@resident(max_entries=4)
def _results(name: str, root: str, signature: tuple) -> PaperResults:
    return paper_results(name, Store(root))


def section(store: Store) -> None:
    """The section, at the page's end: closed until the reader turns it on."""
    st.subheader("The papers' own experiments", anchor="papers")
    st.caption(PAPERS_INTRO)
    if not st.toggle("Show the papers' experiments beside ours", key="papers_on"):
        return
    name = st.selectbox("Paper experiment", list(PAPER_PLANS), key="paper_plan",
                        format_func=lambda n: f"{n}: {PAPER_PLANS[n].title}")
    paper = PAPER_PLANS[name]
    st.markdown(f"**{paper.title}.**  \nSweep `sweeps/{name}.json`; cards it answers: "
                f"{', '.join(paper.cards) or 'none'}.")
    for note in paper.notes:
        st.caption(note)
    if not started(name, store):
        st.info(not_started_text(name))
        return
    with st.spinner(f"Reading {name} from the cache"):
        res = _results(name, str(store.root), results_signature(store))
    if res.unread:
        st.warning(res.unread)
    st.dataframe(pd.DataFrame([r.cells() for r in res.rows]), hide_index=True)
    st.caption(beside_summary(res.rows))
    if res.verdicts:
        st.dataframe(pd.DataFrame([v.cells() for v in res.verdicts]), hide_index=True)
        st.caption(verdicts_summary(res.verdicts))
