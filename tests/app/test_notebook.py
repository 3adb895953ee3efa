"""docs/notebook.md runs as written: its Python cells, one after another in one namespace as a notebook runs them,
read the fixture cache with the core and draw the dashboard's figures with headprune_core.figures."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import plotly.graph_objects as go

from headprune_core.findings.hypotheses import HYPOTHESES
from tests.helpers.findings_cards import constructed_cards

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "notebook.md"


def cells(path: Path) -> list[str]:
    """The code of every ```python block of ``path``, in order."""
    return re.findall(r"^```python\n(.*?)^```$", path.read_text(encoding="utf-8"), re.S | re.M)


def test_the_notebook_draws_the_dashboards_figures_from_the_cache(fixture_cache, monkeypatch):
    monkeypatch.setenv("HEADPRUNE_CACHE", str(fixture_cache["root"]))
    code = cells(DOC)
    assert len(code) == 4 and code[0].count('find_plan("demo")') == 1
    code[0] = code[0].replace('find_plan("demo")', 'find_plan("fixture")')  # the fixture cache's plan, not the demo
    ns: dict = {}
    for cell in code:
        exec(compile(cell, str(DOC), "exec"), ns)  # the doc's own code, run as a notebook runs it
    plan = fixture_cache["plan"]  # 3 layers x 4 heads, POS in en, de and es, every result cached
    assert ns["plan"] == plan and set(ns["maps"]) == set(plan.langs)
    figures = {name: ns[name] for name in ("focus", "every", "agreement", "profile", "pruning")}
    assert all(isinstance(fig, go.Figure) for fig in figures.values()), figures
    (heat,) = ns["focus"].data
    assert heat.type == "heatmap" and np.asarray(heat.z).shape == (3, 4)
    assert np.allclose(heat.z, ns["maps"]["de"]) and ns["focus"].layout.xaxis.title.text == "head"
    assert [t.type for t in ns["every"].data] == ["heatmap"] * 3
    assert ns["agreement"].data[0].type == "heatmap" and sorted(ns["agreement"].data[0].x) == sorted(plan.langs)
    assert [t.name for t in ns["profile"].data] == list(plan.langs)
    lines = [t for t in ns["pruning"].data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == [c["name"] for c in ns["curves"]] and lines
    assert ns["pruning"].layout.shapes[0].x0 == 4 and ns["pruning"].layout.yaxis.title.text == ns["curves"][0]["metric"]
    # the fixture study holds no card's runs: every card is read, none is drawn
    assert len(ns["cards"]) == len(HYPOTHESES) and ns["overview"] is None and ns["drawn"] == {}


def test_the_notebooks_findings_cell_draws_each_card_with_results(fixture_cache, monkeypatch):
    """The Findings cell again, its cards decided on planted runs (the cache's reading replaced): the page's
    chart of every card and one chart per card with results."""
    from headprune_core.findings import staged

    monkeypatch.setenv("HEADPRUNE_CACHE", str(fixture_cache["root"]))
    planted = constructed_cards()
    monkeypatch.setattr(staged, "read_staged", lambda *args, **kwargs: SimpleNamespace(cards=planted, looks=[]))
    first, *_, last = cells(DOC)
    ns: dict = {}
    for cell in (first.replace('find_plan("demo")', 'find_plan("fixture")'), last):
        exec(compile(cell, str(DOC), "exec"), ns)
    assert isinstance(ns["overview"], go.Figure) and {t.type for t in ns["overview"].data} == {"scatter"}
    assert list(ns["drawn"]) == [c.key for c in planted if c.estimates]
    runs, mean = ns["drawn"][planted[0].key].data
    assert runs.name == "training runs" and mean.error_x.type == "data"
