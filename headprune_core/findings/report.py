"""A findings report to hand out: every card (the paper's claim, the test stated before the data, the numbers with
their intervals, the verdict, the rule and how often it is wrong, the protocol) as one self-contained HTML file
with an interactive chart per card, or as Markdown for a course page.

The HTML carries plotly.js inline (read from the installed plotly package's file, never imported here: the core
stays free of plotting libraries), so it opens from disk with no server and no network. Each chart is a plain
Plotly figure: the card's estimate per part with its 95% interval, each training run's value, 0 and the paper's
effect (or the equivalence margin), so a reader sees at a glance what the rule compared.

>>> # html = report_html(Findings(study, plan).cards(), title="Findings of plan findings (me5-small)")
"""

from __future__ import annotations

import html
import importlib.util
import json
import textwrap
from datetime import UTC, datetime
from pathlib import Path

from headprune_core.base.files import write_file_atomic
from headprune_core.findings.cards import (
    INCONCLUSIVE,
    MISSING,
    ONE_RUN,
    OTHER_WAY,
    REPRODUCED,
    SAME,
    SMALLER,
    VERDICTS,
    Card,
    Findings,
)
from headprune_core.findings.page import page_control

FORMATS = ("html", "md")
COLOURS = {REPRODUCED: "#1a7f37", SMALLER: "#8250df", OTHER_WAY: "#cf222e", INCONCLUSIVE: "#bf8700",
           ONE_RUN: "#bf8700", SAME: "#0969da", MISSING: "#6e7781"}


def plotly_js() -> str:
    """The text of the installed plotly package's ``plotly.min.js`` (found without importing plotly)."""
    spec = importlib.util.find_spec("plotly")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / "package_data" / "plotly.min.js"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise FileNotFoundError("plotly.min.js not found: the HTML report inlines the plotly package's copy "
                            "(pip install plotly), or use --format md")


def card_figure(card: Card) -> dict | None:
    """The card's evidence as a Plotly figure (a dict): per part, the estimate with its 95% interval and each
    training run's value, against 0 and the paper's effect (superiority) or the +-margin band (equivalence).
    None for a card without results."""
    if not card.estimates:
        return None
    rule = card.hypothesis.rule
    names = [name or card.key for name in card.estimates]
    est = list(card.estimates.values())
    intervals = [e.interval(rule.level) for e in est]
    data = [
        {"type": "scatter", "mode": "markers", "name": "training runs", "x": [r for e in est for r in e.runs],
         "y": [n for n, e in zip(names, est) for _ in e.runs], "marker": {"color": "#8c959f", "size": 9,
                                                                        "symbol": "circle-open"},
         "hovertemplate": "run: %{x:.2f}<extra></extra>"},
        {"type": "scatter", "mode": "markers", "name": f"mean, {rule.level_text} interval",
         "x": [e.diff for e in est], "y": names,
         "marker": {"color": COLOURS.get(card.shown, "#0969da"), "size": 14},
         "error_x": {"type": "data", "symmetric": False, "array": [hi - e.diff for e, (_, hi) in zip(est, intervals)],
                     "arrayminus": [e.diff - lo for e, (lo, _) in zip(est, intervals)], "thickness": 3, "width": 8},
         "hovertemplate": "%{x:.2f}<extra></extra>"},
    ]
    shapes = [{"type": "line", "x0": 0, "x1": 0, "yref": "paper", "y0": 0, "y1": 1,
               "line": {"color": "#24292f", "width": 1}}]
    notes = []
    if rule.kind == "superiority":
        shapes.append({"type": "line", "x0": rule.effect, "x1": rule.effect, "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": "#0969da", "dash": "dash", "width": 2}})
        notes.append({"x": rule.effect, "y": 1, "yref": "paper", "text": f"paper's effect {rule.effect:+g}",
                      "showarrow": False, "yanchor": "bottom", "font": {"color": "#0969da"}})
    else:
        shapes.append({"type": "rect", "x0": -rule.margin, "x1": rule.margin, "yref": "paper", "y0": 0, "y1": 1,
                       "fillcolor": "rgba(9,105,218,0.12)", "line": {"width": 0}})
        notes.append({"x": 0, "y": 1, "yref": "paper", "text": f"equivalence margin +-{rule.margin:g}",
                      "showarrow": False, "yanchor": "bottom", "font": {"color": "#0969da"}})
    layout = {"title": {"text": f"({card.key}) {card.title}: {card.shown}"},
              "xaxis": {"title": {"text": f"{_short(card.hypothesis.statistic)} ({rule.unit})"},
                        "zeroline": False},
              "yaxis": {"automargin": True}, "shapes": shapes, "annotations": notes, "height": 200 + 60 * len(names),
              "margin": {"t": 70, "b": 60}, "legend": {"orientation": "h", "y": -0.35}, "template": "plotly_white"}
    return {"data": data, "layout": layout}


