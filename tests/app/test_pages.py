"""AppTest of every page against the fixture cache: renders without exceptions, shows what it should, and
the prune page's metric follows the slider and the strategy."""

from __future__ import annotations

import json
import re

import pytest

from headprune_app.state import MASK_KEY
from headprune_core.runs.store import Store
from tests.helpers.app import (
    AFFINITY_PAGES,
    PAGES,
    copy_cache,
    make_app,
    metric_value,
    plan_size,
    plotly_charts,
    run_page,
    shown_numbers,
    summary_counts,
)


@pytest.fixture
def app(fixture_cache, monkeypatch):
    at = make_app(fixture_cache["root"], monkeypatch)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_without_errors(app, page):
    run_page(app, page)
    assert not app.error, [e.value for e in app.error]
    assert not app.warning, [w.value for w in app.warning]  # everything is cached: nothing to offer


@pytest.mark.parametrize("page", AFFINITY_PAGES)
def test_affinity_pages_run_inside_the_frame(app, page):
    run_page(app, page)  # no exception; what they offer without a GradTS study is their own tests' business


def test_home_shows_everything_cached(app, fixture_cache):
    assert app.sidebar.selectbox(key="plan").value == "fixture"
    n = plan_size(fixture_cache["plan"])
    assert [m.value for m in app.metric if m.label == "results cached"] == [f"{n} of {n}"]
    assert any("Everything for these choices is cached" in s.value for s in app.success)


def test_importance_page_has_all_views(app):
    run_page(app, "importance")
    assert len(plotly_charts(app)) == 4  # focus heatmap, small multiples, Spearman, layer profile
    top = app.dataframe[0].value
    assert list(top.columns[:4]) == ["rank", "layer", "head", "score"] and top["rank"].tolist()[:3] == [1, 2, 3]
    assert {"rank in de", "rank in es"} <= set(top.columns)
    assert any("proxy for NER" in c.value for c in app.caption) is False  # pos task: no NER note
    assert any("only 250 sentences" in c.value for c in app.caption)  # German is among the languages
    # the Spearman matrix says what random rankings of this many heads (3 x 4) would give
    assert any("random rankings of 12 heads give a rho within ±0.58" in c.value for c in app.caption)


def test_name_task_is_labelled_as_a_proxy_for_ner(app):
    app.sidebar.selectbox(key="task").set_value("name").run()
    run_page(app, "importance")
    assert any("proxy for NER" in c.value for c in app.caption)


def test_slider_changes_the_metric(app):
    run_page(app, "prune")
    total = 12
    app.slider(key="k").set_value(0).run()
    unpruned = metric_value(app, "accuracy, 0 of")
    assert unpruned == metric_value(app, "accuracy, unpruned")
    app.slider(key="k").set_value(total).run()
    assert not app.exception
    everything = metric_value(app, f"accuracy, {total} of")
    assert everything != unpruned


def test_strategy_changes_the_metric(app):
    run_page(app, "prune")
    app.slider(key="k").set_value(8).run()
    least = metric_value(app, "accuracy, 8 of")
    app.selectbox(key="strategy").set_value("reverse").run()
    most = metric_value(app, "accuracy, 8 of")
    assert most != least
    app.selectbox(key="strategy").set_value("layers").run()
    assert not app.exception
    shown = {}
    for part in ("bottom", "top"):
        app.radio(key="part").set_value(part).run()
        shown[part] = metric_value(app, "accuracy, 4 of")
    # the same numbers as the layer-thirds curve that run_plan computed by another code path
    curves = json.loads(plotly_charts(app)[1].proto.spec)
    layers = next(t for t in curves["data"] if t.get("name") == "whole layers")
    by_part = dict(zip(layers["text"], layers["y"]))
    assert {part: round(by_part[part], 2) for part in shown} == shown
    assert len(plotly_charts(app)) == 2  # the mask grid and the curves


