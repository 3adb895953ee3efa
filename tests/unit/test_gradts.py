"""GradTS study layer on a tiny random BERT and generated corpora (tests/app/fixture_cache.py), through the real
pipeline: per-unit maps cached one by one, thres/trial selections checked by multi-task runs, a Hub-style
(GLUE) plan read from local files."""

from __future__ import annotations

import json
from dataclasses import replace

import datasets
import numpy as np
import pytest
from datasets import ClassLabel, Features, Value

import headprune_core.runs.study as study_mod
from headprune_core.methods.similarity import correlation_matrix
from headprune_core.multitask.affinity import gradts_map, rank_auxiliary, select_instances
from headprune_core.multitask.gradts import GradTS, format_table, random_sets, random_size, validation_table
from headprune_core.multitask.plan import GRADTS_PRESETS, GradTSPlan, normalize_unit
from headprune_core.runs.config import GradTSConfig
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study
from tests.helpers.fixture_cache import LEXICON, build_fixture_cache
from tests.helpers.hub_copy import write_hub_repo

TRAIN = {"max_train_sentences": 48, "epochs": 2.0, "lr": 3e-3, "batch_size": 16, "freeze_embeddings": False}


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory):
    """Tiny model + generated pos/name corpora (en de es fr), no results."""
    return build_fixture_cache(tmp_path_factory.mktemp("gradts-fixture"), with_runs=False)


@pytest.fixture
def env(fixture_root, tmp_path, monkeypatch):
    """HEADPRUNE_CACHE -> the fixture; a fresh store per test; counters on fine-tuning and scoring."""
    monkeypatch.setenv("HEADPRUNE_CACHE", str(fixture_root["root"]))
    calls = {"finetune": [], "score": []}
    real_ft, real_score = study_mod.finetune, study_mod.score_heads

    def counting_ft(model, train, **kw):
        calls["finetune"].append(tuple(sorted(train)))
        return real_ft(model, train, **kw)

    def counting_score(*a, **kw):
        calls["score"].append(kw.get("method"))
        return real_score(*a, **kw)

    monkeypatch.setattr(study_mod, "finetune", counting_ft)
    monkeypatch.setattr(study_mod, "score_heads", counting_score)

    def make_study():
        return Study(fixture_root["model"], store=Store(tmp_path / "runs"), device="cpu", progress=False)
    return {"model": fixture_root["model"], "root": fixture_root["root"], "calls": calls, "study": make_study,
            "tmp": tmp_path}


def plan(model: str, units, primaries, **kw) -> GradTSPlan:
    return GradTSPlan(name="t", description="test", units=tuple(units), primaries=tuple(primaries), model=model,
                      train=kw.pop("train", TRAIN), score_sentences=20, eval_sentences=20, max_trial=2,
                      threshold=kw.pop("threshold", 0.6), train_seeds=kw.pop("train_seeds", (13,)),
                      random_seeds=kw.pop("random_seeds", (0, 1)), bandit=kw.pop("bandit", BANDIT), **kw)


BANDIT = {"rounds": 4, "round_steps": 2, "dev_sentences": 10}


def test_adding_a_unit_computes_only_its_map(env):
    units = ["pos/en", "name/en", "pos/es"]
    gts = GradTS(env["study"](), plan(env["model"], units, ["pos/en"]))
    aff = gts.affinity()
    assert len(env["calls"]["finetune"]) == 3 and env["calls"]["score"] == ["kv_grad"] * 3
    assert aff["names"] == units and aff["tau"].shape == (3, 3)
    assert np.allclose(np.diag(aff["tau"]), 1) and np.allclose(aff["tau"], aff["tau"].T)
    maps = gts.maps()
    assert all(m.shape == (3, 4) and m.min() == 0 and m.max() == 1 for m in maps.values())  # GradTS min-max
    _, expected = correlation_matrix(maps, kind="spearman")
    assert np.allclose(aff["spearman"], expected)

    # a new candidate in a new session (same store): only its fine-tune and its map are computed
    bigger = GradTS(env["study"](), plan(env["model"], units + ["name/es"], ["pos/en"]))
    aff2 = bigger.affinity()
    assert env["calls"]["finetune"][3:] == [("name/es",)] and len(env["calls"]["score"]) == 4
    assert np.allclose(aff2["tau"][:3, :3], aff["tau"])

    # gate_grad is selectable: new maps from the same fine-tuned models (no new fine-tuning)
    gate = GradTS(env["study"](), replace(plan(env["model"], units, ["pos/en"]), method="gate_grad"))
    raw_gate, raw_kv = gate.unit_raw("pos/en"), gts.unit_raw("pos/en")
    assert env["calls"]["score"][4:] == ["gate_grad"] and len(env["calls"]["finetune"]) == 4
    assert not np.allclose(gradts_map(raw_gate), gradts_map(raw_kv))


