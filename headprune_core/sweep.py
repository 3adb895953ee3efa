"""Sweeps: grids of studies (models x data x tasks x languages x settings x seeds x strategies x pruning levels x
re-fine-tuning) run on Ray, one Ray task per cached job, into one shared cache.

A :class:`SweepSpec` expands into study plans, one per (model, data, seed), and each plan into exactly the jobs
``python -m headprune_core study`` runs (:func:`headprune_core.study.plan_jobs`). :func:`build_graph`
de-duplicates them by cache key and links each job to the results it reads (a score reads its fine-tune, a
curve its fine-tune and its ranking: :func:`~headprune_core.config.nested_configs`). :func:`run_sweep` submits a
job when everything it reads is in the cache; the worker computes through the :class:`Store`, so a job another
sweep is computing waits on its per-key lock and then reads the entry. Cached jobs are never submitted; a failed
job is retried once by Ray (a killed worker included) and then reported with the jobs that needed it, and the
others go on. Progress goes to ``<cache>/sweeps/<name>/progress.json`` (the Runs page shows it).

>>> # spec = SweepSpec.from_file("sweeps/demo.json"); graph = build_graph(spec)
>>> # print(format_dry_run(dry_run(graph))); run_sweep(graph)
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from headprune_core.config import RunConfig, config_from_dict, nested_configs
from headprune_core.files import check_name, read_json, write_file_atomic
from headprune_core.store import REPO_ROOT, Store, cache_root
from headprune_core.study import Study, StudyPlan, get_preset, plan_jobs

log = logging.getLogger(__name__)

JOB_KINDS = ("finetune", "score", "eval", "curve", "refinetune", "gradts")
RESOURCE_NAMES = ("num_cpus", "num_gpus")
SPEC_FIELDS = ("name", "description", "preset", "models", "data", "seeds", "resources", "kinds")
"""A spec's own fields; every other field is a study-plan field (see StudyPlan) shared by every grid point."""


def default_resources(gpus: float) -> dict[str, dict[str, float]]:
    """Ray resources per job kind: one CPU each (torch uses as many threads as the task has CPUs); on a cluster
    with GPUs a whole GPU for each fine-tune, half of one for a scoring or evaluation job."""
    out = {}
    for kind in JOB_KINDS:
        gpu = (1.0 if kind in ("finetune", "refinetune", "gradts") else 0.5) if gpus else 0.0
        out[kind] = {"num_cpus": 1.0, "num_gpus": gpu}
    return out


