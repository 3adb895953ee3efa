"""One figure layer: headprune_core.figures is the only part of the core that imports plotly (the dashboard draws with
it too; import-linter's contracts in pyproject.toml say the same), and the HTML pages embed its figures as plotly
writes them."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from headprune_core.figures.embed import figures_script

REPO = Path(__file__).resolve().parents[2]
FIGURE_LAYER = "headprune_core/figures/"


def _imports_plotly(tree: ast.AST) -> bool:
    """Whether the module imports plotly anywhere (at its top or inside a function), leaving out imports for type
    hints only (under ``if TYPE_CHECKING:``)."""
    hints = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
             for part in node.body for n in ast.walk(part)}
    for node in ast.walk(tree):
        if id(node) in hints:
            continue
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "plotly" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "plotly":
            return True
    return False


def plotly_importers() -> list[str]:
    """The modules of the two packages (and app.py) that import plotly, as paths from the repository's root."""
    files = [REPO / "app.py", *(REPO / "headprune_core").rglob("*.py"), *(REPO / "headprune_app").rglob("*.py")]
    return sorted(str(p.relative_to(REPO)) for p in files if _imports_plotly(ast.parse(p.read_text())))


def test_only_the_figure_layer_and_the_app_import_plotly():
    found = plotly_importers()
    outside = [p for p in found if not p.startswith((FIGURE_LAYER, "headprune_app/"))]
    assert outside == [], f"plotly imported outside the figure layer: {outside}"
    drawn = {p.removeprefix(FIGURE_LAYER) for p in found if p.startswith(FIGURE_LAYER)}
    assert drawn == {"heads.py", "curves.py", "affinity.py", "cards.py", "embed.py"}  # the walk sees the layer
    assert not any(p.startswith("headprune_core/reports/") for p in found)  # the pages only embed its figures


def test_the_walk_sees_an_import_in_a_function_and_not_a_type_hint():
    assert _imports_plotly(ast.parse("def f():\n    from plotly.io import to_json\n"))
    assert _imports_plotly(ast.parse("import plotly.graph_objects as go\n"))
    assert not _imports_plotly(ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import plotly\n"))
    assert not _imports_plotly(ast.parse("from headprune_core.figures import heads\n"))


def test_the_page_script_embeds_plotlys_own_json_and_cannot_close_its_tag():
    fig = go.Figure(go.Heatmap(z=np.arange(6.0).reshape(2, 3), hovertemplate="</script><b>%{z}</b>"))
    script = figures_script({"chart-0": fig, "chart-1": go.Figure()})
    assert "</script>" not in script and script.endswith("}\n")
    shown = json.loads(re.match(r"const FIGURES = (\{.*?\});\n", script).group(1))
    assert list(shown) == ["chart-0", "chart-1"]
    assert shown["chart-0"] == json.loads(fig.to_json())  # "<\/" reads back as "</": the same JSON
    assert "Plotly.newPlot(id, fig.data, fig.layout" in script