def test_curves_show_every_cached_strategy(app):
    run_page(app, "prune")
    curves = json.loads(plotly_charts(app)[1].proto.spec)
    names = {t.get("name") for t in curves["data"]}
    # en is the source: its own ranking is the source's, the cross-lingual default
    assert {"least important first (source: en ranking)", "most important first", "random order",
            "current mask"} <= names


def test_custom_mask_by_hand(app):
    run_page(app, "prune")
    app.slider(key="k").set_value(6).run()
    app.selectbox(key="strategy").set_value("custom").run()
    start = app.multiselect(key="custom_heads").value  # starts from the mask shown before (k = 6)
    assert len(start) == 6 and all(isinstance(h, tuple) for h in start)
    assert app.multiselect(key="custom_heads").values[0].startswith("L")  # shown as L{layer}H{head}
    every = [(l, h) for l in range(3) for h in range(4)]
    app.multiselect(key="custom_heads").set_value(every).run()
    assert metric_value(app, "accuracy, 12 of") != metric_value(app, "accuracy, unpruned")
    assert app.session_state[MASK_KEY].mask().tolist() == [[0] * 4] * 3


def test_inspector_tags_with_and_without_the_current_mask(app):
    run_page(app, "prune")
    app.slider(key="k").set_value(12).run()
    run_page(app, "inspector")
    assert any("**12 least important (en ranking)**" in i.value for i in app.info)  # the typed choice, applied
    table = app.dataframe[0].value
    assert {"word", "full model", "with mask", "changed"} <= set(table.columns)
    assert len(plotly_charts(app)) == 1
    app.text_input(key="sentence:en").set_value("today the book likes Paris .").run()
    assert app.dataframe[0].value["word"].tolist() == ["today", "the", "book", "likes", "Paris", "."]
    app.selectbox(key="layer").set_value(2).run()
    app.checkbox(key="gated").check().run()
    assert not app.exception


@pytest.mark.parametrize("words", [1_000, 1_000_000])
def test_the_inspector_cuts_a_huge_sentence_from_a_link(fixture_cache, monkeypatch, words):
    """A link carrying a 1,000- or 1,000,000-word sentence (4 MB): the page reads only what the model can (a note
    says so; Streamlit itself may refuse a value far past the field's limit, and the example is tagged), tags at
    most max_length - 2 words and draws a table of that many rows, never thousands."""
    from tests.helpers.app import make_app
    at = make_app(fixture_cache["root"], monkeypatch)
    at.query_params["sentence:en"] = "dog " * words
    run_page(at, "inspector")
    cut = any("the rest of the sentence was cut" in c.value for c in at.caption)
    refused = at.text_input(key="sentence:en").value.count("dog") < 10
    assert cut or (refused and words > 1_000), words
    assert cut or words > 1_000  # a 1,000-word sentence fits the field: cut by the page, with its note
    assert 0 < len(at.dataframe[0].value) <= 126


def _fixture_params(fixture_cache) -> int:
    """Parameters of the fixture's fine-tuned pos model (encoder + classifier), counted by the core."""
    from headprune_core.encoders.heads import count_parameters
    from headprune_core.runs.study import Study
    plan = fixture_cache["plan"]
    study = Study(plan.model, store=Store(fixture_cache["root"] / "runs"), progress=False)
    return count_parameters(study.finetuned(study.finetune_config("pos", ("en",), **plan.train)))