# --- the spec ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SweepSpec:
    """A grid of studies. ``plan`` holds the study-plan fields every point shares; the grid is ``models`` x
    ``data`` (source maps, ``{}`` = embedded corpora) x ``seeds`` (fine-tuning seeds; empty: the plan's)."""

    name: str
    plan: dict
    models: tuple[str, ...]
    data: tuple[dict, ...] = ({},)
    seeds: tuple[int, ...] = ()
    resources: dict = field(default_factory=dict)
    description: str = ""
    # the plans' jobs of these kinds (and what they read) form the sweep; default every kind. The demo's cold
    # start runs its fine-tunes, scores and evaluations first and its curves behind the dashboard.
    kinds: tuple[str, ...] = JOB_KINDS

    @classmethod
    def from_dict(cls, data, *, where: str = "sweep spec", base: Path | None = None) -> "SweepSpec":
        """A spec from JSON data; relative local data files are relative to ``base``. Every grid point is
        checked as a study plan here, so a bad field fails before any work, naming ``where``."""
        from headprune_core.data.refs import parse_sources
        if not isinstance(data, dict):
            raise ValueError(f"{where}: a sweep spec is a JSON object, got {type(data).__name__}")
        if "name" not in data:
            raise ValueError(f"{where}: a sweep spec needs a name")
        try:
            name = check_name(str(data["name"]), "sweep name")
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        plan: dict = {}  # defaults: the preset's fields, else StudyPlan's
        model, sources = StudyPlan.__dataclass_fields__["model"].default, {}
        if data.get("preset") is not None:
            try:
                preset = get_preset(data["preset"])
            except ValueError as err:
                raise ValueError(f"{where}: {err}") from None
            plan = {k: v for k, v in preset.to_dict().items() if k not in ("name", "description", "model", "sources")}
            model, sources = preset.model, preset.sources
        for bad, use in (("model", "models"), ("sources", "data")):
            if bad in data:
                raise ValueError(f"{where}: write {bad!r} as {use!r} (a list: the sweep's grid)")
        plan.update({k: v for k, v in data.items() if k not in SPEC_FIELDS})
        models = data.get("models", [model])
        if isinstance(models, str):
            models = [models]
        if not isinstance(models, list) or not models or not all(isinstance(m, str) and m for m in models):
            raise ValueError(f"{where}: models must be a non-empty list of model names, got {models!r}")
        sources = data.get("data", [sources])
        if isinstance(sources, dict):
            sources = [sources]
        if not isinstance(sources, list) or not sources:
            raise ValueError(f"{where}: data must be a source map or a non-empty list of them, got {sources!r}")
        parsed = []
        for i, src in enumerate(sources):
            refs = parse_sources(src, where=f"{where}: data #{i + 1}", base=base)
            parsed.append({k: v.to_json() for k, v in refs.items()})
        seeds = data.get("seeds", [])
        if not isinstance(seeds, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
            raise ValueError(f"{where}: seeds must be a list of whole numbers, got {seeds!r}")
        resources = _check_resources(data.get("resources", {}), where)
        kinds = data.get("kinds", list(JOB_KINDS))
        if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) for k in kinds):
            raise ValueError(f"{where}: kinds must be a non-empty list of job kinds, got {kinds!r}")
        for kind in kinds:
            if kind not in JOB_KINDS:
                raise ValueError(f"{where}: unknown job kind {kind!r} in kinds; known: {', '.join(JOB_KINDS)}")
        spec = cls(name=name, plan=plan, models=tuple(models), data=tuple(parsed), seeds=tuple(seeds),
                   resources=resources, description=str(data.get("description", "")),
                   kinds=tuple(k for k in JOB_KINDS if k in kinds))
        spec.plans(where=where)  # every grid point is a valid plan
        return spec

    @classmethod
    def from_file(cls, path: str | Path) -> "SweepSpec":
        return cls.from_dict(read_json(path, "sweep spec (JSON)"), where=str(path),
                             base=Path(path).resolve().parent)

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description, **self.plan, "models": list(self.models),
                "data": list(self.data), "seeds": list(self.seeds), "resources": self.resources,
                "kinds": list(self.kinds)}

    def points(self) -> list[tuple[str, dict, int | None]]:
        """The grid: (model, data sources, seed or None) in spec order."""
        return [(m, d, s) for m in self.models for d in self.data for s in (self.seeds or (None,))]

    def plans(self, *, where: str | None = None) -> list[StudyPlan]:
        """One study plan per grid point (named ``<sweep>-<n>``)."""
        out = []
        for i, (model, sources, seed) in enumerate(self.points()):
            fields = {**self.plan, "name": f"{self.name}-{i + 1}", "model": model, "sources": sources,
                      "description": self.description or f"sweep {self.name}"}
            if seed is not None:
                fields["train"] = {**fields.get("train", {}), "seed": seed}
            label = f"{where or 'sweep ' + repr(self.name)}: {self.label(i)}"
            try:
                out.append(StudyPlan.from_dict(fields, where=label))
            except ValueError as err:
                message = str(err)
                if "unknown plan fields" in message:
                    message += f"; a sweep spec also has: {', '.join(SPEC_FIELDS)}"
                raise ValueError(message) from None
        return out

    def label(self, i: int) -> str:
        """What tells grid point ``i`` apart: its model, data and seed (only the dimensions that vary)."""
        model, sources, seed = self.points()[i]
        parts = []
        if len(set(self.models)) > 1:
            parts.append(model)
        if len({json.dumps(d, sort_keys=True) for d in self.data}) > 1:
            parts.append(f"data #{self.data.index(sources) + 1}")
        if len(set(self.seeds)) > 1:
            parts.append(f"seed {seed}")
        return ", ".join(parts) or "the only grid point"


def _check_resources(resources, where: str) -> dict:
    if not isinstance(resources, dict):
        raise ValueError(f"{where}: resources must be an object {{kind: {{num_cpus, num_gpus}}}}, got {resources!r}")
    for kind, res in resources.items():
        if kind not in JOB_KINDS:
            raise ValueError(f"{where}: resources for unknown job kind {kind!r}; known: {', '.join(JOB_KINDS)}")
        if not isinstance(res, dict) or set(res) - set(RESOURCE_NAMES):
            raise ValueError(f"{where}: resources.{kind} takes {', '.join(RESOURCE_NAMES)}, got {res!r}")
        for name, value in res.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{where}: resources.{kind}.{name} must be a number of at least 0, got {value!r}")
    return resources


# --- the job graph -----------------------------------------------------------------------------------------------

