"""What a sweep costs before it runs: jobs per kind, compute and wall time from measured job times, and the disk
its models, data and results take (``headprune sweep SPEC --dry-run``).

>>> # print(format_dry_run(dry_run(build_graph(SweepSpec.from_file("sweeps/demo.json")))))
"""

from __future__ import annotations

import torch

from headprune_core.data.hub_sizes import download_total
from headprune_core.data.refs import hub_spec_of, ref_for
from headprune_core.encoders.device import pick_device
from headprune_core.encoders.known import config_params, frozen_params
from headprune_core.encoders.known import download_bytes as known_download
from headprune_core.encoders.models import resolve
from headprune_core.plans.sweep import (
    WORKER_GB,
    ClusterShape,
    JobNode,
    SweepGraph,
    job_resources,
    local_shape,
    model_config,
)
from headprune_core.runs.config import FinetuneConfig, split_unit
from headprune_core.runs.estimate import estimate, gradts_runs, later_jobs, later_seconds, measured_rates, minutes
from headprune_core.runs.gpu_estimate import assumptions, gpu_estimate, later_gpu_seconds


def dry_run(graph: SweepGraph, *, cpus: int | None = None, cluster: ClusterShape | None = None,
            gpu: str = "A100") -> dict:
    """What a run would do, computing nothing: jobs per kind (total, cached, to compute), estimated compute
    time from measured job times at the CPU threads each job gets, and a wall-time estimate on ``cluster`` (default:
    this machine, with ``cpus`` CPUs): each job shares the time with as many of its kind as the nodes hold at once
    (their CPUs, GPUs and memory), never below the longest chain of jobs that wait for each other. Beside it, the
    time on GPUs of type ``gpu`` (:func:`gpu_time`)."""
    rates = measured_rates(graph.store)
    cluster = cluster or local_shape(cpus)
    gpus = cluster.total("gpus")
    kinds: dict[str, dict] = {}
    finish: dict[str, float] = {}
    unknown, notes, scaled, slots = set(), set(), set(), {}
    total = parallel = 0.0
    for n in graph.jobs.values():
        kind = n.cfg.kind
        row = kinds.setdefault(kind, {"jobs": 0, "cached": 0, "todo": 0, "seconds": 0.0, "memory": 0.0,
                                      "at_once": None})
        row["jobs"] += 1
        request, at_once = _placed(graph, n, cluster, gpus, notes)
        row["memory"] = max(row["memory"], request["memory"])
        row["at_once"] = at_once if row["at_once"] is None else min(row["at_once"], at_once)
        slots[n.id] = at_once
        secs = 0.0
        if n.state == "cached":
            row["cached"] += 1
        else:
            row["todo"] += 1
            est, how = estimate(n.cfg, rates, cpus=max(request["num_cpus"], 1e-3))
            if est is None:
                unknown.add(kind)
            else:
                secs = est
                if how != "measured" and how != "assembles cached parts":
                    scaled.add((how.removeprefix("measured, "), kind))
            row["seconds"] += secs
            total += secs
            parallel += secs / at_once
        finish[n.id] = secs  # its own time, for now; the chain through what it reads below
    per_job = {kind: max(res["num_cpus"], 1e-3) for kind, res in job_resources(graph.spec, gpus).items()}
    pending = [n for n in graph.jobs.values() if not n.expanded and n.state == "todo"]
    later = sum(sum(later_jobs(n.cfg)) for n in pending)
    later_each = [later_seconds(n.cfg, rates, per_job) for n in pending]
    later_total = None if None in later_each else sum(later_each)
    if later_total:
        total += later_total
        for n, secs in zip(pending, later_each):
            # its parts (fine-tunes, each with its evaluations) wait for its ranking, not for each other
            finish[n.id] += secs / max(1, later_jobs(n.cfg)[0])
            parallel += secs / slots[n.id]  # fine-tunes and evaluations of the same model
    critical = _longest_chain(graph, finish)
    return {"name": graph.spec.name, "plans": len(graph.plans), "jobs": len(graph.jobs),
            "cached": sum(r["cached"] for r in kinds.values()), "todo": sum(r["todo"] for r in kinds.values()),
            "kinds": kinds, "seconds": total, "cpus": cluster.total("cpus"), "cluster": cluster.describe(),
            "wall_seconds": max(parallel, critical), "critical_seconds": critical, "unknown_kinds": sorted(unknown),
            "notes": [f"{', '.join(sorted(k for h, k in scaled if h == how))}: {how}"
                      for how in sorted({h for h, _ in scaled})] + sorted(notes),
            "measured_entries": sum(n for r in rates.values() for _, n in r.values()),
            "later_jobs": later, "later_seconds": later_total, "disk": disk_estimate(graph),
            "planned": planned_from_tables(graph), "gpu": gpu_time(graph, gpu=gpu, gpus=int(gpus) or 1)}


