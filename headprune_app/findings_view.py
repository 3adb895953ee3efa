"""App-side bridge for the Findings page: the cards of the sidebar plan's findings plan from this session's
cache, the estimate of what is missing, and the computation on a click (through the dashboard's compute queue)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from headprune_app import cached, captions, computing, exports, figures, nav, papers_view, roles
from headprune_app.resident import resident
from headprune_core.figures.cards import PAGE_CAPTION, card_figure, page_figure
from headprune_core.findings.cards import (
    INCONCLUSIVE,
    MISSING,
    ONE_RUN,
    OTHER_WAY,
    REPRODUCED,
    SAME,
    SMALLER,
    Card,
    Findings,
)
from headprune_core.findings.page import page_control
from headprune_core.findings.paper_plans import papers_section
from headprune_core.findings.plan import findings_plan
from headprune_core.findings.quote import card_ids, fill
from headprune_core.findings.report import page_text, report_markdown, report_title, summary_rows
from headprune_core.plans import selection as S
from headprune_core.plans.presets import find_plan
from headprune_core.reports.report import report_html
from headprune_core.runs.estimate import describe_estimate

SIGNATURE_S = 1.0  # how stale the page's view of which results are cached may be (a new result shows within it)
BADGES = {REPRODUCED: ("green", ":material/check_circle:"), SMALLER: ("violet", ":material/trending_down:"),
          OTHER_WAY: ("red", ":material/swap_horiz:"), SAME: ("blue", ":material/link:"),
          INCONCLUSIVE: ("orange", ":material/help:"), ONE_RUN: ("orange", ":material/looks_one:"),
          MISSING: ("gray", ":material/hourglass_empty:")}


class _Shared:
    """What the Findings page derives from the cache alone, kept once per server for every session: the
    Findings of each (plan, model, cache folder), and the cards of the newest state of its results. One lock:
    thirty students opening the page at once compute the cards once; the others wait and read them."""

    def __init__(self):
        self.lock = threading.Lock()
        self.findings: dict[tuple, Findings] = {}
        self.cards: dict[tuple, tuple[tuple, list[Card], list[dict]]] = {}
        self.starting = threading.Lock()  # held an instant: who starts a background reading
        self.warming: set[tuple] = set()  # (plan, model, cache folder) being read by a background thread
        self.failed: dict[tuple, Exception] = {}  # a background reading that failed (a session reads again)
        # per held object (by id, with the object itself so the id stays its): what every session's run of the
        # page would otherwise build again, each costing tenths of a second of the one GIL (30 followers at once)
        self.signatures: dict[int, tuple[Findings, float, tuple]] = {}  # (findings, when, which results cached)
        self.missing: dict[int, tuple[Findings, tuple, list]] = {}  # (findings, signature, missing jobs)
        self.charts: dict[int, tuple[object, go.Figure | None]] = {}  # (card or card list, its chart)


@resident()
def _shared() -> _Shared:
    return _Shared()


def findings(sel: S.Selection) -> Findings:
    """The Findings of the sidebar plan's findings plan (the ``findings`` preset for the demo) on the shared
    Study of its model; building the plan's jobs reads the corpora once per server and plan."""
    return findings_of(sel.plan, sel.model)


def findings_of(plan, model: str) -> Findings:
    """The Findings of ``plan``'s findings plan on ``model``, kept once per server."""
    return _findings_of(plan, model, cached.head_shape(model), cached.root())


def _findings_of(plan, model: str, shape: tuple[int, int], root: str) -> Findings:
    """:func:`findings_of` with the model's shape and the cache folder given (no Streamlit call: a background
    thread builds it too)."""
    key = _findings_key(plan.name, model, root)
    shared = _shared()
    with shared.lock:
        if key not in shared.findings:
            fplan = findings_plan(replace(plan, model=model), shape)
            shared.findings[key] = Findings(cached.study_in(root, fplan.model, sources=fplan.sources or None), fplan)
        return shared.findings[key]