@dataclass
class Node:
    """One cached job of a sweep and what it reads (``deps``, ids of other nodes)."""

    id: str  # "<kind>/<key>"
    what: str
    cfg: RunConfig
    plan: int  # index of the plan (grid point) whose Study computes it
    deps: list[str] = field(default_factory=list)
    state: str = "todo"  # cached | todo | running | done | failed | skipped
    expanded: bool = True  # a re-fine-tuning's parts are added once its ranking is scored
    seconds: float | None = None
    computed: bool = False
    attempts: int = 0
    host: str = ""
    error: str = ""


def node_id(cfg: RunConfig) -> str:
    return f"{cfg.kind}/{cfg.key()}"


def describe(cfg: RunConfig) -> str:
    """A job's name for configs that are not a plan's own jobs (a re-fine-tuning's parts)."""
    if cfg.kind == "finetune":
        pruned = f", {len(cfg.pruned)} heads pruned" if cfg.pruned else ""
        return f"fine-tune {'+'.join(cfg.tasks)} ({cfg.setting}, {'+'.join(cfg.train_langs)}{pruned})"
    where = f"{cfg.task}/{cfg.lang}"
    pruned = getattr(cfg, "finetune", None)
    extra = f", re-fine-tuned with {len(pruned.pruned)} heads pruned" if pruned is not None and pruned.pruned else ""
    if cfg.kind == "eval":
        return f"evaluate {where} ({cfg.split}{extra})"
    if cfg.kind == "score":
        return f"score heads {where}{extra}"
    if cfg.kind == "curve":
        return f"curve {cfg.strategy} {where}"
    return f"{cfg.kind} {where}"


class SweepGraph:
    """The jobs of a sweep, de-duplicated by key, each with the ids of what it reads (a plan's jobs come after
    what they read; a re-fine-tuning's parts are added after it, when its ranking is in the cache)."""

    def __init__(self, spec: SweepSpec, *, store: Store | None = None, device: str = "auto"):
        self.spec = spec
        self.store = store or Store()
        self.device = device
        self.plans = spec.plans()
        shared: dict[tuple, Study] = {}  # grid points that differ only by seed read the same data and model
        self.studies = []
        for plan in self.plans:
            same = (plan.model, json.dumps(plan.sources, sort_keys=True), plan.finetuned)
            if same not in shared:
                shared[same] = plan.study(store=self.store, device=device, progress=False)
            self.studies.append(shared[same])
        self.nodes: dict[str, Node] = {}
        # what tells the grid points' jobs apart in their names
        self.suffixes = [f" [{spec.label(i)}]" if len(self.plans) > 1 else "" for i in range(len(self.plans))]
        for i, (plan, study) in enumerate(zip(self.plans, self.studies)):
            for job in plan_jobs(study, plan):
                if job.cfg.kind in spec.kinds:  # what it reads is added whatever its kind
                    self.add(job.what + self.suffixes[i], job.cfg, i)
        self.refresh()

    def add(self, what: str, cfg: RunConfig, plan: int) -> str:
        """Add ``cfg`` (and, first, every config it reads) unless a node has its key; return its id."""
        nid = node_id(cfg)
        if nid in self.nodes:
            return nid
        deps = [self.add(describe(c) + self.suffixes[plan], c, plan) for c in nested_configs(cfg)]
        self.nodes[nid] = Node(nid, what, cfg, plan, deps, expanded=cfg.kind != "refinetune")
        return nid

    def expand(self, node: Node) -> list[Node]:
        """Add a re-fine-tuning's parts (per level and seed: the pruned fine-tune, its dev and test evaluations)
        once its ranking is in the cache; it then waits for them. Returns the new nodes."""
        if node.expanded:
            return []
        before = set(self.nodes)
        parts = [self.add(describe(c) + self.suffixes[node.plan], c, node.plan)
                 for part in self.studies[node.plan].refinetune_parts(node.cfg) for c in part.configs()]
        node.deps = list(dict.fromkeys(node.deps + parts))
        node.expanded = True
        new = [self.nodes[n] for n in self.nodes if n not in before]
        for n in new:
            n.state = "cached" if self.store.has(n.cfg) else "todo"
        return new

    def refresh(self) -> None:
        """Mark every node cached or to do from the store; expand re-fine-tunings whose ranking is cached."""
        for n in list(self.nodes.values()):
            if n.state in ("todo", "cached"):
                n.state = "cached" if self.store.has(n.cfg) else "todo"
        for n in list(self.nodes.values()):
            if not n.expanded and all(self.nodes[d].state == "cached" for d in n.deps):
                self.expand(n)

    def ready(self) -> list[Node]:
        """Nodes to do whose inputs are all in the cache. A re-fine-tuning whose ranking and fine-tune are is
        expanded first (and is ready only once its parts are)."""
        while True:
            out, grew = [], False
            for n in list(self.nodes.values()):
                if n.state != "todo" or not self._inputs_done(n):
                    continue
                if not n.expanded:
                    self.expand(n)
                    grew = True
                    if not self._inputs_done(n):
                        continue
                out.append(n)
            if not grew:
                return out

    def _inputs_done(self, n: Node) -> bool:
        return all(self.nodes[d].state in ("cached", "done") for d in n.deps)

    def dependents(self, nid: str) -> list[Node]:
        """Every node that reads ``nid``, directly or not."""
        seen, frontier = set(), {nid}
        while frontier:
            frontier = {n.id for n in self.nodes.values() if frontier & set(n.deps) and n.id not in seen}
            seen |= frontier
        return [n for i, n in self.nodes.items() if i in seen]

    def gradts_plan(self, node: Node):
        """The GradTS plan a ``gradts`` node validates (one of its grid point's ``gradts`` plans)."""
        from headprune_core.gradts import GradTS
        for gplan in self.plans[node.plan].gradts_plans():
            if GradTS(self.studies[node.plan], gplan).config().key() == node.cfg.key():
                return gplan
        raise ValueError(f"no GradTS plan of the sweep gives the job {node.what!r}")

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in ("cached", "todo", "running", "done", "failed", "skipped")}
        for n in self.nodes.values():
            out[n.state] += 1
        return out