def test_measure_size_and_latency(app, fixture_cache):
    run_page(app, "prune")
    app.slider(key="k").set_value(4).run()
    app.button(key="measure").click().run()
    assert not app.exception
    params = app.metric[[m.label for m in app.metric].index("parameters")]
    n = _fixture_params(fixture_cache)
    removed = 4 * (3 * (8 * 32 + 8) + 32 * 8)  # 4 heads of 8 dims in a 32-wide model: q, k, v and output slices
    assert params.value == f"{(n - removed) / 1e6:.2f} M"
    assert params.delta == f"{100 * (-removed / n):.1f}% of {n / 1e6:.2f} M"
    latency = app.metric[[m.label for m in app.metric].index("latency (median of 7)")]
    assert latency.value.endswith(" ms") and " ms vs full " in latency.delta
    change = float(latency.delta.split(" ms")[0])
    assert change == pytest.approx(float(latency.value[:-3]) - float(latency.delta.split("full ")[1][:-3]), abs=0.11)
    speed_q = app.metric[[m.label for m in app.metric].index("speed-up")].delta
    lo, hi = (float(v) for v in speed_q.removesuffix(" (quartiles)").split(" to "))
    # coloured only when the rounds agree and the medians point the same way: green faster, red slower, else grey
    # Metric colours: 0 red, 1 green, 2 grey
    expected = 1 if lo > 1 and change < 0 else 0 if hi < 1 and change > 0 else 2
    assert latency.proto.color == expected
    speed = metric_value(app, "speed-up")
    q25, q75 = (float(v) for v in app.metric[[m.label for m in app.metric].index("speed-up")].delta
                .removesuffix(" (quartiles)").split(" to "))
    assert q25 <= speed <= q75  # the median of the per-round ratios lies between their quartiles
    assert any("FLOP limit for this mask" in c.value for c in app.caption)


def test_cached_views_render_without_computing(fixture_cache, monkeypatch):
    """With everything cached, no page fine-tunes, scores, evaluates, computes a curve or even loads a model."""
    from headprune_core.runs.study import Study

    def refuse(*args, **kwargs):
        raise AssertionError("a cached view tried to compute")

    for name in ("finetuned", "scores", "evaluation", "curve", "_train"):
        monkeypatch.setattr(Study, name, refuse)
    monkeypatch.setattr(Study, "loaded", property(refuse))
    at = make_app(fixture_cache["root"], monkeypatch)
    at.run()
    for page in ("home", "importance", "prune", "runs"):
        run_page(at, page)
        assert not at.error and not at.warning, page
    cached = [e for e in Store(fixture_cache["root"] / "runs").entries("eval")
              if e.config["lang"] == "en" and e.config["task"] == "pos" and not e.config["mask"]]
    assert len(cached) == 1
    stored = Store(fixture_cache["root"] / "runs").read(cached[0])["result"]["score"]
    assert metric_value(run_page(at, "prune"), "accuracy, 0 of") == round(stored, 2)


def test_runs_page_lists_entries(app):
    run_page(app, "runs")
    table = app.dataframe[0].value
    assert set(table["kind"]) >= {"finetune", "score", "eval", "curve"}


def test_runs_page_shows_sweep_progress(fixture_cache, cache_copy, monkeypatch):
    """A sweep's progress record (written by the driver as jobs land) shows as a bar with its counts, the jobs
    that failed with their error, and a sweep whose driver died as stopped."""
    from headprune_core.plans.sweep import SweepSpec, build_graph
    from headprune_core.plans.sweep_record import SweepRecord
    plan = fixture_cache["plan"].to_dict()
    fields = {k: v for k, v in plan.items() if k not in ("name", "description", "model", "sources")}
    monkeypatch.setenv("HEADPRUNE_CACHE", str(cache_copy))
    graph = build_graph(SweepSpec.from_dict({"name": "class-sweep", "models": [plan["model"]], **fields}),
                        store=Store(cache_copy / "runs"))
    n = len(graph.jobs)
    assert graph.counts()["cached"] == n  # the fixture computed this plan
    last = list(graph.jobs.values())[-1]
    last.state, last.error, last.attempts = "failed", "RuntimeError: CUDA out of memory", 2
    progress = SweepRecord(graph, "r1")
    progress.state = "failed"
    progress.write(force=True)
    path = progress.folder / "progress.json"
    rec = json.loads(path.read_text())
    rec.update(name="gone", state="running", driver={"host": rec["driver"]["host"], "pid": 2 ** 22 + 17})
    (path.parent.parent / "gone").mkdir()
    (path.parent.parent / "gone" / "progress.json").write_text(json.dumps(rec))

    at = make_app(cache_copy, monkeypatch)
    at.run()
    run_page(at, "runs")
    bars = [e.proto.text for e in at.get("progress")]
    assert f"**class-sweep**: failed, {n} of {n} jobs finished (1 failed, 0 skipped, 0 running)" in bars, bars
    assert any(b.startswith(f"**gone**: stopped, {n} of {n}") for b in bars), bars
    assert any("Sweep 'gone' stopped before it finished" in w.value for w in at.warning)
    errors = [t.value for t in at.dataframe if "error" in t.value.columns]
    assert errors and "RuntimeError: CUDA out of memory" in set(errors[0]["error"])


