"""Running a sweep on Ray: one Ray task per cached job, submitted once everything it reads is in the cache, on a
local cluster or an existing one (see :mod:`headprune_core.plans.sweep` for the spec and the job graph).

>>> # result = run_sweep(build_graph(SweepSpec.from_file("sweeps/demo.json")), cpus=2)
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray
import torch

from headprune_core.base.cache import SOURCE_ROOT
from headprune_core.base.files import write_file_atomic
from headprune_core.base.progress import Progress, report
from headprune_core.multitask.gradts import GradTS
from headprune_core.multitask.plan import GradTSPlan
from headprune_core.plans.sweep import ClusterShape, JobNode, NodeShape, SweepGraph
from headprune_core.plans.sweep_record import SweepRecord
from headprune_core.runs.config import config_from_dict
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study

log = logging.getLogger(__name__)

MARKER_EVERY_S = 1.0
"""How often a running job rewrites its marker with how far it is (seconds)."""
_WORKER_STUDIES: dict[tuple, Study] = {}  # per worker process: the Study (its loaded models) of one grid point
_NODE_LABEL: list[str] = []  # per worker process: its Ray node's label, asked once


def _worker_study(payload: dict) -> Study:
    plan = payload["plan"]
    memo = (plan["model"], json.dumps(plan["sources"], sort_keys=True), plan["finetuned"], payload["cache"],
            payload["device"])
    if memo not in _WORKER_STUDIES:
        _WORKER_STUDIES.clear()  # one grid point's models at a time (what the job's memory request counts)
        _WORKER_STUDIES[memo] = Study(plan["model"], store=Store(Path(payload["cache"]) / "runs"),
                                      device=payload["device"], progress=False, sources=plan["sources"],
                                      finetuned=plan["finetuned"])
    return _WORKER_STUDIES[memo]


def run_job(payload: dict) -> dict:
    """One sweep job in a Ray worker: compute (or read) ``payload``'s config through the shared cache.

    Torch gets as many threads as the task has CPUs. A marker in the sweep's ``running/`` folder says which node,
    worker and attempt hold the job, and how far it is (``step``, ``done`` of ``total``, rewritten at most every
    :data:`MARKER_EVERY_S` seconds); it goes when the job ends, so a marker left behind is an attempt whose worker
    or node died (the driver reads where it ran)."""
    os.environ["HEADPRUNE_CACHE"] = payload["cache"]  # models, registered corpora: the sweep's cache folder
    # outside Ray (tests call it directly) nothing is asked: asking would start Ray, or join the last cluster
    # 'ray start' wrote down on this machine (and wait for it, if it is gone)
    cpus = None
    if ray.is_initialized():
        try:
            cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
        except AssertionError:  # the driver itself (a test calling it with Ray up): it has no assigned CPUs
            cpus = None
    if cpus:
        torch.set_num_threads(max(1, int(cpus)))
    kind, key, attempt = payload["kind"], payload["key"], int(payload.get("attempt", 1))
    marker = Path(payload["markers"]) / f"{kind}-{key}.json"
    host, node, started = socket.gethostname(), node_label(), time.time()
    fields = {"run": payload["run"], "what": payload["what"], "kind": kind, "key": key, "pid": os.getpid(),
              "host": host, "node": node, "attempt": attempt, "started": started}
    write_file_atomic(marker, json.dumps(fields))
    try:
        computed, seconds = _compute(payload, _MarkerProgress(marker, fields))
    finally:  # an error in the job is the driver's to report; only a dead worker leaves its marker
        marker.unlink(missing_ok=True)
    # not computed: another sweep (or a dashboard) held the key's lock and this job read its entry
    return {"key": key, "kind": kind, "seconds": seconds, "computed": computed, "attempt": attempt, "host": host,
            "node": node, "pid": os.getpid(), "span": (started, time.time()), "studies": len(_WORKER_STUDIES),
            "peak_rss": _peak_rss()}


class _MarkerProgress:
    """A job's :data:`~headprune_core.base.progress.Progress` written into its marker: the step and its count,
    at most every :data:`MARKER_EVERY_S` seconds (and at the first step done), so the marker says the job is
    under way and how far."""

    def __init__(self, marker: Path, fields: dict):
        self.marker, self.fields, self.last = marker, fields, 0.0

    def __call__(self, what: str, done: int, total: int | None) -> None:
        first = done > 0 and not self.fields.get("done")
        self.fields.update(step=what, done=done, total=total)
        if first or time.monotonic() - self.last >= MARKER_EVERY_S:
            self.last = time.monotonic()
            write_file_atomic(self.marker, json.dumps(self.fields))


def _compute(payload: dict, on_progress: Progress | None = None) -> tuple[bool, float]:
    """Compute ``payload``'s job in this worker's Study, reporting to ``on_progress``: (whether it computed,
    seconds)."""
    kind, key = payload["kind"], payload["key"]
    cfg = config_from_dict(kind, payload["config"])
    study = _worker_study(payload)
    study.on_progress = on_progress  # this worker runs one job at a time
    compute = lambda: study.compute(cfg)  # noqa: E731
    if kind == "gradts":
        gts = GradTS(study, GradTSPlan.from_dict(payload["gradts"]))
        cfg, compute = gts.config(), gts.run
    if cfg.key() != key:
        raise RuntimeError(f"the worker's headprune gives {kind} key {cfg.key()} for a job the driver keyed {key}: "
                           "run the same headprune version on every node")
    before = study.store.computations
    start = time.perf_counter()
    try:
        compute()
    finally:
        study.on_progress = None
    return study.store.computations > before, time.perf_counter() - start


def node_label() -> str:
    """This process's Ray node as ``NAME (id)`` (NAME: ``ray start --node-name``, by default the node's IP; the
    id tells apart nodes that share a name), or the host name outside Ray."""
    if not _NODE_LABEL:
        if not ray.is_initialized():
            return socket.gethostname()
        node_id = ray.get_runtime_context().get_node_id()
        name = next((n.get("NodeName", "") for n in ray.nodes() if n["NodeID"] == node_id), "") or "?"
        _NODE_LABEL.append(f"{name} ({node_id[:8]})")
    return _NODE_LABEL[0]


def _peak_rss() -> int | None:
    """The most memory (bytes) this process has held so far (Linux and macOS; None elsewhere)."""
    try:
        import resource  # here: POSIX only
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _error_text(err: BaseException) -> str:
    """The last line of a worker's exception (Ray wraps it with the remote traceback)."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[-1] if lines else ''}"


