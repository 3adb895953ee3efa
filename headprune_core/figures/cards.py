"""The figures of the Findings cards: one card's evidence (each part's estimate with its interval, every training
run, 0 and the paper's effect or the equivalence margin), and every card on one scale (units of its paper's
effect or margin), coloured by the verdict. The Findings page, the HTML report and a notebook draw these.

>>> # fig = card_figure(Findings(study, plan).cards()[0])  # None for a card without results
"""

from __future__ import annotations

import textwrap

import plotly.graph_objects as go

from headprune_core.findings.cards import Card
from headprune_core.methods import inference as V

COLOURS = {V.REPRODUCED: "#1a7f37", V.SMALLER: "#8250df", V.OTHER_WAY: "#cf222e", V.INCONCLUSIVE: "#bf8700",
           V.ONE_RUN: "#bf8700", V.SAME: "#0969da", V.MISSING: "#6e7781"}
"""One colour per verdict: the charts' markers and the HTML report's badges."""
PAPER, BAND, AXIS = "#0969da", "rgba(9,105,218,0.12)", "#24292f"  # the paper's effect, the margin's band, 0


def card_figure(card: Card) -> go.Figure | None:
    """The card's evidence: per part, the estimate with its 95% interval and each training run's value, against
    0 and the paper's effect (superiority) or the +-margin band (equivalence). None for a card without results."""
    if not card.estimates:
        return None
    rule = card.hypothesis.rule
    names = [name or card.key for name in card.estimates]
    est = list(card.estimates.values())
    intervals = [e.interval(rule.level) for e in est]
    fig = go.Figure([
        go.Scatter(mode="markers", name="training runs", x=[r for e in est for r in e.runs],
                   y=[n for n, e in zip(names, est) for _ in e.runs],
                   marker={"color": "#8c959f", "size": 9, "symbol": "circle-open"},
                   hovertemplate="run: %{x:.2f}<extra></extra>"),
        go.Scatter(mode="markers", name=f"mean, {rule.level_text} interval", x=[e.diff for e in est], y=names,
                   marker={"color": COLOURS.get(card.shown, PAPER), "size": 14},
                   error_x={"type": "data", "symmetric": False,
                            "array": [hi - e.diff for e, (_, hi) in zip(est, intervals)],
                            "arrayminus": [e.diff - lo for e, (lo, _) in zip(est, intervals)], "thickness": 3,
                            "width": 8},
                   hovertemplate="%{x:.2f}<extra></extra>"),
    ])
    fig.add_shape(type="line", x0=0, x1=0, yref="paper", y0=0, y1=1, line={"color": AXIS, "width": 1})
    if rule.kind == "superiority":
        fig.add_shape(type="line", x0=rule.effect, x1=rule.effect, yref="paper", y0=0, y1=1,
                      line={"color": PAPER, "dash": "dash", "width": 2})
        fig.add_annotation(x=rule.effect, y=1, yref="paper", text=f"paper's effect {rule.effect:+g}",
                           showarrow=False, yanchor="bottom", font={"color": PAPER})
    else:
        fig.add_shape(type="rect", x0=-rule.margin, x1=rule.margin, yref="paper", y0=0, y1=1, fillcolor=BAND,
                      line={"width": 0})
        fig.add_annotation(x=0, y=1, yref="paper", text=f"equivalence margin +-{rule.margin:g}", showarrow=False,
                           yanchor="bottom", font={"color": PAPER})
    fig.update_layout(title={"text": f"({card.key}) {card.title}: {card.shown}"},
                      xaxis={"title": {"text": f"{_short(card.hypothesis.statistic)} ({rule.unit})"},
                             "zeroline": False},
                      yaxis={"automargin": True}, height=200 + 60 * len(names), margin={"t": 70, "b": 60},
                      legend={"orientation": "h", "y": -0.35}, template="plotly_white")
    return fig


