"""The figures of curves: the metric as heads are pruned (one line per strategy, its interval as a band), a
re-fine-tuning's metric per level, and the change after pruning a third of the layers, per language.

>>> fig = curves_chart([{"name": "importance", "strategy": "importance", "k": [0, 2], "mean": [90.0, 80.0],
...                      "low": [88.0, 77.0], "high": [92.0, 83.0]}], current_k=2, metric="accuracy")
>>> [t.name for t in fig.data], fig.layout.yaxis.title.text
(['importance interval', 'importance'], 'accuracy')
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from headprune_core.figures.heads import OTHER_COLOURS, lang_colour

STRATEGY_COLOURS = {"importance": "#0072B2", "reverse": "#D55E00", "random": "#7F7F7F", "layers": "#009E73"}
THIRD_POSITIONS = {"bottom": "middle left", "middle": "top center", "top": "middle right"}


def curves_chart(curves: Sequence[dict], *, current_k: int | None = None, current_score: float | None = None,
                 current_label: str = "current mask", metric: str = "", title: str = "") -> go.Figure:
    """Metric vs heads pruned, one line per strategy with its 95% bootstrap interval over sentences as a band
    (random: the mean over draws); current k marked.

    Each curve is ``{"name", "k", "mean", "low", "high", "labels", "strategy"}`` as returned by
    ``Study.curve`` plus a display name. The ``layers`` strategy is three labelled points at the same k (bottom /
    middle / top third), labelled left, above and right so the labels do not overlap. The y-axis spans the
    values (not 0-100), so drops look larger than on a full scale: the page says so.
    """
    fig = go.Figure()
    others, used = iter(OTHER_COLOURS), set()
    for c in curves:
        k, mean = list(c["k"]), list(c["mean"])
        strategy = c.get("strategy")
        # each strategy's first curve in its own colour; more importance curves (other rankings) in others
        colour = STRATEGY_COLOURS.get(strategy) if strategy not in used else None
        used.add(strategy)
        colour = colour or next(others)
        if c.get("strategy") == "layers":
            labels = list(c.get("labels", []))
            fig.add_trace(go.Scatter(x=k, y=mean, mode="markers+text", text=labels, name=c["name"],
                                     textposition=[THIRD_POSITIONS.get(lab, "top center") for lab in labels],
                                     marker=dict(size=10, color=colour),
                                     hovertemplate="%{text} layers: %{y:.2f}<extra>" + c["name"] + "</extra>"))
            continue
        low, high = c["low"], c["high"]
        if any(h > lo for lo, h in zip(low, high)):
            fig.add_trace(go.Scatter(x=k + k[::-1], y=list(high) + list(low)[::-1], fill="toself",
                                     line=dict(width=0), fillcolor=colour, opacity=0.15, hoverinfo="skip",
                                     showlegend=False, name=c["name"] + " interval"))
        fig.add_trace(go.Scatter(x=k, y=mean, mode="lines+markers", name=c["name"], line=dict(color=colour),
                                 customdata=np.column_stack([low, high]),
                                 hovertemplate="%{x} heads pruned: %{y:.2f} [%{customdata[0]:.1f}, "
                                               "%{customdata[1]:.1f}]<extra>" + c["name"] + "</extra>"))
    if current_k is not None:
        fig.add_vline(x=current_k, line_dash="dash", line_color="#888")
        if current_score is not None:
            fig.add_trace(go.Scatter(x=[current_k], y=[current_score], mode="markers", name=current_label,
                                     marker=dict(symbol="star", size=16, color="#e45756",
                                                 line=dict(width=1, color="black")),
                                     hovertemplate="%{x} heads pruned: %{y:.2f}<extra>" + current_label +
                                                   "</extra>"))
    fig.update_layout(title=title, xaxis_title="heads pruned", yaxis_title=metric, height=400,
                      margin=dict(l=10, r=10, t=50 if title else 10, b=10), legend=dict(orientation="h", y=-0.25))
    return fig


def retrain_chart(res: dict, *, langs: Sequence[str] | None = None) -> go.Figure:
    """A re-fine-tuning's test metric per level (k heads pruned before fine-tuning, or a layer third), one line
    per language with its 95% interval as error bars, and the dev metric of the source language dashed. The
    y-axis starts at the lowest interval (not 0): a caption must say so."""
    fig = go.Figure()
    levels = list(res["levels"])
    x = [("unpruned" if lab == "0" else lab) for lab in levels]
    langs = list(langs or res["test"])
    for i, lang in enumerate(langs):
        pts = [res["test"][lang]["levels"][lab] for lab in levels]
        fig.add_trace(go.Scatter(
            x=x, y=[p["score"] for p in pts], mode="lines+markers", name=lang,
            line=dict(color=lang_colour(lang, i)),
            error_y=dict(type="data", symmetric=False, array=[p["high"] - p["score"] for p in pts],
                         arrayminus=[p["score"] - p["low"] for p in pts], thickness=1),
            hovertemplate="%{x}: %{y:.1f}<extra>" + lang + " test</extra>"))
    dev = [res["dev"][lab] for lab in levels]
    fig.add_trace(go.Scatter(x=x, y=[p["score"] for p in dev], mode="lines+markers", name=f"{res['dev_lang']} dev",
                             line=dict(color="#888", dash="dash"),
                             hovertemplate="%{x}: %{y:.1f}<extra>dev (picks k)</extra>"))
    xtitle = "layer third pruned, then fine-tuned" if res["strategy"] == "layers" else \
        "heads pruned before fine-tuning (k)"
    fig.update_layout(xaxis_title=xtitle, yaxis_title=res["metric"], height=400, margin=dict(l=10, r=10, t=10, b=10),
                      legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(type="category")
    return fig


def thirds_chart(rows: Sequence[dict]) -> go.Figure:
    """Relative change (%) of each language's test metric after pruning the bottom, middle or top third of the
    layers and fine-tuning again, grouped by language family; error bars are the paired 95% intervals.

    ``rows``: ``{"lang", "family", "third", "rel", "low", "high"}``."""
    fig = go.Figure()
    order = sorted({(r["family"], r["lang"]) for r in rows})
    cats = [[f for f, _ in order], [lang for _, lang in order]]
    colours = {"bottom": "#56B4E9", "middle": "#E69F00", "top": "#009E73"}
    for third in ("bottom", "middle", "top"):
        by = {(r["family"], r["lang"]): r for r in rows if r["third"] == third}
        vals = [by.get(o) for o in order]
        fig.add_trace(go.Bar(
            x=cats, y=[v["rel"] if v else None for v in vals], name=f"{third} third", marker_color=colours[third],
            error_y=dict(type="data", symmetric=False, array=[(v["high"] - v["rel"]) if v else 0 for v in vals],
                         arrayminus=[(v["rel"] - v["low"]) if v else 0 for v in vals], thickness=1),
            hovertemplate="%{x}: %{y:+.1f}%<extra>" + third + " third pruned</extra>"))
    fig.add_hline(y=0, line_color="#444")
    fig.update_layout(barmode="group", yaxis_title="change vs unpruned (%)", height=380,
                      margin=dict(l=10, r=10, t=10, b=10), legend=dict(orientation="h", y=-0.3))
    return fig