CONNECT_TIMEOUT = 30.0
"""Seconds a Ray cluster's address has to answer, as Ray, before a sweep gives up naming it (Ray alone retries for
minutes when nothing answers, and ends the process when told to give up sooner)."""

_PROBE = ("import sys, ray\n"
          "ray.init(address=sys.argv[1], log_to_driver=False, logging_level='ERROR')\n"
          "print(int(ray.cluster_resources().get('CPU', 0)))\n")


def check_reachable(address: str, *, timeout: float = CONNECT_TIMEOUT) -> None:
    """Fail within ``timeout`` seconds, naming ``address`` (``HOST:PORT``), when no Ray cluster answers there:
    first whether anything takes a TCP connection (refused at once), then a Ray connection tried in a child
    process, which is stopped at the timeout. ``auto`` and ``ray://`` addresses are left to Ray."""
    if address == "auto" or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"--address {address!r}: expected HOST:PORT (e.g. 10.0.0.5:6379, from 'ray start --head')")
    hint = "start one there with 'ray start --head', or leave --address out for a local cluster"
    started = time.monotonic()
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as err:
        reason = f"no answer within {timeout:g} s" if isinstance(err, (TimeoutError, socket.timeout)) \
            else (err.strerror or str(err))
        raise RuntimeError(f"no Ray cluster at {address}: {reason} ({hint})") from None
    left = max(1.0, timeout - (time.monotonic() - started))
    try:
        probe = subprocess.run([sys.executable, "-c", _PROBE, address], capture_output=True, text=True,
                               timeout=left, env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"no Ray cluster at {address}: something takes connections there, but no Ray answered "
                           f"within {timeout:g} s ({hint})") from None
    if probe.returncode != 0:
        last = next((line for line in reversed(probe.stderr.splitlines()) if line.strip()), "")
        raise RuntimeError(f"no Ray cluster at {address}: connecting failed ({last.strip()[:200]}) ({hint})")


def init_ray(*, address: str | None = None, cpus: int | None = None, gpus: int | None = None) -> bool:
    """Connect to the cluster at ``address``, or start a local one for this run (``cpus``: default all of this
    machine's). Workers find headprune through PYTHONPATH (the same path on every node). Returns True if this
    call started Ray (and the caller should shut it down)."""
    if ray.is_initialized():
        return False
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(SOURCE_ROOT), os.environ.get("PYTHONPATH", "")) if p),
           "TOKENIZERS_PARALLELISM": "false"}
    if address:
        check_reachable(address)
        ray.init(address=address, runtime_env={"env_vars": env}, log_to_driver=False)
    else:
        # "local": a new cluster even where 'ray start' ran on this machine (else Ray would join that one)
        ray.init(address="local", num_cpus=cpus or os.cpu_count(), num_gpus=gpus, include_dashboard=False,
                 log_to_driver=False, object_store_memory=256 * 2**20, runtime_env={"env_vars": env})
    return True