def build_graph(spec: SweepSpec, *, store: Store | None = None, device: str = "auto") -> SweepGraph:
    return SweepGraph(spec, store=store, device=device)


# --- estimates from measured job times ---------------------------------------------------------------------------

def job_work(cfg: RunConfig) -> float:
    """How much work a job is, in the unit its time grows with: sentence-epochs of training for a fine-tune,
    sentences scored or evaluated, sentences x curve points (x seeds) for a curve, 0 for what only assembles
    cached parts (a re-fine-tuning whose parts are jobs of their own)."""
    if cfg.kind == "finetune":
        if cfg.from_checkpoint:
            return 0.0
        from headprune_core.study import train_units
        return float(cfg.max_train_sentences or 0) * cfg.epochs * len(train_units(cfg))
    if cfg.kind in ("score", "eval"):
        return float(cfg.max_sentences or 0)
    if cfg.kind == "curve":
        points = 4 if cfg.strategy == "layers" else max(1, len(cfg.steps) or 13)
        return float(cfg.max_sentences or 0) * points * len(cfg.seeds)
    if cfg.kind == "gradts":  # per unit and primary (its runs grow with both)
        return float(len(cfg.units) * len(cfg.primaries))
    return 0.0


def _model_of(cfg: RunConfig) -> str:
    ft = cfg if cfg.kind == "finetune" else getattr(cfg, "finetune", None)
    return ft.model if ft is not None else getattr(cfg, "model", "?")


THREAD_SCALING = 0.72
"""Speed-up of a job from t1 to t2 CPU threads is taken as (t2 / t1) ** THREAD_SCALING when a job kind was only
measured at another thread count: measured on 2 CPU cores, the demo's jobs ran 1.58-1.73x faster with 2 threads
than with 1 (2 ** 0.72 = 1.65)."""

Rates = dict[tuple[str, str], dict[int, tuple[float, int]]]


def measured_rates(store: Store) -> Rates:
    """Seconds per unit of :func:`job_work` from every entry that recorded its time (a fine-tune's training log
    too): ``{(kind, model): {threads: (seconds per unit, entries measured)}}`` (threads 0: not recorded)."""
    sums: dict[tuple[str, str, int], list[float]] = {}
    for e in store.entries():
        if e.kind not in JOB_KINDS or e.stale:
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
            acc = sums.setdefault((e.kind, _model_of(cfg), e.threads or 0), [0.0, 0.0, 0])
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
    if cfg.kind == "gradts" and (cfg.kind, _model_of(cfg)) not in rates:
        return _gradts_seconds(cfg, rates, cpus)
    return _seconds(cfg.kind, _model_of(cfg), job_work(cfg), rates, cpus)


def _gradts_seconds(cfg, rates: Rates, cpus: float) -> tuple[float | None, str]:
    """A GradTS validation from its fine-tunes, a rough upper estimate: one single-task run per unit, and per
    primary its trials (1, 2, ... auxiliary units), and per training seed the final models (alone, thres, trial,
    fg and the bandit's choice as large as the largest trial, all units), the bandit's search (counted as an
    all-units run) and each random set; each unit trains on ``max_train_sentences`` x ``epochs``; scoring,
    per-example maps and evaluation are small beside."""
    train = dict(cfg.train)
    per_unit = float(train.get("max_train_sentences") or 2000) * float(train.get("epochs", 2.0))
    n = len(cfg.units)
    trial = min(cfg.max_trial or n - 1, n - 1)
    seeds = len(cfg.train_seeds)
    multi_units = (sum(range(2, trial + 2)) + seeds * (1 + 4 * (trial + 1) + 2 * n)
                   + len(cfg.random_seeds) * (trial + 1))
    secs, how = _seconds("finetune", cfg.model, per_unit * (n + len(cfg.primaries) * multi_units), rates, cpus)
    return secs, (how if secs is None else f"{how} fine-tuning rate, rough")