def test_thres_and_trial_select_through_real_multitask_runs(env):
    units = ["pos/en", "name/en", "pos/es", "name/es"]
    study = env["study"]()
    base = GradTS(study, plan(env["model"], units, ["name/en"]))
    aff = base.affinity()
    ranking = rank_auxiliary(aff["names"], aff["tau"], "name/en")
    threshold = (ranking[0][1] + ranking[1][1]) / 2 if ranking[0][1] > ranking[1][1] else ranking[0][1] - 1e-9
    gts = GradTS(study, plan(env["model"], units, ["name/en"], threshold=threshold))
    n_before = len(env["calls"]["finetune"])
    v = gts.validate("name/en", aff["names"], aff["tau"])

    assert v["ranking"] == [list(r) for r in ranking]
    assert v["thres"] == [n for n, t in ranking if t > threshold] and v["thres"]
    trials = v["trial"]["trials"]
    assert [t["aux"] for t in trials] == [[], [ranking[0][0]], [ranking[0][0], ranking[1][0]]]  # max_trial 2
    for t in trials:  # each trial's dev score is the primary's validation metric of that cached run
        ev = study.evaluation(gts.eval_config("name/en", t["aux"], split="validation"))
        assert t["dev"] == pytest.approx(ev["score"])
        assert ev["metric"] == "entity F1"
    best = max(trials, key=lambda t: (t["dev"], -len(t["aux"])))
    assert v["trial"]["selected"] == best["aux"]
    kinds = [r["row"] for r in v["rows"]]
    assert kinds == ["single", "thres", "trial", "fg", "bandit", "all", "random", "random"]
    assert next(r for r in v["rows"] if r["row"] == "all")["units"] == sorted(units)
    k = random_size(v["thres"], v["trial"]["selected"])
    assert v["random_k"] == k and all(len(r["aux"]) == k for r in v["rows"] if r["row"] == "random")
    # multi-task runs are keyed by their sorted units: the thres set is a trial prefix, trained once
    # (and the fg run trains the same units on fewer rows: another run)
    assert len(study.store.entries("finetune")) == len(env["calls"]["finetune"])  # nothing trained twice
    assert len(env["calls"]["finetune"]) > n_before
    assert v["summary"]["random"]["n"] == 2 and v["summary"]["single"]["std"] == 0
    # every method has its interval and its cost; GradTS's selections pay for the single-task maps
    assert set(v["intervals"]) == set(v["costs"]) == set(kinds)
    assert v["intervals"]["single"]["vs_alone"] is None and v["intervals"]["trial"]["vs_alone"] is not None
    maps = sum(sum(gts.map_seconds(u).values()) for u in units)
    assert v["costs"]["thres"]["selection"] == pytest.approx(maps, abs=0.2)
    assert v["costs"]["trial"]["selection"] > v["costs"]["thres"]["selection"]
    assert v["costs"]["single"]["selection"] == 0 and v["costs"]["all"]["train"] > 0
    bandit_seconds = v["bandit"]["13"]["seconds"]
    assert v["costs"]["bandit"]["selection"] == pytest.approx(bandit_seconds, abs=0.051)  # rounded to 0.1 s


