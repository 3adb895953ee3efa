"""Sweeps on a real local Ray cluster (2 CPUs) with tiny models: every job computed once and equal to the
sequential study's, a rerun computes nothing, a killed worker's job is redone, and a job that keeps failing is
reported (with the jobs that needed it) while the others finish."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
import torch

from headprune_core.base.artifacts import Weights
from headprune_core.plans.plan import run_plan
from headprune_core.plans.progress import list_sweeps
from headprune_core.plans.sweep import SweepSpec, build_graph
from headprune_core.plans.sweep_ray import run_sweep
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study

pytestmark = pytest.mark.slow


def _spec(model: str, **over) -> SweepSpec:
    spec = {"name": "t", "models": [model], "tasks": ["pos"], "langs": ["en", "de"], "strategies": ["importance"],
            "random_seeds": [0, 1], "prune_levels": [0.25, 0.5], "score_sentences": 40, "eval_sentences": 40,
            "train": {"max_train_sentences": 160, "epochs": 3.0, "lr": 1e-3}}
    return SweepSpec.from_dict({**spec, **over})


@pytest.fixture(scope="module")
def ray_cluster(tiny_cache):
    """A local Ray cluster with 2 CPUs for the whole module (started once: about 5 s)."""
    import ray

    from headprune_core.plans.sweep_ray import init_ray
    assert init_ray(cpus=2)
    assert ray.cluster_resources()["CPU"] == 2
    yield ray
    ray.shutdown()


def _same(a, b) -> bool:
    if isinstance(a, Weights):
        return set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def test_sweep_on_ray_equals_the_sequential_study_and_a_rerun_computes_nothing(tiny_cache, ray_cluster, tmp_path):
    root, model = tiny_cache
    spec = _spec(model, seeds=[13, 14], refinetune={"max_k": 2})
    graph = build_graph(spec)
    events = []
    res = run_sweep(graph, on_event=lambda node, g: events.append((node.state, node.id)))
    assert res.ok and res.cached == 0
    assert res.computed == res.jobs == len(graph.nodes)  # every job computed, once
    assert sum(state == "running" for state, _ in events) == res.jobs
    assert all(n.attempts == 1 and n.state == "done" for n in graph.nodes.values())
    # two seeds x (1 + 2 re-fine-tunes) fine-tunes; the re-fine-tunings' parts were added once ranked
    assert sum(n.cfg.kind == "finetune" for n in graph.nodes.values()) == 6

    # the sequential study (one thread, as each Ray task here) in another store: the same entries, equal
    torch_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        seq = Store(tmp_path / "seq")
        for plan in spec.plans():
            run_plan(Study(model, store=seq, progress=False), plan)
    finally:
        torch.set_num_threads(torch_threads)
    ray_store = graph.store
    ray_keys = {(e.kind, e.key) for e in ray_store.entries()}
    assert ray_keys == {(e.kind, e.key) for e in seq.entries()}
    # every entry is a job of the graph (each level's test evaluations are parts of their own)
    assert ray_keys == {tuple(i.split("/")) for i in graph.nodes}
    for e in seq.entries():
        mine, theirs = ray_store.read(ray_store.find(e.key)), seq.read(e)
        assert set(mine) == set(theirs)
        for name in theirs:
            if name == "log":  # a training log holds its wall time and device
                continue
            a, b = mine[name], theirs[name]
            if name == "meta":  # a score's metadata holds its wall time
                a, b = {k: v for k, v in a.items() if k != "seconds"}, {k: v for k, v in b.items() if k != "seconds"}
            assert _same(a, b), (e.kind, name)

    (rec,) = [r for r in list_sweeps() if r["name"] == "t"]
    assert rec["state"] == "done" and rec["counts"]["done"] == res.jobs and not rec["running_now"]

    again = build_graph(spec)
    events.clear()
    res2 = run_sweep(again, on_event=lambda node, g: events.append((node.state, node.id)))
    assert res2.ok and res2.computed == 0 and res2.cached == res2.jobs == res.jobs and not events


def test_killed_worker_is_redone_and_a_failing_job_is_reported(tiny_cache, ray_cluster, tmp_path):
    root, model = tiny_cache
    from tests.helpers.fixture_cache import write_model
    broken = write_model(tmp_path / "broken-bert", seed=5)  # other weights (a copy would share every key)
    spec = _spec(model, name="k", models=[model, str(broken)], seeds=[21], langs=["en"])
    graph = build_graph(spec)  # keys and fingerprints of both models are taken here ...
    (broken / "model.safetensors").unlink()  # ... then one model's weights go: its fine-tune cannot load them
    markers = graph.store.root.parent / "sweeps" / "k" / "running"
    killed = {}

    def kill_first_finetune():
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            for f in markers.glob("finetune-*.json") if markers.is_dir() else []:
                try:
                    import json
                    m = json.loads(f.read_text())
                except (OSError, ValueError):
                    continue
                if m["what"].startswith("fine-tune") and "broken" not in m["what"] and m["attempt"] == 1:
                    os.kill(m["pid"], signal.SIGKILL)
                    killed.update(m)
                    return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_first_finetune)
    killer.start()
    res = run_sweep(graph)
    killer.join()
    assert killed, "no fine-tune was seen running"
    good = [n for n in graph.nodes.values() if "broken" not in n.what]
    bad = [n for n in graph.nodes.values() if "broken" in n.what]
    assert bad and good
    victim = graph.nodes[f"finetune/{killed['key']}"]
    assert victim.state == "done" and victim.attempts == 2 and victim.computed
    assert all(n.state == "done" for n in good)  # the others went on
    (failed,) = res.failed
    assert failed.cfg.kind == "finetune" and failed.attempts == 2  # retried once, then reported
    assert "model.safetensors" in failed.error or "weights" in failed.error.lower(), failed.error
    assert {n.id for n in res.skipped} == {n.id for n in bad if n is not failed}
    assert all(f"needs '{failed.what}'" in n.error for n in res.skipped)
    (rec,) = [r for r in list_sweeps() if r["name"] == "k"]
    assert rec["state"] == "failed" and rec["counts"]["failed"] == 1
    assert Store(graph.store.root).has(victim.cfg)


def test_jobs_after_one_found_cached_are_still_run(tiny_cache, ray_cluster, tmp_path):
    """A fine-tune another sweep finished after this sweep's graph was built is found cached at submit time, with
    nothing else running: the jobs that need it become ready then, and are run (they were left 'todo' and the
    sweep said done: two users' overlapping sweeps on one cluster showed it)."""
    from headprune_core.plans.sweep_ray import run_job
    root, model = tiny_cache
    spec = _spec(model, name="late", seeds=[31], langs=["en"], random_seeds=[0], prune_levels=[0.5])
    graph = build_graph(spec)
    (finetune,) = [n for n in graph.nodes.values() if n.cfg.kind == "finetune"]
    assert all(n.state == "todo" for n in graph.nodes.values()) and graph.dependents(finetune.id)
    run_job({"kind": "finetune", "key": finetune.cfg.key(), "config": finetune.cfg.to_dict(), "what": finetune.what,
             "plan": {"model": model, "sources": {}, "finetuned": False}, "cache": str(graph.store.root.parent),
             "device": "cpu", "run": "other", "markers": str(tmp_path / "markers")})  # the other user's sweep
    res = run_sweep(graph)
    assert res.ok and res.cached == 1 and res.computed == res.jobs - 1
    assert graph.counts()["todo"] == 0 and all(n.state == "done" for n in graph.nodes.values() if n is not finetune)
    (rec,) = [r for r in list_sweeps() if r["name"] == "late"]
    assert rec["counts"]["done"] + rec["counts"]["cached"] == res.jobs
