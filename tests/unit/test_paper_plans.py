"""The papers' experiments as sweeps (plans/papers.py): the shipped sweep files are the registry's, each plan
follows its paper's recorded protocol, names the paper's numbers it answers, reads Hub data sets and models that
exist as named (configs recorded from the data sets' own builders, configs that transformers builds), and its dry
run answers offline."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest

from headprune_core.data.hub_sizes import recorded
from headprune_core.data.refs import hub_spec_of
from headprune_core.findings.hypotheses import HYPOTHESES
from headprune_core.findings.paper_numbers import select
from headprune_core.plans.papers import PAPER_PLANS
from headprune_core.plans.sweep import SweepSpec, build_graph
from headprune_core.plans.sweep_cost import dry_run, format_dry_run
from headprune_core.runs.store import Store

REPO = Path(__file__).resolve().parents[2]


def _protocol(paper: str, unit: str, row: str = "") -> float:
    (number,) = [n for n in select(paper=paper, role="protocol", unit=unit) if n.row == row]
    return number.value


def test_the_shipped_sweep_files_are_the_registrys():
    for plan in PAPER_PLANS.values():
        path = plan.path(REPO)
        assert path.is_file(), f"{path} is missing: run python -m headprune_core.plans.papers"
        assert json.loads(path.read_text()) == plan.sweep(), f"{path} differs from plans/papers.py: regenerate it"
        SweepSpec.from_file(path)  # a valid spec, every grid point a valid plan


def test_each_plan_trains_as_its_paper_did():
    for plan in PAPER_PLANS.values():
        train, spec = plan.spec["train"], plan.spec
        assert not train["freeze_embeddings"]  # every weight trained, at one rate but for He & Choi's decoders
        assert train["lr"] == train["head_lr"] or plan.paper == "hechoi2021"
        assert train["max_train_sentences"] is None  # every training sentence
        assert all(len(e["seeds"]) >= 3 for e in spec.get("refinetune", []))  # runs are the unit: 3 or more
        if plan.paper == "ma2021":
            assert train["epochs"] == _protocol("ma2021", "epochs")
            assert train["lr"] == _protocol("ma2021", "learning rate")
            assert all(e.get("max_k") == _protocol("ma2021", "heads") for e in spec["refinetune"])
            randoms = [e for e in spec["refinetune"] if e["strategy"] == "random"]
            assert all(e["random_seed"] == _protocol("ma2021", "seed") for e in randoms)
            ma_langs = ({"en", "es", "pt", "de", "fr", "zh", "ja", "hi", "tr"} if spec["tasks"] == ["slots"]
                        else {"en", "zh", "ar", "he", "ja", "fa", "de", "nl", "ur"})  # SF: MultiATIS++'s nine
            assert set(spec["langs"]) <= ma_langs
        if plan.paper == "gradts2021":
            (check,) = spec["gradts"]
            assert len(check["train_seeds"]) >= 3  # runs are the unit
            assert check["fg_threshold"] == _protocol("gradts2021", "tau", "GradTS-fg")
            assert check["primaries"] == check["units"] and len(check["units"]) == _protocol("gradts2021", "count")
            assert check["max_trial"] is None and check["train"]["max_train_sentences"] is None
        if plan.paper == "hechoi2021":
            (check,) = spec["gradts"]
            assert (train["epochs"], train["lr"], train["head_lr"]) == (
                _protocol("hechoi2021", "epochs"), _protocol("hechoi2021", "learning rate", "encoder"),
                _protocol("hechoi2021", "learning rate", "decoders"))
            assert check["train"] == {k: v for k, v in train.items() if k != "seed"}
            assert len(check["train_seeds"]) >= _protocol("hechoi2021", "runs") and len(check["units"]) == 5
            assert check["primaries"] == check["units"] and check["map_seeds"]  # card g: maps under 3 seeds
        if plan.paper.startswith("budhraja"):
            assert (train["epochs"], train["lr"], train["batch_size"], train["max_length"]) == (
                _protocol("budhraja2020", "epochs"), _protocol("budhraja2020", "learning rate"),
                _protocol("budhraja2020", "batch size"), _protocol("budhraja2020", "tokens"))


def test_each_plan_names_the_paper_numbers_and_cards_it_answers():
    cards = {h.id for h in HYPOTHESES}
    for plan in PAPER_PLANS.values():
        assert set(plan.cards) <= cards, plan.name
        for cell in plan.cells:
            assert select(paper=plan.paper, role="result", **cell), (plan.name, cell)
    answered = {n for p in PAPER_PLANS.values() for c in p.cells for n in select(paper=p.paper, role="result", **c)}
    # every Ma et al. POS, NER and SF number the paper reports is answered by some plan
    ma = {n for n in select(paper="ma2021", role="result", task=("POS", "NER", "SF")) if n.where != "Figs 2-3"
          and n.where != "Sec 1"}
    assert ma - answered == set()


def test_substitute_data_is_said_where_the_paper_used_other_data():
    assert "WikiANN" in PAPER_PLANS["ma2021-ner"].substitutes["ner"]
    assert "MASSIVE" in PAPER_PLANS["ma2021-sf"].substitutes["slots"]
    for plan in PAPER_PLANS.values():
        for task in ("ner", "slots"):  # Ma et al.'s NER sets and MultiATIS++ are not on the Hub
            if task in plan.spec["tasks"]:
                assert plan.substitutes.get(task) and plan.substitutes[task] in plan.sweep()["description"]


def test_hub_names_are_what_the_libraries_expect():
    """Each (task, language) a plan reads resolves to a Hub data set and config recorded from that data set's own
    builder or card, and each model's recorded config builds with transformers and is a family headprune prunes."""
    from transformers import AutoConfig

    from headprune_core.encoders.heads import ADAPTERS
    from headprune_core.encoders.known import known_config
    for plan in PAPER_PLANS.values():
        for point in SweepSpec.from_dict(plan.sweep()).plans():
            for task in point.tasks:
                for lang in point.task_langs(task):
                    spec = hub_spec_of(point.sources[task], task, lang)
                    assert spec is not None and recorded(spec)["splits"], (plan.name, task, lang)
            config = known_config(point.model)
            assert config is not None and config["model_type"] in ADAPTERS, point.model
            built = AutoConfig.for_model(**config)
            assert (built.num_hidden_layers, built.num_attention_heads) == (12, 12)