def cluster_shape(where: str) -> ClusterShape:
    """The connected cluster's alive nodes as the scheduler sees them (CPUs, GPUs, memory for jobs)."""
    nodes = []
    for n in ray.nodes():
        if n.get("Alive"):
            res = n.get("Resources", {})
            nodes.append(NodeShape(f"{n.get('NodeName', '?')} ({n['NodeID'][:8]})", res.get("CPU", 0.0),
                                   res.get("GPU", 0.0), res.get("memory", 0.0)))
    return ClusterShape(where, tuple(nodes))


def shape_at(address: str) -> ClusterShape:
    """Connect to the cluster at ``address`` for a moment and return its :func:`cluster_shape` (``sweep --dry-run
    --address``)."""
    started = init_ray(address=address)
    try:
        return cluster_shape(f"the cluster at {address}")
    finally:
        if started:
            ray.shutdown()


LOST = (ray.exceptions.NodeDiedError, ray.exceptions.WorkerCrashedError, ray.exceptions.LocalRayletDiedError,
        ray.exceptions.ObjectLostError)
"""A job's attempt ended by its worker or node dying (killed, out of memory, a preempted or lost node)."""
LOST_RETRIES = 3
"""Attempts resubmitted after a lost worker or node: the job is not at fault, so it gets more than one."""
ERROR_RETRIES = 1
"""Attempts resubmitted after the job raised (a file on a shared disk that was briefly away, say)."""

HEAD_EXIT = 75
"""The exit status of a sweep whose cluster head stopped answering (EX_TEMPFAIL: rerun it later)."""


@dataclass
class SweepResult:
    jobs: int
    cached: int
    computed: int
    failed: list[JobNode]
    skipped: list[JobNode]
    seconds: float
    ray_seconds: float  # connecting to / starting Ray
    retried: list[JobNode] = field(default_factory=list)  # jobs with an attempt redone (``job.retries`` say why)
    notes: tuple[str, ...] = ()  # requests cut to fit the cluster's nodes

    @property
    def ok(self) -> bool:
        return not self.failed and not self.skipped


def run_sweep(graph: SweepGraph, *, address: str | None = None, cpus: int | None = None, gpus: int | None = None,
              on_progress: Progress | None = None) -> SweepResult:
    """Run every job of ``graph`` not in the cache on Ray (see the module docstring).

    Each job asks Ray for its CPUs, GPUs and memory (:meth:`SweepGraph.request`, cut to the largest node that has
    the CPUs and GPUs). A job whose worker or node dies is resubmitted (up to :data:`LOST_RETRIES` times) unless
    its entry landed first; one that raises is resubmitted once. ``on_progress(what, finished, jobs)`` is called
    whenever a job is submitted (again: ``what`` says why, :func:`job_label`), finishes, fails or is skipped.
    Ctrl-C cancels the running jobs; finished entries stay and a rerun resumes from them. With ``address``, a
    head that stops answering ends the process with :data:`HEAD_EXIT` and a line saying to rerun (Ray would end
    it without a word).
    """
    start = time.perf_counter()
    record = SweepRecord(graph, uuid.uuid4().hex[:12])
    if not any(n.state == "todo" for n in graph.jobs.values()):  # all cached: no cluster needed
        record.state = "done"
        record.write(force=True)
        return _result(graph, 0, start, 0.0)
    started_ray = init_ray(address=address, cpus=cpus, gpus=gpus)
    ray_seconds = time.perf_counter() - start
    runner = _Runner(graph, record, on_progress,
                     cluster_shape(f"the cluster at {address}" if address else "this machine"))
    watch = _HeadWatch(address, record) if address else None
    try:
        runner.loop()
        record.state = "failed" if any(n.state in ("failed", "skipped") for n in graph.jobs.values()) else "done"
    except BaseException:
        record.state = "interrupted"
        for ref in runner.running:
            ray.cancel(ref, force=True)
        raise
    finally:
        if watch:
            watch.stop()
        record.write(force=True)
        if started_ray:
            ray.shutdown()
    return _result(graph, runner.computed, start, ray_seconds, tuple(runner.notes))


