"""The figures of head maps: a layer x head importance map, one map per language on one scale, the languages'
rank agreement, the share of importance per layer, the kept/pruned grid and one head's attention.

Every map is ``(layers, heads)`` (the project's one convention); layer 0 is drawn at the bottom, as the lowest
layer of the stack.

>>> fig = importance_heatmap(np.arange(6.0).reshape(2, 3))
>>> fig.data[0].type, fig.layout.xaxis.title.text, fig.layout.yaxis.title.text
('heatmap', 'head', 'layer')
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from headprune_core.methods.similarity import cluster_order

IMPORTANCE_SCALE = "Viridis"
KEPT, PRUNED = "#4c78a8", "#d9d9d9"


def ranks(scores: np.ndarray) -> np.ndarray:
    """Rank of every head, 1 = most important; ties keep head order (layer-major), as pruning orders them.

    >>> ranks(np.array([[0.1, 0.9], [0.5, 0.5]])).tolist()
    [[4, 1], [2, 3]]
    """
    flat = np.asarray(scores, dtype=np.float64).ravel()
    order = np.lexsort((np.arange(flat.size), -flat))  # descending score, stable
    out = np.empty(flat.size, dtype=np.int64)
    out[order] = np.arange(1, flat.size + 1)
    return out.reshape(np.shape(scores))


def _heatmap(scores: np.ndarray, *, zmin: float | None, zmax: float | None, coloraxis: str | None = None,
             score_label: str = "score") -> go.Heatmap:
    layers, heads = np.shape(scores)
    total = layers * heads
    return go.Heatmap(
        z=scores, x=list(range(heads)), y=list(range(layers)), customdata=ranks(scores),
        zmin=zmin, zmax=zmax, colorscale=None if coloraxis else IMPORTANCE_SCALE, coloraxis=coloraxis,
        hovertemplate=f"layer %{{y}}, head %{{x}}<br>{score_label} %{{z:.4g}}<br>rank %{{customdata}} of {total}"
                      "<extra></extra>",
        xgap=1, ygap=1)


def importance_heatmap(scores: np.ndarray, *, title: str = "", zmin: float | None = None,
                       zmax: float | None = None, score_label: str = "importance") -> go.Figure:
    """One layer x head heatmap; hover shows layer, head, score and rank."""
    fig = go.Figure(_heatmap(scores, zmin=zmin, zmax=zmax, score_label=score_label))
    fig.update_layout(title=title, xaxis_title="head", yaxis_title="layer", height=420,
                      margin=dict(l=10, r=10, t=50 if title else 10, b=10))
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(dtick=1)
    return fig


def small_multiples(maps: dict[str, np.ndarray], *, zmin: float, zmax: float, cols: int = 4,
                    score_label: str = "importance") -> go.Figure:
    """One heatmap per language on one shared colour scale (so the languages can be compared)."""
    names = list(maps)
    cols = max(1, min(cols, len(names)))
    rows = -(-len(names) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=names, horizontal_spacing=0.03,
                        vertical_spacing=0.12 if rows > 1 else 0.0)
    for i, name in enumerate(names):
        fig.add_trace(_heatmap(maps[name], zmin=zmin, zmax=zmax, coloraxis="coloraxis", score_label=score_label),
                      row=i // cols + 1, col=i % cols + 1)
    layers, heads = np.shape(next(iter(maps.values())))
    fig.update_layout(coloraxis=dict(colorscale=IMPORTANCE_SCALE, cmin=zmin, cmax=zmax,
                                     colorbar=dict(title=score_label)),
                      height=250 * rows + 60, margin=dict(l=10, r=10, t=40, b=10))
    # ticks every few heads / layers (every one would crowd a small panel); titles on the outer panels only
    fig.update_xaxes(tickmode="array", tickvals=list(range(0, heads, max(1, heads // 4))), tickfont=dict(size=9))
    fig.update_yaxes(tickmode="array", tickvals=list(range(0, layers, max(1, layers // 4))), tickfont=dict(size=9))
    for c in range(1, cols + 1):
        fig.update_xaxes(title_text="head", title_font=dict(size=10), row=rows, col=c)
    for r in range(1, rows + 1):
        fig.update_yaxes(title_text="layer", title_font=dict(size=10), row=r, col=1)
    return fig


def spearman_heatmap(names: Sequence[str], matrix: np.ndarray, *, title: str = "",
                     band: float | None = None) -> go.Figure:
    """Language x language Spearman correlation of head rankings, ordered by clustering.

    The colour scale is fitted to the values (0 stays white; it spans from the lowest value, or the chance band's
    lower edge, to 1), so 0.6 and 0.9 look different; values inside the chance band ``band`` (what two random
    rankings give 95% of the time) are written in parentheses."""
    order = cluster_order(matrix)
    labels = [names[i] for i in order]
    z = np.asarray(matrix, dtype=np.float64)[np.ix_(order, order)]
    off = z[~np.eye(len(z), dtype=bool)] if len(z) > 1 else z.ravel()
    low = min(float(off.min()), -(band or 0.0), 0.0)
    text = [[f"({v:.2f})" if band is not None and abs(v) < band else f"{v:.2f}" for v in row] for row in z]
    fig = go.Figure(go.Heatmap(z=z, x=labels, y=labels, zmin=low, zmax=1.0, zmid=0.0, colorscale="RdBu",
                               text=text, texttemplate="%{text}",
                               hovertemplate="%{y} vs %{x}: rho %{z:.3f}<extra></extra>",
                               colorbar=dict(title="rho")))
    fig.update_layout(title=title, height=380, margin=dict(l=10, r=10, t=50 if title else 10, b=10))
    fig.update_yaxes(autorange="reversed")
    return fig


def layer_shares(raw: np.ndarray) -> np.ndarray:
    """Share (%) of a map's total importance that sits in each layer (from raw, unnormalised scores)."""
    rows = np.abs(np.asarray(raw, dtype=np.float64)).sum(axis=1)
    total = rows.sum()
    return 100 * rows / total if total > 0 else np.zeros_like(rows)


