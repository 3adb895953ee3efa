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
from headprune_core.encoders.known import config_params, known_config
from headprune_core.encoders.models import resolve
from headprune_core.multitask.gradts import GradTS
from headprune_core.multitask.plan import GradTSPlan
from headprune_core.plans.plan import StudyPlan, plan_jobs
from headprune_core.plans.presets import find_plan
from headprune_core.runs.config import RunConfig, nested_configs
from headprune_core.runs.estimate import JOB_KINDS
from headprune_core.runs.jobs import describe
from headprune_core.runs.planning import PlannedStudy
from headprune_core.runs.retrain import refinetune_parts
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study

log = logging.getLogger(__name__)

MAX_POINTS = 1000
"""The most grid points one sweep spec may have (models x data x seeds): each is a study plan of tens to hundreds
of jobs, so a larger grid is almost surely a mistake (a seed range typed as a list); split it into specs."""

RESOURCE_NAMES = ("num_cpus", "num_gpus", "memory_gb")
SPEC_FIELDS = ("name", "description", "preset", "models", "data", "seeds", "source_grid", "resources", "kinds")
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
    ``data`` (source maps, ``{}`` = embedded corpora) x ``seeds`` (fine-tuning seeds; empty: the plan's) x
    ``source_grid`` (the cross setting's training languages of each point, e.g. ``[["en"], ["zh"], ["ar"]]`` as
    Ma et al. train on each of three; empty: the plan's ``source_langs``)."""

    name: str
    plan: dict
    models: tuple[str, ...]
    data: tuple[dict, ...] = ({},)
    seeds: tuple[int, ...] = ()
    source_grid: tuple[tuple[str, ...], ...] = ()
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
        grid = data.get("source_grid", [])
        if not isinstance(grid, list) or not all(isinstance(g, list) and g and all(isinstance(x, str) for x in g)
                                                 for g in grid):
            raise ValueError(f"{where}: source_grid must be a list of language lists (e.g. [[\"en\"], [\"zh\"]]), "
                             f"got {grid!r}")
        size = len(models) * len(sources) * max(1, len(seeds)) * max(1, len(grid))  # before anything is expanded
        if size > MAX_POINTS:
            by = f" x {len(grid)} source languages" if grid else ""
            raise ValueError(f"{where}: the grid has {size:,} points ({len(models)} models x {len(sources)} data "
                             f"x {len(seeds) or 1} seeds{by}); a sweep has at most {MAX_POINTS:,}: split it into "
                             "several specs")
        resources = _check_resources(data.get("resources", {}), where)
        kinds = data.get("kinds", list(JOB_KINDS))
        if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) for k in kinds):
            raise ValueError(f"{where}: kinds must be a non-empty list of job kinds, got {kinds!r}")
        for kind in kinds:
            if kind not in JOB_KINDS:
                raise ValueError(f"{where}: unknown job kind {kind!r} in kinds; known: {', '.join(JOB_KINDS)}")
        spec = cls(name=name, plan=plan, models=tuple(models), data=tuple(parsed), seeds=tuple(seeds),
                   source_grid=tuple(tuple(g) for g in grid), resources=resources,
                   description=str(data.get("description", "")),
                   kinds=tuple(k for k in JOB_KINDS if k in kinds))
        spec.plans(where=where)  # every grid point is a valid plan
        return spec

    @classmethod
    def from_file(cls, path: str | Path) -> SweepSpec:
        return cls.from_dict(read_json(path, "sweep spec (JSON)"), where=str(path),
                             base=Path(path).resolve().parent)

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description, **self.plan, "models": list(self.models),
                "data": list(self.data), "seeds": list(self.seeds),
                **({"source_grid": [list(g) for g in self.source_grid]} if self.source_grid else {}),
                "resources": self.resources,
                "kinds": list(self.kinds)}

    def points(self) -> list[tuple[str, dict, int | None, tuple[str, ...] | None]]:
        """The grid: (model, data sources, seed or None, source languages or None) in spec order."""
        return [(m, d, s, g) for m in self.models for d in self.data for s in (self.seeds or (None,))
                for g in (self.source_grid or (None,))]

    def plans(self, *, where: str | None = None) -> list[StudyPlan]:
        """One study plan per grid point (named ``<sweep>-<n>``)."""
        out = []
        for i, (model, sources, seed, source_langs) in enumerate(self.points()):
            fields = {**self.plan, "name": f"{self.name}-{i + 1}", "model": model, "sources": sources,
                      "description": self.description or f"sweep {self.name}"}
            if seed is not None:
                fields["train"] = {**fields.get("train", {}), "seed": seed}
            if source_langs is not None:
                fields["source_langs"] = list(source_langs)
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
        """What tells grid point ``i`` apart: its model, data, seed and source languages (only the dimensions
        that vary)."""
        n_seeds, n_grid = len(self.seeds) or 1, len(self.source_grid) or 1
        per_data = n_seeds * n_grid  # points in spec order: models, then data, then seeds, then source languages
        model, data_index = self.models[i // (len(self.data) * per_data)], (i // per_data) % len(self.data)
        seed = self.seeds[(i // n_grid) % n_seeds] if self.seeds else None
        source_langs = self.source_grid[i % n_grid] if self.source_grid else None
        parts = []
        if len(set(self.models)) > 1:
            parts.append(model)
        if len({json.dumps(d, sort_keys=True) for d in self.data}) > 1:
            parts.append(f"data #{data_index + 1}")
        if len(set(self.seeds)) > 1:
            parts.append(f"seed {seed}")
        if len(set(self.source_grid)) > 1:
            parts.append(f"from {'+'.join(source_langs)}")
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

    def __init__(self, spec: SweepSpec, *, store: Store | None = None, device: str = "auto", planning: bool = False):
        self.spec = spec
        self.store = store or Store()
        self.device = device
        self.plans = spec.plans()
        shared: dict[tuple, Study] = {}  # grid points that differ only by seed read the same data and model
        self.studies = []
        for plan in self.plans:
            same = (plan.model, json.dumps(plan.sources, sort_keys=True), plan.finetuned)
            if same not in shared:
                shared[same] = (PlannedStudy(plan.model, store=self.store, device=device, progress=False,
                                             sources=plan.sources, finetuned=plan.finetuned) if planning else
                                plan.study(store=self.store, device=device, progress=False))
            self.studies.append(shared[same])
        self.jobs: dict[str, JobNode] = {}
        self._configs: dict[str, dict | None] = {}  # model id -> config fields (memory requests, disk)
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
        config = self.config_of(self.plans[job.plan].model)
        params = None if config is None else config_params(config)
        if params is not None:
            copies = MODEL_COPIES[kind]
            if kind == "finetune" and not getattr(job.cfg, "freeze_embeddings", True):
                copies += TRAINED_EMBEDDINGS
            out["memory"] = WORKER_GB * 2**30 + copies * 4 * params
        return out

    def config_of(self, model: str) -> dict | None:
        """``model``'s config fields (:func:`model_config`), read once per graph."""
        if model not in self._configs:
            self._configs[model] = model_config(model)
        return self._configs[model]

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


def model_config(model_id: str) -> dict | None:
    """``model_id``'s config fields (no weights read): a folder's config.json, a Hub model's config (the local
    cache, else the Hub), else its recorded config (:mod:`headprune_core.encoders.known`), else None."""
    try:
        source, src = resolve(model_id)
        if source == "hub":
            from transformers import AutoConfig  # here: importing transformers takes seconds; only Hub ids need it
            return AutoConfig.from_pretrained(src).to_dict()
        return json.loads((Path(src) / "config.json").read_text(encoding="utf-8"))
    except Exception as err:  # noqa: BLE001 -- a model that cannot be sized asks no memory (the dry run says so)
        config = known_config(model_id)
        if config is None:
            log.warning("cannot size %s for its memory request: %s", model_id, err)
        return config


def model_params(model_id: str) -> int | None:
    """Parameters of ``model_id``'s encoder from its config alone (embeddings and layers), or None when the config
    cannot be read or names no sizes: what a job's memory request scales with."""
    config = model_config(model_id)
    return None if config is None else config_params(config)


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


def build_graph(spec: SweepSpec, *, store: Store | None = None, device: str = "auto",
                planning: bool = False) -> SweepGraph:
    """The sweep's jobs; ``planning``: Hub data and models sized from the shipped tables, nothing read from the Hub
    (a dry run's plan: every job counts as to do)."""
    return SweepGraph(spec, store=store, device=device, planning=planning)


def job_resources(spec: SweepSpec, gpus: float = 0.0) -> dict[str, dict[str, float]]:
    """Ray resources per job kind: the defaults, then the spec's ``resources``."""
    resources = default_resources(gpus)
    for kind, res in spec.resources.items():
        resources[kind] = {**resources[kind], **res}
    return resources