def test_a_background_sweep_shows_on_the_overview_and_where_results_are_missing(fixture_cache, cache_copy,
                                                                                monkeypatch):
    """start.sh opens the app while the demo sweep computes the curves: the Overview shows that sweep's progress
    and what runs now; a page missing one of its results says the sweep may bring it."""
    from headprune_core.plans.sweep import SweepSpec, build_graph
    from headprune_core.plans.sweep_record import SweepRecord
    plan = fixture_cache["plan"].to_dict()
    fields = {k: v for k, v in plan.items() if k not in ("name", "description", "model", "sources")}
    monkeypatch.setenv("HEADPRUNE_CACHE", str(cache_copy))
    store = Store(cache_copy / "runs")
    graph = build_graph(SweepSpec.from_dict({"name": "demo", "models": [plan["model"]], **fields}), store=store)
    curves = [n for n in graph.jobs.values() if n.cfg.kind == "curve"]
    for node in curves:
        assert store.delete(node.cfg)
    graph.refresh()
    curves[0].state = "running"
    progress = SweepRecord(graph, "r1")
    progress.write(force=True)  # state running; its driver is this (live) process
    marker = {"what": curves[0].what, "host": "here", "attempt": 1, "started": 0, "run": "r1"}
    (progress.folder / "running" / "m.json").write_text(json.dumps(marker))
    n, todo = len(graph.jobs), len(curves)

    at = make_app(cache_copy, monkeypatch)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    bars = [e.proto.text for e in at.get("progress")]
    assert f"Sweep **demo** is computing in the background: {n - todo} of {n} jobs finished; now: " \
           f"{curves[0].what}." in bars, bars
    run_page(at, "prune")
    warnings = [w.value for w in at.warning if "not in the cache" in w.value]
    assert warnings and all(f"Sweep 'demo' ({n - todo} of {n} jobs) is computing in the background" in w
                            for w in warnings), warnings
    progress.state = "done"
    progress.write(force=True)
    run_page(at, "home")
    assert not [e for e in at.get("progress") if "in the background" in e.proto.text]


