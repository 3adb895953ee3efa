"""Planning without the Hub (runs/planning.py): a dry run of a sweep on Hub models and data sets answers offline from
the recorded tables (data/hub_sizes.json, encoders/known_models.json), with the job list a real graph has, the disk
it needs, and never a planned key in the store; and the sweep's grid of source languages (Ma et al.'s EN/ZH/AR)."""

from __future__ import annotations

import json

import datasets
import pytest

from headprune_core.cli.main import main
from headprune_core.data.hub import HubSpec, hub_spec
from headprune_core.data.hub_sizes import NotRecorded, download_total, planned_splits, recorded
from headprune_core.encoders.known import config_params, download_bytes, known_config
from headprune_core.plans.sweep import SweepSpec, build_graph
from headprune_core.plans.sweep_cost import dry_run, format_dry_run
from headprune_core.runs.planning import PlanningOnly
from headprune_core.runs.store import Store

SPEC = {"name": "ma-ner", "models": ["xlm-roberta-base"], "tasks": ["ner"], "langs": ["en", "de", "ur"],
        "settings": ["cross", "multi"], "source_grid": [["en"], ["de"]], "data": [{"ner": "hub"}],
        "train": {"epochs": 3.0, "lr": 5e-5, "head_lr": 5e-5, "max_train_sentences": None,
                  "freeze_embeddings": False},
        "score_sentences": 1000000, "eval_sentences": 1000000, "random_seeds": [0],
        "refinetune": [{"strategy": "importance", "max_k": 12, "seeds": [13, 14, 15]}],
        "kinds": ["finetune", "score", "eval", "refinetune"]}


@pytest.fixture
def no_hub(monkeypatch):
    """No Hub at all: any data set download fails, and Hub model lookups are offline."""
    def offline(*a, **k):
        raise ConnectionError("Couldn't reach the Hub (OfflineModeIsEnabled)")
    monkeypatch.setattr(datasets, "load_dataset", offline)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_a_planned_graph_has_the_plans_jobs_sized_from_the_recorded_tables(tmp_path, no_hub):
    store = Store(tmp_path / "cache")
    graph = build_graph(SweepSpec.from_dict(SPEC), store=store, planning=True)
    fts = [n.cfg for n in graph.jobs.values() if n.cfg.kind == "finetune"]
    # cross from en, cross from de, and the multilingual model the two grid points share (one key)
    assert sorted(ft.train_langs for ft in fts) == [("de",), ("en",), ("en", "de", "ur")]
    by_langs = {ft.train_langs: ft for ft in fts}
    assert by_langs[("en",)].max_train_sentences == 20000  # WikiANN en train, as recorded
    assert by_langs[("en", "de", "ur")].max_train_sentences == 20000  # the largest unit's
    evals = {(n.cfg.lang, n.cfg.finetune.train_langs): n.cfg for n in graph.jobs.values() if n.cfg.kind == "eval"}
    assert evals[("ur", ("en",))].max_sentences == 1000  # WikiANN ur test: 1,000 sentences (the cap is capped)
    assert graph.studies[0].head_shape == (12, 12)
    assert all(n.state == "todo" for n in graph.jobs.values())
    report = dry_run(graph, cpus=2)
    assert report["later_jobs"] == 3 * (13 * 3 - 1) + 3 * 13 * 3 * (1 + 3)  # 3 experiments x (38 fts, 39 x 4 evals)
    text = format_dry_run(report)
    assert "recorded config of xlm-roberta-base" in text
    assert "recorded split sizes of unimelb-nlp/wikiann (de, en, ur)" in text
    assert "xlm-roberta-base 1.0 GB recorded (model.safetensors)" in text and "3 Hub configs" in text
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.json"))  # nothing stored


def test_a_planning_study_computes_nothing(no_hub, tmp_path):
    graph = build_graph(SweepSpec.from_dict(SPEC), store=Store(tmp_path), planning=True)
    study = graph.studies[0]
    with pytest.raises(PlanningOnly, match="loads no model"):
        study.loaded  # noqa: B018
    with pytest.raises(PlanningOnly, match="reads no Hub data"):
        study.data("ner", "en")
    ft = next(n.cfg for n in graph.jobs.values() if n.cfg.kind == "finetune")
    assert ft.model_fp.startswith("planned-") and ft.data_fp.startswith("planned-")
    with pytest.raises(ValueError, match="refusing to store a finetune result planned without its model or data"):
        graph.store.put(ft, {"log": {"seconds": 1.0}})
    assert not graph.store.entries()


