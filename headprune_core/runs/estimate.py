"""How long jobs take, estimated from the times measured in the cache.

Every entry records how long it took (a fine-tune's training log too); :func:`measured_rates` turns them into
seconds per unit of work per kind and model (sentence-epochs for a fine-tune, sentences for a score or an
evaluation, sentences x points x seeds for a curve), and :func:`estimate_jobs` adds up what a list of jobs
still needs. The CLI's ``study`` / ``refinetune``, a sweep's ``--dry-run`` and the app's "compute" buttons all
say their estimate from here.

>>> # est = estimate_jobs(Store(), [cfg]); print(describe_estimate(est))
"""

from __future__ import annotations

import json
import os

from headprune_core.runs.config import RunConfig, config_from_dict, nested_configs, split_unit, train_units
from headprune_core.runs.store import Store

JOB_KINDS = ("finetune", "score", "eval", "curve", "refinetune", "gradts")
"""Kinds of run a plan's jobs are (what sweeps schedule and estimates measure)."""

def job_work(cfg: RunConfig) -> float:
    """How much work a job is, in the unit its time grows with: sentence-epochs of training for a fine-tune,
    sentences scored or evaluated, sentences x curve points (x seeds) for a curve, 0 for what only assembles
    cached parts (a re-fine-tuning whose parts are jobs of their own)."""
    if cfg.kind == "finetune":
        if cfg.from_checkpoint:
            return 0.0
        return float(cfg.max_train_sentences or 0) * cfg.epochs * len(train_units(cfg))
    if cfg.kind in ("score", "eval"):
        return float(cfg.max_sentences or 0)
    if cfg.kind == "curve":
        points = 4 if cfg.strategy == "layers" else max(1, len(cfg.steps) or 13)
        return float(cfg.max_sentences or 0) * points * len(cfg.seeds)
    if cfg.kind == "gradts":  # the sentence-epochs of its fine-tunes (see _gradts_work)
        return _gradts_work(cfg)
    return 0.0


def _gradts_work(cfg) -> float:
    """A GradTS validation's training, in sentence-epochs, a rough upper count: one single-task run per unit,
    and per primary its trials (1, 2, ... auxiliary units), and per training seed the final models (alone,
    thres, trial, fg and the bandit's choice as large as the largest trial, all units), the bandit's search
    (counted as an all-units run) and each random set; each unit trains on ``max_train_sentences`` x ``epochs``
    (every sentence: the recorded train size of a Hub-only task, e.g. GLUE's, else taken as 2,000); a multi-task
    run's unit counts as the units' mean; scoring, per-example maps and evaluation are small beside."""
    train = dict(cfg.train)
    epochs = float(train.get("epochs", 2.0))
    sizes = [float(train.get("max_train_sentences") or _train_size(u)) * epochs for u in cfg.units]
    n, trial = len(cfg.units), _trials(cfg)
    seeds = len(cfg.train_seeds)
    multi_units = (sum(range(2, trial + 2)) + seeds * (1 + 4 * (trial + 1) + 2 * n)
                   + len(cfg.random_seeds) * (trial + 1))
    return sum(sizes) + len(cfg.primaries) * multi_units * sum(sizes) / n


def gradts_runs(cfg) -> int:
    """How many fine-tunes a GradTS validation stores (each its whole model): one single-task run per unit, and
    per primary its trial runs and, per training seed, the final models (alone, thres, trial, fg, the bandit's
    choice, all) and one per random set."""
    return len(cfg.units) + len(cfg.primaries) * (_trials(cfg) + 6 * len(cfg.train_seeds) + len(cfg.random_seeds))


def _trials(cfg) -> int:
    """GradTS-trial's runs per primary: one per auxiliary set tried, at most ``max_trial`` (None: every other
    unit)."""
    n = len(cfg.units)
    return min(cfg.max_trial or n - 1, n - 1)


UNKNOWN_TRAIN = 2000
"""Training sentences counted for a unit that reads every one and whose size no recorded table gives."""


def _train_size(unit: str) -> int:
    """A unit's training sentences when a plan reads every one: a Hub-only task's recorded train size, else
    :data:`UNKNOWN_TRAIN`."""
    from headprune_core.data.hub import hub_spec
    from headprune_core.data.hub_sizes import NotRecorded, planned_splits
    from headprune_core.data.registry import TASKS
    task, lang = split_unit(unit, "en")
    if TASKS.get(task) is None or TASKS[task].sources != ("hub",):
        return UNKNOWN_TRAIN
    try:
        return planned_splits(hub_spec(task, lang), task)["train"]
    except (NotRecorded, KeyError, ValueError):
        return UNKNOWN_TRAIN


def model_of(cfg: RunConfig) -> str:
    ft = cfg if cfg.kind == "finetune" else getattr(cfg, "finetune", None)
    return ft.model if ft is not None else getattr(cfg, "model", "?")


THREAD_SCALING = 0.72
"""Speed-up of a job from t1 to t2 CPU threads is taken as (t2 / t1) ** THREAD_SCALING when a job kind was only
measured at another thread count: measured on 2 CPU cores, the demo's jobs ran 1.58-1.73x faster with 2 threads
than with 1 (2 ** 0.72 = 1.65)."""

Rates = dict[tuple[str, str], dict[int, tuple[float, int]]]


