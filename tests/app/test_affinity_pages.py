"""AppTest of the Task affinity and Shared heads pages on the fixture cache (tiny BERT, generated corpora) with a
small GradTS plan computed through the real pipeline; and on a cache where nothing is computed yet."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from headprune_core.multitask.gradts import GradTS
from headprune_core.multitask.plan import GradTSPlan
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study
from tests.helpers.app import REPO, TIMEOUT, copy_cache, plotly_array

AFFINITY = str(REPO / "headprune_app" / "pages" / "task_affinity.py")
SHARED = str(REPO / "headprune_app" / "pages" / "shared_heads.py")
TRAIN = {"max_train_sentences": 48, "epochs": 2.0, "lr": 3e-3, "batch_size": 16, "freeze_embeddings": False}


def fixture_plan(model: str, *, small: bool = False) -> GradTSPlan:
    units = ("pos/en", "name/en", "pos/es") if small else ("pos/en", "name/en", "pos/es", "name/es", "pos/de")
    return GradTSPlan(name="fixture-gradts-small" if small else "fixture-gradts",
                      description="Test fixture: tiny BERT, generated POS/NAME units.", units=units,
                      primaries=("pos/es",) if small else ("name/es", "pos/de"), model=model, train=TRAIN,
                      score_sentences=20, eval_sentences=20, max_trial=1 if small else 2,
                      random_seeds=(0,) if small else (0, 1), train_seeds=(13,) if small else (13, 14),
                      bandit={"rounds": 4, "round_steps": 2, "dev_sentences": 10},
                      note="Subsampled test fixture (tiny on purpose).")


def write_plan(root: Path, plan: GradTSPlan) -> None:
    folder = root / "plans" / "gradts"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{plan.name}.json").write_text(json.dumps(plan.to_dict(), indent=1))




@pytest.fixture(scope="module")
def gradts_cache(fixture_cache, tmp_path_factory) -> dict:
    """The dashboard's fixture cache plus a GradTS plan, validated end to end (read-only)."""
    root = copy_cache(fixture_cache, tmp_path_factory.mktemp("gradts-pages") / "cache", runs=True)
    plan = fixture_plan(fixture_cache["model"])
    write_plan(root, plan)
    import os
    old = os.environ.get("HEADPRUNE_CACHE")
    os.environ["HEADPRUNE_CACHE"] = str(root)
    try:
        out = GradTS(Study(plan.model, store=Store(root / "runs"), device="cpu", progress=False), plan).run()
    finally:
        os.environ.pop("HEADPRUNE_CACHE") if old is None else os.environ.__setitem__("HEADPRUNE_CACHE", old)
    return {"root": root, "plan": plan, "result": out["result"], "fixture": fixture_cache}


def selection(fixture_cache):
    from headprune_core.plans.selection import Selection
    return Selection(plan=fixture_cache["plan"], model=fixture_cache["model"], task="pos", setting="cross",
                     source="en", langs=("en", "de", "es"), lang="en", method="gate_grad", normalize="layer_sum")


def page(path: str, cache: Path, monkeypatch, *, fixture_cache=None):
    from streamlit.testing.v1 import AppTest
    monkeypatch.setenv("HEADPRUNE_CACHE", str(cache))
    at = AppTest.from_file(path, default_timeout=TIMEOUT)
    if fixture_cache is not None:  # what the frame (app.py) puts there
        at.session_state["selection"] = selection(fixture_cache)
    files = sorted((cache / "plans" / "gradts").glob("*.json"))
    if len(files) == 1:  # the user's own GradTS plan, picked in the plan box (the presets are listed first)
        at.session_state["gradts_plan"] = at.session_state["shared_plan"] = json.loads(files[0].read_text())["name"]
    return at


def ok(at):
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def tau_heatmap(at) -> dict:
    """The affinity heatmap (the first chart whose first trace is a heatmap)."""
    return next(s for s in specs(at) if s["data"][0]["type"] == "heatmap")


def text_of(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info])


