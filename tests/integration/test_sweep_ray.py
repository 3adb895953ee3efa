"""Sweeps on a real local Ray cluster (2 CPUs) with tiny models: every job computed once and equal to the
sequential study's, a rerun computes nothing, a killed worker's job is redone, and a job that keeps failing is
reported (with the jobs that needed it) while the others finish."""

from __future__ import annotations

import os
import signal

import pytest

from headprune_core.plans.sweep import SweepSpec, build_graph
from headprune_core.plans.sweep_ray import run_sweep
from headprune_core.plans.sweep_record import list_sweeps
from headprune_core.runs.store import Store
from tests.helpers.cluster import assert_same_entries, on_marker, sequential_store

pytestmark = [pytest.mark.slow, pytest.mark.alone]


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


def test_sweep_on_ray_equals_the_sequential_study_and_a_rerun_computes_nothing(tiny_cache, ray_cluster, tmp_path):
    root, model = tiny_cache
    spec = _spec(model, seeds=[13, 14], refinetune={"max_k": 2})
    graph = build_graph(spec)
    events = []
    res = run_sweep(graph, on_progress=lambda what, done, total: events.append(what.split(":")[0]))
    assert res.ok and res.cached == 0
    assert res.computed == res.jobs == len(graph.jobs)  # every job computed, once
    assert events.count("running") == res.jobs
    assert all(n.attempts == 1 and n.state == "done" for n in graph.jobs.values())
    # two seeds x (1 + 2 re-fine-tunes) fine-tunes; the re-fine-tunings' parts were added once ranked
    assert sum(n.cfg.kind == "finetune" for n in graph.jobs.values()) == 6

    # the sequential study (one thread, as each Ray task here) in another store: the same entries, equal
    assert_same_entries(graph.store, sequential_store(spec, tmp_path / "seq"))
    # every entry is a job of the graph (each level's test evaluations are parts of their own)
    assert {(e.kind, e.key) for e in graph.store.entries()} == {tuple(i.split("/")) for i in graph.jobs}

    (rec,) = [r for r in list_sweeps() if r["name"] == "t"]
    assert rec["state"] == "done" and rec["counts"]["done"] == res.jobs and not rec["running_now"]

    again = build_graph(spec)
    events.clear()
    res2 = run_sweep(again, on_progress=lambda what, done, total: events.append(what))
    assert res2.ok and res2.computed == 0 and res2.cached == res2.jobs == res.jobs and not events


def test_killed_worker_is_redone_and_a_failing_job_is_reported(tiny_cache, ray_cluster, tmp_path):
    root, model = tiny_cache
    from tests.helpers.fixture_cache import write_model
    broken = write_model(tmp_path / "broken-bert", seed=5)  # other weights (a copy would share every key)
    spec = _spec(model, name="k", models=[model, str(broken)], seeds=[21], langs=["en"])
    graph = build_graph(spec)  # keys and fingerprints of both models are taken here ...
    (broken / "model.safetensors").unlink()  # ... then one model's weights go: its fine-tune cannot load them
    markers = graph.store.root.parent / "sweeps" / "k" / "running"
    killer, killed = on_marker(markers, lambda m: "broken" not in m["what"] and m["attempt"] == 1,
                               lambda m: os.kill(m["pid"], signal.SIGKILL), timeout=120)
    res = run_sweep(graph)
    killer.join()
    assert killed, "no fine-tune was seen running"
    good = [n for n in graph.jobs.values() if "broken" not in n.what]
    bad = [n for n in graph.jobs.values() if "broken" in n.what]
    assert bad and good
    victim = graph.jobs[f"finetune/{killed['key']}"]
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
    (finetune,) = [n for n in graph.jobs.values() if n.cfg.kind == "finetune"]
    assert all(n.state == "todo" for n in graph.jobs.values()) and graph.dependents(finetune.id)
    run_job({"kind": "finetune", "key": finetune.cfg.key(), "config": finetune.cfg.to_dict(), "what": finetune.what,
             "plan": {"model": model, "sources": {}, "finetuned": False}, "cache": str(graph.store.root.parent),
             "device": "cpu", "run": "other", "markers": str(tmp_path / "markers")})  # the other user's sweep
    res = run_sweep(graph)
    assert res.ok and res.cached == 1 and res.computed == res.jobs - 1
    assert graph.counts()["todo"] == 0 and all(n.state == "done" for n in graph.jobs.values() if n is not finetune)
    (rec,) = [r for r in list_sweeps() if r["name"] == "late"]
    assert rec["counts"]["done"] + rec["counts"]["cached"] == res.jobs