def test_run_is_cached_and_reports_table_and_times(env):
    p = plan(env["model"], ["pos/en", "name/en", "pos/es"], ["pos/es", "name/en"], threshold=-1.0)
    jobs = []
    gts = GradTS(env["study"](), p, on_progress=lambda what, done, total: jobs.append((what, done, total)))
    gts.expected = gts.expected_jobs()
    assert gts.cached_result() is None
    out = gts.run()
    res = out["result"]
    assert out["tau"].shape == (3, 3) and res["names"] == ["pos/en", "name/en", "pos/es"]
    assert [v["primary"] for v in res["validation"]] == ["pos/es", "name/en"]
    assert all(v["thres"] == [n for n, _ in v["ranking"]] for v in res["validation"])  # threshold -1: all
    assert len(jobs) <= gts.expected_jobs() and any(not what.startswith("cached: ") for what, _, _ in jobs)
    assert [done for _, done, _ in jobs] == list(range(len(jobs))) and {t for _, _, t in jobs} == {gts.expected}
    secs = res["seconds"]
    assert set(secs["maps"]) == set(p.units) and secs["wall"] >= secs["wall_maps"]
    assert secs["maps_total"] == pytest.approx(sum(sum(v.values()) for v in secs["maps"].values()), abs=0.06)
    assert secs["multitask_total"] == pytest.approx(sum(secs["multitask_runs"].values()), abs=0.06)
    assert all(v > 0 for v in secs["multitask_runs"].values()) and len(secs["multitask_runs"]) >= 2
    assert all(t["train_seconds"] is not None for v in res["validation"] for t in v["trial"]["trials"])
    table = validation_table(res)
    assert [(line["primary"], line["row"]) for line in table][:7] == [
        ("pos/es", r) for r in ("single", "thres", "trial", "fg", "bandit", "all", "random")]
    text = format_table(res)
    assert "+ GradTS-trial" in text and "+ bandit (AUTOSEM)" in text and "95% CI" in text

    n_ft, n_score = len(env["calls"]["finetune"]), len(env["calls"]["score"])
    again = GradTS(env["study"](), p).run()  # everything cached: nothing recomputed
    assert (len(env["calls"]["finetune"]), len(env["calls"]["score"])) == (n_ft, n_score)
    assert again["result"]["validation"] == res["validation"]
    assert GradTS(env["study"](), p).cached_result() is not None


