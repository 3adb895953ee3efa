"""Sweep progress on disk: each sweep writes ``<cache>/sweeps/<name>/progress.json`` (its jobs and their states)
and a marker per running job in ``running/``; the CLI (``sweep --running``), the Runs page and the Overview read
them from here.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING

from headprune_core.base.cache import cache_root
from headprune_core.base.files import pid_alive, write_file_atomic
from headprune_core.plans.sweep import FINISHED

if TYPE_CHECKING:  # the graph whose progress is written (plans.sweep imports nothing from here)
    from headprune_core.plans.sweep import SweepGraph


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
    finished = sum(counts.get(s, 0) for s in FINISHED)
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
    return pid_alive(driver["pid"])


class SweepRecord:
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
        # node: the Ray node of its last attempt; retries: {attempt, node, reason, lost} of each attempt redone
        jobs = [{"what": n.what, "kind": n.cfg.kind, "key": n.id.partition("/")[2], "state": n.state,
                 "seconds": n.seconds, "attempts": n.attempts, "host": n.host, "node": n.ray_node,
                 "computed": n.computed, "span": n.span, "retries": n.retries, "error": n.error}
                for n in g.jobs.values()]
        rec = {"name": g.spec.name, "run": self.run, "state": self.state, "started": self.started,
               "updated": now, "counts": g.counts(), "jobs": jobs, "spec": g.spec.to_dict(),
               "driver": {"host": socket.gethostname(), "pid": os.getpid()}}
        write_file_atomic(self.folder / "progress.json", json.dumps(rec, indent=1))
