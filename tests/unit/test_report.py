"""The findings report: every card, its numbers, intervals, verdict, rule and chart, as self-contained HTML or
Markdown; from constructed cards (each rule decides planted runs) and from the command line."""

from __future__ import annotations

import json
import re

import pytest

from headprune_core.cli.main import main
from headprune_core.figures.cards import card_figure
from headprune_core.findings.cards import MISSING
from headprune_core.findings.hypotheses import HYPOTHESES
from headprune_core.findings.report import report_markdown
from headprune_core.reports.report import report_html, write_report
from tests.helpers.findings_cards import constructed_cards
from tests.helpers.fixture_cache import write_small_plan


@pytest.fixture(scope="module")
def cards():
    return constructed_cards()


def test_card_figure_shows_each_part_with_its_interval_runs_and_the_paper(cards):
    for card in cards[:-1]:
        fig = card_figure(card)
        runs, mean = fig["data"]
        parts = list(card.estimates.values())
        assert len(mean["x"]) == len(parts) and len(runs["x"]) == sum(e.n_runs for e in parts)
        for j, e in enumerate(parts):
            low, high = e.interval()
            assert mean["x"][j] == pytest.approx(e.diff)
            assert mean["x"][j] - mean["error_x"]["arrayminus"][j] == pytest.approx(low)
            assert mean["x"][j] + mean["error_x"]["array"][j] == pytest.approx(high)
        rule = card.hypothesis.rule
        marks = {(s["type"], s["x0"], s["x1"]) for s in fig["layout"]["shapes"]}
        assert ("line", 0, 0) in marks
        assert (("line", rule.effect, rule.effect) if rule.kind == "superiority"
                else ("rect", -rule.margin, rule.margin)) in marks
        assert card.key in fig["layout"]["title"]["text"] and card.shown in fig["layout"]["title"]["text"]
        assert rule.unit in fig["layout"]["xaxis"]["title"]["text"]
    assert card_figure(cards[-1]) is None  # nothing to draw before the results


def test_the_page_figure_puts_every_card_on_one_scale(cards):
    from headprune_core.figures.cards import COLOURS, page_figure
    from headprune_core.findings.page import page_control

    page_control(cards, draws=50)
    fig = page_figure(cards)
    rows = [(c, e) for c in cards for e in c.estimates.values()]
    assert fig["layout"]["yaxis"]["ticktext"][0].startswith("(a1) ") and len(fig["layout"]["yaxis"]["tickvals"]) == \
        len(rows)
    shown = {i: (t["name"], x) for t in fig["data"] for i, x in zip(t["y"], t["x"])}
    for i, (card, est) in enumerate(rows):  # each estimate over its paper's effect or margin, in its verdict's colour
        assert shown[i] == (card.shown, pytest.approx(est.diff / card.hypothesis.rule.target))
    assert {t["marker"]["color"] for t in fig["data"]} <= set(COLOURS.values())
    # the paper's effect at 1 for each superiority card, the +-1 band for each equivalence card
    kinds = [c.hypothesis.rule.kind for c, _ in rows]
    assert sum(s["type"] == "rect" for s in fig["layout"]["shapes"]) == kinds.count("equivalence")
    assert page_figure(cards[-1:]) is None  # nothing computed: no picture


def test_html_report_holds_every_card_and_a_chart_for_each_result_offline(cards):
    cards[0].notes.append("a note with <script>alert(1)</script> & </script> in it")
    text = report_html(cards, title="Findings <of> a test", intro="intro & more")
    cards[0].notes.pop()
    assert text.startswith("<!DOCTYPE html>") and "<title>Findings &lt;of&gt; a test</title>" in text
    # nothing fetched from elsewhere: plotly.js is inline (the browser test opens it with the network blocked)
    assert "<script src=" not in text and "<link" not in text and len(text) > 3_000_000
    sections = re.findall(r'<section class="card" id="card-([^"]+)" data-verdict="([^"]+)"', text)
    assert sections == [(c.key, c.shown) for c in cards]  # the verdict controlled across the page
    # planted at the paper's effect, sixteen cards alone say 'reproduced'; on the page fewer survive, and the
    # table gives both
    assert sum(c.verdict == "reproduced" for c in cards) > sum(c.shown == "reproduced" for c in cards)
    assert "<th>card alone</th>" in text
    assert "<script>alert(1)" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    # it opens with one table, a row per card linking to the card
    assert all(f'<a href="#card-{c.key}">{c.key}</a>' in text for c in cards)
    assert text.index('href="#card-a1"') < text.index('<section class="card"') and "The page as a whole" in text
    figures = json.loads(re.search(r"const FIGURES = (.*?);\n", text).group(1).replace("<\\/", "</"))
    assert len(figures) == len(cards) and "chart-page" in figures  # each card with results, and the page's
    assert text.index('id="chart-page"') < text.index('href="#card-a1"')  # the page's picture comes first
    assert all(f'<div class="chart" id="{fid}"></div>' in text for fid in figures)
    for card in cards[:-1]:
        assert card.estimate_text().split(";")[0].split("[")[0].strip().replace("+", "") in text.replace("+", "")
        assert f"{card.calibration['false_reproduced']:.1%}" in text  # how often the rule is wrong
    assert "Not computed yet:</b> the runs of this card" in text


