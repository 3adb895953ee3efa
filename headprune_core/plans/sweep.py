"""Sweeps: grids of studies (models x data x tasks x languages x settings x seeds x strategies x pruning levels x
re-fine-tuning) run on Ray, one Ray task per cached job, into one shared cache.

A :class:`SweepSpec` expands into study plans, one per (model, data, seed), and each plan into exactly the jobs
``headprune study`` runs (:func:`~headprune_core.plans.plan.plan_jobs`). :func:`build_graph` de-duplicates them
by cache key and links each job to the results it reads (a score reads its fine-tune, a curve its fine-tune and
its ranking: :func:`~headprune_core.runs.config.nested_configs`). :func:`~headprune_core.plans.sweep_ray.run_sweep`
submits a job when everything it reads is in the cache; the worker computes through the :class:`Store`, so a job another
sweep is computing waits on its per-key lock and then reads the entry. Cached jobs are never submitted. Each job asks
Ray for its CPUs, GPUs and memory (:meth:`SweepGraph.request`); a job whose worker or node is lost is resubmitted
(unless its entry landed first), one that fails is resubmitted once and then reported with the jobs that needed it,
and the others go on. Progress goes to ``<cache>/sweeps/<name>/progress.json`` (the Runs page shows it).

>>> # spec = SweepSpec.from_file("sweeps/demo.json"); graph = build_graph(spec)
>>> # print(format_dry_run(dry_run(graph)))
"""

from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch

from headprune_core.base.files import check_name, read_json
from headprune_core.base.specs import check_object
from headprune_core.data.refs import parse_sources
from headprune_core.encoders.models import resolve
from headprune_core.multitask.gradts import GradTS
from headprune_core.multitask.plan import GradTSPlan
from headprune_core.plans.plan import StudyPlan, plan_jobs
from headprune_core.plans.presets import find_plan
from headprune_core.runs.config import RunConfig, nested_configs
from headprune_core.runs.estimate import JOB_KINDS, estimate, later_jobs, later_seconds, measured_rates, minutes
from headprune_core.runs.jobs import describe
from headprune_core.runs.retrain import refinetune_parts
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study

log = logging.getLogger(__name__)

MAX_POINTS = 1000
"""The most grid points one sweep spec may have (models x data x seeds): each is a study plan of tens to hundreds
of jobs, so a larger grid is almost surely a mistake (a seed range typed as a list); split it into specs."""

RESOURCE_NAMES = ("num_cpus", "num_gpus", "memory_gb")
SPEC_FIELDS = ("name", "description", "preset", "models", "data", "seeds", "resources", "kinds")
"""A spec's own fields; every other field is a study-plan field (see StudyPlan) shared by every grid point."""


WORKER_GB = 0.75
"""Memory of a Ray worker with torch, transformers and headprune imported but no model loaded (0.34 GB measured
outside Ray on this machine, plus Ray's own worker and the data a job reads). Ray workers that ran the tiny test
model's jobs peaked at 0.54-0.67 GB resident here, and at 0.61 and 0.66 GB on loaded CI machines (a worker keeps
what its earlier jobs left, and resident memory counts the shared libraries' pages it touched)."""

MODEL_COPIES = {"finetune": 6.0, "gradts": 6.0, "score": 5.0, "eval": 4.5, "curve": 4.5, "refinetune": 4.5}
"""A job's memory beyond :data:`WORKER_GB`, in copies of its model's fp32 weights: a worker keeps one grid point's
Study, which holds the base model and its two newest fine-tuned models; a job builds one more, and a fine-tune adds
its gradients and Adam state (:data:`TRAINED_EMBEDDINGS` copies more when the word embeddings train too). The
embedded me5-small (0.44 GB of weights; GB here are 2**30 bytes) peaked at 2.7 GB fine-tuning, 2.0 GB scoring and
1.7 GB evaluating in a fresh process on this machine, under their estimates of 3.4, 2.9 and 2.7 GB (docs/sweeps.md)."""
TRAINED_EMBEDDINGS = 3.0


