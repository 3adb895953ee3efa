"""A findings report to hand out: every card (the paper's claim, the test stated before the data, the numbers with
their intervals, the verdict, the rule and how often it is wrong, the protocol) as one self-contained HTML file
with an interactive chart per card, or as Markdown for a course page.

The charts are the Findings page's own (:mod:`headprune_core.figures.cards`): the page's chart of every card on
one scale, then per card its estimate per part with its 95% interval, each training run's value, 0 and the
paper's effect (or the equivalence margin), so a reader sees at a glance what the rule compared. plotly.js is
inline, so the file opens from disk with no server and no network.

>>> # html = report_html(Findings(study, plan).cards(), title="Findings of plan findings (me5-small)")
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from headprune_core.base.files import write_file_atomic
from headprune_core.figures.cards import COLOURS, PAGE_CAPTION, card_figure, page_figure
from headprune_core.findings.cards import MISSING, VERDICTS, Card
from headprune_core.findings.page import page_control
from headprune_core.findings.paper_plans import PAPERS_INTRO, PapersSection, not_started_text
from headprune_core.findings.report import calibration_line, page_text, report_markdown, summary_rows
from headprune_core.reports.document import chart_div, document, esc, table_html, written

FORMATS = ("html", "md")


def _papers_html(papers: PapersSection) -> list[str]:
    """The papers' own experiments: which sweep answers each card, then each paper plan's numbers beside ours and
    its cards' verdicts, or the sweep that computes it."""
    out = ["<h2 id='papers'>The papers' own experiments</h2>", f"<p>{esc(PAPERS_INTRO)}</p>",
           table_html([{"card": card, "answered at the paper's size by": ", ".join(sweeps)}
                       for card, sweeps in sorted(papers.answered.items())])]
    for paper, res in papers.plans:
        out.append(f"<section class='paper' id='paper-{esc(paper.name)}'><h3>{esc(paper.title)}</h3>")
        if res is None:
            out.append(f"<p class='missing'>{esc(not_started_text(paper.name))}</p></section>")
            continue
        out += [f"<p class='note'>{esc(n)}</p>" for n in ([res.unread] if res.unread else []) + paper.notes]
        out += [table_html([r.cells() for r in res.rows]), table_html([v.cells() for v in res.verdicts]),
                "</section>"]
    return out


def _card_html(card: Card, figure_id: str) -> str:
    h = card.hypothesis
    colour = COLOURS.get(card.shown, "#0969da")
    parts = [f'<section class="card" id="card-{esc(card.key)}" data-verdict="{esc(card.shown)}">',
             f'<h2>({esc(card.key)}) {esc(card.title)} <span class="badge" style="background:{colour}">'
             f"{esc(card.shown)}</span></h2>", f"<p><b>Verdict.</b> {esc(card.verdict_text())}</p>",
             f"<p><b>The paper</b> ({esc(card.paper)}). {esc(card.claim)}</p>",
             f"<p><b>Hypothesis.</b> {esc(h.hypothesis)}<br><b>Statistic.</b> {esc(h.statistic)}<br>"
             f"<b>Control.</b> {esc(h.control)}</p>"]
    if card.verdict == MISSING:
        parts.append(f"<p class='missing'><b>Not computed yet:</b> {esc('; '.join(card.missing))}</p>")
    else:
        parts.append(f"<p><b>Here.</b> {esc(card.measured)}</p>")
        parts.append(f"<p><b>Estimate.</b> {esc(card.estimate_text())}</p>")
        if card.mde is not None:
            parts.append(f"<p><b>Minimum detectable effect</b> (information, not a gate). {card.mde:.2f} "
                         f"{esc(h.rule.unit)} (the paper: {esc(h.paper_effect)})</p>")
        parts += [f"<p class='note'>{esc(n)}</p>" for n in card.notes]
        if figure_id:
            parts.append(chart_div(figure_id))
        parts.append(table_html(card.rows))
    parts.append(f"<p><b>Rule.</b> {esc(card.rule)}</p>")
    if card.calibration is not None:
        parts.append(f"<p><b>How often this rule is wrong.</b> {esc(calibration_line(card.calibration))}</p>")
    if card.protocol:
        parts.append(f"<p><b>Protocol here.</b> {esc(card.protocol)}</p>")
    parts.append("</section>")
    return "\n".join(parts)


def report_html(cards: list[Card], *, title: str, intro: str = "", created: datetime | None = None,
                papers: PapersSection | None = None) -> str:
    """One self-contained HTML page: the page's chart, a summary table, then every card with its chart; with
    ``papers``, the papers' own experiments last (findings/paper_plans.py)."""
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
    body = [f"<h1>{esc(title)}</h1>", f"<p>{esc(intro)}</p>" if intro else "",
            f"<p>{len(cards)} cards: {esc(count_text)}. {written(created)}.</p>",
            (f'{chart_div("chart-page")}<p class="note">{esc(PAGE_CAPTION)}</p>' if overview else ""),
            table_html(summary_rows(cards, page), link="card"), f"<p class='note'>{esc(page_text(page))}</p>",
            *(_card_html(c, fid) for c, fid in zip(cards, ids)), *(_papers_html(papers) if papers else [])]
    return document(title, body, figures)


def write_report(cards: list[Card], out: str | Path, *, fmt: str, title: str, intro: str = "",
                 papers: PapersSection | None = None) -> Path:
    """Write the report in ``fmt`` (``html`` or ``md``) to ``out`` (its folder must exist); returns the path."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; known: {', '.join(FORMATS)}")
    out = Path(out).expanduser()
    if not out.parent.is_dir():
        raise FileNotFoundError(f"no such folder for the report: {out.parent}")
    text = (report_html if fmt == "html" else report_markdown)(cards, title=title, intro=intro, papers=papers)
    return write_file_atomic(out, text)