PAGE_RANGE = 6.0  # the page chart's x-axis: +- this many paper effects (or margins); wider intervals run off it
PAGE_CAPTION = (f"Each card's estimate and interval, divided by the paper's effect (superiority: the paper's number "
                f"at the blue tick, 1) or by the margin (equivalence: inside the blue band, -1 to 1), so every claim "
                f"shares one scale; coloured by the verdict on the page (controlled across the cards). Intervals "
                f"wider than +-{PAGE_RANGE:g} run off the chart: those cards cannot tell at this size. Hover for "
                "the number in the card's own unit and the card's verdict alone.")


def page_figure(cards: list[Card]) -> dict | None:
    """Every card on one chart (a Plotly figure as a dict): per card (per part), its estimate and interval in
    units of its paper's effect (superiority: the paper's effect at 1) or of its margin (equivalence: the band
    from -1 to 1), 0 marked, each coloured by its headline verdict, so that the page's message shows at a
    glance. None when no card has results."""
    rows = [(c, name, e) for c in cards for name, e in c.estimates.items()]
    if not rows:
        return None
    data, shapes, labels = [], [], []
    for verdict in VERDICTS:
        mine = [(i, c, e) for i, (c, _, e) in enumerate(rows) if c.shown == verdict]
        if not mine:
            continue
        x, lo, hi = [], [], []
        for _, c, e in mine:
            rule = c.hypothesis.rule
            low, high = e.interval(rule.level)
            x.append(e.diff / rule.target)
            lo.append((e.diff - low) / rule.target)
            hi.append((high - e.diff) / rule.target)
        data.append({"type": "scatter", "mode": "markers", "name": verdict, "x": x,
                     "y": [i for i, _, _ in mine], "marker": {"color": COLOURS[verdict], "size": 12},
                     "error_x": {"type": "data", "symmetric": False, "array": hi, "arrayminus": lo, "thickness": 2.5,
                                 "width": 6},
                     "customdata": [[c.key, f"{e.diff:+.2f} {c.hypothesis.rule.unit}", c.verdict] for _, c, e in mine],
                     "hovertemplate": "card %{customdata[0]}: %{customdata[1]} (card alone: %{customdata[2]})"
                                      "<extra>%{fullData.name}</extra>"})
    for i, (c, name, _) in enumerate(rows):
        rule = c.hypothesis.rule
        labels.append(f"({c.key}) {name or textwrap.shorten(c.title, 38, placeholder='...')}")
        if rule.kind == "superiority":  # the paper's effect at 1
            shapes.append({"type": "line", "x0": 1, "x1": 1, "y0": i - 0.4, "y1": i + 0.4,
                           "line": {"color": "#0969da", "width": 3}})
        else:  # the equivalence margin
            shapes.append({"type": "rect", "x0": -1, "x1": 1, "y0": i - 0.4, "y1": i + 0.4,
                           "fillcolor": "rgba(9,105,218,0.12)", "line": {"width": 0}})
    shapes.append({"type": "line", "x0": 0, "x1": 0, "yref": "paper", "y0": 0, "y1": 1,
                   "line": {"color": "#24292f", "width": 1}})
    layout = {"title": {"text": "Every card: this model's estimate in units of the paper's effect (or margin)"},
              "xaxis": {"title": {"text": "estimate / paper's effect (blue tick at 1) or / margin (blue band: "
                                          "+-1); 0 = no difference"}, "range": [-PAGE_RANGE, PAGE_RANGE],
                        "zeroline": False},
              "yaxis": {"tickvals": list(range(len(rows))), "ticktext": labels, "autorange": "reversed",
                        "automargin": True},
              "shapes": shapes, "height": 140 + 28 * len(rows), "margin": {"t": 60, "b": 70},
              "legend": {"orientation": "h", "y": -0.12, "title": {"text": "verdict on the page"}},
              "template": "plotly_white"}
    return {"data": data, "layout": layout}


