"""A lesson's handout: one self-contained HTML file with each step's title, the teacher's notes and the step's
figure from the cache (the views' own choices and run configurations: :mod:`headprune_core.plans.selection`),
interactive Plotly charts with plotly.js inline, so it opens from disk with no server and no network.

Each step's view is read as the dashboard reads its link: the plan (the lesson's, unless the step names another),
the task, languages, focus language, method and normalisation, and the page's own choices (the prune page's
strategy and k, the GradTS plan, correlation, primary task and threshold). Each figure is the one the view draws
(:mod:`headprune_core.figures`), from the same data. What a step shows:

* ``importance``: the focus language's layer x head map (on the languages' common scale), and how the languages
  rank the heads alike (Spearman, with the chance band);
* ``prune``: every cached curve of the metric against heads pruned, the step's k marked;
* ``findings``: the summary table of the Findings cards (estimate, interval, the paper's number, verdict);
* ``task_affinity``: the GradTS task-affinity matrix (Kendall's tau or Spearman), the primary task's row
  outlined and its selected auxiliary tasks marked;
* ``home``: the plan and its model; the other pages are live only, and say so.

A result that is not in the cache is said in a line (what is missing), never computed. Notes are Markdown
rendered with HTML switched off: HTML or script in them is shown as text.

>>> # write_handout(available()[0]["attention-heads-across-languages"], "lesson.html")
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from headprune_core.base.choices import METHODS, NORMALIZATIONS
from headprune_core.base.files import write_file_atomic
from headprune_core.figures.affinity import affinity_heatmap
from headprune_core.figures.curves import curves_chart
from headprune_core.figures.heads import importance_heatmap, spearman_heatmap
from headprune_core.findings.quote import card_ids, fill
from headprune_core.findings.report import summary_rows
from headprune_core.methods.importance import normalise
from headprune_core.methods.similarity import correlation_matrix, spearman_chance_band, spearman_matrix
from headprune_core.plans import selection as S
from headprune_core.plans.lessons import Lesson, Step
from headprune_core.plans.plan import StudyPlan
from headprune_core.plans.presets import find_plan
from headprune_core.reports.document import chart_div, document, table_html, written
from headprune_core.runs.study import Study

if TYPE_CHECKING:  # only a hint: the figures are drawn by headprune_core.figures, the one layer importing plotly
    import plotly.graph_objects as go


@dataclass
class Shown:
    """What a step's handout section holds: figures, tables (HTML) and lines (plain text)."""

    figures: list[go.Figure] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def _one(params: dict[str, list[str]], key: str, default: str, allowed) -> str:
    value = (params.get(key) or [""])[0]
    return value if value in allowed else default


def view_selection(plan: StudyPlan, params: dict[str, list[str]]) -> S.Selection:
    """The choices a step's link makes, as the dashboard's sidebar reads them (a value the plan lacks: its
    default)."""
    task = _one(params, "task", plan.tasks[0], plan.tasks)
    setting = _one(params, "setting", plan.settings[0], plan.settings)
    langs_ok = plan.task_langs(task)
    source = _one(params, "source", S.default_source(plan, langs_ok), langs_ok)
    langs = tuple(x for x in params.get(f"langs:{plan.name}:{task}", []) if x in langs_ok) or \
        tuple(S.default_langs(plan, langs_ok))
    lang = _one(params, "lang", langs[0], langs)
    method = _one(params, "method", plan.method, S.method_choices(plan, METHODS))
    normalize = _one(params, "normalize", S.DEFAULT_NORMALIZE, NORMALIZATIONS)
    minmax = _one(params, "minmax", str(S.DEFAULT_MINMAX).lower(), ("true", "false")) == "true"
    return S.Selection(plan=plan, model=plan.model, task=task, setting=setting, source=source, langs=langs,
                       lang=lang, method=method, normalize=normalize, minmax=minmax, finetuned=plan.finetuned)


def importance_shown(study: Study, sel: S.Selection) -> Shown:
    """The focus language's normalised map and the languages' Spearman matrix, as the Head importance page draws
    them: every map on the languages' common colour scale, the matrix clustered with its chance band."""
    shown, maps = Shown(), {}
    for lang in sel.langs:
        found = study.store.get(S.score_config(study, sel, lang))
        if found is not None:
            maps[lang] = normalise(np.asarray(found["raw"], dtype=float), normalize=sel.normalize, minmax=sel.minmax)
    if not maps:
        shown.lines.append(f"Not computed in this cache yet: the head scores of {sel.task} ({sel.method}).")
        return shown
    lang = sel.lang if sel.lang in maps else next(iter(maps))
    zmin, zmax = min(float(m.min()) for m in maps.values()), max(float(m.max()) for m in maps.values())
    shown.figures.append(importance_heatmap(
        maps[lang], zmin=zmin, zmax=zmax,
        title=f"Head importance: {S.task_label(sel.task)} in {S.lang_label(lang)} ({sel.method}, {sel.normalize})"))
    if len(maps) > 1:
        names, rho = spearman_matrix(maps)
        shown.figures.append(spearman_heatmap(names, rho, band=spearman_chance_band(maps[lang].size),
                                              title="Do the languages rank the heads alike? (Spearman)"))
    missing = [x for x in sel.langs if x not in maps]
    if missing:
        shown.lines.append(f"Not computed yet for {', '.join(missing)}.")
    return shown


