"""The findings report's words: the summary table a page opens with (each card's claim, estimate and interval
beside the paper's number, its verdict on the page and alone), the page as a whole in a paragraph, how often a
card's rule is wrong in a line, the report's title, and the whole report as Markdown for a course page.

Plain text, no plotting: the command line's ``headprune findings`` prints these. The HTML report with a chart
per card is :mod:`headprune_core.reports.report`.

>>> # text = report_markdown(Findings(study, plan).cards(), title="Findings of plan findings (me5-small)")
"""

from __future__ import annotations

from datetime import UTC, datetime

from headprune_core.base.text import md_cell
from headprune_core.findings.cards import MISSING, SAME, Card, Findings
from headprune_core.findings.page import page_control
from headprune_core.findings.paper_plans import PapersSection, section_markdown


def cell_text(value) -> str:
    """A table cell's text: a float to three significant digits, anything else as it is."""
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


def _table_md(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    cols = list(dict.fromkeys(k for r in rows for k in r))
    out = ["| " + " | ".join(md_cell(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(md_cell(cell_text(r.get(c, ""))) for c in cols) + " |" for r in rows]
    return out + [""]


def report_markdown(cards: list[Card], *, title: str, intro: str = "", created: datetime | None = None,
                    papers: PapersSection | None = None) -> str:
    """The same report as Markdown (no charts: each card's numbers, interval and runs are in its text); with
    ``papers``, the papers' own experiments last (findings/paper_plans.py)."""
    created = created or datetime.now(UTC)
    lines = [f"# {md_cell(title)}", ""]
    if intro:
        lines += [md_cell(intro), ""]
    page = page_control(cards)
    lines += [f"Written {created:%Y-%m-%d %H:%M} UTC by headprune.", "", *_table_md(summary_rows(cards, page)),
              md_cell(page_text(page)), ""]
    for card in cards:
        h = card.hypothesis
        lines += [f"## ({card.key}) {md_cell(card.title)}: {card.shown}", "",
                  f"**Verdict.** {md_cell(card.verdict_text())}", "",
                  f"**The paper** ({md_cell(card.paper)}). {md_cell(card.claim)}", "",
                  f"**Hypothesis.** {md_cell(h.hypothesis)}  ", f"**Statistic.** {md_cell(h.statistic)}  ",
                  f"**Control.** {md_cell(h.control)}", ""]
        if card.verdict == MISSING:
            lines += [f"**Not computed yet:** {md_cell('; '.join(card.missing))}", ""]
        else:
            lines += [f"**Here.** {md_cell(card.measured)}", "", f"**Estimate.** {md_cell(card.estimate_text())}", ""]
            runs = "; ".join(f"{name or card.key}: " + ", ".join(f"{r:+.2f}" for r in e.runs)
                             for name, e in card.estimates.items())
            lines += [f"**Training runs.** {runs}", ""]
            if card.mde is not None:
                lines += [f"**Minimum detectable effect** (information, not a gate). {card.mde:.2f} {h.rule.unit} "
                          f"(the paper: {md_cell(h.paper_effect)})", ""]
            for note in card.notes:
                lines += [f"*{md_cell(note)}*", ""]
            lines += _table_md(card.rows)
        lines += [f"**Rule.** {md_cell(card.rule)}", ""]
        if papers is not None and card.key in papers.answered:
            lines += [f"**At the papers' own size.** {', '.join(papers.answered[card.key])}", ""]
        if card.calibration is not None:
            lines += [f"**How often this rule is wrong.** {calibration_line(card.calibration)}", ""]
        if card.protocol:
            lines += [f"**Protocol here.** {md_cell(card.protocol)}", ""]
    if papers is not None:
        lines += [section_markdown(papers), ""]
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
