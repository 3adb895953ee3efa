"""Long work from a page: a job list (or a plan) run alone in the compute queue, its progress drawn as one
``st.progress`` bar (:class:`ProgressBar`, the app's adapter of :data:`headprune_core.base.progress.Progress`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import streamlit as st

from headprune_app import roles
from headprune_app.cached import Item, state, status
from headprune_app.queue_slots import queued
from headprune_core.plans.plan import plan_jobs
from headprune_core.runs.config import RunConfig
from headprune_core.runs.estimate import describe_estimate, estimate_jobs
from headprune_core.runs.jobs import Job, JobFailed
from headprune_core.runs.jobs import run_jobs as core_run_jobs
from headprune_core.runs.study import Study


class ProgressBar:
    """The dashboard's :data:`~headprune_core.base.progress.Progress`: one ``st.progress`` bar fed by a job list
    or a GradTS's cached parts (``jobs``) and by a Study's steps inside the running job (``within``)."""

    def __init__(self, title: str, total: int):
        self.title, self.total, self.done, self.what = title, max(1, total), 0, ""
        self.bar = st.progress(0.0, text=f"{title}: starting ...")
        self.start = time.perf_counter()

    def jobs(self, what: str, done: int, total: int | None) -> None:
        self.done, self.what, self.total = done, what, max(1, total or self.total)
        count = f" ({done + 1}/{self.total})" if done < self.total else ""
        self.bar.progress(min(1.0, done / self.total), text=f"{self.title}{count}: {what}")

    def within(self, what: str, done: int, total: int | None) -> None:
        frac = (self.done + (done / total if total else 0.0)) / self.total
        step = f" {done}/{total}" if total else ""
        self.bar.progress(min(1.0, frac), text=f"{self.title}: {self.what or what}{step}")

    def finish(self, n: int) -> None:
        self.bar.progress(1.0, text=f"{self.title}: done {n} job(s) in {time.perf_counter() - self.start:.1f} s")


def compute_jobs(study: Study, jobs: Sequence[Job], *, title: str = "Computing", gts=None) -> bool:
    """Run ``jobs`` (the core's :func:`~headprune_core.runs.jobs.run_jobs`) alone in the compute queue with one
    progress bar; with ``gts`` (a GradTS whose jobs run it), the bar follows its cached parts (of
    ``gts.expected``) instead of the job count. False (and a message naming the failed job) on failure; what
    finished stays cached."""
    if not jobs:
        return True
    if not roles.allowed(title):  # the server side of the absent button: a student never starts jobs
        return False
    bar = ProgressBar(title, (gts.expected if gts is not None else None) or len(jobs))
    with queued(title, exclusive=True):  # alone: the bar hooks the shared Study's progress
        old = (study.on_progress, gts.on_progress if gts is not None else None)
        study.on_progress = bar.within
        if gts is not None:
            gts.on_progress = bar.jobs
        try:
            core_run_jobs(jobs, study.store, on_progress=None if gts is not None else bar.jobs)
        except JobFailed as err:
            bar.bar.empty()
            st.error(f"{title} failed at {err}")
            return False
        finally:
            study.on_progress = old[0]
            if gts is not None:
                gts.on_progress = old[1]
    bar.finish(len(jobs))
    return True


def missing_items(study: Study, items: Sequence[Item]) -> list[tuple[str, RunConfig, str]]:
    """(what, cfg, "missing" | "corrupt") for the items that cannot be shown."""
    out = []
    for what, cfg in items:
        s = state(study, cfg)
        if s != "ok":
            out.append((what, cfg, s))
    return out


def estimate_text(study: Study, cfgs: Sequence[RunConfig]) -> str:
    """How long computing ``cfgs`` (and what they read that is missing) takes here, from the job times
    measured in this cache."""
    return describe_estimate(estimate_jobs(study.store, list(cfgs)))


def plan_status(study: Study, plan) -> list[dict]:
    """Every job of ``plan`` with its cache status (nothing is computed)."""
    return [{"job": j.what, "kind": j.cfg.kind, "lang": getattr(j.cfg, "lang", None),
             "status": status(study, j.cfg), "_job": j} for j in plan_jobs(study, plan)]


def compute_plan(study: Study, plan, rows: list[dict] | None = None) -> bool:
    """Compute every job of ``plan`` that is missing or corrupt (``rows``: its :func:`plan_status`), with a
    progress bar."""
    rows = plan_status(study, plan) if rows is None else rows
    todo = [r["_job"] for r in rows if r["status"] != "ok"]
    if not todo:
        st.success(f"Nothing to compute: all {len(rows)} results of '{plan.name}' are cached.")
        return True
    return compute_jobs(study, todo, title=f"Study {plan.name}")