def prune_shown(study: Study, sel: S.Selection, params: dict[str, list[str]]) -> Shown:
    """Every cached curve of the focus language, as the Prune page draws them; the step's k marked."""
    shown, curves = Shown(), []
    strategy = _one(params, "strategy", "importance", tuple(S.STRATEGY_LABELS))
    for name, cfg in S.curve_candidates(study, sel, sel.lang):
        found = study.store.get(cfg)
        if found is not None:
            curves.append({**found["curve"], "name": name})
    if not curves:
        shown.lines.append(f"Not computed in this cache yet: the pruning curves of {sel.task} in {sel.lang}.")
        return shown
    k = (params.get("k") or [""])[0]
    shown.figures.append(curves_chart(curves, current_k=int(k) if k.isdigit() else None,
                                      metric=curves[0].get("metric", "metric"),
                                      title=f"{S.task_label(sel.task)} in {S.lang_label(sel.lang)}: the metric as "
                                            "heads are pruned"))
    if k.isdigit():
        shown.lines.append(f"The dashed line: {k} heads pruned ({S.STRATEGY_LABELS[strategy]}).")
    return shown


def findings_cards(study: Study, plan: StudyPlan, draws: int) -> list:
    """The Findings cards of ``plan``'s findings plan as the page shows them (the staged design's deciding look
    where one is cached; headlines controlled across the page)."""
    from headprune_core.findings.cards import Findings  # here: the cards' modules load only when asked for
    from headprune_core.findings.plan import findings_plan
    from headprune_core.findings.staged import read_staged

    found = Findings(study, findings_plan(plan, study.head_shape), draws=draws)
    return read_staged(study, found.plan, draws=draws, first=found).cards


def findings_shown(study: Study, plan: StudyPlan, draws: int) -> Shown:
    """The Findings cards' summary table (the staged design's decided look where one is cached)."""
    cards = findings_cards(study, plan, draws)
    shown = Shown(tables=[table_html(summary_rows(cards))])
    missing = sum(not c.estimates for c in cards)
    if missing:
        shown.lines.append(f"{missing} of {len(cards)} cards are not computed in this cache yet "
                           f"(headprune findings {plan.name} --budget MINUTES computes them).")
    return shown


def affinity_shown(params: dict[str, list[str]]) -> Shown:
    """The GradTS task-affinity matrix of the step's GradTS plan (its head maps as cached), as the Task affinity
    page draws it: the primary task's row outlined, the auxiliary tasks above the threshold marked."""
    from headprune_core.multitask.affinity import (  # here: the GradTS modules only for this step
        gradts_map,
        primary_order,
        rank_auxiliary,
        select_threshold,
    )
    from headprune_core.multitask.gradts import GradTS
    from headprune_core.multitask.plan import available_gradts_plans

    plans, _ = available_gradts_plans()
    gplan = plans[_one(params, "gradts_plan", next(iter(plans)), plans)]
    gplan = gplan.restricted(method=_one(params, "gradts_method", gplan.method, ("kv_grad", "gate_grad")))
    kind = _one(params, "gradts_corr", "kendall", ("kendall", "spearman"))
    gts = GradTS(Study(gplan.model, progress=False), gplan)
    maps = {}
    for unit in gts.units:
        found = gts.study.store.get(gts.score_config(unit))
        if found is not None:
            maps[unit] = gradts_map(np.asarray(found["raw"], dtype=float))
    if len(maps) < 2:
        return Shown(lines=[f"Not computed in this cache yet: the head maps of GradTS plan {gplan.name} "
                            f"({len(maps)} of {len(gts.units)} units)."])
    names, matrix = correlation_matrix(maps, kind=kind)
    order = primary_order(gts.primaries, names)
    primary = _one(params, "primary", order[0], order)
    threshold = _number(params, "threshold", float(gplan.threshold))
    chosen = select_threshold(rank_auxiliary(names, matrix, primary), threshold)
    label = "Kendall tau" if kind == "kendall" else "Spearman rho"
    fig = affinity_heatmap(names, matrix, primary=primary, selected=chosen, kind=label,
                           title=f"Task affinity ({label}, {gplan.method} maps)")
    return Shown(figures=[fig], lines=[f"Primary task {primary}: auxiliary tasks above {threshold:g} marked "
                                       f"({', '.join(chosen) or 'none'})."])


