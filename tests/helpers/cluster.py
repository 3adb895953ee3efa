"""What the sweep tests on Ray share: a cluster of several nodes on this one machine (a head and worker nodes,
each with its own raylet, CPUs and memory for jobs: ``ray.cluster_utils.Cluster``, Ray's own tool for this); a
sampler of each node's memory from /proc; a cache folder every node sees; a watcher that acts on a running job's
marker; the sequential run of a spec and equal caches.

Nodes are simulated: they share this host, its disk and its two cores, so times are not a real cluster's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from headprune_core.base.artifacts import Weights
from headprune_core.plans.plan import run_plan
from headprune_core.plans.sweep import SweepSpec
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study

GB = 2**30


class SimulatedCluster:
    """A head with no CPUs (it only schedules, as a login node would) and worker nodes ``{name: (cpus, memory
    in GB)}``; ``address`` is what ``sweep --address`` takes."""

    def __init__(self, workers: dict[str, tuple[int, float]]):
        from ray.cluster_utils import Cluster
        self.cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "node_name": "head", "include_dashboard": False, "object_store_memory": 100 * 2**20})
        self.nodes = {name: self.cluster.add_node(num_cpus=cpus, memory=int(memory * GB), node_name=name,
                                                  object_store_memory=100 * 2**20)
                      for name, (cpus, memory) in workers.items()}
        self.cluster.wait_for_nodes()
        self.address = self.cluster.address

    def raylet_pid(self, name: str) -> int:
        return _raylet_pid(self.nodes[name])

    def label(self, name: str) -> str:
        """The node as the sweep names it: ``NAME (id)``."""
        return f"{name} ({self.nodes[name].node_id[:8]})"

    def kill_node(self, name: str) -> None:
        """The node dies at once (a crash or a preemption): its raylet and every process under it (its workers)
        are killed together. Killing the raylet alone would leave a worker to finish its job and hand the result to
        the driver, which talks to it directly, before it noticed its raylet gone (seen on a loaded CI)."""
        node = self.nodes.pop(name)
        _kill_tree(node)
        self.cluster.remove_node(node, allow_graceful=False)  # Ray's Cluster forgets it (and its other processes)

    def kill_head(self) -> None:
        """The head dies at once (its GCS and raylet killed); the worker nodes lose it."""
        self.cluster.head_node.kill_all_processes(check_alive=False, allow_graceful=False)

    def shutdown(self) -> None:
        from ray._private.utils import get_ray_address_file, read_ray_address
        for node in [*self.nodes.values(), self.cluster.head_node]:
            with contextlib.suppress(Exception):  # already gone: killed by the test, or with its head
                _kill_tree(node)  # no worker left to land an entry after the cluster is gone
            with contextlib.suppress(Exception):
                self.cluster.remove_node(node, allow_graceful=False)
        self.nodes.clear()
        # the head wrote its address where a bare ray.init() looks for a cluster to join: not a gone one
        if read_ray_address() == self.address:
            Path(get_ray_address_file(None)).unlink(missing_ok=True)


def _raylet_pid(node) -> int:
    return node.all_processes["raylet"][0].process.pid


def _kill_tree(node) -> None:
    """SIGKILL a Ray node's raylet and every process under it (its workers and agents), the raylet first, so
    that no one reports a worker's death alone (a raylet already dead has left its workers to init: not found)."""
    raylet = _raylet_pid(node)
    table = _proc_table()
    tree, grew = {raylet}, True
    while grew:  # every descendant of the raylet
        more = {pid for pid, (ppid, _, _) in table.items() if ppid in tree} - tree
        tree |= more
        grew = bool(more)
    for pid in [raylet, *(tree - {raylet})]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _proc_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, resident bytes, command line) of every process we can read."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            status = (entry / "status").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        rss = next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")), 0)
        out[int(entry.name)] = (ppid, rss, cmd)
    return out