@pytest.mark.parallel
@pytest.mark.slow  # the click trains the tiny model 30 times (a small training) and runs a GradTS check
def test_findings_page_offers_then_one_click_gives_every_verdict(cache_copy, monkeypatch):
    """After set-up the Findings page says what is missing with an estimate; one click computes the plan's
    findings and every card shows a verdict with numbers."""
    from headprune_core.findings.cards import MISSING, ONE_RUN, VERDICTS
    from headprune_core.findings.hypotheses import HYPOTHESES
    # the fixture plan with a smaller training (a third of the steps): the click computes all of its findings,
    # its own fine-tunes and scores too, through the page, in a third of the time the fixture's training takes
    plan_file = cache_copy / "plans" / "fixture.json"
    doc = json.loads(plan_file.read_text())
    plan_file.write_text(json.dumps({**doc, "train": {**doc["train"], "max_train_sentences": 120, "epochs": 6.0}}))
    at = make_app(cache_copy, monkeypatch)
    at.run()
    run_page(at, "findings")
    counts = summary_counts(at)
    # nothing is decided by the fixture study alone: (b1) and (c) need the rankings' other training runs too
    assert counts[MISSING] == len(HYPOTHESES) and counts[ONE_RUN] == 0 and set(counts) == set(VERDICTS)
    # with an estimate of the time (seconds or minutes: the fixture's training is small)
    assert any("are not computed yet" in i.value and re.search(r"about [\d.]+ (s|min) ", i.value) for i in at.info), \
        [i.value for i in at.info]
    (button,) = [b for b in at.button if b.key == "compute_findings"]
    button.click().run(timeout=900)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert not at.info  # nothing left to offer
    counts = summary_counts(at)
    assert sum(counts.values()) == len(HYPOTHESES), counts
    # what is still "not computed yet" is what this plan cannot give (no Turkish, no layer pairs ...), not a job
    still = [t.value for t in at.caption if t.value.startswith("Not computed yet:")]
    assert len(still) == int(counts[MISSING]) and all("the plan" in t or "need" in t for t in still), still
    assert int(counts[MISSING]) <= 4 and len(at.dataframe) >= len(HYPOTHESES) - 4  # a table per decided card
    assert any("How often each rule is wrong" in m.value for m in at.markdown)  # the calibration table
    # one chart of every card at the top, then each card with results drawn under it
    assert len(plotly_charts(at)) >= 1 + len(HYPOTHESES) - 5, len(plotly_charts(at))
    # the Prune & retrain page shows the runs the click computed
    run_page(at, "retrain")
    assert at.selectbox(key="retrain").options and len(plotly_charts(at)) >= 1

    # a bundle of the plan carries its findings: on a laptop with none of the results (nor the plan's file) the
    # Findings and Prune & retrain pages show the same numbers, with nothing to compute
    import shutil

    from headprune_core.cli.main import main
    bundle = cache_copy.parent / "fixture.tar.gz"
    assert main(["bundle", "export", "fixture", "--out", str(bundle), "--cache", str(cache_copy),
                 "--device", "cpu"]) == 0
    laptop = cache_copy.parent / "laptop"
    shutil.copytree(cache_copy / "corpora", laptop / "corpora")
    monkeypatch.setenv("HEADPRUNE_CACHE", str(laptop))
    assert main(["bundle", "import", str(bundle)]) == 0
    shown = {}
    for name, cache in (("source", cache_copy), ("laptop", laptop)):
        page = make_app(cache, monkeypatch)
        page.run()
        shown[name] = {}
        for view in ("findings", "retrain"):
            run_page(page, view)
            assert not page.error and not [b for b in page.button if b.label.startswith("Compute")], (name, view)
            shown[name][view] = shown_numbers(page)
    assert shown["laptop"] == shown["source"]


def test_learned_strategy_offers_the_l0_run_then_prunes_by_its_gates(fixture_cache, monkeypatch, tmp_path):
    from headprune_app import prune_view
    from headprune_core.runs.study import Study
    root = copy_cache(fixture_cache, tmp_path / "cache", runs=True)
    at = make_app(root, monkeypatch)
    at.run()
    run_page(at, "prune")
    at.selectbox(key="strategy").set_value("learned").run()
    assert not at.exception
    assert any("learned pruning of pos (50% of the heads)" in w.value for w in at.warning)
    at.button(key="compute:learned:0.5").click().run()
    assert not at.exception and not at.error
    assert at.slider(key="k_learned:0.5").value == 6  # the learned set: half of 12 heads
    metric_value(at, "accuracy, 6 of 12")
    # the mask is the set learned pruning removed (the gates' own result, read from the cache)
    study = Study(fixture_cache["model"], store=Store(root / "runs"), progress=False)
    from headprune_core.plans.selection import finetune_config
    learned = study.learned(prune_view.learned_config(finetune_config(study, at.session_state["selection"]), 0.5))
    assert at.session_state[MASK_KEY].mask().tolist() == learned.kept.astype(int).tolist()
    assert "lowest learned gates" in at.session_state[MASK_KEY].label
    at.slider(key="k_learned:0.5").set_value(3).run()  # fewer heads: the 3 lowest gates, all from the learned set
    fewer = (1 - at.session_state[MASK_KEY].mask()).astype(bool)
    assert fewer.sum() == 3 and not (fewer & (learned.kept > 0)).any()
    at.button(key="compute:learned-eval:0.5").click().run()  # the learned-pruning model's own score
    assert any("The learned-pruning model itself" in i.value for i in at.info)


