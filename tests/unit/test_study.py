"""Study end to end on a tiny random model and generated corpora: train, score, evaluate, curves, cache."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from headprune_core.plans.plan import StudyPlan, plan_jobs, run_plan
from headprune_core.runs.config import RefinetuneConfig, split_unit
from headprune_core.runs.retrain import refinetune_parts
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study


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
    again = run_plan(fresh, plan)
    assert again["computed"] == 0 and fresh.store.computations == 0
    assert np.array_equal(fresh.scores(jobs[1].cfg)["raw"], study.scores(jobs[1].cfg)["raw"])


def test_interrupted_run_resumes(tiny_cache, monkeypatch, tmp_path):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    plan = _plan(model)
    store = Store(tmp_path / "runs")
    seen = []

    def stop_at_fourth(what, i, n):
        seen.append(what)
        if i == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_plan(Study(model, store=store, progress=False), plan, on_progress=stop_at_fourth)
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
    assert res["levels"] == ["0", "1", "2"] and res["k"] == [0, 1, 2] and res["seeds"] == [ft.seed]
    dev = [res["dev"][lab]["score"] for lab in res["levels"]]
    assert res["best"] == {str(ft.seed): res["levels"][max(range(3), key=lambda i: (dev[i], -i))]}
    assert set(res["test"]) == {"en", "de"}
    parts = refinetune_parts(study, rc)
    assert parts[0].finetune == ft  # level 0 is the unpruned fine-tune itself
    ranking = study.importance(rc.ranking)
    lowest = {tuple(int(v) for v in np.unravel_index(i, ranking.shape))
              for i in np.argsort(ranking, axis=None, kind="stable")[:2]}
    assert set(parts[2].finetune.pruned) == lowest  # the 2 lowest-ranked heads
    for lang, r in res["test"].items():
        best = parts[int(res["best"][str(ft.seed)])]
        after = study.evaluation(best.tests[lang])["score"]
        before = study.evaluation(parts[0].tests[lang])["score"]
        assert r["unpruned"]["score"] == before and r["pruned"]["score"] == after
        assert r["change"]["diff"] == pytest.approx(after - before)
        assert r["change"]["low"] <= r["change"]["diff"] <= r["change"]["high"]
    store = Store(root)
    computed = len(store.entries())
    assert Study(model, progress=False).refinetune(rc) == res and len(store.entries()) == computed  # cached


def test_refinetune_controls_layers_and_seeds(tiny_cache, monkeypatch):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    study = Study(model, progress=False)
    ft = study.finetune_config("pos", ("en",), max_train_sentences=60, epochs=1.0, lr=1e-3)
    shape = study.head_shape
    ranking = study.score_config(ft, "pos", "en", max_sentences=30)
    imp = RefinetuneConfig(finetune=ft, ranking=ranking, levels=(3,), max_sentences=30)
    rev = imp.replace(strategy="reverse")
    rnd = imp.replace(strategy="random", ranking=None, random_seed=5)
    top = set(refinetune_parts(study, rev)[1].finetune.pruned)
    low = set(refinetune_parts(study, imp)[1].finetune.pruned)
    assert len(top) == len(low) == 3 and not top & low
    order = np.argsort(study.importance(ranking), axis=None, kind="stable")
    assert {tuple(int(v) for v in np.unravel_index(i, shape)) for i in order[-3:]} == top
    assert len(refinetune_parts(study, rnd)[1].finetune.pruned) == 3
    # random heads are drawn anew per training seed (the first seed's draw is the one-seed draw: its keys hold)
    draws = [p.finetune.pruned for p in refinetune_parts(study, rnd.replace(seeds=(1, 2, 3))) if p.label == "3"]
    assert len(set(draws)) == 3 and draws[0] == refinetune_parts(study, rnd)[1].finetune.pruned
    with pytest.raises(ValueError, match="layer pairs need at least 5 layers.*the model has 3"):
        refinetune_parts(study, imp.replace(strategy="layer_pairs", ranking=None))
    layers = RefinetuneConfig(finetune=ft, strategy="layers", seeds=(1, 2), max_sentences=30)
    parts = refinetune_parts(study, layers)
    assert [(p.label, p.seed) for p in parts] == [(lab, s) for lab in ("0", "bottom", "middle", "top") for s in (1, 2)]
    third = shape[0] // 3
    assert {layer for layer, _ in parts[2].finetune.pruned} == set(range(third))  # bottom, seed 1
    # another seed trains on another sample of the sentences: its data fingerprint differs
    assert parts[0].finetune.seed == 1 and parts[1].finetune.seed == 2
    assert parts[0].finetune.data_fp != parts[1].finetune.data_fp
    assert parts[1].finetune == study.finetune_config("pos", ("en",), max_train_sentences=60, epochs=1.0, lr=1e-3,
                                                      seed=2)
    res = study.refinetune(layers)
    assert res["levels"] == ["0", "bottom", "middle", "top"]
    assert res["k"] == [0, third * shape[1]] + [third * shape[1]] * 2
    assert res["seeds"] == [1, 2] and set(res["best"]) == {"1", "2"}
    assert len(res["dev"]["top"]["per_seed"]) == 2
    # languages the model never trained on can be tested on every sentence outside their dev split
    held = layers.replace(eval_langs=("en", "de"), target_split="heldout", target_sentences=70, seeds=(1,))
    tests = refinetune_parts(study, held)[0].tests
    assert (tests["en"].split, tests["en"].max_sentences) == ("test", 30)  # the source: its test split
    size = study.split_size("pos", "de", "test") + study.split_size("pos", "de", "train")
    assert tests["de"].split == "heldout" and tests["de"].max_sentences == min(70, size) > 30
    assert len(study.evaluation(tests["de"])["units"]["total"]) == tests["de"].max_sentences
    assert held.replace(target_split="test", target_sentences=None).key() == \
        layers.replace(eval_langs=("en", "de"), seeds=(1,)).key()  # the defaults leave keys as they were
    with pytest.raises(ValueError, match="unknown target split 'dev'"):
        held.replace(target_split="dev")
    with pytest.raises(ValueError, match="needs a ranking"):
        RefinetuneConfig(finetune=ft, strategy="reverse")
    with pytest.raises(ValueError, match="cannot prune 999 heads"):
        refinetune_parts(study, rnd.replace(levels=(999,)))


def test_split_half_scores_read_every_other_sentence(tiny_cache, monkeypatch):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    study = Study(model, progress=False)
    ft = study.finetune_config("pos", ("en",), max_train_sentences=40, epochs=1.0, lr=1e-3)
    whole, first, second = (study.score_config(ft, "pos", "de", max_sentences=20, half=h) for h in (0, 1, 2))
    assert len({whole.data_fp, first.data_fp, second.data_fp}) == 3 and whole.key() != first.key()
    assert whole == study.score_config(ft, "pos", "de", max_sentences=20)  # half 0 keys as before
    read = min(20, study.split_size("pos", "de", "validation"))
    assert sum(len(b["input_ids"]) for b in study.eval_batches("pos", "de", "validation", 20, max_length=64,
                                                               half=2)) == read // 2
    assert study.scores(first)["raw"].shape == study.head_shape
    with pytest.raises(ValueError, match="half must be 0 \\(all\\), 1 or 2, got 3"):
        first.replace(half=3)


def test_units_and_errors(tiny_cache, monkeypatch):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    assert split_unit("pos/de") == ("pos", "de") and split_unit("pos", "en") == ("pos", "en")
    study = Study(model, progress=False)
    with pytest.raises(Exception, match="unknown task 'nope'"):
        study.finetune_config("nope", ("en",))
    with pytest.raises(ValueError, match="no split 'dev'"):
        study.tokenized("pos", "en", "dev", 64)
    # only the rows a run reads are tokenised, each as it would be in the whole split; their fingerprints too
    rows = [9, 2, 14, 3]
    some, _ = study.tokenized("pos", "en", "test", 64, rows=rows)
    every, _ = study.tokenized("pos", "en", "test", 64)
    assert some["input_ids"] == [every[i]["input_ids"] for i in rows]
    assert some["labels"] == [every[i]["labels"] for i in rows]
    fresh = Study(model, progress=False)
    assert fresh.read_fp("pos", "en", "test", None, rows=tuple(rows)) == study.read_fp("pos", "en", "test", None,
                                                                                       rows=tuple(rows))
    multi = study.finetune_config("pos", ("en", "de"), setting="multi")
    # the setting only says what the training languages mean: the same languages train the same model
    assert multi.train_langs == ("en", "de") and multi.key() == study.finetune_config("pos", ("en", "de")).key()
    jobs = plan_jobs(study, replace(_plan(model), settings=("multi",)))
    assert jobs[0].cfg.train_langs == ("en", "de") and jobs[0].cfg.setting == "multi"


def test_plan_refinetune_experiments_expand_with_their_options(tiny_cache, monkeypatch):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    study = Study(model, progress=False)
    plan = replace(_plan(model), tasks=("pos", "name"), settings=("cross", "multi"), refinetune=(
        {"tasks": ["pos"], "settings": ["cross"], "strategy": "importance", "levels": [2], "seeds": [1, 2],
         "train": {"max_train_sentences": 50}},
        {"tasks": ["pos"], "settings": ["cross"], "strategy": "random", "shares": [0.25, 0.5], "random_seed": 3},
        {"settings": ["multi"], "strategy": "layers"},
    ))
    rcs = [j.cfg for j in plan_jobs(study, plan) if j.cfg.kind == "refinetune"]
    assert [(rc.strategy, rc.finetune.tasks, rc.finetune.setting) for rc in rcs] == [
        ("importance", ("pos",), "cross"), ("random", ("pos",), "cross"), ("layers", ("pos",), "multi"),
        ("layers", ("name",), "multi")]
    imp, rnd = rcs[:2]
    # the retraining runs' own options; ranked on the source dev set by the unpruned model trained like them
    assert imp.finetune.max_train_sentences == 50 and imp.finetune.lr == 1e-3 and imp.seeds == (1, 2)
    assert imp.ranking.finetune == imp.finetune and imp.ranking.lang == "en" and imp.ranking.split == "validation"
    assert imp.points() == [("0", 0), ("2", 2)] and imp.eval_langs == ("en", "de")
    assert rnd.ranking is None and rnd.levels == (3, 6) and rnd.random_seed == 3  # 25% and 50% of 12 heads
    assert rnd.finetune == study.finetune_config("pos", ("en",), **plan.train)
    only_en = plan_jobs(study, replace(plan, refinetune=({"tasks": ["pos"], "langs": ["en"], "levels": [2]},)))
    assert [j.cfg.eval_langs for j in only_en if j.cfg.kind == "refinetune"] == [("en",), ("en",)]  # cross, multi
    with pytest.raises(ValueError, match=r"refinetune\[0\]: langs must be a list of the plan's langs"):
        StudyPlan.from_dict({**plan.to_dict(), "refinetune": [{"langs": ["xx"]}]})
    with pytest.raises(ValueError, match=r"refinetune\[0\]: tasks must be a list of the plan's tasks"):
        StudyPlan.from_dict({**plan.to_dict(), "refinetune": [{"tasks": ["ner"]}]})
    with pytest.raises(ValueError, match="refinetune prunes up to 99 heads; the model has 12"):
        plan_jobs(study, replace(plan, refinetune=({"levels": [99]},)))


def test_plan_affinity_computes_the_gradts_maps_only(tiny_cache, monkeypatch, tmp_path):
    """A plan's ``affinity`` GradTS plans add each unit's single-task fine-tune and head map as jobs (the task
    affinity matrix), not the multi-task validation; restricted plans leave them out."""
    from headprune_core.multitask.gradts import GradTS
    from headprune_core.multitask.plan import GradTSPlan
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    gplan = {"name": "g", "description": "tiny", "model": model, "units": ["pos/en", "name/en", "pos/de"],
             "primaries": ["pos/en"], "score_sentences": 20, "eval_sentences": 20,
             "train": {"max_train_sentences": 40, "epochs": 1.0, "lr": 1e-3}}
    plan = replace(_plan(model), affinity=(gplan,))
    study = Study(model, store=Store(tmp_path / "runs"), progress=False)
    jobs = plan_jobs(study, plan)
    maps = [j for j in jobs if "GradTS g" in j.what]
    assert [j.cfg.kind for j in maps] == ["finetune", "score"] * 3
    run_plan(study, plan)
    gts = GradTS(study, GradTSPlan.from_dict(gplan))
    n = study.store.computations
    assert set(gts.affinity()["names"]) == set(gplan["units"]) and study.store.computations == n  # all cached
    assert gts.cached_result() is None  # the validation is not part of it
    assert not plan.restricted(langs=("en",)).affinity and plan.restricted(sentences=30).affinity
    with pytest.raises(ValueError, match="affinity must be a list"):
        replace(plan, affinity="gradts-demo")
    assert StudyPlan.from_dict({**plan.to_dict(), "affinity": [gplan]}).affinity == (gplan,)
    # a preset's units for this plan's model (the demo's affinity maps in a sweep over models)
    (demo_maps,) = StudyPlan.from_dict({**plan.to_dict(), "affinity": ["gradts-demo"]}).gradts_plans(
        field_name="affinity")
    assert demo_maps.model == model and len(demo_maps.units) == 8
    with pytest.raises(ValueError, match="affinity: unknown GradTS plan 'nope'"):
        StudyPlan.from_dict({**plan.to_dict(), "affinity": ["nope"]})


def test_study_data_is_the_reading_half_and_never_reaches_into_the_computing_half():
    """The Study's inheritance is one-way by design (runs/reading.py says why): every ``self.<name>`` that
    StudyData reads is defined by StudyData itself, never by Study; and every computation of the Study meets the
    store through ``_cached`` (the only ``get_or_compute`` in study.py)."""
    import ast
    import inspect

    from headprune_core.runs import reading, study

    tree = ast.parse(inspect.getsource(reading.StudyData))
    used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "self"}
    defined = set(vars(reading.StudyData)) | {
        t.attr for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AnnAssign)
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        for t in ([*t.elts] if isinstance(t, ast.Tuple) else [t])
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    assert used <= defined, used - defined
    assert not (used & (set(vars(study.Study)) - set(vars(reading.StudyData))))
    source = inspect.getsource(study)
    assert source.count("get_or_compute(") == 1 and "def _cached" in source
