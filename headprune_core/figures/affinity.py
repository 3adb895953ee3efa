"""The figures of task affinity and shared heads: units' correlation of head maps (clustered), one primary's
auxiliary units ranked against a threshold, the GradTS validation's quality against cost, how many maps claim
each head, the top sets' overlap, and the fine-grained selection's per-example correlations.

Maps are ``(layers, heads)``; layer 0 is drawn at the bottom, as in :mod:`headprune_core.figures.heads`.

>>> fig = affinity_heatmap(["pos/en", "pos/de"], np.array([[1.0, 0.4], [0.4, 1.0]]), primary="pos/en")
>>> fig.data[0].type, fig.layout.shapes[0].type
('heatmap', 'rect')
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from headprune_core.methods.similarity import cluster_order
from headprune_core.methods.uncertainty import ci_text, diff_text

SELECTED, OTHER, PRIMARY = "#e45756", "#9ecae9", "#222222"
ROW_COLOURS = {"single": "#9d9d9d", "thres": "#4c78a8", "trial": "#f58518", "fg": "#e45756", "bandit": "#72b7b2",
               "all": "#54a24b", "random": "#b279a2"}


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


def aux_text(line: dict) -> str:
    """A validation line's auxiliary units in words (per seed, ``;`` between seeds, where they differ)."""
    aux = line["aux"]
    if aux and isinstance(aux[0], list):
        return "; ".join(", ".join(a) or "-" for a in aux)
    return ", ".join(aux) or "(alone)"


def validation_chart(table: Sequence[dict]) -> go.Figure:
    """Quality against cost, one panel per primary: each method's test metric (mean over training seeds, whisker
    = 95% bootstrap interval over training seeds and test sentences) against its wall time (choosing the
    auxiliaries + training the final model; whisker = the seeds' training min-max). ``table`` is
    :func:`headprune_core.multitask.gradts.validation_table`."""
    primaries = list(dict.fromkeys(line["primary"] for line in table))
    fig = make_subplots(rows=1, cols=max(1, len(primaries)), subplot_titles=primaries, shared_yaxes=False,
                        horizontal_spacing=0.12)
    for c, primary in enumerate(primaries, start=1):
        lines = [line for line in table if line["primary"] == primary]
        for line in lines:
            total = (line["total_seconds"] or 0) / 60
            low = line["low"] if line["low"] is not None else line["min"]
            high = line["high"] if line["high"] is not None else line["max"]
            spread = (line["train_seconds"] or 0) / 60
            d = line["vs_alone"]
            vs = "" if d is None else f"<br>vs alone {diff_text(d, digits=2)}"
            test = ci_text({"score": line["test"], "low": low, "high": high}, digits=2)  # seeds' range if no CI
            fig.add_trace(go.Scatter(
                x=[total], y=[line["test"]], mode="markers+text", text=[line["label"].lstrip("+ ")],
                textposition="top center", textfont=dict(size=11, color=ROW_COLOURS[line["row"]]),
                marker=dict(color=ROW_COLOURS[line["row"]], size=12, line=dict(color="black", width=0.5)),
                error_y=dict(type="data", symmetric=False, array=[high - line["test"]],
                             arrayminus=[line["test"] - low], color=ROW_COLOURS[line["row"]]),
                error_x=dict(type="data", symmetric=False, array=[((line.get("train_max") or 0) / 60 - spread)],
                             arrayminus=[spread - (line.get("train_min") or 0) / 60], visible=False),
                name=line["label"], legendgroup=line["row"], showlegend=c == 1,
                hovertemplate=(f"{primary} {line['label']}<br>test {line['metric']} {test} "
                               f"over {len(line['values'])} seed(s){vs}"
                               f"<br>dev {line['dev']:.2f}<br>choosing {(line['selection_seconds'] or 0):.0f} s + "
                               f"training {(line['train_seconds'] or 0):.0f} s<br>auxiliary: {aux_text(line)}"
                               "<extra></extra>")), row=1, col=c)
        metric = lines[0]["metric"] if lines else ""
        values = [v for line in lines for v in (line["low"], line["high"], line["min"], line["max"])
                  if v is not None]
        lo = max(0.0, min(values) - 3) if values else 0
        fig.update_yaxes(title_text=f"test {metric}", range=[lo, min(100, max(values) + 3) if values else 100],
                         row=1, col=c)
        fig.update_xaxes(title_text="wall time: choose + train (min)", rangemode="tozero", row=1, col=c)
    fig.update_layout(height=460, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.2))
    return fig


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


def fg_chart(fg: dict) -> go.Figure:
    """Per auxiliary unit, the distribution of its examples' tau with the primary's map, and the threshold."""
    fig = go.Figure()
    for unit, v in fg["units"].items():
        fig.add_trace(go.Box(x=v["tau"], name=f"{unit} ({len(v['kept'])}/{len(v['rows'])} kept)",
                             boxpoints="all", jitter=0.4, pointpos=0, marker=dict(size=3), line=dict(width=1),
                             hovertemplate="tau %{x:.2f}<extra></extra>"))
    fig.add_vline(x=fg["threshold"], line_dash="dash", line_color="red",
                  annotation_text=f"threshold {fg['threshold']}", annotation_position="top")
    fig.update_layout(height=max(220, 40 * len(fg["units"]) + 80), margin=dict(l=10, r=10, t=30, b=10),
                      showlegend=False, xaxis_title="Kendall tau of the example's head map with the primary's")
    return fig