def test_script_runs_are_logged_only_when_asked(fixture_cache, monkeypatch, tmp_path):
    """HEADPRUNE_PAGE_LOG (the classroom benchmark): one JSON line per script run with its page and seconds; no file
    is written when it is not set."""
    from headprune_app.timing import ENV
    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv(ENV, str(log))
    at = make_app(fixture_cache["root"], monkeypatch)
    at.run()
    run_page(at, "importance")
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["page"] for r in runs] == ["Overview", "Head importance"]
    assert all(r["wall"] > 0 and 0 <= r["cpu"] <= r["wall"] + 0.05 for r in runs), runs
    assert all(r["step"] == "" and r["teacher"] is True and r["end"] > 1.7e9 for r in runs), runs  # owner, no lesson
    assert len({r["session"] for r in runs}) == 1
    monkeypatch.delenv(ENV)
    log.unlink()
    run_page(at, "prune")
    assert not log.exists()


def test_the_page_table_is_the_app_and_what_the_core_is_handed():
    """One table of pages (headprune_app/nav.py): a file for each, no page file outside it, and the shipped lesson's
    views all among the names the app hands the core."""
    from pathlib import Path

    from headprune_app import nav
    from headprune_core.plans.lessons import available

    root = Path(__file__).resolve().parents[2]
    assert all((root / p.file).is_file() for p in nav.PAGES)
    assert {p.name for p in nav.PAGES} == {f.stem for f in (root / "headprune_app" / "pages").glob("*.py")}
    lesson = available(pages=nav.NAMES)[0]["attention-heads-across-languages"]
    assert lesson.problems == () and {s.page for s in lesson.steps} <= set(nav.NAMES)
    assert nav.PAGES[0].name == "home"  # app.py makes home the default page, first in the sidebar


def test_the_findings_page_builds_each_chart_once_for_every_session(fixture_cache, tmp_path, monkeypatch):
    """Thirty followers open the Findings step at once: each card's chart (plotly validates a figure in about
    0.1 s of the one GIL) is built once for the server, not once per session's run."""
    from headprune_app import findings_view

    cache = tmp_path / "cache"  # a cache folder of its own: the server's held cards are its alone
    cache.mkdir()
    for part in ("runs", "plans", "corpora"):
        (cache / part).symlink_to(fixture_cache["root"] / part)
    built, card_figure, page_figure = [], findings_view.card_figure, findings_view.page_figure
    monkeypatch.setattr(findings_view, "card_figure", lambda card: built.append(card.key) or card_figure(card))
    monkeypatch.setattr(findings_view, "page_figure", lambda cards: built.append("page") or page_figure(cards))
    for _ in range(3):  # three sessions, one after another
        at = make_app(cache, monkeypatch)
        at.run()
        run_page(at, "findings")
        assert not at.exception, [e.value for e in at.exception]
    assert "page" in built and sorted(built) == sorted(set(built)), built  # the charts, each built once
    assert len(plotly_charts(at)) >= len(built) - 1  # and the last session drew them (the page's, if any)
    # each card names the sweeps that answer it at the papers' own size; their section stays closed until asked
    assert any(c.value.startswith("At the papers' own size: `sweeps/ma2021-pos.json`") for c in at.caption)
    assert at.toggle(key="papers_on").value is False