class _Runner:
    """Submits the graph's ready jobs, collects what they return and resubmits lost or failed attempts."""

    def __init__(self, graph: SweepGraph, record: SweepRecord, on_progress: Progress | None, shape: ClusterShape):
        self.graph, self.record, self.on_progress, self.shape = graph, record, on_progress, shape
        self.gpus = shape.total("gpus")
        self.remote = ray.remote(run_job)
        self.running: dict[Any, JobNode] = {}
        self.computed = 0
        self.notes: list[str] = []
        for job in graph.jobs.values():  # before any work: a job no node can take would wait forever
            if job.state == "todo":
                shape.fit(graph.request(job, self.gpus), job.cfg.kind)

    def loop(self) -> None:
        self.record.write(force=True)
        while True:
            while ready := self.graph.ready():  # again: a job found cached here makes the jobs that need it ready
                for job in ready:
                    if self.graph.store.has(job.cfg):  # another sweep or a dashboard finished it meanwhile
                        job.state = "cached"
                        self.event(job, self.graph)
                    else:
                        self.submit(job)
            self.record.write()
            if not self.running:
                return
            done, _ = ray.wait(list(self.running), num_returns=1, timeout=1.0)
            for ref in done:
                self.collect(ref)

    def event(self, job: JobNode, graph: SweepGraph) -> None:
        """Report ``job``'s new state: what it is, the jobs finished and all of them."""
        report(self.on_progress, job_label(job), graph.finished(), len(graph.jobs))

    def submit(self, job: JobNode) -> None:
        request, note = self.shape.fit(self.graph.request(job, self.gpus), job.cfg.kind)
        if note and note not in self.notes:
            log.warning("%s", note)
            self.notes.append(note)
        job.attempts += 1
        options = {"num_cpus": request["num_cpus"], "num_gpus": request["num_gpus"]}
        if request["memory"]:
            options["memory"] = int(request["memory"])
        ref = self.remote.options(max_retries=0, retry_exceptions=False, name=job.what[:100],
                                  **options).remote(job_payload(self.graph, job, self.record))
        job.state = "running"
        self.running[ref] = job
        self.event(job, self.graph)

    def collect(self, ref) -> None:
        job = self.running.pop(ref)
        try:
            res = ray.get(ref)
        except Exception as err:  # noqa: BLE001 -- any failure of a job is retried or reported, the others go on
            self.attempt_failed(job, err)
            return
        job.state, job.seconds, job.host, job.ray_node = "done", res["seconds"], res["host"], res["node"]
        job.span = tuple(res["span"])
        job.computed = bool(res["computed"])
        self.computed += job.computed
        self.event(job, self.graph)

    def attempt_failed(self, job: JobNode, err: BaseException) -> None:
        """Resubmit ``node`` after a lost or failed attempt (saying where and why), or report it failed; a job
        whose entry landed before its worker was lost is done, never computed again."""
        lost = isinstance(err, LOST)
        where = _left_marker(self.record.folder, job).get("node") or "an unknown node"
        reason = (("lost with its node" if isinstance(err, ray.exceptions.NodeDiedError) else "its worker died")
                  if lost else _error_text(err))
        decision = retry_decision(lost=lost, landed=lost and self.graph.store.has(job.cfg), retries=job.retries)
        if decision == "done":
            job.state, job.computed, job.ray_node = "done", True, where
            self.computed += 1
            log.warning("sweep job %s: %s on %s after its entry landed; not computed again", job.what, reason,
                        where)
            self.event(job, self.graph)
            return
        if decision == "retry":
            job.retries.append({"attempt": job.attempts, "node": where, "reason": reason, "lost": lost})
            log.warning("sweep job %s: attempt %d %s on %s; retrying", job.what, job.attempts, reason, where)
            self.submit(job)
            return
        _failed(self.graph, job, err, self.event)


def job_label(job: JobNode) -> str:
    """A job's state in a line: ``running: what``, or ``retrying what (attempt 2): attempt 1 lost ...``."""
    if job.state == "running" and job.retries and job.retries[-1]["attempt"] == job.attempts - 1:
        return f"retrying {job.what} (attempt {job.attempts}): {retry_text(job.retries[-1])}"
    return f"{job.state}: {job.what}"


def retry_text(retry: dict) -> str:
    """One retry of a job (an entry of ``JobNode.retries``) in words."""
    return f"attempt {retry['attempt']} {retry['reason']} on {retry['node']}"


def retry_decision(*, lost: bool, landed: bool, retries: list[dict]) -> str:
    """What a sweep does after a job's attempt did not finish: ``"done"`` when the attempt was lost (its worker or
    node died) after its entry landed in the cache; ``"retry"`` while the job has had fewer than
    :data:`LOST_RETRIES` lost attempts (a lost one) or :data:`ERROR_RETRIES` failed ones (an error), counted
    apart in ``retries`` (each ``{"lost": bool, ...}``); else ``"failed"``."""
    if lost and landed:
        return "done"
    tries = sum(r["lost"] == lost for r in retries)
    return "retry" if tries < (LOST_RETRIES if lost else ERROR_RETRIES) else "failed"


