"""Where a sweep's jobs fit: each job's memory request from its model's size, a cluster's nodes (what fits at
once, what no node can take) and the dry run's estimate on a given cluster shape."""

from __future__ import annotations

import json

import pytest
from transformers import BertConfig, BertModel

from headprune_core.plans.plan import run_plan
from headprune_core.plans.sweep import (
    MODEL_COPIES,
    TRAINED_EMBEDDINGS,
    WORKER_GB,
    ClusterShape,
    NodeShape,
    SweepSpec,
    build_graph,
    model_params,
)
from headprune_core.plans.sweep_cost import dry_run, format_dry_run
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study

GB = 2**30


def _spec(model: str, **over) -> SweepSpec:
    spec = {"name": "p", "models": [model], "tasks": ["pos"], "langs": ["en"], "strategies": ["importance"],
            "random_seeds": [0], "curve_step": 4, "score_sentences": 20, "eval_sentences": 20,
            "train": {"max_train_sentences": 40, "epochs": 1.0}}
    return SweepSpec.from_dict({**spec, **over})


def test_model_size_comes_from_the_config_alone(tmp_path):
    """me5-small's shape gives its 117.4M parameters (96M of them embeddings) without weights; a tiny model's
    estimate is within a few percent of what it holds (biases and layer norms left out)."""
    folder = tmp_path / "me5-shape"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 384, "num_hidden_layers": 12,
                                                    "intermediate_size": 1536, "vocab_size": 250037,
                                                    "max_position_embeddings": 512, "num_attention_heads": 12}))
    assert model_params(str(folder)) == pytest.approx(117.4e6, rel=1e-3)
    config = BertConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=64)
    BertModel(config, add_pooling_layer=False).save_pretrained(tmp_path / "tiny")
    held = sum(p.numel() for p in BertModel(config, add_pooling_layer=False).parameters())
    assert 0.95 * held <= model_params(str(tmp_path / "tiny")) <= held
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{}")
    assert model_params(str(tmp_path / "bad")) is None


def test_each_job_asks_for_the_memory_of_its_kind_and_model(tiny_cache, tmp_path):
    root, model = tiny_cache
    params = model_params(model)
    graph = build_graph(_spec(model), store=Store(tmp_path / "runs"))
    by_kind = {n.cfg.kind: n for n in graph.jobs.values()}
    for kind, node in by_kind.items():
        req = graph.request(node)
        assert req["num_cpus"] == 1 and req["num_gpus"] == 0
        assert req["memory"] == pytest.approx(WORKER_GB * GB + MODEL_COPIES[kind] * 4 * params)
    assert graph.request(by_kind["finetune"], gpus=2)["num_gpus"] == 1
    trained = build_graph(_spec(model, train={"max_train_sentences": 40, "freeze_embeddings": False}),
                          store=Store(tmp_path / "runs"))
    (ft,) = [n for n in trained.jobs.values() if n.cfg.kind == "finetune"]
    extra = trained.request(ft)["memory"] - graph.request(by_kind["finetune"])["memory"]
    assert extra == pytest.approx(TRAINED_EMBEDDINGS * 4 * params)
    fixed = build_graph(_spec(model, resources={"eval": {"memory_gb": 2.5}}), store=Store(tmp_path / "runs"))
    (ev,) = [n for n in fixed.jobs.values() if n.cfg.kind == "eval"]
    assert fixed.request(ev)["memory"] == 2.5 * GB
    with pytest.raises(ValueError, match=r"resources.eval.memory_gb must be a number of at least 0"):
        _spec(model, resources={"eval": {"memory_gb": -1}})


def test_a_cluster_shape_says_what_fits_where():
    shape = ClusterShape("the cluster at h:1", (NodeShape("head", 0, 0, 20 * GB), NodeShape("a", 1, 0, 1.5 * GB),
                                                NodeShape("c", 2, 0, 1.0 * GB), NodeShape("g", 4, 1, 8 * GB)))
    job = {"num_cpus": 1, "num_gpus": 0, "memory": 0.6 * GB}
    assert shape.at_once(job) == 1 + 1 + 4  # c: memory for one job though it has 2 CPUs
    assert shape.at_once({**job, "memory": 0}) == 1 + 2 + 4
    assert shape.fit(job, "eval") == (job, None)
    cut, note = shape.fit({**job, "memory": 12 * GB}, "finetune")
    assert cut["memory"] == 8 * GB and "finetune jobs ask for 12.0 GB, more than any node gives jobs (8.0 GB)" in note
    cut, note = shape.fit({"num_cpus": 2, "num_gpus": 0, "memory": 4 * GB}, "score")  # c has the CPUs, g the memory
    assert cut["memory"] == 4 * GB and note is None
    with pytest.raises(ValueError, match=r"curve jobs ask for 8 CPU\(s\) and 0 GPU\(s\), and no node .* "
                                         r"lower resources.curve in the spec"):
        shape.fit({"num_cpus": 8, "num_gpus": 0, "memory": 0}, "curve")
    assert shape.describe() == "the cluster at h:1: 4 node(s), 7 CPUs, 1 GPUs, 30.5 GB memory for jobs"


def test_the_dry_run_estimates_on_the_clusters_nodes(tiny_cache, tmp_path):
    """The same graph estimated on one 1-CPU node and on a cluster that holds three jobs at once: the wall time
    shrinks with the slots, the compute does not, and the text names the cluster and each kind's memory."""
    root, model = tiny_cache
    store = Store(tmp_path / "runs")
    spec = _spec(model, seeds=[1, 2, 3])
    run_plan(Study(model, store=store, progress=False), spec.plans()[0])  # seed 1: measured job times
    graph = build_graph(spec, store=store)
    one = ClusterShape("one", (NodeShape("n", 1, 0, 4 * GB),))
    three = ClusterShape("the cluster at h:1", (NodeShape("a", 1, 0, 2 * GB), NodeShape("b", 1, 0, 2 * GB),
                                               NodeShape("c", 2, 0, 1 * GB)))
    small, big = dry_run(graph, cluster=one), dry_run(graph, cluster=three)
    assert big["kinds"]["finetune"]["at_once"] == 3 and small["kinds"]["finetune"]["at_once"] == 1
    assert big["seconds"] == small["seconds"] > 0 and big["cpus"] == 4
    assert big["critical_seconds"] <= big["wall_seconds"] < small["wall_seconds"] == pytest.approx(small["seconds"])
    text = format_dry_run(big)
    assert "on the cluster at h:1: 3 node(s), 4 CPUs, 0 GPUs, 5.0 GB memory for jobs" in text
    (row,) = [line.split() for line in text.splitlines() if line.strip().startswith("finetune ")]
    assert row[1:4] == ["3", "1", "2"] and row[-3:] == ["0.8", "GB", "3"]
    starved = ClusterShape("tiny", (NodeShape("n", 1, 0, 0.1 * GB),))
    report = dry_run(graph, cluster=starved)
    assert report["kinds"]["finetune"]["at_once"] == 1
    assert any("more than any node gives jobs (0.1 GB): asking that, one at a time" in n for n in report["notes"])