PAGE_RANGE = 6.0  # the page chart's x-axis: +- this many paper effects (or margins); wider intervals run off it
PAGE_CAPTION = (f"Each card's estimate and interval, divided by the paper's effect (superiority: the paper's number "
                f"at the blue tick, 1) or by the margin (equivalence: inside the blue band, -1 to 1), so every claim "
                f"shares one scale; coloured by the verdict on the page (controlled across the cards). Intervals "
                f"wider than +-{PAGE_RANGE:g} run off the chart: those cards cannot tell at this size. Hover for "
                "the number in the card's own unit and the card's verdict alone.")


def page_figure(cards: list[Card]) -> go.Figure | None:
    """Every card on one chart: per card (per part), its estimate and interval in units of its paper's effect
    (superiority: the paper's effect at 1) or of its margin (equivalence: the band from -1 to 1), 0 marked, each
    coloured by its headline verdict, so that the page's message shows at a glance. None when no card has
    results."""
    rows = [(c, name, e) for c in cards for name, e in c.estimates.items()]
    if not rows:
        return None
    fig = go.Figure()
    for verdict in V.VERDICTS:
        mine = [(i, c, e) for i, (c, _, e) in enumerate(rows) if c.shown == verdict]
        if mine:
            fig.add_trace(_verdict_trace(verdict, mine))
    labels = []
    for i, (c, name, _) in enumerate(rows):
        labels.append(f"({c.key}) {name or textwrap.shorten(c.title, 38, placeholder='...')}")
        if c.hypothesis.rule.kind == "superiority":  # the paper's effect at 1
            fig.add_shape(type="line", x0=1, x1=1, y0=i - 0.4, y1=i + 0.4, line={"color": PAPER, "width": 3})
        else:  # the equivalence margin
            fig.add_shape(type="rect", x0=-1, x1=1, y0=i - 0.4, y1=i + 0.4, fillcolor=BAND, line={"width": 0})
    fig.add_shape(type="line", x0=0, x1=0, yref="paper", y0=0, y1=1, line={"color": AXIS, "width": 1})
    fig.update_layout(
        title={"text": "Every card: this model's estimate in units of the paper's effect (or margin)"},
        xaxis={"title": {"text": "estimate / paper's effect (blue tick at 1) or / margin (blue band: +-1); 0 = no "
                                 "difference"}, "range": [-PAGE_RANGE, PAGE_RANGE], "zeroline": False},
        yaxis={"tickvals": list(range(len(rows))), "ticktext": labels, "autorange": "reversed", "automargin": True},
        height=140 + 28 * len(rows), margin={"t": 60, "b": 70},
        legend={"orientation": "h", "y": -0.12, "title": {"text": "verdict on the page"}}, template="plotly_white")
    return fig


def _verdict_trace(verdict: str, mine: list) -> go.Scatter:
    """The page chart's points of one verdict: ``mine`` holds (row, card, estimate), each in units of its
    card's paper effect or margin."""
    x, lo, hi = [], [], []
    for _, c, e in mine:
        rule = c.hypothesis.rule
        low, high = e.interval(rule.level)
        x.append(e.diff / rule.target)
        lo.append((e.diff - low) / rule.target)
        hi.append((high - e.diff) / rule.target)
    return go.Scatter(mode="markers", name=verdict, x=x, y=[i for i, _, _ in mine],
                      marker={"color": COLOURS[verdict], "size": 12},
                      error_x={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo, "thickness": 2.5,
                               "width": 6},
                      customdata=[[c.key, f"{e.diff:+.2f} {c.hypothesis.rule.unit}", c.verdict] for _, c, e in mine],
                      hovertemplate="card %{customdata[0]}: %{customdata[1]} (card alone: %{customdata[2]})"
                                    "<extra>%{fullData.name}</extra>")


def _short(statistic: str) -> str:
    """The statistic's first sentence, cut at a word to fit under an axis."""
    return textwrap.shorten(statistic.split(". ")[0].rstrip("."), 90, placeholder=" ...")