class _HeadWatch(threading.Thread):
    """Says what to do when the cluster's head stops answering. Ray ends a driver whose head is gone for
    ``gcs_rpc_server_reconnect_timeout_s`` (60 s by default; a head restarted sooner with GCS fault tolerance is
    waited for), without a word; a few seconds before that, this marks the sweep interrupted, says that a rerun
    of the same command resumes from the cache, and exits with :data:`HEAD_EXIT`."""

    def __init__(self, address: str, record: SweepRecord):
        super().__init__(daemon=True, name="sweep-head-watch")
        self.address, self.record = address, record
        host, _, port = ray.get_runtime_context().gcs_address.rpartition(":")
        self.gcs = (host.strip("[]"), int(port))
        limit = float(os.environ.get("RAY_gcs_rpc_server_reconnect_timeout_s", 60))  # noqa: SIM112 -- Ray's name
        self.grace = max(1.0, limit - 3.0)
        self.stopped = threading.Event()
        self.start()

    def run(self) -> None:
        lost_since = None
        while not self.stopped.wait(1.0):
            try:
                with socket.create_connection(self.gcs, timeout=2.0):
                    lost_since = None
            except OSError:
                lost_since = lost_since or time.monotonic()
                if time.monotonic() - lost_since >= self.grace:
                    self.give_up(time.monotonic() - lost_since)

    def give_up(self, seconds: float) -> None:
        counts = self.record.graph.counts()
        self.record.state = "interrupted"
        self.record.write(force=True)
        print(f"\nsweep {self.record.graph.spec.name}: the Ray head at {self.address} has not answered for "
              f"{seconds:.0f} s, so this run stops here ({counts['done'] + counts['cached']} of "
              f"{len(self.record.graph.jobs)} jobs are in the cache, {counts['running']} were running). When the "
              "cluster is back ('ray start --head' there, then 'ray start --address' on each node), rerun the same "
              "command: it resumes from the cache.", file=sys.stderr, flush=True)
        os._exit(HEAD_EXIT)

    def stop(self) -> None:
        self.stopped.set()


def job_payload(graph: SweepGraph, job: JobNode, record: SweepRecord) -> dict:
    """What a worker needs to compute ``node``: its configuration, its grid point's model and data, the cache."""
    plan = graph.plans[job.plan]
    payload = {"kind": job.cfg.kind, "key": job.cfg.key(), "config": job.cfg.to_dict(), "what": job.what,
               "plan": {"model": plan.model, "sources": plan.sources, "finetuned": plan.finetuned},
               "cache": str(graph.store.root.parent), "device": graph.device, "run": record.run,
               "markers": str(record.folder / "running"), "attempt": job.attempts}
    if job.cfg.kind == "gradts":
        payload["gradts"] = graph.gradts_plan(job).to_dict()
    return payload


def _failed(graph: SweepGraph, job: JobNode, err: BaseException,
            event: Callable[[JobNode, SweepGraph], None]) -> None:
    """Mark ``node`` failed (with the worker's error) and every job that needs it skipped."""
    job.state, job.error = "failed", _error_text(err)
    log.error("sweep job failed after %d attempt(s): %s: %s", job.attempts, job.what, job.error)
    event(job, graph)
    for dep in graph.dependents(job.id):
        if dep.state == "todo":
            dep.state, dep.error = "skipped", f"needs '{job.what}', which failed"
            event(dep, graph)


def _result(graph: SweepGraph, computed: int, start: float, ray_seconds: float,
            notes: tuple[str, ...] = ()) -> SweepResult:
    nodes = list(graph.jobs.values())
    return SweepResult(jobs=len(nodes), cached=sum(n.state == "cached" for n in nodes), computed=computed,
                       failed=[n for n in nodes if n.state == "failed"],
                       skipped=[n for n in nodes if n.state == "skipped"],
                       seconds=time.perf_counter() - start, ray_seconds=ray_seconds,
                       retried=[n for n in nodes if n.retries], notes=notes)


def _left_marker(folder: Path, job: JobNode) -> dict:
    """The marker a lost attempt of ``node`` left (removed here): where it ran; {} when there is none."""
    marker = folder / "running" / f"{job.cfg.kind}-{job.cfg.key()}.json"
    try:
        found = json.loads(marker.read_text(encoding="utf-8"))
        marker.unlink(missing_ok=True)
        return found if isinstance(found, dict) else {}
    except (OSError, ValueError):
        return {}