def layer_profile(raw_maps: dict[str, np.ndarray]) -> go.Figure:
    """Share of importance per layer, one line per language."""
    fig = go.Figure()
    for i, (name, raw) in enumerate(raw_maps.items()):
        shares = layer_shares(raw)
        fig.add_trace(go.Scatter(x=list(range(len(shares))), y=shares, mode="lines+markers", name=name,
                                 line=dict(color=lang_colour(name, i)),
                                 hovertemplate=f"{name}, layer %{{x}}: %{{y:.1f}}%<extra></extra>"))
    fig.update_layout(xaxis_title="layer", yaxis_title="share of importance (%)", height=360,
                      margin=dict(l=10, r=10, t=10, b=10), legend_title_text="language")
    fig.update_xaxes(dtick=1)
    return fig


def mask_grid(mask: np.ndarray, scores: np.ndarray | None = None, *, title: str = "") -> go.Figure:
    """Which heads are pruned: a kept/pruned cell per head that can be clicked.

    Drawn as a heatmap, with one nearly invisible cell-sized scatter point on each cell that takes the clicks:
    Plotly reports clicks on scatter points (Streamlit's ``on_select``) but not on heatmap cells. The
    ``customdata`` of each point is ``[layer, head]``.
    """
    mask = np.asarray(mask)
    layers, heads = mask.shape
    ys, xs = np.meshgrid(range(layers), range(heads), indexing="ij")
    kept = mask.ravel() != 0
    state = np.where(kept, "kept", "pruned")
    score_txt = [f"<br>importance {scores[y, x]:.3g}" if scores is not None else ""
                 for y, x in zip(ys.ravel(), xs.ravel())]
    fig = go.Figure(go.Heatmap(z=(mask != 0).astype(float), x=list(range(heads)), y=list(range(layers)),
                               zmin=0, zmax=1, colorscale=[[0, PRUNED], [1, KEPT]], showscale=False,
                               xgap=2, ygap=2, hoverinfo="skip"))
    cell = max(8, min(40, 300 // max(heads, layers)))
    fig.add_trace(go.Scatter(
        x=xs.ravel(), y=ys.ravel(), mode="markers", showlegend=False, name="heads",
        marker=dict(symbol="square", size=cell, color="black", opacity=0.01),
        customdata=np.stack([ys.ravel(), xs.ravel()], axis=1),
        text=[f"{st}{sc}" for st, sc in zip(state, score_txt)],
        hovertemplate="layer %{y}, head %{x}: %{text}<br>click to toggle<extra></extra>"))
    for flag, name, colour in ((True, "kept", KEPT), (False, "pruned", PRUNED)):  # legend entries only
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{name} ({int((kept == flag).sum())})",
                                 marker=dict(symbol="square", size=12, color=colour, line=dict(width=1, color="#555"))))
    fig.update_layout(title=title, height=380, xaxis_title="head", yaxis_title="layer", clickmode="event+select",
                      margin=dict(l=10, r=10, t=50 if title else 10, b=10), plot_bgcolor="white",
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=0))
    fig.update_xaxes(dtick=1, range=[-0.5, heads - 0.5], showgrid=False, zeroline=False)
    fig.update_yaxes(dtick=1, range=[-0.5, layers - 0.5], showgrid=False, zeroline=False)
    return fig


def attention_heatmap(pieces: Sequence[str], matrix: np.ndarray, *, title: str = "") -> go.Figure:
    """One head's attention over the sentence's sub-word pieces (rows: attending token, columns: attended)."""
    # unique labels, even for repeated pieces; < and > escaped, or plotly reads <s> as markup and hides it
    labels = [f"{i}:{p}".replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") for i, p in enumerate(pieces)]
    fig = go.Figure(go.Heatmap(z=np.asarray(matrix), x=labels, y=labels, colorscale="Blues", zmin=0,
                               hovertemplate="%{y} -> %{x}: %{z:.3f}<extra></extra>"))
    size = max(360, min(720, 28 * len(pieces) + 120))
    fig.update_layout(title=title, height=size, xaxis_title="attended to", yaxis_title="attending",
                      margin=dict(l=10, r=10, t=50 if title else 10, b=10))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(tickangle=-60)
    return fig


LANG_COLOURS = {"en": "#000000", "de": "#E69F00", "nl": "#56B4E9", "es": "#009E73", "fr": "#0072B2",
                "it": "#D55E00", "pt": "#CC79A7", "tr": "#8C6D1F"}
"""One colour per embedded language (Okabe-Ito's colour-blind-safe palette, brown for the eighth): the same
language has the same colour on every chart."""


OTHER_COLOURS = ["#7F7F7F", "#17BECF", "#BCBD22", "#9467BD", "#8C564B", "#E377C2", "#1F77B4", "#FF7F0E"]


def lang_colour(lang: str, i: int = 0) -> str:
    return LANG_COLOURS.get(lang, OTHER_COLOURS[i % len(OTHER_COLOURS)])
