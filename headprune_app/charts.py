"""Plotly figures and tables for the dashboard: pure functions of arrays, no Streamlit, unit-tested.

Every map is ``(layers, heads)`` (the project's one convention); layer 0 is drawn at the bottom, as the lowest
layer of the stack.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from headprune_core.methods.similarity import cluster_order

IMPORTANCE_SCALE = "Viridis"
KEPT, PRUNED = "#4c78a8", "#d9d9d9"
PNG_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def png_config(filename: str) -> dict:
    """``st.plotly_chart`` config whose camera button saves a PNG named ``filename``."""
    return {**PNG_CONFIG, "toImageButtonOptions": {**PNG_CONFIG["toImageButtonOptions"], "filename": filename}}


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


def importance_table(maps: dict[str, np.ndarray], raws: dict[str, np.ndarray]) -> pd.DataFrame:
    """Long table: language, layer, head, raw score, shown score, rank (for CSV download)."""
    rows = []
    for name, scores in maps.items():
        rk = ranks(scores)
        for (layer, head), value in np.ndenumerate(scores):
            rows.append({"language": name, "layer": layer, "head": head, "raw": float(raws[name][layer, head]),
                         "score": float(value), "rank": int(rk[layer, head])})
    return pd.DataFrame(rows)


def top_heads(maps: dict[str, np.ndarray], lang: str, n: int = 15) -> pd.DataFrame:
    """The ``n`` most important heads of ``lang`` with their rank in every other language."""
    rk = {name: ranks(m) for name, m in maps.items()}
    scores = maps[lang]
    order = np.argsort(rk[lang], axis=None)[:n]
    rows = []
    for flat in order:
        layer, head = np.unravel_index(flat, scores.shape)
        row = {"rank": int(rk[lang][layer, head]), "layer": int(layer), "head": int(head),
               "score": float(scores[layer, head])}
        row.update({f"rank in {name}": int(r[layer, head]) for name, r in rk.items() if name != lang})
        rows.append(row)
    return pd.DataFrame(rows)


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


def clicked_heads(selection) -> list[tuple[int, int]]:
    """(layer, head) of the points in a ``st.plotly_chart`` selection state (empty if none)."""
    try:
        points = selection["selection"]["points"]
    except (KeyError, TypeError):
        return []
    out = []
    for p in points or []:
        try:
            data = p.get("customdata")
            if isinstance(data, dict):  # Streamlit sends array customdata as {"0": layer, "1": head}
                data = [data[k] for k in sorted(data, key=lambda k: int(k))]
            if data is not None and len(data) >= 2:
                out.append((int(data[0]), int(data[1])))
            elif "x" in p and "y" in p:
                out.append((int(round(p["y"])), int(round(p["x"]))))
        except (TypeError, ValueError, KeyError, AttributeError):
            continue  # a point we cannot read is ignored, never a traceback
    return out


def toggle(mask: np.ndarray, heads: Sequence[tuple[int, int]]) -> np.ndarray:
    """A copy of ``mask`` with each (layer, head) flipped between kept (1) and pruned (0)."""
    out = np.array(mask, dtype=np.float32, copy=True)
    for layer, head in heads:
        out[layer, head] = 0.0 if out[layer, head] else 1.0
    return out


STRATEGY_COLOURS = {"importance": "#0072B2", "reverse": "#D55E00", "random": "#7F7F7F", "layers": "#009E73"}
THIRD_POSITIONS = {"bottom": "middle left", "middle": "top center", "top": "middle right"}


def curves_chart(curves: Sequence[dict], *, current_k: int | None = None, current_score: float | None = None,
                 current_label: str = "current mask", metric: str = "") -> go.Figure:
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
    fig.update_layout(xaxis_title="heads pruned", yaxis_title=metric, height=400,
                      margin=dict(l=10, r=10, t=10, b=10), legend=dict(orientation="h", y=-0.25))
    return fig


def report_table(masked: dict, full: dict | None = None) -> pd.DataFrame:
    """Per-tag (accuracy) or per-type (seqeval) report under the mask, beside the unpruned model's."""
    rows = []
    for label, stats in masked.get("report", {}).items():
        row = {"label": label}
        if "accuracy" in stats:
            row.update({"accuracy": stats["accuracy"], "support": stats.get("support")})
            if full and label in full.get("report", {}):
                row["unpruned"] = full["report"][label]["accuracy"]
                row["change"] = stats["accuracy"] - row["unpruned"]
        else:
            row.update({k: 100 * v if k != "support" else int(v) for k, v in stats.items()})
            if full and label in full.get("report", {}) and "f1-score" in stats:
                row["unpruned f1"] = 100 * full["report"][label]["f1-score"]
                row["change"] = row["f1-score"] - row["unpruned f1"]
        rows.append(row)
    return pd.DataFrame(rows).round(2)


def tag_table(words: Sequence[str], full: dict, masked: dict | None = None) -> pd.DataFrame:
    """A token task's labels of ``words`` by the full model (with its confidence) and, given ``masked``, under
    the mask, with the words whose label changes."""
    table = pd.DataFrame({"word": list(words), "full model": full["labels"],
                          "confidence": [None if p is None else round(p, 3) for p in full["probs"]]})
    if masked is not None:
        table["with mask"] = masked["labels"]
        table["changed"] = [a != b for a, b in zip(full["labels"], masked["labels"])]
    return table


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


def plan_table(rows: Sequence[dict]) -> pd.DataFrame:
    """Every result of a plan with its cache status (``cached.plan_status`` rows)."""
    return pd.DataFrame([{"result": r["job"], "kind": r["kind"], "status": r["status"]} for r in rows],
                        columns=["result", "kind", "status"])


def status_matrix(rows: Sequence[dict]) -> pd.DataFrame:
    """Cache status at a glance: one row per language, one column per kind of result.

    ``rows`` hold ``kind``, ``status`` and ``lang`` (None for the fine-tuned model); a cell reads "ok",
    "missing", "corrupt" or, for several curves, "2/3 ok".
    """
    names = {"finetune": "fine-tuned model", "score": "head scores", "eval": "evaluation", "curve": "curves"}
    cells: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        lang = r.get("lang") or "(all)"
        cells.setdefault(lang, {}).setdefault(names.get(r["kind"], r["kind"]), []).append(r["status"])
    out = []
    for lang, kinds in cells.items():
        row = {"language": lang}
        for kind, states in kinds.items():
            ok = sum(s == "ok" for s in states)
            if len(states) == 1:
                row[kind] = states[0]
            else:
                row[kind] = f"{ok}/{len(states)} ok" + (" (corrupt)" if "corrupt" in states else "")
        out.append(row)
    cols = ["language"] + [n for n in names.values() if any(n in r for r in out)]
    return pd.DataFrame(out, columns=cols).fillna("")


LANG_COLOURS = {"en": "#000000", "de": "#E69F00", "nl": "#56B4E9", "es": "#009E73", "fr": "#0072B2",
                "it": "#D55E00", "pt": "#CC79A7", "tr": "#8C6D1F"}
"""One colour per embedded language (Okabe-Ito's colour-blind-safe palette, brown for the eighth): the same
language has the same colour on every chart."""
OTHER_COLOURS = ["#7F7F7F", "#17BECF", "#BCBD22", "#9467BD", "#8C564B", "#E377C2", "#1F77B4", "#FF7F0E"]


def lang_colour(lang: str, i: int = 0) -> str:
    return LANG_COLOURS.get(lang, OTHER_COLOURS[i % len(OTHER_COLOURS)])


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
