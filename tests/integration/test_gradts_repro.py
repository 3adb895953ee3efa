"""A GradTS check is a function of its cache key (issue 33, item 8): computed twice from scratch, in fresh
processes that differ in everything a key leaves out (the hash seed, torch's CPU threads, a Ray sweep worker or
the command line), every entry it writes is the same bit for bit; only wall times differ.

Torch's threads were what moved the Findings' GradTS cards between reruns: reductions split their sums by
thread, and the bandit and the selections' thresholds turn last-bit differences into other auxiliary sets. Each
check here runs its own fresh cache on the tiny fixture model (about 10 s a process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from headprune_core.multitask.plan import GradTSPlan
from headprune_core.runs.store import ENTRY
from tests.helpers.fixture_cache import build_fixture_cache

pytestmark = [pytest.mark.slow, pytest.mark.parallel]

REPO = Path(__file__).resolve().parents[2]
TIMES = {"seconds", "train_seconds", "dev_seconds", "costs"}
"""Result fields that are wall times (of this machine at that moment): the only ones allowed to differ."""

# one process's computation: argv = plan JSON, store folder, torch threads before the check starts
CHILD = """
import json, sys
import torch
torch.set_num_threads(int(sys.argv[3]))
from headprune_core.multitask.gradts import GradTS
from headprune_core.multitask.plan import GradTSPlan
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study
plan = GradTSPlan.from_dict(json.loads(sys.argv[1]))
ambient = torch.get_num_threads()
GradTS(Study(plan.model, store=Store(sys.argv[2]), device="cpu", progress=False), plan).run()
print(json.dumps({"ambient": ambient, "after": torch.get_num_threads()}))
"""


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory):
    """Tiny model + generated pos/name corpora (en de es fr), no results."""
    return build_fixture_cache(tmp_path_factory.mktemp("gradts-repro"), with_runs=False)


def small_plan(model: str) -> GradTSPlan:
    """Every part of a check: maps, thres (every unit), trial, fg (examples above tau 0), the bandit, all and
    random sets, two training seeds."""
    return GradTSPlan(name="repro", description="reproducibility check", model=model,
                      units=("pos/en", "name/en", "pos/es"), primaries=("name/en",),
                      train={"max_train_sentences": 48, "epochs": 1.0, "lr": 3e-3, "batch_size": 16,
                             "freeze_embeddings": False},
                      score_sentences=20, eval_sentences=20, max_trial=2, threshold=-1.0, fg_threshold=0.0,
                      train_seeds=(13, 14), random_seeds=(0, 1),
                      bandit={"rounds": 6, "round_steps": 2, "dev_sentences": 10})


def compute_in_process(root: Path, plan: GradTSPlan, store: Path, *, hash_seed: int, threads: int) -> dict:
    """The check computed by a fresh Python process (what ``headprune study`` or ``headprune gradts`` does)."""
    plan_json = json.dumps(json.loads(json.dumps(asdict(plan))))  # tuples as lists, as a plan file has them
    env = {**os.environ, "HEADPRUNE_CACHE": str(root), "PYTHONHASHSEED": str(hash_seed)}
    out = subprocess.run([sys.executable, "-c", CHILD, plan_json, str(store), str(threads)], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def without_times(value):
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def entries(store: Path) -> dict[str, Path]:
    return {f"{p.parent.name}/{p.name}": p for p in store.glob("*/*") if p.is_dir() and not p.name.startswith(".")}


def differences(a: Path, b: Path) -> list[str]:
    """What differs between two stores: entries only in one, and artifacts not equal (arrays and weights byte
    for byte, JSON after dropping wall times)."""
    ea, eb = entries(a), entries(b)
    out = [f"only in {a.name}: {k}" for k in sorted(set(ea) - set(eb))]
    out += [f"only in {b.name}: {k}" for k in sorted(set(eb) - set(ea))]
    for key in sorted(set(ea) & set(eb)):
        names = {f.name for f in ea[key].iterdir()} | {f.name for f in eb[key].iterdir()}
        for name in sorted(names - {ENTRY}):
            fa, fb = ea[key] / name, eb[key] / name
            if not (fa.is_file() and fb.is_file()):
                out.append(f"{key}/{name}: in one entry only")
            elif name.endswith(".json"):
                if without_times(json.loads(fa.read_text())) != without_times(json.loads(fb.read_text())):
                    out.append(f"{key}/{name}")
            elif fa.read_bytes() != fb.read_bytes():
                out.append(f"{key}/{name}")
    return out


def recorded_threads(store: Path) -> set:
    return {json.loads((p / ENTRY).read_text())["threads"] for p in entries(store).values()}


def test_two_fresh_processes_write_the_same_entries(fixture_root):
    root = fixture_root["root"]
    plan = small_plan(fixture_root["model"])
    a = compute_in_process(root, plan, root / "runs-a", hash_seed=1, threads=1)
    b = compute_in_process(root, plan, root / "runs-b", hash_seed=2, threads=2)
    assert (a["ambient"], b["ambient"]) == (1, 2)  # really two thread counts around the check
    assert (a["after"], b["after"]) == (1, 2)  # and the caller's count is back afterwards
    kinds = {k.split("/")[0] for k in entries(root / "runs-a")}
    assert kinds == {"finetune", "score", "eval", "instances", "bandit", "gradts"}  # every kind of part
    assert differences(root / "runs-a", root / "runs-b") == []
    assert recorded_threads(root / "runs-a") == recorded_threads(root / "runs-b") == {1}


def test_a_sweep_worker_writes_what_the_command_line_writes(fixture_root, monkeypatch):
    """The check as a job of ``headprune sweep`` (a Ray worker, one torch thread) and computed in one process
    on two threads (``headprune study`` on a 2-core machine): the same entries."""
    pytest.importorskip("ray")
    from headprune_core.plans.sweep import SweepSpec, build_graph
    from headprune_core.plans.sweep_ray import run_sweep

    root, model = fixture_root["root"], fixture_root["model"]
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))  # the sweep's workers use <cache>/runs
    plan = small_plan(model)
    spec = SweepSpec.from_dict({"name": "repro", "models": [model], "tasks": ["pos"], "langs": ["en"],
                                "kinds": ["gradts"], "gradts": [json.loads(json.dumps(asdict(plan)))]})
    graph = build_graph(spec)
    assert [n.cfg.kind for n in graph.jobs.values()] == ["gradts"]
    res = run_sweep(graph, cpus=2)
    assert res.ok and res.computed == 1, [n.error for n in res.failed]
    compute_in_process(root, plan, root / "runs-c", hash_seed=3, threads=2)
    assert differences(root / "runs", root / "runs-c") == []
