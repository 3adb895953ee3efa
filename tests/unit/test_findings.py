"""Findings cards on a tiny model: missing before the plan runs, a verdict with numbers after, from the cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headprune_core.findings.cards import MISSING, VERDICTS, Findings
from headprune_core.methods.uncertainty import metric_of
from headprune_core.multitask.affinity import gradts_map, shared_heads
from headprune_core.multitask.gradts import GradTS
from headprune_core.multitask.plan import GradTSPlan
from headprune_core.plans.plan import StudyPlan, run_plan
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study


@pytest.fixture()
def small_findings(tiny_cache, tmp_path, monkeypatch):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    gplan = {"name": "g", "description": "tiny", "model": model, "units": ["pos/en", "name/en", "pos/de"],
             "primaries": ["pos/en"], "max_trial": 1, "random_seeds": [0], "score_sentences": 20,
             "eval_sentences": 20, "train": {"max_train_sentences": 40, "epochs": 1.0, "lr": 1e-3},
             "train_seeds": [13], "bandit": {"rounds": 3, "round_steps": 2, "dev_sentences": 10}}
    (tmp_path / "g.json").write_text(json.dumps(gplan))
    retrain = {"max_train_sentences": 40, "epochs": 1.0, "lr": 1e-3}
    plan = StudyPlan(name="f", description="tiny findings", model=model, tasks=("pos", "name"), langs=("en", "de"),
                     random_seeds=(0, 1), curve_step=4, score_sentences=30, eval_sentences=30,
                     train={"max_train_sentences": 80, "epochs": 1.0, "lr": 1e-3},
                     refinetune=({"tasks": ["pos"], "levels": [1, 2], "seeds": [1, 2], "train": retrain},
                                 {"tasks": ["pos"], "strategy": "reverse", "levels": [1, 2], "train": retrain},
                                 {"tasks": ["pos"], "strategy": "random", "levels": [1, 2], "train": retrain},
                                 {"tasks": ["pos"], "strategy": "layers", "train": retrain},
                                 {"tasks": ["pos"], "shares": [0.25, 0.5], "train": retrain},
                                 {"tasks": ["pos"], "strategy": "random", "shares": [0.25, 0.5], "train": retrain}),
                     gradts=(str(tmp_path / "g.json"),))
    return Study(model, store=Store(tmp_path / "runs"), progress=False), plan


def test_cards_are_missing_then_computed_from_the_cache(small_findings):
    study, plan = small_findings
    before = Findings(study, plan)
    cards = before.cards()
    assert [c.key for c in cards] == list("abcdefg")
    assert all(c.verdict == MISSING and c.missing for c in cards)
    assert len(before.missing()) == len(before.jobs)

    run_plan(study, plan)
    found = Findings(study, plan)
    assert not found.missing()
    cards = {c.key: c for c in found.cards()}
    for c in cards.values():
        assert c.verdict in VERDICTS[:3] and not c.missing and c.measured and c.rows and c.protocol, c.key

    # (a): the table is the importance re-fine-tuning's own numbers, per language
    job, res = found.refinetune_result("importance")
    assert res["seeds"] == [1, 2] and res["levels"] == ["0", "1", "2"]
    rows = {r["language"].split()[0]: r for r in cards["a"].rows}
    assert set(rows) == {"en", "de"} and "(source)" in rows["en"]["language"]
    assert rows["de"]["unpruned"].startswith(f"{res['test']['de']['unpruned']['score']:.1f} [")
    # (b): curve rows per task, then after-retraining rows at k = 1, 2
    assert [r["task"] for r in cards["b"].rows][:2] == ["pos", "name"]
    assert [r["what"] for r in cards["b"].rows[2:]] == ["after retraining, k = 1, en test",
                                                        "after retraining, k = 2, en test"]
    # (d): one row per language and per family
    assert [r["language"] for r in cards["d"].rows[:2]] == ["en", "de"]
    assert cards["d"].rows[2]["family"] == "Germanic"
    # (e): importance vs random at 25% and 50% of 12 heads
    assert [r["heads pruned"] for r in cards["e"].rows[:2]] == ["3 of 12", "6 of 12"]
    # (g): the shared count is the maps' own
    gts = GradTS(study, GradTSPlan.from_file(plan.gradts[0]))
    maps = {u: gradts_map(np.asarray(study.store.get(gts.score_config(u))["raw"])) for u in gts.units}
    count = shared_heads(maps, top_percent=10.0)["count"]
    assert cards["g"].rows[0]["heads"] == int((count >= 2).sum()) and cards["g"].rows[0]["heads by"] == "gradient"
    assert len(cards["g"].rows) == 1 and "Gradient top-10%" in cards["g"].protocol
    # once learned pruning is computed (the Shared heads page), card (g) is decided by it, gradient beside it
    from headprune_core.multitask.stemcells import StemCells
    stem = StemCells(gts).run()
    g = Findings(study, plan).card_g()
    assert [r["heads by"] for r in g.rows] == ["gradient", "learned"] and "Decided by learned pruning" in g.protocol
    assert g.rows[1]["heads"] == len(stem["stem_cells"]) and g.verdict in VERDICTS[:3]
    # (f): trial against alone, all and random, with the cached evaluations' scores
    (alone,) = [r for r in cards["f"].rows if r["compared with"] == "alone"]
    units = study.store.get(gts.eval_config("pos/en", [], split="test"))["result"]["units"]
    assert alone["it scores"].startswith(f"{metric_of(units):.1f} [")
    _verdict_rules(found, job, res)


def _verdict_rules(f, job, res):
    """The verdict follows the stated rule: a card whose differences are all distinguishably in the paper's
    direction is reproduced, the other direction not reproduced, noise inconclusive."""

    def fake(diff, low, high, dist):
        return {"diff": diff, "low": low, "high": high, "distinguishable": dist, "n": 30, "p": 0.01}

    def with_changes(change, best):
        out = json.loads(json.dumps(res))
        for t in out["test"].values():
            t["change"] = change
        out["best"] = {s: best for s in out["best"]}
        return out

    cases = [(fake(2.0, 0.5, 3.5, True), "1", "reproduced"), (fake(-2.0, -3.5, -0.5, True), "1", "not reproduced"),
             (fake(0.0, 0.0, 0.0, False), "0", "not reproduced"), (fake(-0.5, -2.0, 1.0, False), "2", "inconclusive")]
    for change, best, verdict in cases:
        f.refinetune_result = lambda s, shares=False, r=with_changes(change, best): (job, r)
        assert f.card_a().verdict.startswith(verdict), (change, best)


def test_findings_plan_of_a_plan(tiny_cache, monkeypatch):
    from dataclasses import replace

    from headprune_core.findings.plan import findings_plan
    from headprune_core.plans.presets import find_plan
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    assert findings_plan(find_plan("demo"), (12, 12)) == find_plan("findings")
    assert findings_plan(find_plan("findings"), (12, 12)) is find_plan("findings")
    other = findings_plan(replace(find_plan("demo"), model="x"), (12, 12))
    assert other.model == "x" and other.gradts[0]["model"] == "x" and other.refinetune == find_plan("findings").refinetune
    plan = StudyPlan(name="p", description="", model=model, tasks=("pos", "name"), langs=("en", "de"),
                     settings=("multi",), train={"max_train_sentences": 50, "epochs": 1.0, "seed": 3})
    f = findings_plan(plan, (3, 4))
    assert f.name == "p-findings" and f.settings == ("cross", "multi")
    assert f.refinetune[0]["levels"] == [2, 4] and f.refinetune[0]["seeds"] == [3, 4, 5]
    (g,) = f.gradts
    assert g["units"] == ["pos/en", "pos/de", "name/en", "name/de"] and g["primaries"] == ["name/de"]
    assert [p.name for p in f.gradts_plans()] == ["p-gradts"]