def test_the_cli_dry_run_plans_offline_and_says_so(tmp_path, no_hub, capsys):
    spec = tmp_path / "ma.json"
    spec.write_text(json.dumps(SPEC))
    assert main(["sweep", str(spec), "--dry-run", "--cache", str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    assert "could not load unimelb-nlp/wikiann (en)" in out and "`hf download --repo-type dataset" in out
    assert "planning from the recorded sizes" in out and "sweep ma-ner: 2 grid point(s)" in out
    assert main(["sweep", str(spec), "--plan-only", "--cache", str(tmp_path / "cache")]) == 2


def test_an_unrecorded_model_or_data_set_is_named(tmp_path, no_hub):
    bad = {**SPEC, "models": ["someone/unknown-encoder"]}
    with pytest.raises(Exception, match="cannot plan 'someone/unknown-encoder' without the Hub"):
        build_graph(SweepSpec.from_dict(bad), store=Store(tmp_path), planning=True)
    bad = {**SPEC, "langs": ["en", "sw"], "source_grid": []}
    with pytest.raises(Exception, match=r"no recorded sizes for unimelb-nlp/wikiann config 'sw'"):
        build_graph(SweepSpec.from_dict(bad), store=Store(tmp_path), planning=True)


def test_recorded_sizes_convert_like_the_loaders():
    assert planned_splits(hub_spec("ner", "ur"), "ner") == {"train": 20000, "validation": 1000, "test": 1000}
    # GLUE: test is the official validation (matched for MNLI), validation 10% of train up to 5,000
    assert planned_splits(hub_spec("mnli", "en"), "mnli") == {"train": 392702 - 5000, "validation": 5000,
                                                              "test": 9815}
    assert planned_splits(hub_spec("rte", "en"), "rte") == {"train": 2490 - 249, "validation": 249, "test": 277}
    assert planned_splits(hub_spec("upos", "he"), "upos") == {"train": 5241, "validation": 484, "test": 491}
    with pytest.raises(NotRecorded, match="no recorded sizes for the Hub data set someone/set"):
        recorded(HubSpec("someone/set", None))
    # WikiANN's recorded download is one archive for all configs: counted once
    one, _ = download_total([hub_spec("ner", "en")])
    three, unknown = download_total([hub_spec("ner", x) for x in ("en", "de", "ur")] + [HubSpec("someone/x", "a")])
    assert one == three > 0 and unknown == ["someone/x (a)"]


def test_every_recorded_number_names_its_source():
    from headprune_core.data.hub_sizes import recorded_table
    from headprune_core.encoders.known import _table
    for name, ds in recorded_table()["datasets"].items():
        for config, row in ds["configs"].items():
            assert row["source"] and all(isinstance(v, int) and v > 0 for v in row["splits"].values()), (name, config)
    for name, model in _table().items():
        assert model["config"]["num_hidden_layers"] == model["config"]["num_attention_heads"] == 12, name
        assert model.get("source") or model.get("field_sources"), name


def test_recorded_models_are_sized_from_their_configs():
    config = known_config("bert-base-multilingual-cased")
    assert config == known_config("google-bert/bert-base-multilingual-cased")
    assert config["vocab_size"] == 119547
    # the recorded weight file and the parameters its config gives agree (fp32, 4 bytes each) within 1%
    size, how = download_bytes("xlm-roberta-base")
    assert how == "recorded (model.safetensors)"
    assert config_params(known_config("xlm-roberta-base")) * 4 == pytest.approx(size, rel=0.01)
    assert download_bytes("bert-base-multilingual-cased")[1] == "from its parameters (fp32)"
    assert known_config("someone/else") is None and download_bytes("someone/else") == (None, "unknown")


def test_a_grid_of_source_languages():
    spec = SweepSpec.from_dict({**SPEC, "source_grid": [["en"], ["zh"], ["ar"]],
                                "langs": ["en", "zh", "ar"]})
    plans = spec.plans()
    assert [p.source_langs for p in plans] == [("en",), ("zh",), ("ar",)]
    assert [spec.label(i) for i in range(3)] == ["from en", "from zh", "from ar"]
    assert SweepSpec.from_dict(spec.to_dict()) == spec
    assert "source_grid" not in SweepSpec.from_dict({**SPEC, "source_grid": []}).to_dict()
    # every dimension at once: each point's label names its own model, data, seed and source languages
    many = SweepSpec.from_dict({"name": "x", "models": ["a", "b"], "seeds": [1, 2, 3],
                                "data": [{}, {"pos": "embedded"}], "source_grid": [["en"], ["de"]]})
    assert [many.label(i) for i in range(24)] == [f"{m}, data #{many.data.index(d) + 1}, seed {s}, from {g[0]}"
                                                  for m, d, s, g in many.points()]
    with pytest.raises(ValueError, match="source_grid must be a list of language lists"):
        SweepSpec.from_dict({**SPEC, "source_grid": ["en", "zh"]})


def test_a_model_too_large_for_the_memory_is_said_before_any_work(tmp_path, no_hub, monkeypatch):
    """A sweep or study whose fine-tunes cannot fit where they would run stops before any job, naming the model,
    what it needs and what there is."""
    from headprune_core.plans.sweep import ClusterShape, NodeShape
    from headprune_core.plans.sweep_cost import NotEnoughMemory, check_memory, check_study_memory, fine_tune_floor
    config = known_config("xlm-roberta-base")
    every = fine_tune_floor(config, freeze_embeddings=False)
    frozen = fine_tune_floor(config, freeze_embeddings=True)
    assert every / 2**30 == pytest.approx(0.75 + 16 * config_params(config) / 2**30) and frozen < 0.6 * every
    graph = build_graph(SweepSpec.from_dict(SPEC), store=Store(tmp_path), planning=True)
    small = ClusterShape("a small machine", (NodeShape("n", 2.0, 0.0, 3 * 2**30),))
    with pytest.raises(NotEnoughMemory, match=r"fine-tuning xlm-roberta-base \(every weight trained\) needs at least "
                                              r"4\.9 GB .* no node of a small machine has that much for jobs "
                                              r"\(3\.0 GB"):
        check_memory(graph, small)
    check_memory(graph, ClusterShape("a big one", (NodeShape("n", 2.0, 0.0, 64 * 2**30),)))  # fits: nothing said
    monkeypatch.setattr("headprune_core.plans.sweep_cost.local_shape",
                        lambda cpus=None: ClusterShape("here", (NodeShape("n", 2.0, 0.0, 2**30),)))
    with pytest.raises(NotEnoughMemory, match=r"fine-tuning xlm-roberta-base needs at least .* this machine "
                                              r"\(available memory\) has 1\.0 GB"):
        check_study_memory("xlm-roberta-base", {"freeze_embeddings": False}, "cpu")