def gpu_time(graph: SweepGraph, *, gpu: str = "A100", gpus: int = 1) -> dict:
    """The jobs to do on ``gpus`` GPUs of type ``gpu``: each job's time measured on a GPU in this cache, else from
    FLOPs (runs/gpu_estimate.py); compute is their sum (re-fine-tunings' parts included), wall time that sum over
    the GPUs, never below the longest chain of jobs that wait for each other."""
    rates = measured_rates(graph.store, gpu=True)
    finish, hows, unknown, total = {}, set(), set(), 0.0
    for n in graph.jobs.values():
        finish[n.id] = 0.0
        if n.state != "todo":
            continue
        config = graph.config_of(graph.plans[n.plan].model)
        est, how = gpu_estimate(n.cfg, config, rates, gpu=gpu)
        if est is None:
            unknown.add(n.cfg.kind)
        else:
            total += est
            finish[n.id] = est
            hows.add(how)
        if n.cfg.kind == "refinetune" and not n.expanded:
            later = later_gpu_seconds(n.cfg, config, rates, gpu=gpu)
            if later is None:
                unknown.add("refinetune")
            else:
                total += later
                finish[n.id] += later / max(1, later_jobs(n.cfg)[0])  # its parts run side by side
    critical = _longest_chain(graph, finish)
    return {"gpu": gpu, "gpus": gpus, "seconds": total, "wall_seconds": max(total / gpus, critical),
            "critical_seconds": critical, "measured": "measured on a GPU" in hows, "flops": "FLOPs" in hows,
            "unknown_kinds": sorted(unknown)}


def _placed(graph: SweepGraph, job: JobNode, cluster: ClusterShape, gpus: float, notes: set) -> tuple[dict, int]:
    """``job``'s request as ``cluster`` can meet it, and how many such jobs run at once there (at least 1: what
    fits no node is noted, and counted as one at a time)."""
    request = graph.request(job, gpus)
    if not request["memory"]:
        notes.add(f"{graph.plans[job.plan].model}: its size is unknown, so its jobs ask for no memory")
    try:
        request, note = cluster.fit(request, job.cfg.kind)
    except ValueError as err:
        notes.add(str(err))
        return request, 1
    if note:
        notes.add(note)
    return request, max(1, cluster.at_once(request))


def _longest_chain(graph: SweepGraph, finish: dict[str, float]) -> float:
    """The latest finishing time if each job starts once what it reads is done (``finish``: each job's time)."""
    ends: dict[str, float] = {}

    def end(nid: str) -> float:
        if nid not in ends:
            ends[nid] = finish[nid] + max((end(d) for d in graph.jobs[nid].deps), default=0.0)
        return ends[nid]

    return max((end(nid) for nid in graph.jobs), default=0.0)