def test_task_affinity_shows_heatmap_selection_and_validation(gradts_cache, monkeypatch):
    at = ok(page(AFFINITY, gradts_cache["root"], monkeypatch))
    assert at.selectbox(key="gradts_plan").value == "fixture-gradts"
    assert not at.error and not at.warning, [w.value for w in at.warning]
    charts = at.get("plotly_chart")
    assert len(charts) == 5  # ranking, tau heatmap, quality vs cost, fg tau per primary
    assert "Kendall tau" in tau_heatmap(at)["data"][0]["hovertemplate"]
    assert "Subsampled test fixture" in text_of(at)
    table = at.dataframe[0].value
    assert set(table["method"]) == {"primary alone", "+ GradTS-thres", "+ GradTS-trial", "+ GradTS-fg examples",
                                    "+ bandit (AUTOSEM)", "+ all tasks", "+ random tasks"}
    assert set(table["primary"]) == {"name/es", "pos/de"}
    # every method: its interval over test sentences, its seeds, its cost; changes paired against alone
    assert all(re.fullmatch(r"\d+\.\d \[\d+\.\d, \d+\.\d\]", v) for v in table["95% CI"])  # "96.1 [95.2, 96.9]"
    assert all(v.endswith("(2)") for v in table["seeds (min-max)"])
    assert all(v == "" for v in table[table["method"] == "primary alone"]["vs alone"])
    assert all("[" in v for v in table[table["method"] != "primary alone"]["vs alone"])
    # seconds rounded to 0.1: a tiny fixture run can take 0.0 on a fast machine
    assert table["train (s)"].notna().all() and (table["total (s)"] >= table["train (s)"]).all()
    alone, thres = (table[table["method"] == m]["choose (s)"] for m in ("primary alone", "+ GradTS-thres"))
    assert (alone == 0).all() and (thres > 0).all()  # GradTS pays for its head maps
    scatter = specs(at)[2]  # below the two columns: quality against cost
    assert scatter["layout"]["xaxis"]["title"]["text"].startswith("wall time")
    assert all(t["error_y"]["array"][0] >= 0 for t in scatter["data"]) and len(scatter["data"]) == 2 * 7
    posteriors = at.dataframe[1].value  # the bandit's posterior per seed and unit
    assert set(posteriors["seed"]) == {"13", "14"} and posteriors["posterior mean"].between(0, 1).all()


def test_threshold_slider_highlights_the_selection(gradts_cache, monkeypatch):
    at = ok(page(AFFINITY, gradts_cache["root"], monkeypatch))
    at.selectbox(key="primary").set_value("name/es")
    at.slider(key="threshold").set_value(-1.0)
    ok(at)
    assert "selects 4 of 4" in text_of(at)
    circles = [t for t in tau_heatmap(at)["data"] if t.get("type") == "scatter"]
    assert circles and len(circles[0]["x"]) == 4
    at.slider(key="threshold").set_value(1.0)
    ok(at)
    assert "selects 0 of 4" in text_of(at)
    assert not [t for t in tau_heatmap(at)["data"] if t.get("type") == "scatter"]
    at.radio(key="gradts_corr").set_value("spearman")
    ok(at)
    assert "Spearman" in tau_heatmap(at)["data"][0]["hovertemplate"]


def test_gate_grad_maps_missing_are_offered(gradts_cache, monkeypatch, tmp_path):
    root = copy_cache({"root": gradts_cache["root"]}, tmp_path / "cache", runs=True)
    at = ok(page(AFFINITY, root, monkeypatch))
    at.radio(key="gradts_method").set_value("gate_grad")
    ok(at)
    assert at.warning and "head maps (gate_grad) are not in the cache" in at.warning[0].value
    assert not at.error
    at.button(key="maps:fixture-gradts:gate_grad").click()
    ok(at)  # scores computed from the cached single-task models, then the validation is offered
    assert any("validation" in w.value and "not cached" in w.value for w in at.warning)
    assert len(at.get("plotly_chart")) == 2


def test_pages_on_an_empty_cache_say_what_is_missing_and_compute_it(fixture_cache, monkeypatch, tmp_path):
    root = copy_cache(fixture_cache, tmp_path / "cache", runs=False)
    plan = fixture_plan(fixture_cache["model"], small=True)
    write_plan(root, plan)
    at = ok(page(AFFINITY, root, monkeypatch))
    assert "3 of 3 head maps (kv_grad) are not in the cache" in at.warning[0].value
    assert not at.error and not at.get("plotly_chart")
    at.button(key="maps:fixture-gradts-small:kv_grad").click()
    ok(at)
    assert len(at.get("plotly_chart")) == 2 and not at.error
    at.button(key="validate:fixture-gradts-small:kv_grad").click()
    ok(at)
    assert len(at.get("plotly_chart")) == 4 and not at.warning and not at.error  # + quality/cost, fg

    shared = ok(page(SHARED, root, monkeypatch))
    assert not shared.error and len(shared.get("plotly_chart")) == 2


def test_shared_heads_by_task_and_by_language(gradts_cache, monkeypatch):
    at = ok(page(SHARED, gradts_cache["root"], monkeypatch, fixture_cache=gradts_cache["fixture"]))
    assert not at.error
    # the gradient part is complete; learned pruning (below it) is offered, not computed
    assert [w.value.split(":")[0] for w in at.warning] == ["Learned pruning of plan **fixture-gradts** is not complete"]
    charts = at.get("plotly_chart")
    assert len(charts) == 2  # count heatmap, Jaccard
    count = json.loads(charts[0].proto.spec)["data"][0]
    assert count["zmax"] == 5 and "layer %{y}, head %{x}" in count["hovertemplate"]
    claimed = at.dataframe[0].value
    assert list(claimed.columns) == ["layer", "head", "claimed by", "share", "maps"]
    assert claimed["claimed by"].is_monotonic_decreasing
    size = [m for m in at.metric if m.label == "top set size"][0].value
    at.slider(key="shared_top_p").set_value(50)
    ok(at)
    assert size == "1 head" and [m for m in at.metric if m.label == "top set size"][0].value == "6 heads"

    at.radio(key="shared_group").set_value("languages")
    ok(at)
    assert not at.error and not at.warning
    assert json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["zmax"] == 3  # en, de, es
    assert "only 250 sentences" in text_of(at)  # German caveat travels with the maps


