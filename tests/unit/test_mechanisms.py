"""The mechanisms written once and shared by the CLI, the app and sweeps: choice checks, defaults, JSON specs and
plan lookup, GradTS options, the job runner and job inputs, estimate and interval text."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest

from headprune_core.base.choices import STRATEGIES, check_choice
from headprune_core.base.defaults import DEMO_TRAIN, MAX_LENGTH
from headprune_core.base.specs import spec_from_dict
from headprune_core.cli.args import build_parser, one_of
from headprune_core.methods.uncertainty import ci_text, describe_ci, diff_text
from headprune_core.multitask.plan import GRADTS_PRESETS, GradTSPlan, available_gradts_plans, find_gradts_plan
from headprune_core.plans.plan import StudyPlan
from headprune_core.plans.presets import PRESETS, available_plans, find_plan
from headprune_core.runs.config import FinetuneConfig, GradTSConfig, GradTSOptions, ScoreConfig
from headprune_core.runs.estimate import describe_estimate
from headprune_core.runs.jobs import Job, JobFailed, run_jobs, study_jobs
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study


def test_one_choice_check_gives_one_message_everywhere():
    assert check_choice("random", STRATEGIES, "strategy") == "random"
    with pytest.raises(ValueError, match=r"^plan 'p': unknown strategy 'best'; known: importance, reverse"):
        check_choice("best", STRATEGIES, "strategy", where="plan 'p'")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown strategy 'best'; known: importance"):
        one_of(STRATEGIES, "strategy")("best")  # the CLI's argparse type says the same
    with pytest.raises(ValueError, match="unknown strategy 'best'; known: importance"):
        StudyPlan(name="p", description="", strategies=("best",))


def test_defaults_are_stated_once():
    cli = build_parser().parse_args(["finetune"])
    assert cli.max_length == MAX_LENGTH == FinetuneConfig.__dataclass_fields__["max_length"].default
    assert ScoreConfig.__dataclass_fields__["max_length"].default == MAX_LENGTH
    assert (cli.max_train, cli.epochs, cli.lr, cli.head_lr, cli.batch_size) == (
        DEMO_TRAIN["max_train_sentences"], DEMO_TRAIN["epochs"], DEMO_TRAIN["lr"], DEMO_TRAIN["head_lr"],
        DEMO_TRAIN["batch_size"])
    assert PRESETS["demo"].train == DEMO_TRAIN  # the CLI's defaults find what the demo trained


def test_specs_from_json_name_the_file_and_the_field():
    @dataclasses.dataclass(frozen=True)
    class Spec:
        name: str
        seeds: tuple = ()

        def __post_init__(self):
            if any(s < 0 for s in self.seeds):
                raise ValueError("seeds must be 0 or more")

    assert spec_from_dict(Spec, {"name": "a", "seeds": [1, 2]}, where="f.json") == Spec("a", (1, 2))
    for data, message in (([], "f.json: a spec is a JSON object of fields, got list"),
                          ({"name": "a", "x": 1}, "f.json: unknown spec fields ['x']; known: ['name', 'seeds']"),
                          ({}, "f.json: missing spec field(s) ['name']"),
                          ({"name": "a", "seeds": [-1]}, "f.json: seeds must be 0 or more")):
        with pytest.raises(ValueError) as err:
            spec_from_dict(Spec, data, where="f.json", what="spec")
        assert str(err.value) == message


def test_plans_are_found_one_way_by_name_file_or_object(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADPRUNE_CACHE", str(tmp_path))
    assert find_plan("demo") is PRESETS["demo"] and find_gradts_plan("gradts-demo") is GRADTS_PRESETS["gradts-demo"]
    mine = dataclasses.replace(PRESETS["demo"], name="mine", langs=("en",))
    (tmp_path / "plans").mkdir()
    path = tmp_path / "plans" / "mine.json"
    path.write_text(json.dumps(mine.to_dict()))
    assert find_plan(str(path)) == mine and find_plan("mine") == mine and find_plan(mine.to_dict()) == mine
    shadow = tmp_path / "plans" / "demo.json"  # a file named like a preset is listed beside it, not over it
    shadow.write_text(json.dumps(dataclasses.replace(mine, name="demo").to_dict()))
    plans, problems = available_plans()
    assert list(plans)[:2] == ["demo", "findings"] and plans["demo"] is PRESETS["demo"]
    assert "demo (demo.json)" in plans and "mine" in plans and not problems
    with pytest.raises(ValueError, match="unknown study plan 'nope'; known: demo, findings, findings-full, demo, mine"):
        find_plan("nope")
    gplans, _ = available_gradts_plans()
    assert list(gplans) == list(GRADTS_PRESETS)


def test_gradts_options_are_declared_once_for_plans_and_configs():
    options = {f.name for f in dataclasses.fields(GradTSOptions)}
    plan_only = {f.name for f in dataclasses.fields(GradTSPlan)} - options
    config_only = {f.name for f in dataclasses.fields(GradTSConfig)} - options
    # map_seeds: more seeds of each task's map, computed by a study plan that runs the check (not a GradTS option)
    assert plan_only == {"name", "description", "model", "train", "bandit", "sources", "note", "map_seeds"}
    assert config_only == {"model", "train", "bandit", "model_fp", "data_fp"}
    plan = GRADTS_PRESETS["gradts-findings"]
    assert plan.options()["max_trial"] == 2 and plan.options()["train_seeds"] == (13, 14, 15)
    with pytest.raises(ValueError, match="plan 'x': the tau threshold must be in"):  # checked by the plan too
        dataclasses.replace(plan, name="x", threshold=2.0)
    with pytest.raises(ValueError, match="plan 'x': map_seeds must be a list of distinct integers"):
        dataclasses.replace(plan, name="x", map_seeds=(14, 14))


def test_the_job_runner_runs_what_is_missing_and_names_a_failed_job(tiny_cache, monkeypatch, tmp_path):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    study = Study(model, store=Store(tmp_path / "runs"), progress=False)
    ft = study.finetune_config("pos", ("en",), max_train_sentences=40, epochs=1.0)
    sc = study.score_config(ft, "pos", "de", max_sentences=20)
    jobs = study_jobs(study, [sc, sc], names=["scores de", "again"])  # its fine-tune first, each config once
    assert [(j.what, j.cfg.kind) for j in jobs] == [("fine-tune pos (cross, en)", "finetune"), ("scores de", "score")]
    seen = []
    done = run_jobs(jobs, study.store, on_progress=lambda what, i, n: seen.append((what, i, n)))
    assert done["computed"] == 2
    assert seen == [("fine-tune pos (cross, en)", 0, 2), ("scores de", 1, 2), ("scores de", 2, 2)]
    seen.clear()
    run_jobs(jobs, study.store, on_progress=lambda what, i, n: seen.append((what, i, n)))  # both now cached
    assert seen == [("cached: fine-tune pos (cross, en)", 0, 2), ("cached: scores de", 1, 2),
                    ("cached: scores de", 2, 2)]
    assert [j.cfg.kind for j in study_jobs(study, [sc])] == ["score"]  # its cached fine-tune is left out
    assert run_jobs(study_jobs(study, [sc]), study.store)["computed"] == 0  # cached: nothing runs
    boom = Job("a job that breaks", study.eval_config(ft, "pos", "en", max_sentences=7), lambda: 1 / 0)
    with pytest.raises(JobFailed, match="^a job that breaks: ZeroDivisionError: division by zero$") as err:
        run_jobs([boom], study.store)
    assert err.value.job is boom


def test_interval_and_estimate_text_are_formatted_once():
    ci = {"score": 96.123, "low": 95.21, "high": 96.94, "seeds": 1}
    assert ci_text(ci) == "96.1 [95.2, 96.9]" and ci_text(ci, digits=2) == "96.12 [95.21, 96.94]"
    evaluation = {"score": 96.123, "ci": [95.21, 96.94]}  # an evaluation's interval reads the same
    assert ci_text(evaluation) == ci_text(ci) and describe_ci(evaluation) == "96.1 (95% CI 95.2-96.9)"
    d = {"diff": 1.23, "low": -0.31, "high": 2.6, "distinguishable": False}
    assert diff_text(d) == "+1.2 [-0.3, +2.6]" and diff_text({**d, "low": 0.2, "distinguishable": True}).endswith(" *")
    assert describe_estimate({"seconds": 750, "jobs": 3, "unknown": []}) == \
        "about 12.5 min from the job times measured in this cache"
    assert describe_estimate({"seconds": 40, "jobs": 1, "unknown": ["curve"]}).endswith(
        "never measured in this cache: curve jobs")