def format_dry_run(report: dict) -> str:
    lines = [f"sweep {report['name']}: {report['plans']} grid point(s), {report['jobs']} jobs, "
             f"{report['cached']} cached, {report['todo']} to compute",
             f"  on {report['cluster']}"]
    lines.append(f"  {'kind':<11}{'jobs':>6}{'cached':>8}{'to do':>7}  {'est. compute':<14}{'memory':>8}{'at once':>9}")
    for kind, row in report["kinds"].items():
        est = "unknown" if kind in report["unknown_kinds"] and row["todo"] else minutes(row["seconds"])
        memory = f"{row['memory'] / 2**30:.1f} GB" if row["memory"] else "-"
        lines.append(f"  {kind:<11}{row['jobs']:>6}{row['cached']:>8}{row['todo']:>7}  {est:<14}{memory:>8}"
                     f"{row['at_once']:>9}")
    if report["later_jobs"]:
        est = "not estimated" if report["later_seconds"] is None else \
            f"about {minutes(report['later_seconds'])}, included below"
        lines.append(f"  + {report['later_jobs']} re-fine-tuning jobs, known once their rankings are scored ({est})")
    notes = [f"from {report['measured_entries']} measured entries in this cache"] + report["notes"]
    if report["unknown_kinds"]:
        notes.append(f"{', '.join(report['unknown_kinds'])}: no measured time yet, counted as 0")
    lines.append(format_disk(report["disk"]))
    lines.append(format_gpu(report["gpu"]))
    if report["planned"]:
        lines.append(f"  planned without the Hub: {report['planned']}; whether a job is cached cannot be known "
                     "offline, so every job counts as to do")
    lines.append(f"estimated compute {minutes(report['seconds'])} ({'; '.join(notes)}); on {report['cpus']:g} "
                 f"CPUs about {minutes(report['wall_seconds'])} wall (longest chain "
                 f"{minutes(report['critical_seconds'])}), plus starting Ray (a local cluster: 4.7-5.4 s "
                 "measured on 2 cores)")
    return "\n".join(lines)


def planned_from_tables(graph: SweepGraph) -> str:
    """What a planning graph took from the recorded tables, in words ("" when nothing)."""
    by_what: dict[tuple[str, str], list[str]] = {}
    for how, what, config in sorted(set().union(*(getattr(s, "planned", set()) for s in graph.studies))):
        by_what.setdefault((how, what), []).extend([config] if config else [])
    return "; ".join(f"{how} of {what}" + (f" ({', '.join(configs)})" if configs else "")
                     for (how, what), configs in by_what.items())


def disk_estimate(graph: SweepGraph) -> dict:
    """The disk a sweep needs, in bytes: its Hub models' weights (recorded file sizes, else 4 bytes a parameter),
    its Hub data sets' downloads (recorded; None where no source gave one) and the fine-tuned weights its jobs to do
    store (fp32; without the word embeddings when they stay frozen). Local and embedded models and data are
    already here and count 0."""
    models: dict[str, tuple[int | None, str]] = {}
    specs = []
    for plan, study in zip(graph.plans, graph.studies):
        if resolve(plan.model)[0] == "hub":
            models[plan.model] = known_download(plan.model)
        specs += [spec for task in plan.tasks for lang in plan.task_langs(task)
                  if (spec := hub_spec_of(study.source_for(task, lang), task, lang)) is not None]
        for gplan in plan.gradts_plans() + plan.gradts_plans(field_name="affinity"):  # GradTS's own units
            for task, lang in (split_unit(u) for u in gplan.units):
                ref = ref_for(gplan.sources, task, lang) or study.source_for(task, lang)
                if (spec := hub_spec_of(ref, task, lang)) is not None:
                    specs.append(spec)
    data_bytes, unknown = download_total(specs)
    stored, fine_tunes = 0, 0
    for n in graph.jobs.values():
        if n.state != "todo":
            continue
        if n.cfg.kind == "finetune" and not n.cfg.from_checkpoint:
            freeze, count = n.cfg.freeze_embeddings, 1
        elif n.cfg.kind == "refinetune" and not n.expanded:  # its pruned fine-tunes (pruned: a bit less)
            freeze, count = n.cfg.finetune.freeze_embeddings, later_jobs(n.cfg)[0]
        elif n.cfg.kind == "gradts":  # its single- and multi-task fine-tunes
            freeze = dict(n.cfg.train).get("freeze_embeddings", FinetuneConfig.freeze_embeddings)
            count = gradts_runs(n.cfg)
        else:
            continue
        config = graph.config_of(graph.plans[n.plan].model)
        params = config_params(config) if config else None
        if params:
            stored += 4 * (params - frozen_params(config, freeze_embeddings=freeze)) * count
            fine_tunes += count
    return {"models": models, "data": data_bytes, "data_configs": len(set(specs)), "data_unknown": unknown,
            "results": stored, "fine_tunes": fine_tunes}