def default_resources(gpus: float) -> dict[str, dict[str, float]]:
    """Ray resources per job kind: one CPU each (torch uses as many threads as the task has CPUs); on a cluster
    with GPUs a whole GPU for each fine-tune, half of one for a scoring or evaluation job. Memory is estimated per
    job from its model (:meth:`SweepGraph.request`) unless the spec sets ``memory_gb``."""
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
    def from_dict(cls, data, *, where: str = "sweep spec", base: Path | None = None) -> SweepSpec:
        """A spec from JSON data; relative local data files are relative to ``base``. Every grid point is
        checked as a study plan here, so a bad field fails before any work, naming ``where``."""
        check_object(data, where=where, what="sweep spec")
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
                preset = find_plan(data["preset"])
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
        size = len(models) * len(sources) * max(1, len(seeds))  # counted before anything is expanded
        if size > MAX_POINTS:
            raise ValueError(f"{where}: the grid has {size:,} points ({len(models)} models x {len(sources)} data "
                             f"x {len(seeds) or 1} seeds); a sweep has at most {MAX_POINTS:,}: split it into "
                             "several specs")
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
    def from_file(cls, path: str | Path) -> SweepSpec:
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
        n_seeds = len(self.seeds) or 1
        model, data_index = self.models[i // (len(self.data) * n_seeds)], (i // n_seeds) % len(self.data)
        seed = self.seeds[i % n_seeds] if self.seeds else None
        parts = []
        if len(set(self.models)) > 1:
            parts.append(model)
        if len({json.dumps(d, sort_keys=True) for d in self.data}) > 1:
            parts.append(f"data #{data_index + 1}")
        if len(set(self.seeds)) > 1:
            parts.append(f"seed {seed}")
        return ", ".join(parts) or "the only grid point"


def _check_resources(resources, where: str) -> dict:
    if not isinstance(resources, dict):
        raise ValueError(f"{where}: resources must be an object {{kind: {{num_cpus, num_gpus, memory_gb}}}}, got "
                         f"{resources!r}")
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
class JobNode:
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
    ray_node: str = ""  # the Ray node its last attempt ran on ("NAME (node id)")
    error: str = ""
    retries: list[dict] = field(default_factory=list)  # {attempt, node, reason} of each attempt that was redone
    span: tuple[float, float] | None = None  # wall-clock start and end of the attempt that finished it


def job_id(cfg: RunConfig) -> str:
    return f"{cfg.kind}/{cfg.key()}"


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
        self.jobs: dict[str, JobNode] = {}
        self._params: dict[str, int | None] = {}  # model id -> parameters (memory requests)
        # what tells the grid points' jobs apart in their names
        self.suffixes = [f" [{spec.label(i)}]" if len(self.plans) > 1 else "" for i in range(len(self.plans))]
        for i, (plan, study) in enumerate(zip(self.plans, self.studies)):
            for job in plan_jobs(study, plan):
                if job.cfg.kind in spec.kinds:  # what it reads is added whatever its kind
                    self.add(job.what + self.suffixes[i], job.cfg, i)
        self.refresh()

    def add(self, what: str, cfg: RunConfig, plan: int) -> str:
        """Add ``cfg`` (and, first, every config it reads) unless a job has its key; return its id."""
        nid = job_id(cfg)
        if nid in self.jobs:
            return nid
        deps = [self.add(describe(c) + self.suffixes[plan], c, plan) for c in nested_configs(cfg)]
        self.jobs[nid] = JobNode(nid, what, cfg, plan, deps, expanded=cfg.kind != "refinetune")
        return nid

    def expand(self, job: JobNode) -> list[JobNode]:
        """Add a re-fine-tuning's parts (per level and seed: the pruned fine-tune, its dev and test evaluations)
        once its ranking is in the cache; it then waits for them. Returns the new nodes."""
        if job.expanded:
            return []
        before = set(self.jobs)
        parts = [self.add(describe(c) + self.suffixes[job.plan], c, job.plan)
                 for part in refinetune_parts(self.studies[job.plan], job.cfg) for c in part.configs()]
        job.deps = list(dict.fromkeys(job.deps + parts))
        job.expanded = True
        new = [self.jobs[n] for n in self.jobs if n not in before]
        for n in new:
            n.state = "cached" if self.store.has(n.cfg) else "todo"
        return new

    def refresh(self) -> None:
        """Mark every job cached or to do from the store; expand re-fine-tunings whose ranking is cached."""
        for n in list(self.jobs.values()):
            if n.state in ("todo", "cached"):
                n.state = "cached" if self.store.has(n.cfg) else "todo"
        for n in list(self.jobs.values()):
            if not n.expanded and all(self.jobs[d].state == "cached" for d in n.deps):
                self.expand(n)

    def ready(self) -> list[JobNode]:
        """Nodes to do whose inputs are all in the cache. A re-fine-tuning whose ranking and fine-tune are is
        expanded first (and is ready only once its parts are)."""
        while True:
            out, grew = [], False
            for n in list(self.jobs.values()):
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

    def _inputs_done(self, n: JobNode) -> bool:
        return all(self.jobs[d].state in ("cached", "done") for d in n.deps)

    def dependents(self, nid: str) -> list[JobNode]:
        """Every job that reads ``nid``, directly or not."""
        seen, frontier = set(), {nid}
        while frontier:
            frontier = {n.id for n in self.jobs.values() if frontier & set(n.deps) and n.id not in seen}
            seen |= frontier
        return [n for i, n in self.jobs.items() if i in seen]

    def gradts_plan(self, job: JobNode) -> GradTSPlan:
        """The GradTS plan a ``gradts`` job validates (one of its grid point's ``gradts`` plans)."""
        for gplan in self.plans[job.plan].gradts_plans():
            if GradTS(self.studies[job.plan], gplan).config().key() == job.cfg.key():
                return gplan
        raise ValueError(f"no GradTS plan of the sweep gives the job {job.what!r}")

    def request(self, job: JobNode, gpus: float = 0.0) -> dict[str, float]:
        """What ``job``'s job asks Ray for: ``num_cpus``, ``num_gpus`` and ``memory`` (bytes; 0 when its model
        cannot be sized), from :func:`job_resources` and, unless the spec sets ``memory_gb``, estimated from its
        model's size (:data:`MODEL_COPIES`)."""
        kind = job.cfg.kind
        res = job_resources(self.spec, gpus)[kind]
        out = {"num_cpus": res["num_cpus"], "num_gpus": res["num_gpus"], "memory": 0.0}
        if "memory_gb" in res:
            out["memory"] = res["memory_gb"] * 2**30
            return out
        model = self.plans[job.plan].model
        if model not in self._params:
            self._params[model] = model_params(model)
        if self._params[model] is not None:
            copies = MODEL_COPIES[kind]
            if kind == "finetune" and not getattr(job.cfg, "freeze_embeddings", True):
                copies += TRAINED_EMBEDDINGS
            out["memory"] = WORKER_GB * 2**30 + copies * 4 * self._params[model]
        return out

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in ("cached", "todo", "running", "done", "failed", "skipped")}
        for n in self.jobs.values():
            out[n.state] += 1
        return out

    def finished(self) -> int:
        """Jobs that will not run again in this sweep (:data:`FINISHED` states)."""
        return sum(n.state in FINISHED for n in self.jobs.values())