@pytest.mark.parametrize("name", sorted(PAPER_PLANS))
def test_every_paper_plans_dry_run_answers_offline(name, tmp_path, monkeypatch):
    def offline(*a, **k):
        raise ConnectionError("Couldn't reach the Hub (OfflineModeIsEnabled)")
    monkeypatch.setattr(datasets, "load_dataset", offline)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    graph = build_graph(SweepSpec.from_file(PAPER_PLANS[name].path(REPO)), store=Store(tmp_path), planning=True)
    report = dry_run(graph, cpus=2)
    assert report["jobs"] > 0 and report["disk"]["fine_tunes"] > 0 and report["planned"]
    text = format_dry_run(report)
    assert f"sweep {name}:" in text and "disk: models" in text


def test_the_reproduce_page_quotes_the_registry_and_the_dry_runs(tmp_path, monkeypatch):
    """docs/papers-reproduce.md's tables are what the code gives (python -m headprune_core.plans.papers --doc)."""
    import re

    from headprune_core.plans.papers import cost_table, substitutes_table
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    page = (REPO / "docs" / "papers-reproduce.md").read_text(encoding="utf-8")

    def block(name: str) -> str:
        m = re.search(rf"<!-- papers {name}: [^>]*-->\n(.*?)\n<!-- end papers {name} -->", page, re.S)
        assert m, f"docs/papers-reproduce.md has no papers {name} block"
        return m.group(1)
    assert block("substitutes") == substitutes_table()
    assert block("cost") == cost_table(REPO, Store(tmp_path)), "regenerate: python -m headprune_core.plans.papers --doc"