def test_markdown_report_holds_every_card_with_its_runs(cards):
    text = report_markdown(cards, title="Findings", intro="for a course page")
    for card in cards:
        assert f"## ({card.key}) " in text and f": {card.shown}" in text
    first = cards[0]
    runs = ", ".join(f"{r:+.2f}" for r in next(iter(first.estimates.values())).runs)
    assert runs in text and "**Rule.**" in text and "The page as a whole" in text
    assert "| card | claim | here | paper | verdict | card alone |" in text


def test_write_report_refuses_what_it_cannot_write(cards, tmp_path):
    with pytest.raises(ValueError, match="unknown report format 'pdf'; known: html, md"):
        write_report(cards, tmp_path / "x.pdf", fmt="pdf", title="t")
    with pytest.raises(FileNotFoundError, match="no such folder for the report"):
        write_report(cards, tmp_path / "nope" / "x.md", fmt="md", title="t")
    out = write_report(cards, tmp_path / "x.md", fmt="md", title="t")
    assert out.read_text().startswith("# t") and [p.name for p in tmp_path.iterdir()] == ["x.md"]  # no temp left


def test_report_command_writes_the_cards_of_the_cache(tiny_cache, capsys, monkeypatch, tmp_path):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    plan = write_small_plan(tmp_path / "p.json", model)
    out = tmp_path / "r.md"
    assert main(["report", "findings", str(plan), "--format", "md", "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# headprune findings: plan p-findings") and "not computed yet" in text
    assert all(f"## ({h.id}) " in text and f": {MISSING}" in text for h in HYPOTHESES)
    assert f"wrote {out}" in capsys.readouterr().out
    assert main(["report", "findings", str(plan), "--out", str(tmp_path / "r.html")]) == 0
    assert "<!DOCTYPE html>" in (tmp_path / "r.html").read_text()[:20]
    with pytest.raises(SystemExit):
        main(["report", "shared-heads", str(plan)])


def test_the_report_names_the_paper_plans_and_what_each_would_answer(cards, tmp_path):
    """On a cache with none of the papers' experiments (the embedded default), both reports end with which sweep
    answers each card at the paper's size and, per paper plan, the command that computes it: nothing is read of
    a plan whose models and tasks this cache never fine-tuned."""
    from headprune_core.findings.paper_plans import papers_section, started
    from headprune_core.plans.papers import PAPER_PLANS
    from headprune_core.runs.store import Store

    store = Store(tmp_path / "runs")
    section = papers_section(store, draws=50)
    assert [p.name for p, res in section.plans] == list(PAPER_PLANS) and all(res is None for _, res in section.plans)
    assert not any(started(name, store) for name in PAPER_PLANS)
    md = report_markdown(cards, title="t", papers=section)
    tail = md[md.index("## The papers' own experiments"):]
    assert ("| a1 | `sweeps/ma2021-pos.json`, `sweeps/ma2021-ner.json`, `sweeps/ma2021-sf.json`, "
            "`sweeps/ma2021-table6-pos.json`") in tail
    for name in PAPER_PLANS:
        assert f"Nothing of `sweeps/{name}.json` is computed in this cache: `headprune sweep sweeps/{name}.json`" \
            in tail
    a1 = md[md.index("## (a1)"):md.index("## (a2)")]
    assert "**At the papers' own size.** sweeps/ma2021-pos.json, sweeps/ma2021-ner.json" in a1
    html = report_html(cards, title="t", papers=section)
    assert html.count("<section class='paper' id='paper-") == len(PAPER_PLANS)
    assert "The papers&#x27; own experiments" in html or "The papers' own experiments" in html
    assert "papers' own experiments" not in report_markdown(cards, title="t")  # only when asked