def measured_rates(store: Store, *, gpu: bool = False) -> Rates:
    """Seconds per unit of :func:`job_work` from every entry that recorded its time (a fine-tune's training log
    too): ``{(kind, model): {threads: (seconds per unit, entries measured)}}`` (threads 0: not recorded). Entries
    computed on a GPU count only with ``gpu`` (and then only they do, under threads 0)."""
    sums: dict[tuple[str, str, int], list[float]] = {}
    for e in store.entries():
        if e.kind not in JOB_KINDS or e.stale or (e.device or "cpu").startswith("cuda") != gpu:
            continue
        seconds = e.seconds
        if seconds is None and e.kind == "finetune":
            try:
                seconds = json.loads((e.path / "log.json").read_text(encoding="utf-8")).get("seconds")
            except (OSError, ValueError, AttributeError):
                seconds = None
        if not isinstance(seconds, (int, float)):
            continue
        try:
            cfg = config_from_dict(e.kind, e.config)
        except (ValueError, TypeError):
            continue
        work = job_work(cfg)
        if work > 0:
            acc = sums.setdefault((e.kind, model_of(cfg), 0 if gpu else e.threads or 0), [0.0, 0.0, 0])
            acc[0] += float(seconds)
            acc[1] += work
            acc[2] += 1
    out: Rates = {}
    for (kind, model, threads), (s, w, n) in sums.items():
        out.setdefault((kind, model), {})[threads] = (s / w, int(n))
    return out


def estimate(cfg: RunConfig, rates: Rates, *, cpus: float = 1) -> tuple[float | None, str]:
    """(seconds, how it was estimated) for one job run with ``cpus`` CPU threads: its model's measured rate for
    its kind (at the nearest thread count, scaled by :data:`THREAD_SCALING`), else another model's (said so),
    else unknown. A GradTS validation never measured is estimated from fine-tuning rates (see
    :func:`_gradts_seconds`)."""
    if cfg.kind == "gradts" and (cfg.kind, model_of(cfg)) not in rates:
        return _gradts_seconds(cfg, rates, cpus)
    return rate_seconds(cfg.kind, model_of(cfg), job_work(cfg), rates, cpus)


def _gradts_seconds(cfg, rates: Rates, cpus: float) -> tuple[float | None, str]:
    """A GradTS validation never measured, from the fine-tuning rate and its training (:func:`_gradts_work`)."""
    secs, how = rate_seconds("finetune", cfg.model, _gradts_work(cfg), rates, cpus)
    return secs, (how if secs is None else f"{how} fine-tuning rate, rough")


def rate_seconds(kind: str, model: str, work: float, rates: Rates, cpus: float) -> tuple[float | None, str]:
    """(seconds, how) of ``work`` units of ``kind`` for ``model`` from ``rates`` with ``cpus`` threads: its own
    rate (at the nearest thread count, scaled), else another model's (said so), else (None, "no measured time")."""
    if work == 0:
        return 0.0, "assembles cached parts"
    how = "measured"
    by_threads = rates.get((kind, model))
    if by_threads is None:
        others = [r for (k, _), r in rates.items() if k == kind]
        if not others:
            return None, "no measured time"
        by_threads, how = others[len(others) // 2], "another model's rate"
    want = max(1, int(cpus))
    threads = min(by_threads, key=lambda t: (t == 0, abs(t - want)))  # 0: an entry that did not record it
    rate = by_threads[threads][0]
    if threads and threads != want:
        rate *= (threads / want) ** THREAD_SCALING
        how += f", scaled from {threads} threads"
    return work * rate, how


def later_seconds(rc, rates: Rates, cpus: dict[str, float]) -> float | None:
    """A re-fine-tuning's parts before its ranking says which heads go: a fine-tune like its own per level and
    seed (pruned ones are faster: an upper estimate), a dev and a test evaluation per language for each."""
    ft, _ = estimate(rc.finetune, rates, cpus=cpus["finetune"])
    ev, _ = rate_seconds("eval", rc.finetune.model, float(rc.max_sentences or 0), rates, cpus["eval"])
    if ft is None or ev is None:
        return None
    fts, evals = later_jobs(rc)
    return fts * ft + evals * ev


def later_jobs(rc) -> tuple[int, int]:
    """(fine-tunes, evaluations) a re-fine-tuning expands into, besides its own unpruned fine-tune."""
    parts = len(rc.points()) * len(rc.train_seeds())
    return parts - 1, parts * (1 + len(rc.eval_langs or (0,)))


def estimate_jobs(store: Store, cfgs: list[RunConfig], *, cpus: int | None = None) -> dict:
    """Estimated seconds to compute ``cfgs`` and what they read that is not cached, one job after another with
    ``cpus`` threads each (this machine's by default), from the job times measured in ``store``; a
    re-fine-tuning counts every run at its unpruned fine-tune's time (an upper estimate). Returns
    ``{"seconds", "jobs", "unknown": kinds never measured}``."""
    rates = measured_rates(store)
    cpus = cpus or max(1, os.cpu_count() or 1)
    seen, total, unknown, count = set(), 0.0, set(), 0
    for job_cfg in cfgs:
        for cfg in [*nested_configs(job_cfg), job_cfg]:
            if cfg.key() in seen or store.has(cfg):
                continue
            seen.add(cfg.key())
            count += 1
            secs = later_seconds(cfg, rates, {"finetune": cpus, "eval": cpus}) if cfg.kind == "refinetune" \
                else estimate(cfg, rates, cpus=cpus)[0]
            if secs is None:
                unknown.add(cfg.kind)
            else:
                total += secs
    return {"seconds": total, "jobs": count, "unknown": sorted(unknown)}


def minutes(seconds: float) -> str:
    """``"12.5 min"``, or ``"40 s"`` under a minute."""
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def describe_estimate(est: dict) -> str:
    """An :func:`estimate_jobs` result in words: "about 12 min from the job times measured in this cache" (and
    the kinds never measured, counted as 0)."""
    unknown = f"; never measured in this cache: {', '.join(est['unknown'])} jobs" if est["unknown"] else ""
    return f"about {minutes(est['seconds'])} from the job times measured in this cache{unknown}"