def test_cli_gradts_then_affinity_from_the_cache(env, capsys):
    from headprune_core.cli.main import main
    p = replace(plan(env["model"], ["pos/en", "name/en", "pos/es"], ["pos/es"], threshold=0.0), max_trial=1,
                random_seeds=(0,))
    path = env["tmp"] / "plan.json"
    path.write_text(json.dumps(p.to_dict()))
    root = str(env["root"])
    assert main(["gradts", str(path), "--cache", root, "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "Kendall tau between" in out and "+ GradTS-trial" in out and "wall time" in out
    assert "pos/es: ranking" in out and "GradTS-thres (tau > 0.0)" in out
    assert "GradTS-fg (tau > 0.62): " in out and "bandit seed 13" in out and "+ bandit (AUTOSEM)" in out
    n = len(env["calls"]["finetune"])
    assert main(["affinity", "--plan", str(path), "--primary", "name/en", "--cache", root]) == 0
    out = capsys.readouterr().out
    assert "auxiliary units for name/en" in out and len(env["calls"]["finetune"]) == n  # maps were cached
    assert main(["gradts", str(path), "--cache", root, "--max-trial", "-1"]) == 2
    assert "--max-trial must be 0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # argparse refuses it before any work
        main(["gradts", str(path), "--cache", root, "--train-seeds", "13,x"])
    assert exit_info.value.code == 2
    assert "--train-seeds: expected comma-separated whole numbers, got '13,x'" in capsys.readouterr().err
    assert main(["stemcells", str(path), "--cache", root, "--device", "cpu", "--l0-epochs", "2"]) == 0
    out = capsys.readouterr().out
    assert "heads kept by at least k of 3 tasks" in out and "stem cells (kept by >= 2)" in out
    assert out.count(" 6 ") >= 3  # every unit keeps 6 of 12 heads
    assert main(["stemcells", str(path), "--cache", root, "--device", "cpu", "--penalty", "0.02"]) == 0
    assert "L0 weight 0.02" in capsys.readouterr().out  # as few heads as the task allows: another run
    assert main(["gradts", "no-such-plan", "--cache", root]) == 2
    assert "unknown GradTS plan 'no-such-plan'; known: gradts-demo" in capsys.readouterr().err


def _write_glue(tmp_path):
    """GLUE-like local copies (same columns and features as the Hub): SST-2 (single) and RTE (pairs)."""
    en = LEXICON["en"]
    words = en["noun"] + en["verb"] + en["adj"] + en["names"]
    rng = np.random.default_rng(0)

    def sentence():
        return " ".join(rng.choice(words, size=int(rng.integers(3, 7))))

    configs = {}
    sst = Features({"sentence": Value("string"), "label": ClassLabel(names=["negative", "positive"]),
                    "idx": Value("int32")})
    rte = Features({"sentence1": Value("string"), "sentence2": Value("string"),
                    "label": ClassLabel(names=["entailment", "not_entailment"]), "idx": Value("int32")})
    for task, feats, n in (("sst2", sst, 80), ("rte", rte, 60)):
        configs[task] = {}
        for split, size in (("train", n), ("validation", 24), ("test", 10)):
            rows = []
            for i in range(size):
                row = {"idx": i, "label": -1 if split == "test" else int(i % 2)}
                if task == "sst2":
                    row["sentence"] = sentence() + (" big" if i % 2 else " old")
                else:
                    row["sentence1"], row["sentence2"] = sentence(), sentence()
                rows.append(row)
            configs[task][split] = datasets.Dataset.from_dict({k: [r[k] for r in rows] for k in feats},
                                                              features=feats)
    return write_hub_repo(tmp_path / "glue", configs)


def test_glue_plan_runs_on_local_hub_files(env):
    """The gradts-glue preset's path (Hub sources), on a local copy laid out like the Hub repository."""
    repo = _write_glue(env["tmp"])
    glue = GRADTS_PRESETS["gradts-glue"]
    p = replace(glue, model=env["model"], units=("sst2/en", "rte/en", "pos/en"), primaries=("sst2/en",),
                sources={t: f"hub:{repo}:{t}" for t in ("sst2", "rte")},
                train=TRAIN, score_sentences=16, eval_sentences=16, max_trial=1, random_seeds=(0,))
    study = env["study"]()
    gts = GradTS(study, p)
    res = gts.run()["result"]
    assert gts.study.data("sst2", "en").meta["ref"] == f"hub:{repo}:sst2"
    assert gts.study.data("rte", "en").is_pair
    assert study.sources == {}  # the caller's Study is untouched: it still reads only embedded corpora
    with pytest.raises(KeyError, match="has no embedded corpus"):
        study.data("sst2", "en")
    v = res["validation"][0]
    assert v["primary"] == "sst2/en" and {r["metric"] for r in v["rows"]} == {"accuracy"}
    assert next(r for r in v["rows"] if r["row"] == "all")["units"] == ["pos/en", "rte/en", "sst2/en"]


def test_units_plans_and_random_sets():
    assert normalize_unit("pos/de") == "pos/de" and normalize_unit("polarity-en") == "polarity-en/en"
    with pytest.raises(ValueError, match="say which language of 'pos'"):
        normalize_unit("pos")
    with pytest.raises(KeyError, match="unknown task 'nope'"):
        normalize_unit("nope/en")
    pool = ["a", "b", "c", "d", "e"]
    sets = random_sets(pool, 2, (0, 1), primary="x")
    assert sets == random_sets(pool, 2, (0, 1), primary="x") and all(len(s) == 2 for s in sets)
    assert sets[0] != sets[1]  # distinct while enough combinations remain
    assert random_sets(["a", "b"], 2, (0, 1), primary="x") == [["a", "b"], ["a", "b"]]
    assert random_sets(pool, 9, (0,), primary="x") == [pool]
    assert random_size([], []) == 1 and random_size(["a"], []) == 1 and random_size(["a"], ["b", "c"]) == 2
    with pytest.raises(ValueError, match="unknown GradTS method"):
        GradTSPlan(name="x", description="", units=("pos/en", "pos/de"), primaries=("pos/en",), method="taylor")
    with pytest.raises(ValueError, match="not fine-tuning options"):
        GradTSPlan(name="x", description="", units=("pos/en", "pos/de"), primaries=("pos/en",), train={"tasks": ("a",)})
    with pytest.raises(ValueError, match="GradTS needs at least two distinct task units"):
        GradTSPlan(name="x", description="", units=("pos/en",), primaries=("pos/en",))
    demo = GRADTS_PRESETS["gradts-demo"]
    assert len(demo.units) >= 8 and len(demo.primaries) == 2 and "Subsampled" in demo.note
    assert GradTSPlan.from_dict(demo.to_dict()) == demo


def test_gradts_config_key_and_validation():
    cfg = GradTSConfig(model="m", units=("a/en", "b/en"), primaries=("a/en",), train=(("epochs", 1.0),))
    assert GradTSConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.replace(threshold=0.5).key() != cfg.key() and cfg.replace().key() == cfg.key()
    with pytest.raises(ValueError, match="primary units must be among the units"):
        GradTSConfig(model="m", units=("a/en", "b/en"), primaries=("c/en",))
    with pytest.raises(ValueError, match="two distinct"):
        GradTSConfig(model="m", units=("a/en",), primaries=("a/en",))


def test_fg_keeps_exactly_the_examples_above_the_threshold_and_trains_on_them(env):
    units = ["pos/en", "name/en", "pos/es"]
    study = env["study"]()
    p = plan(env["model"], units, ["name/en"], fg_threshold=0.0)
    gts = GradTS(study, p)
    fg = gts.fg("name/en")
    primary = gts.unit_raw("name/en")
    for unit in ("pos/en", "pos/es"):
        found = study.instances(gts.instance_config(unit))
        maps, rows = found["maps"], [int(r) for r in found["rows"]]
        assert maps.shape == (len(rows), *study.head_shape) and len(set(rows)) == len(rows)
        assert len(rows) == gts.single_config(unit).max_train_sentences  # the rows a multi-task run trains on
        taus = select_instances(maps, primary, 0.0)["tau"]
        assert fg["units"][unit]["tau"] == pytest.approx(taus, abs=1e-4)
        assert fg["units"][unit]["kept"] == sorted(r for r, t in zip(rows, taus) if t > 0.0)
        assert 0 < len(fg["units"][unit]["kept"]) < len(rows)  # the fixture's threshold splits the examples
    # training on the kept examples reads exactly them: the fine-tune's data statistics say how many
    aux = sorted(fg["keep"])
    ft = gts.multi_config("name/en", aux, keep=fg["keep"])
    log = study.train_log(ft)
    for unit in aux:
        task, lang = unit.split("/")
        assert log["data"][f"{task}/{lang}"]["train_sentences"] == len(fg["keep"][unit])
    assert ft.key() != gts.multi_config("name/en", aux).key()
    # cached: per-example maps are not recomputed
    again = GradTS(env["study"](), p)
    import headprune_core.runs.study as sm
    real = sm.instance_kv_maps
    sm.instance_kv_maps = lambda *a, **k: pytest.fail("per-example maps recomputed")
    try:
        assert again.fg("name/en") == fg
    finally:
        sm.instance_kv_maps = real


def test_select_instances_on_constructed_maps():
    rng = np.random.default_rng(0)
    primary = rng.random((3, 4))
    close = primary + 0.01 * rng.random((3, 4))
    far = primary.max() - primary  # reversed before normalisation: negative tau after
    sel = select_instances(np.stack([close, far, primary]), primary, 0.62)
    assert sel["kept"] == [0, 2] and sel["tau"][1] < 0 and sel["tau"][2] == pytest.approx(1.0)
    assert select_instances(np.stack([close, far]), primary, 1.0)["kept"] == []  # strictly above


def test_bandit_search_is_cached_per_seed(env):
    units = ["pos/en", "name/en", "pos/es"]
    study = env["study"]()
    gts = GradTS(study, plan(env["model"], units, ["name/en"]))
    res = gts.bandit("name/en", 13)
    assert set(res["means"]) == set(units) and sum(res["chosen"].values()) == BANDIT["rounds"]
    assert set(res["selected"]) <= {"pos/en", "pos/es"}
    assert all(res["means"][u] > 0.5 for u in res["selected"])
    assert len(res["history"]) == 4 and all(h["reward"] in (0.0, 1.0) for h in res["history"])
    n = len(study.store.entries("bandit"))
    assert GradTS(env["study"](), gts.plan).bandit("name/en", 13)["means"] == res["means"]
    assert len(study.store.entries("bandit")) == n
    assert gts.bandit_config("name/en", 14).key() != gts.bandit_config("name/en", 13).key()


def test_stem_cells_from_learned_pruning_per_task_and_multitask(env):
    from headprune_core.multitask.stemcells import StemCells, expected_claimed
    units = ["pos/en", "name/en", "pos/es"]
    study = env["study"]()
    gts = GradTS(study, plan(env["model"], units, ["name/en"]))
    cells = StemCells(gts, l0={"target": 0.5, "epochs": 4.0})
    assert len(cells.missing()) == len(cells.configs())
    res = cells.run()
    n_heads = int(np.prod(study.head_shape))
    assert all(int(np.sum(res["kept"][u])) == n_heads // 2 for u in units)  # the target: half the heads
    assert res["multi_kept_n"] == n_heads // 2 and cells.multi_config().tasks == tuple(sorted(units))
    count = np.sum([res["kept"][u] for u in units], axis=0)
    assert np.array_equal(count, res["count"]) and res["majority"] == 2
    assert all(c >= 2 and count[a][b] == c for a, b, c in res["stem_cells"])
    assert res["claimed"][1] >= res["claimed"][2] >= res["claimed"][3]
    assert res["claimed_chance"][2] == pytest.approx(expected_claimed(3, 0.5, 2) * n_heads)
    assert expected_claimed(3, 0.5, 2) == pytest.approx(0.5)
    jac = np.asarray(res["jaccard"])
    assert np.allclose(np.diag(jac), 1) and np.allclose(jac, jac.T) and (jac >= 0).all()
    for row in res["per_task"]:
        assert row["kept"] == n_heads // 2 and 0 <= row["overlap_gradient"] <= 1
        assert row["overlap_chance"] == pytest.approx(0.5)
        assert row["single"]["low"] <= row["single"]["score"] <= row["single"]["high"]
        assert set(row["learned_vs_unpruned"]) >= {"diff", "low", "high", "distinguishable"}
    assert res["stem_vs_gradient"]["learned"] == int((count >= 2).sum())
    assert not cells.missing()
    computations = study.store.computations
    again = StemCells(GradTS(env["study"](), gts.plan), l0={"target": 0.5, "epochs": 4.0})
    assert again.run() == res and again.study.store.computations == 0 and computations > 0
    # a unit's gradient map gone (or another method's only partly cached): the analysis says it is missing, and
    # where nothing may be computed (a class-mode student's page) the summary refuses instead of computing it
    from headprune_core.runs.store import NotComputedHere, reading_only
    gone = gts.score_config(units[1])
    study.store.delete(gone)
    assert gone in cells.missing()
    fresh = StemCells(GradTS(env["study"](), gts.plan), l0={"target": 0.5, "epochs": 4.0})
    with reading_only("a student's session"), pytest.raises(NotComputedHere):
        fresh.summary()
    assert not fresh.study.store.has(gone)
