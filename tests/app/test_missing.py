"""The dashboard when results are missing: an empty cache, a language never computed, a corrupt entry. Each
page says what is missing and offers to compute it; never a traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headprune_app.timing import ENV as PAGE_LOG
from headprune_core.findings.hypotheses import HYPOTHESES
from headprune_core.runs.store import Store
from tests.helpers.app import PAGES, make_app, plan_size, run_page, summary_counts

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


TITLES = {"home": "Overview", "importance": "Head importance", "prune": "Prune & evaluate",
          "inspector": "Head inspector", "findings": "Findings"}


def texts(at) -> str:
    return "\n".join(x.value for x in [*at.error, *at.warning, *at.info])


def buttons(at) -> list[str]:
    return [b.label for b in at.button]


@pytest.mark.parametrize("page", PAGES)
def test_unprepared_cache_says_so_and_offers_to_prepare(tmp_path, monkeypatch, page):
    at = make_app(tmp_path / "nothing", monkeypatch)
    at.run()
    run_page(at, page)
    if page == "runs":
        assert "holds no results" in texts(at)
    else:
        assert "prepare" in texts(at).lower()
        assert "Prepare the embedded model and corpora" in buttons(at)


@pytest.mark.parametrize("page", ["home", "importance", "prune", "inspector", "findings"])
def test_no_results_yet_lists_what_is_missing_and_offers_to_compute(no_runs_cache, monkeypatch, tmp_path, page):
    log = tmp_path / "pages.jsonl"
    monkeypatch.setenv(PAGE_LOG, str(log))
    at = make_app(no_runs_cache["root"], monkeypatch)
    at.run()
    run_page(at, page)
    # the page ended early (end_page), and the frame still drew its closing parts: the view's link, the page log
    assert any("?" in c.value or c.value.startswith("http") for c in at.code), [c.value for c in at.code]
    assert json.loads(log.read_text().splitlines()[-1])["page"] == TITLES[page]
    if page == "home":
        n = plan_size(no_runs_cache["plan"])
        assert [m.value for m in at.metric if m.label == "results cached"] == [f"0 of {n}"]
        assert f"Compute the {n} missing result(s)" in buttons(at)
    elif page == "findings":
        assert "are not computed yet" in texts(at)
        assert summary_counts(at)["not computed yet"] == len(HYPOTHESES)
        assert any(b.startswith("Compute the findings (") for b in buttons(at))
    else:
        assert "missing" in texts(at)
        assert any(b.startswith("Compute") for b in buttons(at))


def test_missing_language_is_named_and_computed_on_request(cache_copy, monkeypatch):
    at = make_app(cache_copy, monkeypatch)
    at.run()
    at.session_state["langs:fixture:pos"] = ["en", "de", "es", "fr"]
    run_page(at, "importance")
    assert "head scores pos/fr (gate_grad): **missing**" in texts(at)
    assert len(at.get("plotly_chart")) == 4  # the cached languages are still shown
    at.button(key="compute:importance").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.warning, texts(at)
    assert "rank in fr" in at.dataframe[0].value.columns


def test_corrupt_entry_is_reported_and_recomputed(cache_copy, monkeypatch):
    store = Store(cache_copy / "runs")
    score = next(e for e in store.entries("score") if e.config["lang"] == "en" and e.config["task"] == "pos")
    (score.path / "raw.npy").write_bytes(b"not a numpy file")
    at = make_app(cache_copy, monkeypatch)
    at.run()
    run_page(at, "importance")
    assert "head scores pos/en (gate_grad): **corrupt**" in texts(at)
    at.button(key="compute:importance").click().run()
    assert not at.exception and not at.warning, texts(at)
    assert np.load(score.path / "raw.npy").shape == (3, 4)


def test_corrupt_evaluation_on_the_prune_page(cache_copy, monkeypatch):
    store = Store(cache_copy / "runs")
    ev = next(e for e in store.entries("eval")
              if e.config["lang"] == "en" and e.config["task"] == "pos" and not e.config["mask"])
    (ev.path / "entry.json").write_text("{broken")
    at = make_app(cache_copy, monkeypatch)
    at.run()
    run_page(at, "prune")
    assert "unpruned evaluation pos/en: **corrupt**" in texts(at)
    at.button(key="compute:prune-base").click().run()
    assert not at.exception and not at.warning, texts(at)
    assert at.metric


def test_runs_page_deletes_entries(cache_copy, monkeypatch):
    at = make_app(cache_copy, monkeypatch)
    at.run()
    run_page(at, "runs")
    before = len(Store(cache_copy / "runs").entries())
    doomed = [o for o in at.multiselect(key="doomed").options if o.startswith("curve") and " pos/en " in o][:2]
    at.multiselect(key="doomed").set_value(doomed).run()
    at.checkbox(key="sure").check().run()
    at.button(key="delete").click().run()
    assert not at.exception
    assert len(Store(cache_copy / "runs").entries()) == before - 2
    run_page(at, "home")
    assert [m.value for m in at.metric if m.label == "missing"] == ["2"]


def test_runs_page_frees_stale_and_corrupt_entries(cache_copy, monkeypatch):
    """A corrupt entry shows in the Runs page's space table and list; the button removes it, and nothing else."""
    store = Store(cache_copy / "runs")
    victim = store.entries("curve")[0]
    (victim.path / "entry.json").write_text("{")
    before = len(store.entries())
    at = make_app(cache_copy, monkeypatch)
    at.run()
    run_page(at, "runs")
    assert not at.exception
    freeable = at.dataframe[-1].value  # the last table: what can go (AppTest's dataframes carry no key)
    assert freeable["state"].tolist() == ["corrupt"] and victim.key in freeable["where"].iloc[0]
    assert at.button(key="gc").disabled
    at.checkbox(key="gc_sure").check().run()
    at.button(key="gc").click().run()
    assert not at.exception and not victim.path.exists() and len(store.entries()) == before
    assert any("Removed 1 items" in s.value for s in at.success)


@pytest.mark.parallel
@pytest.mark.slow
def test_runs_page_launches_a_study_with_progress(no_runs_cache, tmp_path, monkeypatch):
    import shutil
    root = tmp_path / "cache"
    for part in ("plans", "corpora"):
        shutil.copytree(no_runs_cache["root"] / part, root / part)
    at = make_app(root, monkeypatch)
    at.run()
    run_page(at, "runs")
    at.multiselect(key="launch_tasks:fixture").set_value(["pos"]).run()
    at.multiselect(key="launch_langs:fixture").set_value(["en"]).run()
    n = plan_size(no_runs_cache["plan"], langs=("en",))
    assert f"{n} jobs, {n} to compute." in [m.value for m in at.markdown]
    at.button(key="launch").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("is complete" in s.value for s in at.success)
    kinds = sorted(e.kind for e in Store(root / "runs").entries())
    assert len(kinds) == n and {"finetune", "score", "eval", "curve"} == set(kinds)