FINISHED = ("cached", "done", "failed", "skipped")
"""The states of a job that will not run again in this sweep."""


def model_params(model_id: str) -> int | None:
    """Parameters of ``model_id``'s encoder from its config alone (embeddings and layers; no weights read), or None
    when the config cannot be read or names no sizes: what a job's memory request scales with."""
    try:
        source, src = resolve(model_id)
        if source == "hub":
            from transformers import AutoConfig  # here: importing transformers takes seconds; only Hub ids need it
            config = AutoConfig.from_pretrained(src).to_dict()
        else:
            config = json.loads((Path(src) / "config.json").read_text(encoding="utf-8"))
    except Exception as err:  # noqa: BLE001 -- a model that cannot be sized asks no memory (the dry run says so)
        log.warning("cannot size %s for its memory request: %s", model_id, err)
        return None

    def size(*names: str) -> int | None:  # BERT-like names, then DistilBERT's
        return next((config[n] for n in names if isinstance(config.get(n), int)), None)

    hidden, layers = size("hidden_size", "dim"), size("num_hidden_layers", "n_layers")
    ffn, vocab = size("intermediate_size", "hidden_dim"), size("vocab_size")
    if None in (hidden, layers, ffn, vocab):
        return None
    positions = size("max_position_embeddings") or 512
    return (vocab + positions) * hidden + layers * (4 * hidden * hidden + 2 * hidden * ffn)