def _seconds(kind: str, model: str, work: float, rates: Rates, cpus: float) -> tuple[float | None, str]:
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
    ev, _ = _seconds("eval", rc.finetune.model, float(rc.max_sentences or 0), rates, cpus["eval"])
    if ft is None or ev is None:
        return None
    fts, evals = _later_jobs(rc)
    return fts * ft + evals * ev


def _later_jobs(rc) -> tuple[int, int]:
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


def job_resources(spec: SweepSpec, gpus: float = 0.0) -> dict[str, dict[str, float]]:
    """Ray resources per job kind: the defaults, then the spec's ``resources``."""
    resources = default_resources(gpus)
    for kind, res in spec.resources.items():
        resources[kind] = {**resources[kind], **res}
    return resources


def dry_run(graph: SweepGraph, *, cpus: int | None = None) -> dict:
    """What a run would do, computing nothing: jobs per kind (total, cached, to compute), estimated compute
    time from measured job times at the CPU threads each job gets, and a wall-time estimate on ``cpus`` CPUs
    (default: this machine's), never below the longest chain of jobs that wait for each other."""
    rates = measured_rates(graph.store)
    cpus = cpus or max(1, os.cpu_count() or 1)
    per_job = {kind: max(res["num_cpus"], 1e-3) for kind, res in job_resources(graph.spec).items()}
    kinds: dict[str, dict] = {}
    finish: dict[str, float] = {}
    unknown, notes = set(), set()
    total = cpu_seconds = 0.0
    for n in graph.nodes.values():
        kind = n.cfg.kind
        row = kinds.setdefault(kind, {"jobs": 0, "cached": 0, "todo": 0, "seconds": 0.0})
        row["jobs"] += 1
        secs = 0.0
        if n.state == "cached":
            row["cached"] += 1
        else:
            row["todo"] += 1
            est, how = estimate(n.cfg, rates, cpus=per_job[kind])
            if est is None:
                unknown.add(kind)
            else:
                secs = est
                if how != "measured" and how != "assembles cached parts":
                    notes.add((how.removeprefix("measured, "), kind))
            row["seconds"] += secs
            total += secs
            cpu_seconds += secs * per_job[kind]
        finish[n.id] = secs  # its own time, for now; the chain through what it reads below
    pending = [n for n in graph.nodes.values() if not n.expanded and n.state == "todo"]
    later = sum(sum(_later_jobs(n.cfg)) for n in pending)
    later_each = [later_seconds(n.cfg, rates, per_job) for n in pending]
    later_total = None if None in later_each else sum(later_each)
    if later_total:
        total += later_total
        cpu_seconds += later_total * per_job["finetune"]
        for n, secs in zip(pending, later_each):
            finish[n.id] += secs
    ends: dict[str, float] = {}

    def end(nid: str) -> float:  # finishing time of a node if each job starts when its inputs are done
        if nid not in ends:
            ends[nid] = finish[nid] + max((end(d) for d in graph.nodes[nid].deps), default=0.0)
        return ends[nid]

    critical = max((end(nid) for nid in graph.nodes), default=0.0)
    return {"name": graph.spec.name, "plans": len(graph.plans), "jobs": len(graph.nodes),
            "cached": sum(r["cached"] for r in kinds.values()), "todo": sum(r["todo"] for r in kinds.values()),
            "kinds": kinds, "seconds": total, "cpus": cpus, "wall_seconds": max(cpu_seconds / cpus, critical),
            "critical_seconds": critical, "unknown_kinds": sorted(unknown),
            "notes": [f"{', '.join(sorted(k for h, k in notes if h == how))}: {how}"
                      for how in sorted({h for h, _ in notes})],
            "measured_entries": sum(n for r in rates.values() for _, n in r.values()), "later_jobs": later,
            "later_seconds": later_total}


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def format_dry_run(report: dict) -> str:
    lines = [f"sweep {report['name']}: {report['plans']} grid point(s), {report['jobs']} jobs, "
             f"{report['cached']} cached, {report['todo']} to compute"]
    lines.append(f"  {'kind':<11}{'jobs':>6}{'cached':>8}{'to do':>7}  est. compute")
    for kind, row in report["kinds"].items():
        est = "unknown" if kind in report["unknown_kinds"] and row["todo"] else _minutes(row["seconds"])
        lines.append(f"  {kind:<11}{row['jobs']:>6}{row['cached']:>8}{row['todo']:>7}  {est}")
    if report["later_jobs"]:
        est = "not estimated" if report["later_seconds"] is None else \
            f"about {_minutes(report['later_seconds'])}, included below"
        lines.append(f"  + {report['later_jobs']} re-fine-tuning jobs, known once their rankings are scored ({est})")
    notes = [f"from {report['measured_entries']} measured entries in this cache"] + report["notes"]
    if report["unknown_kinds"]:
        notes.append(f"{', '.join(report['unknown_kinds'])}: no measured time yet, counted as 0")
    lines.append(f"estimated compute {_minutes(report['seconds'])} ({'; '.join(notes)}); on {report['cpus']} "
                 f"CPUs about {_minutes(report['wall_seconds'])} wall (longest chain "
                 f"{_minutes(report['critical_seconds'])}), plus starting Ray (a local cluster: 4.7-5.4 s "
                 "measured on 2 cores)")
    return "\n".join(lines)