def _findings_key(plan_name: str, model: str, root: str) -> tuple:
    """Where the server holds the Findings of a plan on a model in a cache folder (``_Shared.findings``)."""
    return "findings", plan_name, model, root


def _cards_key(f: Findings, root: str) -> tuple:
    """Where the server holds the cards of ``f`` in a cache folder (``_Shared.cards``)."""
    return f.plan.name, f.plan.model, root


def quoted(notes: str, plan_name: str) -> str:
    """A lesson's ``notes`` with each ``{card:ID}`` filled from the live card of plan ``plan_name``'s findings
    (read from the cache once per server and state of its results; nothing computes). While the server is still
    reading them (:func:`warm`, about 15 s of CPU for the demo) the notes say so rather than hold up the step."""
    if not card_ids(notes):
        return notes
    try:
        plan = find_plan(plan_name)
        if not cached.model_info(plan.model)["ready"]:
            return fill(notes, [], unavailable=f"cannot be read here (the model {plan.model} is not prepared)")
        if not warm(plan):
            return fill(notes, [], unavailable="is being read on the server (open the notes again in a moment)")
        return fill(notes, cards(findings_of(plan, plan.model)))
    except (OSError, ValueError, KeyError, RuntimeError) as err:  # a corpus not prepared, a bad plan
        return fill(notes, [], unavailable=f"cannot be read here ({err.args[0] if err.args else err})")


def warm(plan) -> bool:
    """Whether the cards of ``plan``'s findings (on its own model) are held for the newest state of its results;
    if not, start reading them in a background thread, once per server: a lesson step that quotes a card, or the
    Findings page, then finds them ready instead of making the whole class wait behind one reading. A reading
    that failed counts as ready: the caller reads again and shows the error."""
    shape, root = cached.head_shape(plan.model), cached.root()
    key = (plan.name, plan.model, root)
    shared = _shared()
    # read without the main lock, which a reading holds for seconds (a dict's get is atomic)
    if key in shared.failed:
        return True
    f = shared.findings.get(_findings_key(plan.name, plan.model, root))
    held = shared.cards.get(_cards_key(f, root)) if f is not None else None
    if held is not None and held[0] == _signature(f):
        return True
    with shared.starting:
        if key in shared.warming:
            return False
        shared.warming.add(key)

    def read() -> None:
        try:
            _held(_findings_of(plan, plan.model, shape, root), root)
        except Exception as err:  # noqa: BLE001 (kept and shown by the next reading in a session)
            shared.failed[key] = err
        finally:
            with shared.starting:
                shared.warming.discard(key)

    threading.Thread(target=read, name=f"headprune-cards-{plan.name}", daemon=True).start()
    return False


def cards(f: Findings) -> list[Card]:
    """The cards, computed from cached entries (about 6 s for the findings preset: the calibration of every
    rule) once per server and state of the plan's results, and shared by every session; each at the look of the
    staged design that decided it when a later look is in the cache (``headprune findings --budget``), else the
    plain cards."""
    found, looks = _held(f, cached.root())
    st.session_state["_findings_looks"] = looks
    return found


def _signature(f: Findings) -> tuple:
    """Which of the plan's results are in the cache (the cards are read again when this changes): looked up at
    most once per :data:`SIGNATURE_S` for all sessions (each lookup reads every entry's records)."""
    shared, now = _shared(), time.monotonic()
    held = shared.signatures.get(id(f))
    if held is not None and held[0] is f and now - held[1] < SIGNATURE_S:
        return held[2]
    signature = tuple(f.study.store.has(j.cfg) for j in f.jobs)
    shared.signatures[id(f)] = (f, now, signature)
    return signature


def missing_jobs(f: Findings) -> list:
    """``f.missing()``, once per state of the plan's results for all sessions."""
    shared, signature = _shared(), _signature(f)
    held = shared.missing.get(id(f))
    if held is None or held[0] is not f or held[1] != signature:
        held = shared.missing[id(f)] = (f, signature, f.missing())
    return held[2]


