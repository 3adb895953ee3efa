"""One figure layer: the handout and the findings report draw the figures the dashboard draws for the same data.
Each page is opened in an AppTest with the link a lesson's step names (or, for the report, the Findings page of the
same plan), and its charts, as Streamlit sends them, are compared with the figures the HTML file embeds: the same
traces (type, name, coordinates, colours, hover text) and the same axis titles."""

from __future__ import annotations

import json
import re

import pytest

from headprune_core.cli.main import main
from tests.helpers.app import cache_with_lessons, make_app, plotly_array, plotly_charts, run_page

LESSON = """---
title: Same figures
plan: fixture
---

## Heads in German
view: importance?task=pos&lang=de

The map.

## Taking heads away
view: prune?task=pos&lang=es&strategy=importance&k=4

The curves.
"""


def embedded(text: str) -> dict:
    """The figures an HTML page of headprune embeds, by the id of the element each is drawn into."""
    return json.loads(re.search(r"const FIGURES = (\{.*?\});\n", text).group(1).replace("<\\/", "</"))


def decoded(value):
    """A figure's JSON with every typed array (plotly's ``bdata``) read as a list, so two can be compared."""
    if isinstance(value, dict) and "bdata" in value:
        return plotly_array(value).tolist()
    if isinstance(value, dict):
        return {k: decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decoded(v) for v in value]
    return value


def axis_titles(fig: dict) -> tuple:
    layout = fig["layout"]
    return tuple((layout.get(axis) or {}).get("title", {}).get("text") for axis in ("xaxis", "yaxis"))


def assert_same(page: dict, html: dict, *, leave_out: tuple[str, ...] = ()) -> None:
    """The dashboard's figure ``page`` and the HTML file's ``html`` draw the same traces with the same axis
    titles (the page's traces named in ``leave_out`` are the live view's own, e.g. the current mask's marker)."""
    drawn = [decoded(t) for t in page["data"] if t.get("name") not in leave_out]
    assert drawn == [decoded(t) for t in html["data"]]
    assert axis_titles(page) == axis_titles(html)


@pytest.fixture
def same_cache(fixture_cache, tmp_path, monkeypatch):
    cache = cache_with_lessons(fixture_cache, tmp_path / "cache", {"same": LESSON})
    monkeypatch.setenv("HEADPRUNE_CACHE", str(cache))
    return cache


def _page(cache, monkeypatch, page: str, params: dict) -> list[dict]:
    at = make_app(cache, monkeypatch)
    for k, v in params.items():
        at.query_params[k] = v
    run_page(at, page)
    return [json.loads(c.proto.spec) for c in plotly_charts(at)]


def test_the_handout_draws_each_steps_figure_as_its_view_does(same_cache, tmp_path, monkeypatch):
    out = tmp_path / "same.html"
    assert main(["report", "lesson", "same", "--out", str(out)]) == 0
    shown = embedded(out.read_text())
    assert set(shown) == {"step-1-0", "step-1-1", "step-2-0"}
    # step 1: the Head importance page draws the focus map, every language's map, the Spearman matrix, the profile
    focus, _, spearman, _ = _page(same_cache, monkeypatch, "importance", {"plan": "fixture", "task": "pos",
                                                                          "lang": "de"})
    assert_same(focus, shown["step-1-0"])
    assert focus["data"][0]["type"] == "heatmap" and plotly_array(focus["data"][0]["z"]).shape == (3, 4)
    assert axis_titles(focus) == ("head", "layer")
    assert_same(spearman, shown["step-1-1"])
    assert sorted(spearman["data"][0]["x"]) == ["de", "en", "es"]
    # step 2: the Prune page draws the mask grid, then the cached curves with its current mask marked
    _, curves = _page(same_cache, monkeypatch, "prune", {"plan": "fixture", "task": "pos", "lang": "es",
                                                         "strategy": "importance", "k": "4"})
    assert_same(curves, shown["step-2-0"], leave_out=("current mask",))
    assert [s["x0"] for s in curves["layout"]["shapes"]] == [s["x0"] for s in shown["step-2-0"]["layout"]["shapes"]] \
        == [4]


def test_the_report_draws_the_findings_pages_charts(same_cache, monkeypatch):
    """The Findings page showing cards decided on planted runs (the fixture study holds no card's runs) and the
    report of the same cards: the page's chart of every card, then each card's."""
    from headprune_app import findings_view
    from headprune_core.findings.page import page_control
    from headprune_core.reports.report import report_html
    from tests.helpers.findings_cards import constructed_cards

    planted = constructed_cards()
    page_control(planted)  # the headlines, as the page's reading of the cache sets them
    monkeypatch.setattr(findings_view, "cards", lambda f: planted)
    at = make_app(same_cache, monkeypatch)
    at.query_params["plan"] = "fixture"
    run_page(at, "findings")
    page = {c.proto.id: json.loads(c.proto.spec) for c in plotly_charts(at)}
    shown = embedded(report_html(constructed_cards(), title="The same cards"))
    assert len(shown) == len(page) == 1 + sum(1 for c in planted if c.estimates)
    (overview,) = [spec for key, spec in page.items() if "findings_page_chart" in key]
    assert_same(overview, shown["chart-page"])
    cards = [spec for key, spec in page.items() if "card_chart_" in key]
    for drawn, written in zip(cards, [fig for fid, fig in shown.items() if fid != "chart-page"], strict=True):
        assert_same(drawn, written)
        assert drawn["layout"]["title"] == written["layout"]["title"]
        assert drawn["layout"]["shapes"] == written["layout"]["shapes"]