def test_findings_plan_name_shows_each_number_and_the_job_it_needs(tmp_path, monkeypatch, capsys):
    """`headprune findings --plan-name NAME` without the Hub: every number the paper reports, each naming the job
    that computes it (a plan not computed here is a plan half computed, with nothing in it)."""
    from headprune_core.cli.main import main
    from headprune_core.findings.paper_plans import answered_by

    def offline(*a, **k):
        raise ConnectionError("Couldn't reach the Hub (OfflineModeIsEnabled)")
    monkeypatch.setattr(datasets, "load_dataset", offline)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["findings", "--plan-name", "ma2021-table5-ner", "--cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "cannot be read here" in out and "WikiANN (unimelb-nlp/wikiann" in out
    assert "| Table 5 | bert-base-multilingual-cased | cross-lingual | Max-Pruning | EN->ZH | -1.74 F1 points | - |" \
        in out
    assert "missing: prune reverse (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12) then re-fine-tune ner" in out
    assert "0 of 39 reported numbers computed" in out
    assert main(["findings", "--plan-name", "ma2021-table5-ner", "--format", "json", "--cache", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cards"] == ["b2"] and len(data["beside"]) == 39 and data["substitutes"]["ner"]
    # per claim: card b2 on the plan's one grid point, not computed, naming the jobs it needs
    (verdict,) = data["verdicts"]
    assert (verdict["card"], verdict["task"], verdict["verdict"]) == ("b2", "ner", "not computed yet")
    assert verdict["ours"].startswith("needs: prune importance (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)")
    assert "sweeps/ma2021-table5-ner.json" in answered_by()["b2"]
    # options it does not use are errors, not silence
    assert main(["findings", "--plan-name", "ma2021-table5-ner", "--card", "a1", "--cache", str(tmp_path)]) != 0
    assert "--plan-name reads the paper plan's own sweep and cards; it takes no --card" in capsys.readouterr().err
    assert main(["sweep", str(PAPER_PLANS["ma2021-ner"].path(REPO)), "--gpu-type", "H100"]) == 2
    assert "--gpu-type is an option of a dry run: give --dry-run too" in capsys.readouterr().err


def test_every_paper_data_set_loads_from_a_copy_in_its_hub_schema(tmp_path, monkeypatch):
    """Each Hub data set a paper plan reads (one config of each), written in the Hub's own schema into a mirror
    folder, loads through the loaders that read the Hub (tests/helpers/hub_world.py holds the schemas)."""
    from headprune_core.data.refs import load_ref
    from tests.helpers.hub_world import write_mirror
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HEADPRUNE_HUB_MIRROR", str(tmp_path))
    one: dict[tuple[str, str], tuple] = {}
    for plan in PAPER_PLANS.values():
        for point in SweepSpec.from_dict(plan.sweep()).plans()[:1]:
            for task in point.tasks:
                lang = point.task_langs(task)[-1]
                spec = hub_spec_of(point.sources[task], task, lang)
                one.setdefault((spec.path, task), (spec, point.sources[task], lang))
            for check in point.gradts_plans():  # a GradTS check's own units
                for task, _, lang in (u.partition("/") for u in check.units):
                    ref = check.sources[task]
                    one.setdefault((hub_spec_of(ref, task, lang).path, task), (hub_spec_of(ref, task, lang), ref, lang))
    assert {path for path, _ in one} == {"unimelb-nlp/wikiann", "universal-dependencies/universal_dependencies",
                                         "facebook/xnli", "nyu-mll/glue", "AmazonScience/massive",
                                         "ontonotes/conll2012_ontonotesv5"}
    write_mirror(tmp_path, [spec for spec, _, _ in one.values()])
    labels = {"ner": 7, "upos": 17, "xnli": 3, "mnli": 3, "qqp": 2, "qnli": 2, "sst2": 2, "slots": 111, "cola": 2,
              "mrpc": 2, "rte": 2, "wnli": 2, "onto-pos": 49, "onto-ner": 37}
    for (path, task), (_, ref, lang) in one.items():
        data = load_ref(ref, task, lang)
        assert list(data.dataset) == ["train", "validation", "test"], (path, task)
        assert data.meta["local_copy"] == str(tmp_path / path), (path, task)
        # DEP, CON, SRL: the tags the copy holds (tests/unit/test_ontonotes_tasks.py checks which)
        assert len(data.labels) == labels[task] if task in labels else data.labels == sorted(data.labels), (path, task)
