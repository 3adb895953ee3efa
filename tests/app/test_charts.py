"""The dashboard's pure parts: the figures it draws (:mod:`headprune_core.figures`), its tables, click-to-toggle,
and the configs a selection stands for."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from headprune_app import exports, figures, tables
from headprune_core.figures import curves, heads
from headprune_core.methods.similarity import cluster_order
from headprune_core.plans import selection as S
from headprune_core.plans.plan import StudyPlan
from headprune_core.plans.presets import PRESETS, available_plans, find_plan


def test_ranks_one_is_most_important_and_ties_keep_head_order():
    r = heads.ranks(np.array([[0.1, 0.9, 0.5], [0.5, 0.0, 0.9]]))
    assert r.tolist() == [[5, 1, 3], [4, 6, 2]]


def test_importance_heatmap_hover_names_layer_head_score_and_rank():
    fig = heads.importance_heatmap(np.arange(6.0).reshape(2, 3))
    trace = fig.data[0]
    assert "layer %{y}, head %{x}" in trace.hovertemplate and "rank %{customdata} of 6" in trace.hovertemplate
    assert np.asarray(trace.customdata).tolist() == [[6, 5, 4], [3, 2, 1]]


def test_small_multiples_share_one_colour_scale():
    maps = {lang: np.random.default_rng(i).random((3, 4)) for i, lang in enumerate(["en", "de", "es"])}
    fig = heads.small_multiples(maps, zmin=0.0, zmax=1.0)
    assert len(fig.data) == 3 and {t.coloraxis for t in fig.data} == {"coloraxis"}
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)


def test_spearman_heatmap_puts_similar_languages_together():
    m = np.array([[1.0, 0.1, 0.9, 0.1], [0.1, 1.0, 0.1, 0.8], [0.9, 0.1, 1.0, 0.1], [0.1, 0.8, 0.1, 1.0]])
    order = cluster_order(m)
    pos = {lang: order.index(i) for i, lang in enumerate("abcd")}
    assert abs(pos["a"] - pos["c"]) == 1 and abs(pos["b"] - pos["d"]) == 1
    fig = heads.spearman_heatmap(list("abcd"), m)
    assert list(fig.data[0].x) == [list("abcd")[i] for i in order]


def test_spearman_heatmap_scale_fits_the_values_and_marks_the_chance_band():
    m = np.array([[1.0, 0.62, 0.1], [0.62, 1.0, 0.9], [0.1, 0.9, 1.0]])
    trace = heads.spearman_heatmap(["a", "b", "c"], m, band=0.16).data[0]
    # white at 0, from the band's lower edge (no value is below it) to 1: not -1..1 washed out
    assert (trace.zmin, trace.zmax, trace.zmid) == (-0.16, 1.0, 0.0)
    cells = {(y, x): t for y, row in zip(trace.y, trace.text) for x, t in zip(trace.x, row)}
    assert cells[("a", "c")] == "(0.10)" and cells[("a", "b")] == "0.62" and cells[("b", "b")] == "1.00"
    low = heads.spearman_heatmap(["a", "b"], np.array([[1.0, -0.5], [-0.5, 1.0]]), band=0.16).data[0]
    assert low.zmin == -0.5 and "(" not in "".join(sum(map(list, low.text), []))


def test_layer_shares_sum_to_100():
    shares = heads.layer_shares(np.array([[1.0, 1.0], [2.0, 0.0], [0.0, 0.0]]))
    assert shares.tolist() == [50.0, 50.0, 0.0]
    assert heads.layer_shares(np.zeros((2, 2))).tolist() == [0.0, 0.0]


def test_top_heads_lists_ranks_in_other_languages():
    maps = {"en": np.array([[0.9, 0.1], [0.5, 0.2]]), "de": np.array([[0.1, 0.9], [0.5, 0.2]])}
    top = tables.top_heads(maps, "en", n=2)
    assert top[["layer", "head", "rank in de"]].values.tolist() == [[0, 0, 4], [1, 0, 2]]


def test_mask_grid_points_carry_layer_and_head_and_clicks_toggle():
    mask = np.ones((2, 3))
    mask[1, 2] = 0
    fig = heads.mask_grid(mask)
    cells, points = fig.data[:2]
    assert np.asarray(cells.z).tolist() == mask.tolist()
    assert np.asarray(points.customdata).tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    assert [t.name for t in fig.data[2:]] == ["kept (5)", "pruned (1)"]
    event = {"selection": {"points": [{"x": 1, "y": 0, "customdata": [0, 1]}], "point_indices": [1]}}
    clicked = figures.clicked_heads(event)
    assert clicked == [(0, 1)]
    toggled = figures.toggle(mask, clicked + [(1, 2)])
    assert toggled[0, 1] == 0 and toggled[1, 2] == 1 and mask[0, 1] == 1  # input untouched
    real = {"selection": {"points": [{"curve_number": 1, "point_number": 6, "point_index": 6, "x": 2, "y": 1,
                                      "customdata": {"0": 1, "1": 2}, "text": "kept"}], "point_indices": [6]}}
    assert figures.clicked_heads(real) == [(1, 2)]  # what Streamlit 1.67 really sends (seen in Chromium)
    assert figures.clicked_heads(None) == [] and figures.clicked_heads({"selection": {"points": []}}) == []


def test_curves_chart_marks_the_current_k_and_draws_random_spread():
    lines = [{"name": "least important first", "strategy": "importance", "k": [0, 4, 8], "mean": [90, 89, 80],
              "low": [90, 89, 80], "high": [90, 89, 80]},
             {"name": "random order", "strategy": "random", "k": [0, 4, 8], "mean": [90, 85, 70],
              "low": [90, 83, 67], "high": [90, 87, 73]},
             {"name": "whole layers", "strategy": "layers", "k": [4, 4, 4], "mean": [70, 75, 80],
              "low": [70, 75, 80], "high": [70, 75, 80], "labels": ["bottom", "middle", "top"]}]
    fig = curves.curves_chart(lines, current_k=4, current_score=88.0, metric="accuracy")
    names = [t.name for t in fig.data]
    assert names == ["least important first", "random order interval", "random order", "whole layers",
                     "current mask"]
    assert fig.layout.shapes[0].x0 == 4 and fig.data[-1].y == (88.0,)
    # the three layer thirds share one k: their labels sit left, above and right, not on top of each other
    assert list(fig.data[3].textposition) == ["middle left", "top center", "middle right"]
    # with bootstrap intervals the band is the interval, and each strategy has its own colour
    lines[0].update(low=[89, 87, 77], high=[91, 90, 82])
    fig = curves.curves_chart(lines[:2])
    band = fig.data[0]
    assert band.name == "least important first interval" and list(band.y) == [91, 90, 82, 77, 87, 89]
    assert fig.data[1].line.color != fig.data[3].line.color


def test_language_colours_are_distinct_and_stable():
    colours = [heads.lang_colour(lang) for lang in ("en", "de", "nl", "es", "fr", "it", "pt", "tr")]
    assert len(set(colours)) == 8
    fig = heads.layer_profile({"de": np.ones((2, 2)), "tr": np.ones((2, 2))})
    assert [t.line.color for t in fig.data] == [heads.LANG_COLOURS["de"], heads.LANG_COLOURS["tr"]]


def test_small_multiples_label_layers_and_heads():
    fig = heads.small_multiples({"en": np.zeros((12, 12)), "de": np.ones((12, 12))}, zmin=0, zmax=1)
    assert fig.layout.xaxis.title.text == "head" and fig.layout.yaxis.title.text == "layer"
    assert list(fig.layout.xaxis.tickvals) == [0, 3, 6, 9] and fig.layout.xaxis.showticklabels is not False


def test_report_table_compares_with_the_unpruned_model():
    masked = {"report": {"NOUN": {"accuracy": 90.0, "support": 10, "predicted": 11}}}
    full = {"report": {"NOUN": {"accuracy": 95.0, "support": 10, "predicted": 10}}}
    row = tables.report_table(masked, full).iloc[0]
    assert (row["label"], row["accuracy"], row["unpruned"], row["change"]) == ("NOUN", 90.0, 95.0, -5.0)
    spans = {"report": {"NAME": {"precision": 0.5, "recall": 1.0, "f1-score": 2 / 3, "support": 3}}}
    row = tables.report_table(spans, spans).iloc[0]
    assert row["f1-score"] == pytest.approx(66.67) and row["change"] == 0


def test_attention_heatmap_shows_special_tokens():
    fig = heads.attention_heatmap(["<s>", "▁a", "</s>"], np.eye(3))
    assert list(fig.data[0].x) == ["0:&lt;s&gt;", "1:▁a", "2:&lt;/s&gt;"]  # not read as markup (strike-through)


def test_attention_heatmap_labels_repeated_pieces_uniquely():
    fig = heads.attention_heatmap(["[CLS]", "a", "a", "[SEP]"], np.eye(4))
    assert list(fig.data[0].x) == ["0:[CLS]", "1:a", "2:a", "3:[SEP]"]


def test_plan_files_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADPRUNE_CACHE", str(tmp_path))
    plan = replace(PRESETS["demo"], name="mine", langs=("en", "de"))
    path = S.save_plan_file(plan)
    assert StudyPlan.from_file(path) == plan and find_plan("mine") == plan  # saved plans are found by name
    (tmp_path / "plans" / "bad.json").write_text(json.dumps({"name": "x", "bogus": 1}))
    plans, problems = available_plans()
    assert "mine" in plans and "demo" in plans and problems and "bogus" in problems[0]


def test_the_selection_finds_exactly_what_run_plan_computed(fixture_cache, monkeypatch):
    """Every job of the fixture plan has the key the pages build from the matching selection."""
    from headprune_core.plans.plan import plan_jobs
    from headprune_core.runs.study import Study

    monkeypatch.setenv("HEADPRUNE_CACHE", str(fixture_cache["root"]))
    plan = fixture_cache["plan"]
    study = Study(plan.model, progress=False)
    sel = S.Selection(plan=plan, model=plan.model, task="pos", setting="cross", source="en", langs=plan.langs,
                      lang="en", method=plan.method, normalize="layer_sum")
    wanted = {j.cfg.key() for j in plan_jobs(study, sel.study_plan())}
    built = {S.finetune_config(study, sel).key()}
    for lang in plan.langs:
        # cross-lingual: every language is pruned by the source's ranking (the prune page's first curve)
        first = S.curve_candidates(study, sel, lang)[0]
        assert first[0] == "least important first (source: en ranking)"
        built |= {S.score_config(study, sel, lang).key(), S.eval_config(study, sel, lang).key(),
                  S.curve_config(study, sel, lang, "importance", ranking_lang="en").key(), first[1].key()}
    built |= {S.curve_config(study, sel, "en", s).key() for s in ("random", "reverse", "layers")}
    assert built == wanted
    assert all(study.store.has(j.cfg) for j in plan_jobs(study, sel.study_plan()))
    assert S.eval_config(study, sel, "en", np.ones((3, 4))).key() == S.eval_config(study, sel, "en").key()


def test_notes_for_german_and_the_name_task():
    notes = " ".join(S.language_notes("name", ["en", "de"]))
    assert "250 sentences" in notes and "proxy for NER" in notes
    assert S.language_notes("pos", ["en"]) == []


def test_status_matrix_reads_at_a_glance():
    rows = [{"kind": "finetune", "lang": None, "status": "ok"},
            {"kind": "score", "lang": "en", "status": "ok"}, {"kind": "eval", "lang": "en", "status": "corrupt"},
            {"kind": "curve", "lang": "en", "status": "ok"}, {"kind": "curve", "lang": "en", "status": "missing"},
            {"kind": "score", "lang": "de", "status": "missing"}]
    table = tables.status_matrix(rows)
    assert list(table.columns) == ["language", "fine-tuned model", "head scores", "evaluation", "curves"]
    en = table.set_index("language").loc["en"]
    assert (en["head scores"], en["evaluation"], en["curves"]) == ("ok", "corrupt", "1/2 ok")
    assert table.set_index("language").loc["de", "evaluation"] == ""


def test_pruned_model_download_is_a_loadable_pruned_model(fixture_cache, monkeypatch, tmp_path):
    import io
    import zipfile

    from headprune_core.encoders.heads import present_mask
    from headprune_core.encoders.pruned import load_pruned
    from headprune_core.runs.study import Study

    monkeypatch.setenv("HEADPRUNE_CACHE", str(fixture_cache["root"]))
    plan = fixture_cache["plan"]
    study = Study(plan.model, progress=False)
    sel = S.Selection(plan=plan, model=plan.model, task="pos", setting="cross", source="en", langs=plan.langs,
                      lang="en", method=plan.method, normalize="layer_sum")
    mask = np.ones((3, 4))
    mask[0, :] = 0
    mask[2, 1] = 0
    data = exports.pruned_zip(study, S.finetune_config(study, sel), mask, {"mask_label": "test"})()
    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path)
    model = load_pruned(tmp_path / "pruned")
    assert present_mask(model).numpy().tolist() == mask.tolist()
    assert (tmp_path / "pruned" / "tokenizer.json").is_file()


def test_slide_figure_bakes_in_title_caption_and_size():
    fig = heads.importance_heatmap(np.arange(6.0).reshape(2, 3))
    caption = "**me5-small**; a caption long enough to wrap: " + "word " * 60 + ":orange[done]"
    slide = figures.slide_figure(fig, title="Head importance: POS in English", caption=caption)
    assert slide.layout.width == figures.WIDTH == 1600 and slide.layout.height >= 600
    assert slide.layout.title.text == "Head importance: POS in English"
    (note,) = [a for a in slide.layout.annotations if a.yref == "paper" and a.yanchor == "top"]
    lines = note.text.split("<br>")
    assert len(lines) >= 2 and all(len(line) <= figures.CAPTION_CHARS for line in lines)
    assert "**" not in note.text and ":orange[" not in note.text and note.text.endswith("done")
    assert not fig.layout.title.text and not fig.layout.annotations  # the page's figure is left as it was
    titled = heads.attention_heatmap(["a", "b"], np.eye(2), title="layer 1, head 2")
    assert figures.slide_figure(titled, title="other").layout.title.text == "layer 1, head 2"  # its own title kept
    with pytest.raises(ValueError, match="unknown image format 'gif'; known: png, svg"):
        figures.image(fig, "gif", title="t")


@pytest.mark.browser
def test_slide_images_are_valid_png_and_svg_of_the_slide_width():
    """Plotly's static export (kaleido driving Chromium): a PNG 1600 px wide and an SVG of the same canvas."""
    import struct
    import xml.etree.ElementTree as ET

    if figures.export_problem():
        pytest.skip(figures.export_problem())
    fig = heads.importance_heatmap(np.arange(144.0).reshape(12, 12))
    png = figures.image(fig, "png", title="Head importance", caption="A caption under the plot.")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    assert width == 1600 and 600 <= height <= 2000
    svg = figures.image(fig, "svg", title="Head importance", caption="A caption under the plot.")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and float(root.get("width")) == 1600
    text = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("text"))
    assert "Head importance" in text and "A caption under the plot." in text