@dataclass(frozen=True)
class NodeShape:
    """One Ray node as the scheduler sees it: its name, CPUs, GPUs and the memory (bytes) it gives jobs."""

    name: str
    cpus: float
    gpus: float
    memory: float


@dataclass(frozen=True)
class ClusterShape:
    """Where a sweep runs, node by node: this machine (:func:`local_shape`) or a cluster's alive nodes
    (:func:`~headprune_core.plans.sweep_ray.cluster_shape`)."""

    where: str
    nodes: tuple[NodeShape, ...]

    def total(self, what: str) -> float:
        return sum(getattr(n, what) for n in self.nodes)

    def describe(self) -> str:
        return (f"{self.where}: {len(self.nodes)} node(s), {self.total('cpus'):g} CPUs, {self.total('gpus'):g} "
                f"GPUs, {self.total('memory') / 2**30:.1f} GB memory for jobs")

    def fit(self, request: dict[str, float], what: str) -> tuple[dict[str, float], str | None]:
        """``request`` as it can be met: a memory request above every node that has the CPUs and GPUs is cut to
        the largest such node's (one at a time there), with a note; CPUs or GPUs no node has raise ValueError."""
        cpus, gpus, memory = request["num_cpus"], request["num_gpus"], request["memory"]
        able = [n for n in self.nodes if n.cpus >= cpus - 1e-9 and n.gpus >= gpus - 1e-9]
        if not able:
            raise ValueError(f"{what} jobs ask for {cpus:g} CPU(s) and {gpus:g} GPU(s), and no node of {self.where} "
                             f"has that many ({self.describe()}): lower resources.{what} in the spec, or add nodes")
        most = max(n.memory for n in able)
        if memory <= most:
            return request, None
        return {**request, "memory": most}, (f"{what} jobs ask for {memory / 2**30:.1f} GB, more than any node "
                                              f"gives jobs ({most / 2**30:.1f} GB): asking that, one at a time")

    def at_once(self, request: dict[str, float]) -> int:
        """How many jobs of ``request`` the nodes hold at once (each node: its CPUs, GPUs and memory)."""
        def fits(have: float, need: float) -> float:
            return math.floor(have / need + 1e-9) if need > 0 else math.inf
        slots = sum(min(fits(n.cpus, request["num_cpus"]), fits(n.gpus, request["num_gpus"]),
                        fits(n.memory, request["memory"])) for n in self.nodes)
        return int(min(slots, 10**6))


def local_shape(cpus: int | None = None) -> ClusterShape:
    """This machine as one node: ``cpus`` (default all), its GPUs and its available memory."""
    memory = 0.0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                memory = float(line.split()[1]) * 1024
    except OSError:
        pass
    if not memory:
        memory = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return ClusterShape("this machine", (NodeShape("local", float(cpus or os.cpu_count() or 1), float(gpus),
                                                   memory),))


def build_graph(spec: SweepSpec, *, store: Store | None = None, device: str = "auto") -> SweepGraph:
    return SweepGraph(spec, store=store, device=device)


def job_resources(spec: SweepSpec, gpus: float = 0.0) -> dict[str, dict[str, float]]:
    """Ray resources per job kind: the defaults, then the spec's ``resources``."""
    resources = default_resources(gpus)
    for kind, res in spec.resources.items():
        resources[kind] = {**resources[kind], **res}
    return resources


def dry_run(graph: SweepGraph, *, cpus: int | None = None, cluster: ClusterShape | None = None) -> dict:
    """What a run would do, computing nothing: jobs per kind (total, cached, to compute), estimated compute
    time from measured job times at the CPU threads each job gets, and a wall-time estimate on ``cluster`` (default:
    this machine, with ``cpus`` CPUs): each job shares the time with as many of its kind as the nodes hold at once
    (their CPUs, GPUs and memory), never below the longest chain of jobs that wait for each other."""
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
            "later_jobs": later, "later_seconds": later_total}


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
    lines.append(f"estimated compute {minutes(report['seconds'])} ({'; '.join(notes)}); on {report['cpus']:g} "
                 f"CPUs about {minutes(report['wall_seconds'])} wall (longest chain "
                 f"{minutes(report['critical_seconds'])}), plus starting Ray (a local cluster: 4.7-5.4 s "
                 "measured on 2 cores)")
    return "\n".join(lines)