def chart(of, build) -> go.Figure | None:
    """The chart of ``of`` (a held card, or the held list of cards) from ``build(of)`` (a figure or None), built
    once per object for all sessions (plotly's validation of a figure costs about 0.1 s). Shared: a caller that
    changes it draws a copy (:func:`figures.show` does when presenting)."""
    shared = _shared()
    held = shared.charts.get(id(of))
    if held is None or held[0] is not of:
        held = shared.charts[id(of)] = (of, build(of))
    return held[1]


def _held(f: Findings, root: str) -> tuple[list[Card], list[dict]]:
    """The cards and the staged design's looks for the newest state of ``f``'s results (in cache folder
    ``root``), read once per state."""
    from headprune_core.findings.staged import read_staged
    signature = _signature(f)
    key = _cards_key(f, root)
    shared = _shared()
    with shared.lock:
        held = shared.cards.get(key)
        if held is None or held[0] != signature:
            state = read_staged(f.study, f.plan, draws=f.draws, first=f)
            held = shared.cards[key] = (signature, state.cards, state.looks)
            shared.charts.clear()  # the charts of cards no longer shown
    return held[1], held[2]


def forget() -> None:
    """Drop what the server keeps for the Findings page (after a computation changed the plan's results)."""
    shared = _shared()
    with shared.lock:
        for held in (shared.findings, shared.cards, shared.failed, shared.signatures, shared.missing, shared.charts):
            held.clear()


def staged_caption() -> None:
    """One line on the staged design's looks when more than the preset's runs were computed."""
    looks = st.session_state.get("_findings_looks") or []
    if len(looks) > 1:
        st.caption(captions.staged_looks(looks))


def overview(cards: list[Card]) -> None:
    """The page's message at a glance: every card's estimate and interval on one scale (units of the paper's
    effect or margin), coloured by its headline (set by the staged reading, controlled across the page); with
    PNG/SVG export like every chart."""
    fig = chart(cards, page_figure)
    if fig is not None:
        figures.show(fig, name="findings-page", title="Findings: every card on one scale",
                     caption=PAGE_CAPTION, key="findings_page_chart")


def summary(cards: list[Card]) -> None:
    """The table the page opens with: one row per card (the claim in a line, this model's estimate and interval
    beside the paper's number, the verdict controlled across the page and the card's own), each card's id
    linking to its card below; then the page as a whole in words."""
    page = page_control(cards)
    rows = summary_rows(cards, page)
    cols = list(rows[0]) if rows else []
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [f"[{r['card']}](#card-{r['card']})"] + [str(r[c]).replace("|", "\\|") for c in cols[1:]]
        lines.append("| " + " | ".join(cells) + " |")
    st.markdown("\n".join(lines))
    st.caption(page_text(page))


def offer(f: Findings) -> None:
    """Say what is missing and compute it on a click, with a progress bar; rerun when done."""
    missing = missing_jobs(f)
    if not missing:
        return
    text = describe_estimate(f.estimate(missing))
    st.info(f"**{len(missing)} of {len(f.jobs)} results** of plan **{f.plan.name}** are not computed yet "
            f"({text}, one job after another on this machine; re-fine-tunings count every run at the unpruned "
            "model's time, so the estimate is high). Cards "
            "without their results say so. Nothing computes until you click; finished results stay cached if "
            "you stop.")
    with st.expander("What will be computed"):
        st.dataframe(pd.DataFrame([{"job": j.what, "kind": j.cfg.kind} for j in missing]), hide_index=True)
    if roles.owner_button(f"Compute the findings ({text})", type="primary", key="compute_findings",
                          what="computing the findings"):
        if computing.compute_jobs(f.study, missing, title="Findings"):
            forget()
            st.rerun()


