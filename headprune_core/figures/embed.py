"""Figures in a self-contained HTML file: plotly.js to inline in its ``<head>`` and the script that draws each
figure (its :meth:`plotly.graph_objects.Figure.to_json`) into the element of its id, so the file opens from disk
with no server and no network. The report and the handout (:mod:`headprune_core.reports`) write their pages with
these; they import no plotly themselves.

>>> import plotly.graph_objects as go
>>> figures_script({"chart-0": go.Figure(go.Bar(y=[1, 2]))}).startswith("const FIGURES = {")
True
"""

from __future__ import annotations

import json

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

DRAW = ("for (const [id, fig] of Object.entries(FIGURES)) {\n"
        "  Plotly.newPlot(id, fig.data, fig.layout, {responsive: true, displaylogo: false});\n}\n")


def plotly_js() -> str:
    """The text of the installed plotly package's ``plotly.min.js`` (about 4.7 MB), for an inline ``<script>``."""
    return get_plotlyjs()


def figures_script(figures: dict[str, go.Figure]) -> str:
    """The body of a ``<script>`` that draws each figure into the element whose id is its key: ``const FIGURES
    = {id: figure JSON, ...}`` on one line, then one ``Plotly.newPlot`` per figure (responsive, no logo). The
    figures' JSON is plotly's own (numpy arrays as typed arrays), with every ``</`` escaped."""
    parts = ", ".join(f"{json.dumps(fid)}: {fig.to_json()}" for fid, fig in figures.items())
    return "const FIGURES = {" + parts.replace("</", "<\\/") + "};\n" + DRAW