# --- progress on disk --------------------------------------------------------------------------------------------

def sweeps_root(cache: Path | None = None) -> Path:
    """Where sweeps record their progress: ``sweeps/`` in the cache folder (the one that holds ``runs/``)."""
    return (cache or cache_root()) / "sweeps"


def list_sweeps(cache: Path | None = None) -> list[dict]:
    """Every sweep's last progress record (newest first), with ``running_now`` (the jobs workers hold now)
    and ``driver_alive`` (None when the sweep runs from another host)."""
    out = []
    root = sweeps_root(cache)
    if not root.is_dir():
        return out
    for folder in root.iterdir():
        try:
            rec = json.loads((folder / "progress.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        rec["running_now"] = _markers(folder, rec.get("run"))
        rec["driver_alive"] = _driver_alive(rec.get("driver", {}))
        out.append(rec)
    return sorted(out, key=lambda r: r.get("updated", 0), reverse=True)


def progress_summary(rec: dict, *, now: float | None = None) -> dict:
    """A sweep's progress record in a few numbers: its state (``stopped`` when its driver died without saying
    so), jobs finished of total, failed, running now, and the time left at the pace of this run so far."""
    counts = rec.get("counts", {})
    total = sum(counts.values())
    finished = sum(counts.get(s, 0) for s in ("cached", "done", "failed", "skipped"))
    state = rec.get("state", "?")
    if state == "running" and rec.get("driver_alive") is False:
        state = "stopped"
    now = now or time.time()
    ran = counts.get("done", 0) + counts.get("failed", 0)
    left = total - finished
    elapsed = (rec.get("updated", now) if state != "running" else now) - rec.get("started", now)
    eta = elapsed / ran * left if state == "running" and ran and left else None
    return {"state": state, "total": total, "finished": finished, "failed": counts.get("failed", 0),
            "skipped": counts.get("skipped", 0), "running": len(rec.get("running_now", [])),
            "elapsed": elapsed, "eta": eta}


def running_sweeps(cache: Path | None = None) -> list[tuple[dict, dict]]:
    """(record, :func:`progress_summary`) of each sweep running on this cache now (one whose driver died is
    not running)."""
    return [(rec, s) for rec in list_sweeps(cache) if (s := progress_summary(rec))["state"] == "running"]


def _markers(folder: Path, run: str | None) -> list[dict]:
    out = []
    running = folder / "running"
    if running.is_dir():
        for f in running.iterdir():
            try:
                m = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if m.get("run") == run:
                out.append(m)
    return out


def _driver_alive(driver: dict) -> bool | None:
    """Whether the process that runs a sweep is alive (None: it runs on another host)."""
    if driver.get("host") != socket.gethostname() or not isinstance(driver.get("pid"), int):
        return None
    from headprune_core.files import pid_alive
    return pid_alive(driver["pid"])


class Progress:
    """Writes ``progress.json`` of a running sweep (atomically, at most twice a second unless forced)."""

    def __init__(self, graph: SweepGraph, run: str):
        self.graph, self.run = graph, run
        self.folder = sweeps_root(graph.store.root.parent) / graph.spec.name
        (self.folder / "running").mkdir(parents=True, exist_ok=True)
        self.started = time.time()
        self.state = "running"
        self._last = 0.0

    def write(self, *, force: bool = False) -> None:
        now = time.time()
        if not force and now - self._last < 0.5:
            return
        self._last = now
        g = self.graph
        jobs = [{"what": n.what, "kind": n.cfg.kind, "key": n.id.partition("/")[2], "state": n.state,
                 "seconds": n.seconds, "attempts": n.attempts, "host": n.host, "error": n.error}
                for n in g.nodes.values()]
        rec = {"name": g.spec.name, "run": self.run, "state": self.state, "started": self.started,
               "updated": now, "counts": g.counts(), "jobs": jobs, "spec": g.spec.to_dict(),
               "driver": {"host": socket.gethostname(), "pid": os.getpid()}}
        write_file_atomic(self.folder / "progress.json", json.dumps(rec, indent=1))


# --- running on Ray ----------------------------------------------------------------------------------------------

_WORKER_STUDIES: dict[tuple, Study] = {}  # per worker process: a Study (its loaded model) per grid point


def _worker_study(payload: dict) -> Study:
    plan = payload["plan"]
    memo = (plan["model"], json.dumps(plan["sources"], sort_keys=True), plan["finetuned"], payload["cache"],
            payload["device"])
    if memo not in _WORKER_STUDIES:
        while len(_WORKER_STUDIES) >= 2:  # a loaded encoder each: keep the newest
            _WORKER_STUDIES.pop(next(iter(_WORKER_STUDIES)))
        _WORKER_STUDIES[memo] = Study(plan["model"], store=Store(Path(payload["cache"]) / "runs"),
                                      device=payload["device"], progress=False, sources=plan["sources"],
                                      finetuned=plan["finetuned"])
    return _WORKER_STUDIES[memo]


def run_job(payload: dict) -> dict:
    """One sweep job in a Ray worker: compute (or read) ``payload``'s config through the shared cache.

    Torch gets as many threads as the task has CPUs. A marker in the sweep's ``running/`` folder says which
    worker holds the job and counts attempts (a killed worker leaves it; its retry counts on)."""
    import torch
    os.environ["HEADPRUNE_CACHE"] = payload["cache"]  # models, registered corpora: the sweep's cache folder
    try:
        import ray
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
    except Exception:  # noqa: BLE001 -- outside Ray (tests call it directly)
        cpus = None
    if cpus:
        torch.set_num_threads(max(1, int(cpus)))
    kind, key = payload["kind"], payload["key"]
    marker = Path(payload["markers"]) / f"{kind}-{key}.json"
    attempt = 1
    try:
        old = json.loads(marker.read_text(encoding="utf-8"))
        if old.get("run") == payload["run"]:
            attempt = int(old.get("attempt", 0)) + 1
    except (OSError, ValueError, TypeError):
        pass
    host = socket.gethostname()
    write_file_atomic(marker, json.dumps({"run": payload["run"], "what": payload["what"], "kind": kind,
                                          "key": key, "pid": os.getpid(), "host": host, "attempt": attempt,
                                          "started": time.time()}))
    cfg = config_from_dict(kind, payload["config"])
    study = _worker_study(payload)
    compute = lambda: study.compute(cfg)  # noqa: E731
    if kind == "gradts":
        from headprune_core.gradts import GradTS, GradTSPlan
        gts = GradTS(study, GradTSPlan.from_dict(payload["gradts"]))
        cfg, compute = gts.config(), gts.run
    if cfg.key() != key:
        raise RuntimeError(f"the worker's headprune gives {kind} key {cfg.key()} for a job the driver keyed {key}: "
                           "run the same headprune version on every node")
    before = study.store.computations
    start = time.perf_counter()
    compute()
    seconds = time.perf_counter() - start
    marker.unlink(missing_ok=True)
    # not computed: another sweep (or a dashboard) held the key's lock and this job read its entry
    return {"key": key, "kind": kind, "seconds": seconds, "computed": study.store.computations > before,
            "attempt": attempt, "host": host, "pid": os.getpid()}


def _error_text(err: BaseException) -> str:
    """The last line of a worker's exception (Ray wraps it with the remote traceback)."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[-1] if lines else ''}"


def init_ray(*, address: str | None = None, cpus: int | None = None, gpus: int | None = None) -> bool:
    """Connect to the cluster at ``address``, or start a local one for this run (``cpus``: default all of this
    machine's). Workers find headprune through PYTHONPATH (the same path on every node). Returns True if this
    call started Ray (and the caller should shut it down)."""
    import ray
    if ray.is_initialized():
        return False
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p),
           "TOKENIZERS_PARALLELISM": "false"}
    if address:
        ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=False)
    else:
        ray.init(num_cpus=cpus or os.cpu_count(), num_gpus=gpus, include_dashboard=False, log_to_driver=False,
                 object_store_memory=256 * 2**20, runtime_env={"env_vars": env})
    return True


@dataclass
class SweepResult:
    jobs: int
    cached: int
    computed: int
    failed: list[Node]
    skipped: list[Node]
    seconds: float
    ray_seconds: float  # connecting to / starting Ray

    @property
    def ok(self) -> bool:
        return not self.failed and not self.skipped


def run_sweep(graph: SweepGraph, *, address: str | None = None, cpus: int | None = None, gpus: int | None = None,
              on_event: Callable[[Node, SweepGraph], None] | None = None) -> SweepResult:
    """Run every job of ``graph`` not in the cache on Ray (see the module docstring).

    ``on_event(node, graph)`` is called whenever a job is submitted, finishes, fails or is skipped. Ctrl-C
    cancels the running jobs; finished entries stay and a rerun resumes from them.
    """
    start = time.perf_counter()
    run = uuid.uuid4().hex[:12]
    if not any(n.state == "todo" for n in graph.nodes.values()):  # all cached: no cluster needed
        progress = Progress(graph, run)
        progress.state = "done"
        progress.write(force=True)
        nodes = list(graph.nodes.values())
        return SweepResult(jobs=len(nodes), cached=len(nodes), computed=0, failed=[], skipped=[],
                           seconds=time.perf_counter() - start, ray_seconds=0.0)
    import ray
    started_ray = init_ray(address=address, cpus=cpus, gpus=gpus)
    ray_seconds = time.perf_counter() - start
    remote = ray.remote(run_job)
    resources = job_resources(graph.spec, ray.cluster_resources().get("GPU", 0.0))
    progress = Progress(graph, run)
    running: dict[Any, Node] = {}
    computed = 0
    event = on_event or (lambda node, g: None)

    def submit(node: Node) -> None:
        if graph.store.has(node.cfg):  # another sweep or a dashboard finished it meanwhile
            node.state = "cached"
            event(node, graph)
            return
        plan = graph.plans[node.plan]
        payload = {"kind": node.cfg.kind, "key": node.cfg.key(), "config": node.cfg.to_dict(), "what": node.what,
                   "plan": {"model": plan.model, "sources": plan.sources, "finetuned": plan.finetuned},
                   "cache": str(graph.store.root.parent), "device": graph.device, "run": run,
                   "markers": str(progress.folder / "running")}
        if node.cfg.kind == "gradts":
            payload["gradts"] = graph.gradts_plan(node).to_dict()
        ref = remote.options(max_retries=1, retry_exceptions=True, name=node.what[:100],
                             **resources[node.cfg.kind]).remote(payload)
        node.state = "running"
        running[ref] = node
        event(node, graph)

    try:
        progress.write(force=True)
        while True:
            for node in graph.ready():
                submit(node)
            progress.write()
            if not running:
                break
            done, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for ref in done:
                node = running.pop(ref)
                try:
                    res = ray.get(ref)
                except Exception as err:  # noqa: BLE001 -- any failure of a job is reported, the others go on
                    node.state, node.error = "failed", _error_text(err)
                    node.attempts = _attempts(progress.folder, node, run)
                    log.error("sweep job failed after %d attempt(s): %s: %s", node.attempts, node.what, node.error)
                    event(node, graph)
                    for dep in graph.dependents(node.id):
                        if dep.state == "todo":
                            dep.state, dep.error = "skipped", f"needs '{node.what}', which failed"
                            event(dep, graph)
                    continue
                node.state, node.seconds, node.attempts, node.host = "done", res["seconds"], res["attempt"], res["host"]
                node.computed = bool(res["computed"])
                computed += node.computed
                event(node, graph)
        progress.state = "failed" if any(n.state in ("failed", "skipped") for n in graph.nodes.values()) else "done"
    except BaseException:
        progress.state = "interrupted"
        for ref in running:
            ray.cancel(ref, force=True)
        raise
    finally:
        progress.write(force=True)
        if started_ray:
            ray.shutdown()
    nodes = list(graph.nodes.values())
    return SweepResult(jobs=len(nodes), cached=sum(n.state == "cached" for n in nodes), computed=computed,
                       failed=[n for n in nodes if n.state == "failed"],
                       skipped=[n for n in nodes if n.state == "skipped"],
                       seconds=time.perf_counter() - start, ray_seconds=ray_seconds)


def _attempts(folder: Path, node: Node, run: str) -> int:
    """Attempts a failed job had, from its marker (then removed)."""
    marker = folder / "running" / f"{node.cfg.kind}-{node.cfg.key()}.json"
    try:
        m = json.loads(marker.read_text(encoding="utf-8"))
        marker.unlink(missing_ok=True)
        return int(m.get("attempt", 1)) if m.get("run") == run else 1
    except (OSError, ValueError, TypeError):
        return 1

