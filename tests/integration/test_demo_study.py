"""The demo preset on the real embedded model and corpora, restricted to 2 languages and 200
sentences: English POS is learned, and pruning by importance beats pruning most-important-first."""

from __future__ import annotations

import numpy as np
import pytest

from headprune_core.plans.plan import plan_jobs, run_plan
from headprune_core.plans.presets import PRESETS
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study

pytestmark = [pytest.mark.slow, pytest.mark.parallel]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("demo_runs"))
    study = Study("me5-small", store=store, progress=False)
    plan = PRESETS["demo"].restricted(langs=("en", "de"), tasks=("pos",), sentences=200)
    res = run_plan(study, plan)
    return study, plan, res


def test_demo_jobs_all_computed(demo):
    study, plan, res = demo
    assert res["computed"] == res["jobs"] == len(plan_jobs(study, plan))
    assert run_plan(study, plan)["computed"] == 0  # second look: all cached


def test_english_pos_well_above_majority_tag(demo):
    study, plan, _ = demo
    ft = study.finetune_config("pos", ("en",), **plan.train)
    ev = study.evaluation(study.eval_config(ft, "pos", "en", max_sentences=plan.eval_sentences))
    tags = [t for s in study.data("pos", "en").dataset["test"]["tags"] for t in s]
    majority = 100 * np.bincount(tags).max() / len(tags)
    assert ev["score"] > majority + 40, (ev["score"], majority)
    de = study.evaluation(study.eval_config(ft, "pos", "de", max_sentences=plan.eval_sentences))
    assert de["score"] > majority  # zero-shot transfer works at all


def test_importance_order_beats_reverse_order(demo):
    study, plan, _ = demo
    ft = study.finetune_config("pos", ("en",), **plan.train)
    kw = dict(method=plan.method, score_sentences=plan.score_sentences, step=plan.curve_step,
              max_sentences=plan.eval_sentences)
    imp = study.curve(study.curve_config(ft, "pos", "en", strategy="importance", **kw))
    rev = study.curve(study.curve_config(ft, "pos", "en", strategy="reverse", **kw))
    inner = slice(1, -1)  # k = 0 and k = all heads are the same model either way
    assert np.mean(imp["mean"][inner]) > np.mean(rev["mean"][inner])
    raw = study.scores(study.score_config(ft, "pos", "en", method=plan.method,
                                          max_sentences=plan.score_sentences))["raw"]
    assert raw.shape == (12, 12) and (raw > 0).all()


def test_demo_sweep_spec_is_the_demo_study(demo):
    """sweeps/demo.json expands into exactly the demo preset's jobs (same keys, same order); restricted like the
    fixture's study, everything it would run is already in that study's cache."""
    from pathlib import Path

    from headprune_core.plans.sweep import SweepSpec, build_graph
    from headprune_core.plans.sweep_cost import dry_run
    study, plan, _ = demo
    spec = SweepSpec.from_file(Path(__file__).resolve().parents[2] / "sweeps" / "demo.json")
    full = build_graph(spec, store=study.store)
    assert list(full.jobs) == [f"{j.cfg.kind}/{j.cfg.key()}" for j in plan_jobs(study, PRESETS["demo"])]
    # start.sh's part before the dashboard: every job of the demo but its curves, with the same keys
    first = build_graph(SweepSpec.from_file(Path(__file__).resolve().parents[2] / "sweeps" / "demo-first.json"),
                        store=study.store)
    assert list(first.jobs) == [nid for nid, n in full.jobs.items() if n.cfg.kind != "curve"]
    assert (len(first.jobs), len(full.jobs)) == (50, 72)
    restricted = SweepSpec.from_dict({**spec.to_dict(), "langs": list(plan.langs), "tasks": list(plan.tasks),
                                      "score_sentences": plan.score_sentences, "eval_sentences": plan.eval_sentences,
                                      "train": plan.train, "affinity": []})
    report = dry_run(build_graph(restricted, store=study.store))
    assert report["todo"] == 0 and report["cached"] == report["jobs"] == len(plan_jobs(study, plan))
