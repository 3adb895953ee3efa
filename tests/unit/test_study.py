"""Study end to end on a tiny random model and generated corpora: train, score, evaluate, curves, cache."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from headprune_core.config import RefinetuneConfig
from headprune_core.store import Store
from headprune_core.study import Study, StudyPlan, plan_jobs, run_plan, split_unit


def _plan(model: str) -> StudyPlan:
    return StudyPlan(name="t", description="unit", model=model, tasks=("pos",), langs=("en", "de"),
                     strategies=("importance",), random_seeds=(0, 1), curve_step=4, score_sentences=40,
                     eval_sentences=40, train={"max_train_sentences": 200, "epochs": 4.0, "lr": 1e-3})


def test_plan_runs_end_to_end_then_is_cached(tiny_cache, monkeypatch):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    study = Study(model, progress=False)
    plan = _plan(model)
    res = run_plan(study, plan)
    jobs = plan_jobs(study, plan)
    kinds = [j.cfg.kind for j in jobs]
    # importance for en and de; random, reverse and layer thirds for the source language
    assert kinds.count("finetune") == 1 and kinds.count("score") == 2 and kinds.count("curve") == 5
    assert res["computed"] == res["jobs"] == len(jobs)
    ft = jobs[0].cfg
    en = study.evaluation(study.eval_config(ft, "pos", "en", max_sentences=40))
    majority = max(np.bincount([t for s in study.data("pos", "en").dataset["test"]["tags"] for t in s])) / \
        sum(len(s) for s in study.data("pos", "en").dataset["test"]["tags"])
    assert en["metric"] == "accuracy" and en["score"] > 100 * majority + 20
    imp = study.curve(study.curve_config(ft, "pos", "en", score_sentences=40, max_sentences=40, step=4))
    rev = study.curve(study.curve_config(ft, "pos", "en", strategy="reverse", score_sentences=40,
                                         max_sentences=40, step=4))
    assert imp["k"] == rev["k"] == [0, 4, 8, 12] and imp["mean"][0] == rev["mean"][0] == en["score"]
    # a fresh Study (e.g. a new process) finds everything in the cache and computes nothing
    fresh = Study(model, progress=False)
    monkeypatch.setattr(Study, "_train", lambda *a: pytest.fail("fine-tuning ran again"))
    again = run_plan(fresh, plan)
    assert again["computed"] == 0
    assert np.array_equal(fresh.scores(jobs[1].cfg)["raw"], study.scores(jobs[1].cfg)["raw"])


def test_interrupted_run_resumes(tiny_cache, monkeypatch, tmp_path):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    plan = _plan(model)
    store = Store(tmp_path / "runs")
    seen = []

    def stop_at_fourth(i, n, what, cached):
        seen.append(what)
        if i == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_plan(Study(model, store=store, progress=False), plan, on_job=stop_at_fourth)
    assert len(store.entries()) == 3  # the finished jobs stay valid
    res = run_plan(Study(model, store=store, progress=False), plan)
    assert res["computed"] == res["jobs"] - 3


def test_refinetune_keeps_best_k_on_dev(tiny_cache, monkeypatch):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    study = Study(model, progress=False)
    ft = study.finetune_config("pos", ("en",), max_train_sentences=100, epochs=2.0, lr=1e-3)
    rc = RefinetuneConfig(finetune=ft, ranking=study.score_config(ft, "pos", "en", max_sentences=40), max_k=2,
                          max_sentences=40, eval_langs=("en", "de"))
    res = study.refinetune(rc)
    assert [r["k"] for r in res["rows"]] == [0, 1, 2]
    assert res["best_k"] == max(res["rows"], key=lambda r: (r["dev"], -r["k"]))["k"]
    assert set(res["test"]) == {"en", "de"}
    assert len(res["rows"][2]["pruned"]) == 2


def test_units_and_errors(tiny_cache, monkeypatch):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    assert split_unit("pos/de") == ("pos", "de") and split_unit("pos", "en") == ("pos", "en")
    study = Study(model, progress=False)
    with pytest.raises(Exception, match="unknown task 'nope'"):
        study.finetune_config("nope", ("en",))
    with pytest.raises(ValueError, match="no split 'dev'"):
        study.tokenized("pos", "en", "dev", 64)
    multi = study.finetune_config("pos", ("en", "de"), setting="multi")
    # the setting only says what the training languages mean: the same languages train the same model
    assert multi.train_langs == ("en", "de") and multi.key() == study.finetune_config("pos", ("en", "de")).key()
    jobs = plan_jobs(study, replace(_plan(model), settings=("multi",)))
    assert jobs[0].cfg.train_langs == ("en", "de") and jobs[0].cfg.setting == "multi"
