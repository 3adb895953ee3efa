"""Plotly figures and tables for the Task affinity and Shared heads pages: pure functions, no Streamlit.

Maps are ``(layers, heads)``; layer 0 is drawn at the bottom, as in ``headprune_app.charts``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from headprune_core.affinity import cluster_order

SELECTED, OTHER, PRIMARY = "#e45756", "#9ecae9", "#222222"
ROW_COLOURS = {"single": "#9d9d9d", "thres": "#4c78a8", "trial": "#f58518", "all": "#54a24b", "random": "#b279a2"}


def _label(name: str, *, primary: str | None, selected: Sequence[str]) -> str:
    if name == primary:
        return f"<b>{name}</b>"
    if name in selected:
        return f"<span style='color:{SELECTED}'><b>{name}</b></span>"
    return name


def affinity_heatmap(names: Sequence[str], matrix: np.ndarray, *, primary: str | None = None,
                     selected: Sequence[str] = (), kind: str = "Kendall tau", title: str = "") -> go.Figure:
    """Unit x unit correlation, clustered (average linkage); the primary's row is outlined and the selected
    auxiliary units are marked (red labels, a dot in the primary's row)."""
    order = cluster_order(np.asarray(matrix))
    labels = [names[i] for i in order]
    z = np.asarray(matrix, dtype=float)[np.ix_(order, order)]
    ticks = [_label(n, primary=primary, selected=selected) for n in labels]
    fig = go.Figure(go.Heatmap(
        z=z, x=labels, y=labels, zmin=-1, zmax=1, colorscale="RdBu", texttemplate="%{z:.2f}",
        textfont=dict(size=10), colorbar=dict(title=kind.split()[-1]),
        hovertemplate=f"%{{y}} vs %{{x}}<br>{kind} %{{z:.3f}}<extra></extra>"))
    if primary in labels:
        i = labels.index(primary)
        fig.add_shape(type="rect", x0=-0.5, x1=len(labels) - 0.5, y0=i - 0.5, y1=i + 0.5,
                      line=dict(color=PRIMARY, width=3))
        sel = [j for j, n in enumerate(labels) if n in selected]
        if sel:
            fig.add_trace(go.Scatter(
                x=[labels[j] for j in sel], y=[primary] * len(sel), mode="markers", name="selected",
                marker=dict(symbol="circle-open", size=22, color=SELECTED, line=dict(width=3)),
                hovertemplate=f"{primary} + %{{x}}: selected<extra></extra>", showlegend=False))
    fig.update_layout(title=title, height=max(380, 36 * len(labels) + 140),
                      margin=dict(l=10, r=10, t=50 if title else 10, b=10))
    fig.update_xaxes(tickvals=labels, ticktext=ticks, tickangle=-45)
    fig.update_yaxes(tickvals=labels, ticktext=ticks, autorange="reversed")
    return fig


def ranking_chart(ranking: Sequence[tuple[str, float]], *, threshold: float, selected: Sequence[str] = (),
                  trial: Sequence[str] = (), kind: str = "Kendall tau") -> go.Figure:
    """The auxiliary units of one primary, most similar first, with the threshold line."""
    names = [n for n, _ in ranking]
    values = [float(v) for _, v in ranking]
    colours = [SELECTED if n in selected else OTHER for n in names]
    text = ["trial" if n in trial else "" for n in names]
    fig = go.Figure(go.Bar(x=values, y=names, orientation="h", marker_color=colours, text=text,
                           textposition="inside", hovertemplate=f"%{{y}}: {kind} %{{x:.3f}}<extra></extra>"))
    fig.add_vline(x=threshold, line_dash="dash", line_color=SELECTED,
                  annotation_text=f"threshold {threshold:.2f}", annotation_position="top")
    lo = min([*values, threshold, 0.0]) - 0.05
    fig.update_layout(height=max(260, 34 * len(names) + 80), margin=dict(l=10, r=10, t=30, b=10),
                      xaxis_title=kind, xaxis_range=[lo, 1.0])
    fig.update_yaxes(autorange="reversed")
    return fig


def validation_chart(table: Sequence[dict]) -> go.Figure:
    """Test metric of each primary per setting (bars); random sets: mean with min-max whiskers and the
    individual seeds as points. ``table`` is :func:`headprune_core.gradts.validation_table`."""
    primaries = list(dict.fromkeys(line["primary"] for line in table))
    fig = make_subplots(rows=1, cols=max(1, len(primaries)), subplot_titles=primaries, shared_yaxes=False)
    for c, primary in enumerate(primaries, start=1):
        lines = [line for line in table if line["primary"] == primary]
        for line in lines:
            aux = line["aux"]
            if line["row"] == "random":
                aux_txt = "<br>".join(", ".join(a) or "-" for a in aux)
            else:
                aux_txt = ", ".join(aux) or "(alone)"
            err = dict(type="data", symmetric=False, array=[line["max"] - line["test"]],
                       arrayminus=[line["test"] - line["min"]], visible=line["row"] == "random")
            secs = f"{line['train_seconds']:.0f} s" if line["train_seconds"] is not None else "?"
            fig.add_trace(go.Bar(
                x=[line["label"]], y=[line["test"]], error_y=err, marker_color=ROW_COLOURS[line["row"]],
                name=line["label"], showlegend=False,
                hovertemplate=f"{primary} {line['label']}<br>test {line['metric']} %{{y:.2f}}"
                              f"<br>dev {line['dev']:.2f}<br>training {secs}<br>auxiliary: {aux_txt}"
                              "<extra></extra>"), row=1, col=c)
            if line["row"] == "random":
                fig.add_trace(go.Scatter(x=[line["label"]] * len(line["values"]),
                                         y=line["values"], mode="markers", showlegend=False,
                                         marker=dict(color="black", size=7, symbol="diamond"),
                                         hovertemplate="one random seed: %{y:.2f}<extra></extra>"),
                              row=1, col=c)
        metric = lines[0]["metric"] if lines else ""
        values = [v for line in lines for v in (line["min"], line["max"])]
        lo = max(0.0, min(values) - 5) if values else 0
        fig.update_yaxes(title_text=f"test {metric}", range=[lo, min(100, max(values) + 3) if values else 100],
                         row=1, col=c)
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=40, b=10), bargap=0.25)
    fig.update_xaxes(tickangle=-30)
    return fig