def _short(statistic: str) -> str:
    """The statistic's first sentence, cut at a word to fit under an axis."""
    return textwrap.shorten(statistic.split(". ")[0].rstrip("."), 90, placeholder=" ...")


def _e(text) -> str:
    return html.escape(str(text))


def table_html(rows: list[dict], *, link: str = "") -> str:
    """A table; with ``link``, that column's cells link to ``#card-<value>``."""
    if not rows:
        return ""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)

    def td(r, c):
        text = _e(_cell(r.get(c, "")))
        return f'<td><a href="#card-{text}">{text}</a></td>' if c == link else f"<td>{text}</td>"

    body = "".join("<tr>" + "".join(td(r, c) for c in cols) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def calibration_line(cal: dict) -> str:
    """How often a card's rule is wrong, in a line."""
    missed = f"; misses {', '.join(cal['goals_missed'])}" if cal.get("goals_missed") else "; meets its goals"
    return (f"false reproduced {cal['false_reproduced']:.1%}, false not reproduced "
            f"{cal['false_not_reproduced']:.1%}, false the other way at a true 0 {cal['false_other_way']:.1%} "
            f"(each one-sided, goal <= {cal['goal']:.1%} within 3 Monte Carlo standard errors), power at the "
            f"paper's effect {cal['power']:.0%}, {cal['draws']:,} simulated draws around this card's sizes{missed}")


def summary_rows(cards: list[Card], page: dict | None = None) -> list[dict]:
    """One row per card for the table a page opens with: the claim in a line, this model's estimate and
    interval beside the paper's number, the verdict controlled across the page (:func:`page_control`), and the
    card's own verdict before that control."""
    page = page if page is not None else page_control(cards)
    rows = []
    for c in cards:
        here = f"see card {c.same_as}" if c.verdict == SAME else "not computed yet"
        if c.estimates:
            here = "; ".join(f"{name + ': ' if name else ''}{e.diff:+.2f} [{lo:+.2f}, {hi:+.2f}]"
                             for name, e in c.estimates.items() for lo, hi in [e.interval(c.hypothesis.rule.level)])
            here += f" {c.hypothesis.rule.unit}, {min(e.n_runs for e in c.estimates.values())} runs"
        rows.append({"card": c.key, "claim": c.title, "here": here, "paper": c.hypothesis.paper_effect,
                     "verdict": c.shown, "card alone": c.verdict})
    return rows


def page_text(page: dict) -> str:
    """The page as a whole, in words: the procedure, its bound per direction, the simulated page-wide rates."""
    rates = page["rates"]
    true, false = rates["claims_true"], rates["claims_false"]
    return (f"The page as a whole: the verdicts are controlled across it by {page['procedure']}, over the "
            f"{page['tested']} cards "
            f"tested. By the union bound, whatever the truths and however cards share runs, each statement is "
            f"false anywhere on the page with probability at most {page['alpha']:.1%}. Simulated around each "
            f"card's sizes ({rates['draws']:,} pages, cards drawn independently): were every claim true, some "
            f"card would read 'not reproduced' or 'the other way' on {true['any_false_against']:.1%} of pages "
            f"({true['any_false_against_unadjusted']:.1%} from the cards alone); were every claim false, some card "
            f"would read 'reproduced' on {false['any_false_reproduced']:.1%} "
            f"({false['any_false_reproduced_unadjusted']:.1%} alone) and 'the other way' on "
            f"{false['any_false_other_way']:.1%} ({false['any_false_other_way_unadjusted']:.1%} alone). "
            f"{page['decided']} cards are decided on the page, {page['decided_unadjusted']} by the cards alone; "
            "the column 'card alone' gives each card's own verdict (its 95% interval, 2.5% per side).")


def _card_html(card: Card, figure_id: str) -> str:
    h = card.hypothesis
    colour = COLOURS.get(card.shown, "#0969da")
    parts = [f'<section class="card" id="card-{_e(card.key)}" data-verdict="{_e(card.shown)}">',
             f'<h2>({_e(card.key)}) {_e(card.title)} <span class="badge" style="background:{colour}">'
             f"{_e(card.shown)}</span></h2>", f"<p><b>Verdict.</b> {_e(card.verdict_text())}</p>",
             f"<p><b>The paper</b> ({_e(card.paper)}). {_e(card.claim)}</p>",
             f"<p><b>Hypothesis.</b> {_e(h.hypothesis)}<br><b>Statistic.</b> {_e(h.statistic)}<br>"
             f"<b>Control.</b> {_e(h.control)}</p>"]
    if card.verdict == MISSING:
        parts.append(f"<p class='missing'><b>Not computed yet:</b> {_e('; '.join(card.missing))}</p>")
    else:
        parts.append(f"<p><b>Here.</b> {_e(card.measured)}</p>")
        parts.append(f"<p><b>Estimate.</b> {_e(card.estimate_text())}</p>")
        if card.mde is not None:
            parts.append(f"<p><b>Minimum detectable effect</b> (information, not a gate). {card.mde:.2f} "
                         f"{_e(h.rule.unit)} (the paper: {_e(h.paper_effect)})</p>")
        parts += [f"<p class='note'>{_e(n)}</p>" for n in card.notes]
        if figure_id:
            parts.append(f'<div class="chart" id="{figure_id}"></div>')
        parts.append(table_html(card.rows))
    parts.append(f"<p><b>Rule.</b> {_e(card.rule)}</p>")
    if card.calibration is not None:
        parts.append(f"<p><b>How often this rule is wrong.</b> {_e(calibration_line(card.calibration))}</p>")
    if card.protocol:
        parts.append(f"<p><b>Protocol here.</b> {_e(card.protocol)}</p>")
    parts.append("</section>")
    return "\n".join(parts)


STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1000px; margin: 2em auto;
       padding: 0 1em; color: #24292f; line-height: 1.45; }
h1 { font-size: 1.8em; } h2 { font-size: 1.25em; margin-top: 0; }
.card { border: 1px solid #d0d7de; border-radius: 8px; padding: 1em 1.2em; margin: 1.2em 0; }
.badge { color: white; border-radius: 1em; padding: 0.1em 0.7em; font-size: 0.8em; vertical-align: middle; }
.note, .missing { color: #57606a; font-size: 0.95em; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.6em 0; }
th, td { border: 1px solid #d0d7de; padding: 0.25em 0.6em; text-align: left; }
th { background: #f6f8fa; }
.chart { width: 100%; min-height: 260px; }
"""


def safe_json(value) -> str:
    """JSON for an inline ``<script>``: no ``</`` can close the tag early."""
    return json.dumps(value).replace("</", "<\\/")


def report_html(cards: list[Card], *, title: str, intro: str = "", created: datetime | None = None) -> str:
    """One self-contained HTML page: a summary table, then every card with its interactive chart."""
    created = created or datetime.now(UTC)
    page = page_control(cards)  # first: the headlines the figures and counts show
    overview = page_figure(cards)
    figures, ids = ({"chart-page": overview} if overview else {}), []
    for i, card in enumerate(cards):
        fig = card_figure(card)
        ids.append(f"chart-{i}" if fig is not None else "")
        if fig is not None:
            figures[ids[-1]] = fig
    counts = {v: sum(c.shown == v for c in cards) for v in VERDICTS}
    count_text = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    body = [f"<h1>{_e(title)}</h1>", f"<p>{_e(intro)}</p>" if intro else "",
            f"<p>{len(cards)} cards: {_e(count_text)}. Written {created:%Y-%m-%d %H:%M} UTC by headprune.</p>",
            (f'<div class="chart" id="chart-page"></div><p class="note">{_e(PAGE_CAPTION)}</p>' if overview else ""),
            table_html(summary_rows(cards, page), link="card"), f"<p class='note'>{_e(page_text(page))}</p>",
            *(_card_html(c, fid) for c, fid in zip(cards, ids))]
    script = ("const FIGURES = " + safe_json(figures) + ";\n"
              "for (const [id, fig] of Object.entries(FIGURES)) {\n"
              "  Plotly.newPlot(id, fig.data, fig.layout, {responsive: true, displaylogo: false});\n}\n")
    plotly = plotly_js() if figures else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{_e(title)}</title>"
            f"<style>{STYLE}</style>" + (f"<script>{plotly}</script>" if plotly else "") + "</head><body>\n"
            + "\n".join(body) + (f"\n<script>{script}</script>" if figures else "") + "\n</body></html>\n")


def _md(text) -> str:
    """Text for a Markdown paragraph or table cell (pipes and line breaks escaped)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table_md(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    cols = list(dict.fromkeys(k for r in rows for k in r))
    out = ["| " + " | ".join(_md(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(_md(_cell(r.get(c, ""))) for c in cols) + " |" for r in rows]
    return out + [""]


def report_markdown(cards: list[Card], *, title: str, intro: str = "", created: datetime | None = None) -> str:
    """The same report as Markdown (no charts: each card's numbers, interval and runs are in its text)."""
    created = created or datetime.now(UTC)
    lines = [f"# {_md(title)}", ""]
    if intro:
        lines += [_md(intro), ""]
    page = page_control(cards)
    lines += [f"Written {created:%Y-%m-%d %H:%M} UTC by headprune.", "", *_table_md(summary_rows(cards, page)),
              _md(page_text(page)), ""]
    for card in cards:
        h = card.hypothesis
        lines += [f"## ({card.key}) {_md(card.title)}: {card.shown}", "", f"**Verdict.** {_md(card.verdict_text())}",
                  "",
                  f"**The paper** ({_md(card.paper)}). {_md(card.claim)}", "",
                  f"**Hypothesis.** {_md(h.hypothesis)}  ", f"**Statistic.** {_md(h.statistic)}  ",
                  f"**Control.** {_md(h.control)}", ""]
        if card.verdict == MISSING:
            lines += [f"**Not computed yet:** {_md('; '.join(card.missing))}", ""]
        else:
            lines += [f"**Here.** {_md(card.measured)}", "", f"**Estimate.** {_md(card.estimate_text())}", ""]
            runs = "; ".join(f"{name or card.key}: " + ", ".join(f"{r:+.2f}" for r in e.runs)
                             for name, e in card.estimates.items())
            lines += [f"**Training runs.** {runs}", ""]
            if card.mde is not None:
                lines += [f"**Minimum detectable effect** (information, not a gate). {card.mde:.2f} {h.rule.unit} "
                          f"(the paper: {_md(h.paper_effect)})", ""]
            for note in card.notes:
                lines += [f"*{_md(note)}*", ""]
            lines += _table_md(card.rows)
        lines += [f"**Rule.** {_md(card.rule)}", ""]
        if card.calibration is not None:
            lines += [f"**How often this rule is wrong.** {calibration_line(card.calibration)}", ""]
        if card.protocol:
            lines += [f"**Protocol here.** {_md(card.protocol)}", ""]
    return "\n".join(lines)


def report_title(found: Findings, *, missing: int | None = None) -> tuple[str, str]:
    """The report's title and its first paragraph: the plan, the model and what is not computed yet (``missing``
    jobs, counted here unless the caller knows)."""
    missing = len(found.missing()) if missing is None else missing
    title = f"headprune findings: plan {found.plan.name} ({found.plan.model})"
    intro = (f"{found.plan.description} Each card tests one claim of the papers behind headprune, stated before "
             "the data, with training runs as the unit of uncertainty; 'inconclusive' means this data cannot tell, and "
             "'not reproduced' means smaller on this model and data, not a refutation of the paper.")
    if missing:
        intro += f" {missing} of {len(found.jobs)} results are not computed yet (headprune study {found.plan.name})."
    return title, intro


def write_report(cards: list[Card], out: str | Path, *, fmt: str, title: str, intro: str = "") -> Path:
    """Write the report in ``fmt`` (``html`` or ``md``) to ``out`` (its folder must exist); returns the path."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; known: {', '.join(FORMATS)}")
    out = Path(out).expanduser()
    if not out.parent.is_dir():
        raise FileNotFoundError(f"no such folder for the report: {out.parent}")
    text = (report_html if fmt == "html" else report_markdown)(cards, title=title, intro=intro)
    return write_file_atomic(out, text)
