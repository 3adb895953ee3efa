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
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
import torch

from headprune_core.base.cache import SOURCE_ROOT
from headprune_core.base.files import write_file_atomic
from headprune_core.multitask.gradts import GradTS
from headprune_core.multitask.plan import GradTSPlan
from headprune_core.plans.progress import Progress
from headprune_core.plans.sweep import Node, SweepGraph, job_resources
from headprune_core.runs.config import config_from_dict
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study

log = logging.getLogger(__name__)

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
    os.environ["HEADPRUNE_CACHE"] = payload["cache"]  # models, registered corpora: the sweep's cache folder
    cpus = None
    if ray.is_initialized():  # outside Ray (tests call it directly), asking would start or join a cluster
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
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
    progress = Progress(graph, run)
    if not any(n.state == "todo" for n in graph.nodes.values()):  # all cached: no cluster needed
        progress.state = "done"
        progress.write(force=True)
        return _result(graph, 0, start, 0.0)
    started_ray = init_ray(address=address, cpus=cpus, gpus=gpus)
    ray_seconds = time.perf_counter() - start
    remote = ray.remote(run_job)
    resources = job_resources(graph.spec, ray.cluster_resources().get("GPU", 0.0))
    running: dict[Any, Node] = {}
    computed = 0
    event = on_event or (lambda node, g: None)
    try:
        progress.write(force=True)
        while True:
            while ready := graph.ready():  # again: a job found cached here makes the jobs that need it ready
                for node in ready:
                    if graph.store.has(node.cfg):  # another sweep or a dashboard finished it meanwhile
                        node.state = "cached"
                    else:
                        ref = remote.options(max_retries=1, retry_exceptions=True, name=node.what[:100],
                                             **resources[node.cfg.kind]).remote(_payload(graph, node, progress))
                        node.state = "running"
                        running[ref] = node
                    event(node, graph)
            progress.write()
            if not running:
                break
            done, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for ref in done:
                node = running.pop(ref)
                try:
                    res = ray.get(ref)
                except Exception as err:  # noqa: BLE001 -- any failure of a job is reported, the others go on
                    _failed(graph, node, err, progress, event)
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
    return _result(graph, computed, start, ray_seconds)


def _payload(graph: SweepGraph, node: Node, progress: Progress) -> dict:
    """What a worker needs to compute ``node``: its configuration, its grid point's model and data, the cache."""
    plan = graph.plans[node.plan]
    payload = {"kind": node.cfg.kind, "key": node.cfg.key(), "config": node.cfg.to_dict(), "what": node.what,
               "plan": {"model": plan.model, "sources": plan.sources, "finetuned": plan.finetuned},
               "cache": str(graph.store.root.parent), "device": graph.device, "run": progress.run,
               "markers": str(progress.folder / "running")}
    if node.cfg.kind == "gradts":
        payload["gradts"] = graph.gradts_plan(node).to_dict()
    return payload


def _failed(graph: SweepGraph, node: Node, err: BaseException, progress: Progress,
            event: Callable[[Node, SweepGraph], None]) -> None:
    """Mark ``node`` failed (with the worker's error and its attempts) and every job that needs it skipped."""
    node.state, node.error = "failed", _error_text(err)
    node.attempts = _attempts(progress.folder, node, progress.run)
    log.error("sweep job failed after %d attempt(s): %s: %s", node.attempts, node.what, node.error)
    event(node, graph)
    for dep in graph.dependents(node.id):
        if dep.state == "todo":
            dep.state, dep.error = "skipped", f"needs '{node.what}', which failed"
            event(dep, graph)


def _result(graph: SweepGraph, computed: int, start: float, ray_seconds: float) -> SweepResult:
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
