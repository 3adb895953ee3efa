"""Jobs: named cached computations, run one after another with progress.

A :class:`Job` is what a plan (or a page) asks for: a name, the configuration whose entry it produces, and the
call that computes it. :func:`run_jobs` runs the ones that are not cached, reporting each before it starts;
:func:`study_jobs` turns configurations into jobs on a :class:`~headprune_core.runs.study.Study`, each preceded
by the missing results it reads (its fine-tune, its ranking's scores: :func:`~headprune_core.runs.config.
nested_configs`), so every entry's recorded time is its own work.

>>> # run_jobs(study_jobs(study, [cfg]), study.store, on_progress=lambda what, done, n: print(done, n, what))
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from headprune_core.base.progress import Progress, cached_label, report
from headprune_core.runs.config import RunConfig, nested_configs
from headprune_core.runs.store import Store

log = logging.getLogger(__name__)



@dataclass(frozen=True)
class Job:
    """One cached computation: ``run()`` computes (or reads) the entry of ``cfg``."""

    what: str
    cfg: RunConfig
    run: Callable[[], Any]
    experiment: dict | None = None  # a re-fine-tuning job's experiment (one of its plan's ``refinetune``)


class JobFailed(RuntimeError):
    """A job raised: the message names the job, ``job`` and ``__cause__`` say which and why."""

    def __init__(self, job: Job, err: BaseException):
        super().__init__(f"{job.what}: {type(err).__name__}: {err}")
        self.job = job


def run_jobs(jobs: Sequence[Job], store: Store, *, on_progress: Progress | None = None) -> dict:
    """Run every job of ``jobs`` that is not cached, in order; ``{"jobs", "computed", "seconds"}``.

    ``on_progress(what, i, n)`` is called before job ``i`` (``what`` is ``cached: ...`` for a job read from the
    cache) and once more as ``(what, n, n)`` at the end (:mod:`headprune_core.base.progress`). A failing job
    raises :class:`JobFailed` (the entries finished before it stay valid: a rerun resumes from them); Ctrl-C
    stops between steps alike.
    """
    start = time.perf_counter()
    computed = 0
    if any(not store.has(job.cfg) for job in jobs):
        store.check_writable()  # a read-only cache fails here, before the first computation, naming the folder
    for i, job in enumerate(jobs):
        cached = store.has(job.cfg)
        report(on_progress, cached_label(job.what, cached), i, len(jobs))
        if cached:
            continue
        log.info("computing: %s", job.what)
        try:
            job.run()
        except Exception as err:  # noqa: BLE001 -- re-raised with the job's name
            raise JobFailed(job, err) from err
        computed += 1
    if jobs and on_progress is not None:
        on_progress(cached_label(jobs[-1].what, cached), len(jobs), len(jobs))
    return {"jobs": len(jobs), "computed": computed, "seconds": time.perf_counter() - start}


def describe(cfg: RunConfig) -> str:
    """A job's name from its configuration alone (for results that are not a plan's own jobs)."""
    if cfg.kind == "finetune":
        pruned = f", {len(cfg.pruned)} heads pruned" if cfg.pruned else ""
        return f"fine-tune {'+'.join(cfg.tasks)} ({cfg.setting}, {'+'.join(cfg.train_langs)}{pruned})"
    where = f"{cfg.task}/{cfg.lang}" if hasattr(cfg, "task") else ""
    pruned = getattr(cfg, "finetune", None)
    extra = f", re-fine-tuned with {len(pruned.pruned)} heads pruned" if pruned is not None and pruned.pruned else ""
    if cfg.kind == "eval":
        return f"evaluate {where} ({cfg.split}{extra})"
    if cfg.kind == "score":
        return f"score heads {where}{extra}"
    if cfg.kind == "curve":
        return f"curve {cfg.strategy} {where}"
    return f"{cfg.kind} {where}".strip()


def study_jobs(study, cfgs: Sequence[RunConfig], *, names: Sequence[str] | None = None) -> list[Job]:
    """Jobs computing ``cfgs`` on ``study`` (a :class:`~headprune_core.runs.study.Study`), each preceded by
    what it reads that is not cached yet; every configuration once."""
    names = list(names) if names is not None else [describe(c) for c in cfgs]
    jobs: list[Job] = []
    seen: set[str] = set()
    for what, cfg in zip(names, cfgs):
        for inner, label in [*((c, describe(c)) for c in nested_configs(cfg)), (cfg, what)]:
            key = f"{inner.kind}/{inner.key()}"
            if key in seen or (inner is not cfg and study.store.has(inner)):
                continue
            seen.add(key)
            jobs.append(Job(label, inner, lambda c=inner: study.compute(c)))
    return jobs