def _number(params: dict[str, list[str]], key: str, default: float) -> float:
    try:
        return float((params.get(key) or [""])[0])
    except ValueError:
        return default


def step_shown(step: Step, plan: StudyPlan, study: Study, *, draws: int = 1000) -> Shown:
    """What the handout shows for ``step`` (never computes; a missing result is a line)."""
    params: dict[str, list[str]] = {}
    for key, value in step.params:
        params.setdefault(key, []).append(value)
    if step.problem:
        return Shown(lines=[f"This step's view cannot be shown: {step.problem}."])
    sel = view_selection(plan, params)
    drawn = {"importance": lambda: importance_shown(study, sel), "prune": lambda: prune_shown(study, sel, params),
             "findings": lambda: findings_shown(study, plan, draws), "task_affinity": lambda: affinity_shown(params)}
    if step.page == "home":
        return Shown(lines=[f"Plan {plan.name} on {plan.model}: {plan.description}"])
    if step.page not in drawn:
        return Shown(lines=[f"The {step.page} view is live only: open this step in the dashboard."])
    try:
        return drawn[step.page]()
    except (OSError, ValueError, KeyError, RuntimeError) as err:  # a model or corpus not here, a bad entry
        return Shown(lines=[f"This step's figure cannot be drawn here: {err.args[0] if err.args else err}"])


def _notes_html(text: str) -> str:
    """The teacher's Markdown as HTML, with HTML in it shown as text (never run)."""
    from markdown_it import MarkdownIt  # here: only a handout renders Markdown

    return MarkdownIt("commonmark", {"html": False}).render(text)


def _quoter(plan: StudyPlan, study: Study, draws: int):
    """A function filling a step's ``{card:ID}`` placeholders from the plan's live cards (read once, on the first
    notes that quote a card)."""
    held: list = []

    def quoted(notes: str) -> str:
        if not card_ids(notes):
            return notes
        if not held:
            try:
                held.append((findings_cards(study, plan, draws), ""))
            except (OSError, ValueError, KeyError, RuntimeError) as err:  # a model or corpus not here
                held.append(([], f"cannot be read here ({err.args[0] if err.args else err})"))
        cards, why = held[0]
        return fill(notes, cards, unavailable=why)

    return quoted


def handout_html(lesson: Lesson, *, plan: StudyPlan | None = None, study: Study | None = None,
                 draws: int = 1000, created: datetime | None = None) -> str:
    """The handout of ``lesson`` as one self-contained HTML page."""
    plan = plan or find_plan(lesson.plan or "demo")
    study = study or plan.study(progress=False)
    created = created or datetime.now(UTC)
    figures, body = {}, [f"<h1>{html.escape(lesson.title)}</h1>"]
    quoted = _quoter(plan, study, draws)
    if lesson.description:
        body.append(f"<p>{html.escape(lesson.description)}</p>")
    body.append(f"<p class='note'>{len(lesson.steps)} steps on plan {html.escape(plan.name)} "
                f"({html.escape(plan.model)}). {written(created)} from its cache.</p>")
    for k, step in enumerate(lesson.steps, 1):
        step_plan = plan
        named = dict(step.params).get("plan")
        if named and named != plan.name:
            step_plan = find_plan(named)
        shown = step_shown(step, step_plan, study if step_plan is plan else step_plan.study(progress=False),
                           draws=draws)
        part = [f"<section class='card' id='step-{k}'><h2>Step {k} of {len(lesson.steps)}: "
                f"{html.escape(step.title)}</h2>", _notes_html(quoted(step.notes))]
        for i, fig in enumerate(shown.figures):
            figures[f"step-{k}-{i}"] = fig
            part.append(chart_div(f"step-{k}-{i}"))
        part += shown.tables + [f"<p class='note'>{html.escape(line)}</p>" for line in shown.lines]
        part.append(f"<p class='note'>In the dashboard: <code>{html.escape(lesson.step_link(k))}</code></p>")
        body.append("\n".join(part) + "</section>")
    return document(lesson.title, body, figures)


def write_handout(lesson: Lesson, out: str | Path, **kwargs) -> Path:
    """Write the handout of ``lesson`` to ``out`` (its folder must exist); returns the path."""
    out = Path(out).expanduser()
    if not out.parent.is_dir():
        raise FileNotFoundError(f"no such folder for the handout: {out.parent}")
    return write_file_atomic(out, handout_html(lesson, **kwargs))