def validation_frame(table: Sequence[dict]) -> pd.DataFrame:
    """The validation table for display/download."""
    rows = []
    for line in table:
        aux = "; ".join(", ".join(a) or "-" for a in line["aux"]) if line["row"] == "random" \
            else ", ".join(line["aux"]) or "(alone)"
        rows.append({"primary": line["primary"], "setting": line["label"], "metric": line["metric"],
                     "test": round(line["test"], 2),
                     "spread (min-max)": f"{line['min']:.1f}-{line['max']:.1f}" if line["row"] == "random" else "",
                     "dev": round(line["dev"], 2), "auxiliary units": aux,
                     "training (s)": None if line["train_seconds"] is None else round(line["train_seconds"], 1)})
    return pd.DataFrame(rows)


def count_heatmap(count: np.ndarray, owners: dict[tuple[int, int], list[str]], *, n_maps: int,
                  title: str = "") -> go.Figure:
    """How many maps have each head in their top p%; hover lists them."""
    count = np.asarray(count)
    layers, heads = count.shape
    text = [[", ".join(owners.get((l, h), [])) or "none" for h in range(heads)] for l in range(layers)]
    fig = go.Figure(go.Heatmap(
        z=count, x=list(range(heads)), y=list(range(layers)), zmin=0, zmax=n_maps, colorscale="YlOrRd",
        customdata=text, xgap=1, ygap=1, colorbar=dict(title="count"),
        hovertemplate=f"layer %{{y}}, head %{{x}}<br>in the top set of %{{z}} of {n_maps}<br>%{{customdata}}"
                      "<extra></extra>"))
    fig.update_layout(title=title, xaxis_title="head", yaxis_title="layer", height=440,
                      margin=dict(l=10, r=10, t=50 if title else 10, b=10))
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(dtick=1)
    return fig


def jaccard_heatmap(names: Sequence[str], matrix: np.ndarray, *, chance: float | None = None) -> go.Figure:
    """Jaccard overlap of the top sets, clustered."""
    order = cluster_order(np.asarray(matrix))
    labels = [names[i] for i in order]
    z = np.asarray(matrix, dtype=float)[np.ix_(order, order)]
    note = f"<br>(two random sets: about {chance:.2f})" if chance is not None else ""
    fig = go.Figure(go.Heatmap(z=z, x=labels, y=labels, zmin=0, zmax=1, colorscale="Blues",
                               texttemplate="%{z:.2f}", textfont=dict(size=10),
                               hovertemplate=f"%{{y}} and %{{x}}: Jaccard %{{z:.3f}}{note}<extra></extra>"))
    fig.update_layout(height=max(360, 34 * len(labels) + 120), margin=dict(l=10, r=10, t=10, b=10))
    fig.update_xaxes(tickangle=-45)
    fig.update_yaxes(autorange="reversed")
    return fig


def chance_jaccard(n_heads: int, k: int) -> float:
    """Expected Jaccard overlap of two independent random k-subsets of n heads (approximately k / (2n - k))."""
    if n_heads <= 0 or k <= 0:
        return 0.0
    inter = k * k / n_heads
    return inter / (2 * k - inter)


def claimed_table(heads: Sequence[tuple], n_maps: int, *, limit: int = 20) -> pd.DataFrame:
    """The heads most maps claim: layer, head, count, share, which maps."""
    rows = [{"layer": l, "head": h, "claimed by": c, "share": f"{100 * c / n_maps:.0f}%", "maps": ", ".join(o)}
            for l, h, c, o in list(heads)[:limit]]
    return pd.DataFrame(rows, columns=["layer", "head", "claimed by", "share", "maps"])


def owners_of(heads: Sequence[tuple]) -> dict[tuple[int, int], list[str]]:
    """(layer, head) -> the maps that claim it, from ``shared_heads(...)["heads"]``."""
    return {(int(l), int(h)): list(o) for l, h, _, o in heads}