def report_buttons(f: Findings, cards: list[Card]) -> None:
    """Download the cards as a report to hand out: one self-contained HTML file (interactive charts, opens
    offline) or Markdown; each is written only when its button is clicked."""
    title, intro = report_title(f, missing=len(missing_jobs(f)))
    name = f"findings-{f.plan.name}"
    html_col, md_col = st.columns(2)
    # one build at a time per server, a repeat served from the last (the HTML draws every card's chart)
    def key(fmt: str):
        return lambda: exports.build_key(fmt, title, intro, json.dumps([c.to_dict() for c in cards], sort_keys=True,
                                                                       default=str),
                                         str(papers_view.results_signature(f.study.store)))
    def papers():  # read when a report is built, not on every run of the page
        return papers_section(f.study.store, draws=f.draws)
    html_col.download_button("Download the report (HTML)",
                             exports.deferred(key("html"), lambda: report_html(cards, title=title, intro=intro,
                                                                               papers=papers())),
                             file_name=f"{name}.html", mime="text/html", on_click="ignore",
                             icon=":material/download:", key="report_html")
    md_col.download_button("Download the report (Markdown)",
                           exports.deferred(key("md"), lambda: report_markdown(cards, title=title, intro=intro,
                                                                               papers=papers())),
                           file_name=f"{name}.md", mime="text/markdown", on_click="ignore",
                           icon=":material/download:", key="report_md")


def calibration_frame(cards: list[Card]) -> pd.DataFrame:
    """How often each card's rule is wrong at the card's own sizes (runs, spreads, sentences), measured by
    simulation: one row per card with results."""
    rows = []
    for c in cards:
        cal = c.calibration
        if cal is None:
            continue
        rows.append({"card": c.key, "card alone": c.verdict, "goal (one-sided)": f"{cal['goal']:.1%}",
                     "false reproduced": f"{cal['false_reproduced']:.1%}",
                     "false not reproduced": f"{cal['false_not_reproduced']:.1%}",
                     "false the other way at 0": f"{cal['false_other_way']:.1%}",
                     "power": f"{cal['power']:.0%}", "goals missed": ", ".join(cal["goals_missed"]) or "none",
                     "draws": cal["draws"]})
    return pd.DataFrame(rows)


def render_card(card: Card) -> None:
    h = card.hypothesis
    colour, icon = BADGES[card.shown]
    with st.container(border=True):
        head, badge = st.columns([5, 2])
        head.subheader(f"({card.key}) {card.title}", anchor=f"card-{card.key}")
        badge.badge(card.shown, icon=icon, color=colour)
        if card.shown != card.verdict:
            badge.caption(f"card alone: {card.verdict}")
        st.markdown(f"**Verdict.** {card.verdict_text()}")
        st.markdown(f"**The paper.** {card.claim}")
        st.markdown(f"**Hypothesis.** {h.hypothesis}  \n**Statistic.** {h.statistic}  \n**Control.** {h.control}")
        if card.verdict == MISSING:
            st.caption("Not computed yet: " + "; ".join(card.missing))
        else:
            st.markdown(f"**Here.** {card.measured}")
            if card.mde is not None:  # a card that is another card's result has no estimate of its own
                st.caption(captions.mde_caption(card.mde, h.rule.target, h.rule.unit, h.rule.kind, h.paper_effect))
            for note in card.notes:
                st.caption(note)
            fig = chart(card, card_figure)
            if fig is not None:
                figures.show(fig, name=f"findings-{card.key}", title=f"({card.key}) {card.title}",
                             caption=captions.CARD_FIGURE, key=f"card_chart_{card.key}")
            if card.rows:
                st.dataframe(pd.DataFrame(card.rows), hide_index=True)
                st.caption(captions.CARD_NUMBERS)
        with st.expander("How the verdict is decided, how often the rule is wrong, and how this differs from the "
                         "paper"):
            st.markdown(f"**Rule.** {card.rule}")
            if card.calibration is not None:
                st.markdown(captions.calibration_text(card.calibration))
            if card.protocol:
                st.markdown(f"**Protocol here.** {card.protocol}")
        if at_size := papers_view.card_caption(card.key):
            st.caption(at_size)
        page = nav.BY_NAME[card.page]
        st.page_link(page.file, label=f"Evidence: {page.title}", icon=":material/arrow_forward:")