def test_unprepared_corpora_are_an_error_with_an_offer_not_a_traceback(fixture_cache, monkeypatch, tmp_path):
    root = tmp_path / "cache"
    write_plan(root, fixture_plan(fixture_cache["model"], small=True))  # a plan, but no corpora in this cache
    for path in (AFFINITY, SHARED):
        at = ok(page(path, root, monkeypatch))
        assert at.error and "not prepared" in at.error[0].value
        assert at.button(key="prepare_all")  # the dashboard's offer to prepare the embedded data


@pytest.mark.parallel
@pytest.mark.slow  # learned pruning of 5 units and of their multi-task run: about 2 minutes
def test_shared_heads_offers_learned_pruning_then_shows_stem_cells_beside_gradient_heads(gradts_cache, monkeypatch,
                                                                                       tmp_path):
    root = copy_cache({"root": gradts_cache["root"]}, tmp_path / "cache", runs=True)
    at = ok(page(SHARED, root, monkeypatch, fixture_cache=gradts_cache["fixture"]))
    assert any("Learned pruning of plan **fixture-gradts** is not complete" in w.value for w in at.warning)
    at.button(key="stemcells:fixture-gradts:0.5").click()
    ok(at)
    assert not at.warning and not at.error
    keys = [c.proto.id for c in at.get("plotly_chart")]
    assert len(keys) == 2 + 4  # gradient count + Jaccard; learned count, gradient count, learned Jaccard, MTL set
    learned, gradient = specs(at)[2]["data"][0], specs(at)[3]["data"][0]
    n = len(gradts_cache["plan"].units)
    assert learned["zmax"] == gradient["zmax"] == n
    z = plotly_array(learned["z"])
    kept = int(z.sum())
    assert kept == n * z.size // 2  # each task keeps half of the heads
    assert int(plotly_array(gradient["z"]).sum()) == kept  # gradient top sets of the same size
    stem = next(d.value for d in at.dataframe if "heads kept" in d.value.columns)
    assert list(stem["task"]) == list(gradts_cache["plan"].units) and (stem["heads kept"] == kept // n).all()
    assert all("chance 50%" in v for v in stem["also gradient top"])
    labels = [m.label for m in at.metric]
    assert any(lab.startswith("stem cells: kept by ≥ 3 of 5") for lab in labels)


def test_a_bundle_replays_the_gradts_pages_on_another_cache(gradts_cache, monkeypatch, tmp_path):
    """A plan naming the GradTS plan, exported where it was validated and imported into a cache with neither its
    results nor its plan files: the Task affinity page shows the same affinity and validation table, with nothing
    to compute; the GradTS plan came with the bundle."""
    from dataclasses import asdict, replace

    from headprune_core.plans.bundle import export_bundle, import_bundle
    source = gradts_cache["root"]
    monkeypatch.setenv("HEADPRUNE_CACHE", str(source))  # where the plan finds its GradTS plan
    plan = replace(gradts_cache["fixture"]["plan"], name="fixture-mtl", gradts=("fixture-gradts",))
    (source / "plans" / "fixture-mtl.json").write_text(json.dumps(asdict(plan)))
    try:
        done = export_bundle(plan, tmp_path / "mtl.tar.gz", store=Store(source / "runs"), device="cpu")
    finally:
        (source / "plans" / "fixture-mtl.json").unlink()
    assert done.missing == 0 and done.entries > 0
    laptop = tmp_path / "laptop"
    import shutil
    shutil.copytree(source / "corpora", laptop / "corpora")
    imported = import_bundle(done.path, Store(laptop / "runs"))
    assert imported.added == imported.entries == done.entries
    saved = laptop / "plans" / "gradts" / "fixture-gradts.json"
    assert imported.plans == [f"GradTS plan fixture-gradts: saved as {saved}",
                              f"plan fixture-mtl: saved as {laptop / 'plans' / 'fixture-mtl.json'}"]
    shown = {}
    for name, cache in (("source", source), ("laptop", laptop)):
        at = ok(page(AFFINITY, cache, monkeypatch))
        assert at.selectbox(key="gradts_plan").value == "fixture-gradts"
        assert not at.warning and not at.error and not [b for b in at.button if b.label.startswith("Compute")], name
        shown[name] = (tau_heatmap(at)["data"][0]["z"], at.dataframe[0].value)
    assert shown["laptop"][0] == shown["source"][0]
    assert shown["laptop"][1].equals(shown["source"][1])
    assert len(list(Store(laptop / "runs").entries())) == imported.entries  # the page computed nothing