def _pss(pid: int, rss: int) -> int:
    """``pid``'s proportional share of its resident pages (a page shared by n processes counts 1/n to each), so
    that a node's processes add up to the memory they hold together; ``rss`` if it cannot be read."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return rss
    return next((int(line.split()[1]) * 1024 for line in rollup.splitlines() if line.startswith("Pss:")), rss)


class NodeMemory(threading.Thread):
    """Samples every ``period`` s, per worker node, the memory of the Ray workers its raylet started (their
    processes are named ``ray::...``): ``peak[name]`` the most they held together (proportional shares, so that the
    libraries every worker maps count once), ``worker_peak[name]`` the most one of them held resident (all its
    pages, shared or not: the larger figure), ``workers[name]`` the most of them alive at once."""

    def __init__(self, cluster: SimulatedCluster, period: float = 0.2):
        super().__init__(daemon=True)
        self.raylets = {name: cluster.raylet_pid(name) for name in cluster.nodes}
        self.period = period
        self.peak = dict.fromkeys(self.raylets, 0)
        self.worker_peak = dict.fromkeys(self.raylets, 0)
        self.workers = dict.fromkeys(self.raylets, 0)
        self.stopped = threading.Event()
        self.start()

    def run(self) -> None:
        while not self.stopped.wait(self.period):
            table = _proc_table()
            for name, raylet in self.raylets.items():
                mine = {pid: r for pid, (ppid, r, cmd) in table.items() if ppid == raylet and cmd.startswith("ray::")}
                rss = list(mine.values())
                self.peak[name] = max(self.peak[name], sum(_pss(pid, r) for pid, r in mine.items()))
                self.worker_peak[name] = max([self.worker_peak[name], *rss])
                self.workers[name] = max(self.workers[name], len(rss))

    def stop(self) -> dict:
        self.stopped.set()
        self.join()
        return {name: {"workers_peak_gb": round(self.peak[name] / GB, 3),
                       "one_worker_peak_gb": round(self.worker_peak[name] / GB, 3),
                       "workers_at_once": self.workers[name]} for name in self.raylets}


def shared_cache(root: Path, dest: Path) -> Path:
    """A cache folder every node would mount at one path: ``root``'s models and corpora, no results."""
    dest.mkdir()
    for part in ("models", "corpora"):
        shutil.copytree(root / part, dest / part)
    return dest


def _same(a, b) -> bool:
    if isinstance(a, Weights):
        return set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def assert_same_entries(mine: Store, theirs: Store) -> None:
    """Both stores hold the same keys, and each entry's artifacts are equal (less wall times and devices: a
    training log's, a score's ``seconds``)."""
    assert {(e.kind, e.key) for e in mine.entries()} == {(e.kind, e.key) for e in theirs.entries()}
    for e in theirs.entries():
        a_all, b_all = mine.read(mine.find(e.key)), theirs.read(e)
        assert set(a_all) == set(b_all)
        for name in b_all:
            if name == "log":  # a training log holds its wall time and device
                continue
            a, b = a_all[name], b_all[name]
            if name == "meta":  # a score's metadata holds its wall time
                a, b = {k: v for k, v in a.items() if k != "seconds"}, {k: v for k, v in b.items() if k != "seconds"}
            assert _same(a, b), (e.kind, name)


def on_marker(markers: Path, pick: Callable[[dict], bool], act: Callable[[dict], None], *,
              timeout: float = 300) -> tuple[threading.Thread, dict]:
    """Start a thread that watches a sweep's ``running/`` markers for a fine-tune's that ``pick`` takes, and then
    calls ``act`` on it once; returns the thread and the marker it acted on (filled in then)."""
    seen: dict = {}

    def watch() -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for f in markers.glob("finetune-*.json") if markers.is_dir() else []:
                try:
                    m = json.loads(f.read_text())
                except (OSError, ValueError):
                    continue
                if pick(m):
                    act(m)
                    seen.update(m)
                    return
            time.sleep(0.02)

    thread = threading.Thread(target=watch)
    thread.start()
    return thread, seen


def sequential_store(spec: SweepSpec, folder: Path) -> Store:
    """``spec``'s plans run one after the other in this process, at one torch thread (as each one-CPU Ray job)."""
    store = Store(folder)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for plan in spec.plans():
            run_plan(Study(plan.model, store=store, progress=False), plan)
    finally:
        torch.set_num_threads(threads)
    return store