def format_disk(disk: dict) -> str:
    """:func:`disk_estimate` in one line."""
    gb = 2**30
    model_bytes = sum(b for b, _ in disk["models"].values() if b)
    models = ", ".join(f"{m} {b / gb:.1f} GB {how}" if b else f"{m} unknown" for m, (b, how) in disk["models"].items())
    unknown = len(disk["data_unknown"])
    data = (f"data {disk['data'] / gb:.1f} GB to download ({disk['data_configs']} Hub configs"
            + (f"; {unknown} of unknown size" if unknown else "") + ")") if disk["data_configs"] else \
        "data: none from the Hub"
    return (f"  disk: models {model_bytes / gb:.1f} GB" + (f" ({models})" if models else " (none from the Hub)")
            + f", {data}, results {disk['results'] / gb:.1f} GB ({disk['fine_tunes']} fine-tunes to store)")


def format_gpu(g: dict) -> str:
    """:func:`gpu_time` in one line, with what it rests on."""
    how = [h for h, on in (("measured on a GPU in this cache", g["measured"]), (assumptions(g["gpu"]), g["flops"]))
           if on]
    unknown = f"; {', '.join(g['unknown_kinds'])}: unknown, counted as 0" if g["unknown_kinds"] else ""
    return (f"  on {g['gpus']} {g['gpu']} GPU{'s' if g['gpus'] > 1 else ''}: compute {hours(g['seconds'])}, about "
            f"{hours(g['wall_seconds'])} wall (longest chain {hours(g['critical_seconds'])}) ({'; '.join(how)}"
            f"{unknown})")


def hours(seconds: float) -> str:
    """``"3.2 h"`` from an hour on, else :func:`minutes`."""
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else minutes(seconds)


class NotEnoughMemory(ValueError):
    """A plan's model cannot be fine-tuned in the memory where it would run (said before any work)."""


def fine_tune_floor(config: dict, *, freeze_embeddings: bool) -> float:
    """Bytes a fine-tune of a model of ``config`` needs at the least: fp32 weights, and for each weight it trains a
    gradient and Adam's two moments (frozen word embeddings: their weights only), plus a worker's own memory
    (:data:`~headprune_core.plans.sweep.WORKER_GB`). Activations come on top."""
    params = config_params(config) or 0
    frozen = frozen_params(config, freeze_embeddings=freeze_embeddings)
    return WORKER_GB * 2**30 + 4 * frozen + 16 * (params - frozen)


def check_memory(graph: SweepGraph, cluster: ClusterShape) -> None:
    """Raise :class:`NotEnoughMemory`, naming the model, what it needs and what there is, when a fine-tune of the
    sweep cannot fit on any node of ``cluster`` (its memory for jobs), before any job starts."""
    largest = max((n.memory for n in cluster.nodes), default=0.0)
    for n in graph.jobs.values():
        if n.cfg.kind != "finetune" or n.state != "todo" or n.cfg.from_checkpoint:
            continue
        model = graph.plans[n.plan].model
        config = graph.config_of(model)
        if config is None:
            continue
        need = fine_tune_floor(config, freeze_embeddings=n.cfg.freeze_embeddings)
        if need > largest:
            trained = "its word embeddings frozen" if n.cfg.freeze_embeddings else "every weight trained"
            raise NotEnoughMemory(
                f"fine-tuning {model} ({trained}) needs at least {need / 2**30:.1f} GB (fp32 weights, gradients and "
                f"Adam's two moments, before activations), and no node of {cluster.where} has that much for jobs "
                f"({largest / 2**30:.1f} GB at most): run it on a machine with more memory, or on a cluster "
                "(--address); 'headprune sweep SPEC --dry-run' says what each job asks for")


def check_study_memory(model: str, train: dict, device: str = "auto") -> None:
    """:func:`check_memory` for one study on this machine: its fine-tunes of ``model`` (``train``: the plan's
    options) against the GPU's memory when it runs on one, else the memory available."""
    config = model_config(model)
    if config is None:
        return
    need = fine_tune_floor(config, freeze_embeddings=train.get("freeze_embeddings", True))
    where = pick_device(device)
    if where.type == "cuda":
        have, what = float(torch.cuda.get_device_properties(where).total_memory), f"the GPU ({where})"
        need -= WORKER_GB * 2**30  # the worker's own memory is on the host
    else:
        have, what = local_shape().total("memory"), "this machine (available memory)"
    if need > have:
        raise NotEnoughMemory(f"fine-tuning {model} needs at least {need / 2**30:.1f} GB (fp32 weights, gradients and "
                              f"Adam's two moments, before activations), and {what} has {have / 2**30:.1f} GB: run "
                              "it where there is more, or as a sweep on a cluster (headprune sweep --address)")
