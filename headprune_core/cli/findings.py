"""The ``findings`` and ``report`` commands: the Findings cards of the current cache, as text or JSON, or as a
report to hand out (HTML or Markdown); neither computes."""

from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import replace

from headprune_core.base.progress import TqdmProgress
from headprune_core.findings.cards import Card, Findings
from headprune_core.findings.hypotheses import BY_ID
from headprune_core.findings.page import page_control
from headprune_core.findings.paper_plans import answered_by, paper_markdown, paper_results, papers_section
from headprune_core.findings.plan import findings_plan
from headprune_core.findings.report import calibration_line, page_text, report_title, summary_rows
from headprune_core.plans.presets import find_plan


def _findings(args) -> Findings:
    plan = find_plan(args.plan or "demo")
    if args.model:
        plan = replace(plan, model=args.model)
    study = plan.study(device=args.device)
    return Findings(study, findings_plan(plan, study.head_shape), draws=args.draws)


def cmd_findings(args) -> int:
    if args.docs is not None:
        return _write_docs(args)
    if args.plan_name:
        return _print_beside(args)
    found = _findings(args)
    plan = found.plan
    if getattr(args, "projection", False):
        if args.staged or args.budget is not None:
            raise ValueError("--plan only projects what the open cards need and computes nothing; it takes "
                             "neither --staged nor --budget")
        return _print_projection(found, args)
    unknown = [c for c in args.card if c not in BY_ID]
    if unknown:
        raise KeyError(f"unknown findings card {unknown[0]!r}; known: {', '.join(BY_ID)}")
    staged = _staged(found, args)  # the plain cards unless a staged design's later look is in the cache
    page = page_control(staged.cards, draws=args.draws)  # over every card, whichever are printed
    cards = [c for c in staged.cards if not args.card or c.key in args.card]
    missing = staged.next_jobs if staged.next_look == 0 else []  # the plan's own jobs not cached (look 1)
    if args.format == "json":
        print(json.dumps({"plan": plan.name, "model": plan.model, "missing_jobs": len(missing),
                          "cards": [c.to_dict() for c in cards], "family": page, "staged": staged.to_dict()},
                         indent=2))
        return 0
    if len(staged.looks) > 1 or args.staged or args.budget is not None:
        print(staged_text(staged) + "\n")
    print(f"Findings of plan {plan.name} ({plan.model}): {len(missing)} of {len(found.jobs)} results not computed "
          f"yet{' (headprune study ' + plan.name + ' computes them)' if missing else ''}.\n")
    for row in summary_rows(cards, page):
        print(f"  {row['card']:>3}  {row['verdict']:<46} {row['here']}  (paper: {row['paper']}; card alone: "
              f"{row['card alone']})")
    print("\n" + textwrap.fill(page_text(page), width=110) + "\n")
    answered = answered_by()
    print("At the papers' own size (docs/papers-reproduce.md): " + "; ".join(
        f"{c.key}: {', '.join(answered[c.key])}" for c in cards if c.key in answered) + "\n")
    for card in cards:
        print(card_text(card))
    return 0


def _print_beside(args) -> int:
    """``findings --plan-name NAME``: the paper's numbers beside ours and its cards' verdicts
    (findings/paper_plans.py). It reads the paper plan's own sweep, so the options that choose or read cards are
    errors beside it."""
    unused = [name for name, given in (("a plan", args.plan != "demo"), ("--card", args.card),
                                       ("--plan", args.projection), ("--staged", args.staged),
                                       ("--budget", args.budget is not None), ("--model", args.model)) if given]
    if unused:
        raise ValueError(f"--plan-name reads the paper plan's own sweep and cards; it takes no {', '.join(unused)}")
    from headprune_core.runs.store import Store
    res = paper_results(args.plan_name, Store(), draws=args.draws)
    paper = res.paper
    if args.format == "json":
        print(json.dumps({"plan": paper.name, "paper": paper.paper, "substitutes": paper.substitutes,
                          "unread": res.unread, "differences": list(paper.differences), "cards": list(paper.cards),
                          "beside": [r.cells() for r in res.rows], "verdicts": [v.cells() for v in res.verdicts]},
                         indent=2))
        return 0
    print(paper_markdown(res, heading="#"))
    return 0


def _write_docs(args) -> int:
    """``headprune findings --docs [FILE ...]``: the cards' tables into the docs, from the hypotheses alone."""
    from headprune_core.findings.doc_tables import DEFAULT_FILES, write

    used = [flag for flag, on in (("--card", args.card), ("--plan", args.projection), ("--staged", args.staged),
                                  ("--budget", args.budget is not None), ("--model", args.model),
                                  ("--format json", args.format != "text"), ("a plan", args.plan != "demo"),
                                  ("--draws", args.draws != 1000), ("--device", args.device != "auto"),
                                  ("--cache", getattr(args, "cache", None))) if on]
    if used:
        raise ValueError(f"--docs writes the cards' tables from the hypotheses alone; it takes no {used[0]}")
    changed = write(args.docs or DEFAULT_FILES)
    print(f"cards' tables: {len(changed)} file(s) rewritten" + (f" ({', '.join(map(str, changed))})" if changed
                                                                 else ", every block already current"))
    return 0


def _staged(found: Findings, args):
    """The staged design on the cache: computed within ``--budget`` minutes first when given."""
    from headprune_core.findings.staged import read_staged, run_staged

    if getattr(args, "budget", None) is None:
        return read_staged(found.study, found.plan, draws=args.draws, first=found)
    if args.budget <= 0:
        raise ValueError(f"--budget is minutes of computing, more than 0 (got {args.budget:g})")
    bar = TqdmProgress("staged findings", unit="job", leave=True)
    try:
        return run_staged(found.study, found.plan, budget_s=60 * args.budget, draws=args.draws, on_progress=bar,
                          log=lambda m: bar.write(m, file=sys.stderr))  # stdout: the cards
    finally:
        bar.close()


def staged_text(staged) -> str:
    """The staged design's looks in words: which cards each look judged and decided, and what is next."""
    from headprune_core.findings.staged import LOOKS
    design = ", ".join(f"{runs} runs at {100 * a:g}%" for runs, a in LOOKS)
    lines = [f"Staged design ({design}; the first look that decides gives the verdict):"]
    for look in staged.looks:
        lines.append(f"  look {look['look']} ({look['runs']} runs, alpha {look['alpha']:g}): judged "
                     f"{len(look['cards'])} card(s), decided {', '.join(look['decided']) or 'none'}")
    if staged.next_look is not None:
        lines.append(f"  next: look {staged.next_look + 1} needs {len(staged.next_jobs)} more job(s) "
                     f"(headprune findings --budget MINUTES computes them)")
    lines.append(f"  open: {', '.join(staged.open) or 'none'}")
    return "\n".join(lines)


def _print_projection(found: Findings, args) -> int:
    """``headprune findings --plan``: per open card, what a decision at the paper's effect needs."""
    from headprune_core.findings.staged import LOOKS, MIN_POWER, projection

    every = found.cards()
    page_control(every, draws=args.draws)  # which cards the page leaves open
    cards = [c for c in every if not args.card or c.key in args.card]
    rows = projection(found.study, found.plan, cards)
    if args.format == "json":
        print(json.dumps({"plan": found.plan.name, "looks": [list(x) for x in LOOKS], "cards": rows}, indent=2))
        return 0
    print(f"Open cards of plan {found.plan.name} and what a decision at the paper's effect needs (projected from "
          "the design file's variance parts; power at each look of the staged design, "
          + ", ".join(f"{r} runs at alpha {a:g}" for r, a in LOOKS) + "):\n")
    for r in rows:
        powers = ", ".join(f"{runs} runs {100 * p:.0f}%" for runs, p in r["power"].items())
        need = r["runs_needed"]
        need_text = f"{need} runs" if need else "more than 200 runs"
        more = ""
        if r["more_sentences"]:
            m = r["runs_needed_more_sentences"]
            more = (f"; with {r['more_sentences']} test sentences per target language: "
                    + (f"{m} runs" if m else "still more than 200 runs"))
        cost = ", ".join(f"to {runs} runs about {mins:.0f} min" for runs, mins in r["minutes"].items())
        staged = ("the staged mode adds runs" if r["more_runs"] else
                  f"the staged mode leaves it (projected power under {100 * MIN_POWER:.0f}% at the last look)")
        page = r["runs_needed_page"]
        page_text_ = (f"; decided on the page whatever the other cards do (alpha {r['page_alpha']:.4f}): "
                      + (f"{page} runs" if page else "more than 200 runs"))
        print(textwrap.fill(
            f"({r['card']}) {r['verdict']}: sentence part {100 * r['sentence_share']:.0f}% of the variance "
            f"({r['sentences'] or 'no'} test sentences); power {powers}; 80% power at alpha 1% needs {need_text}"
            f"{more}{page_text_}; here: {cost}; {staged}.", width=110, subsequent_indent="    "))
    if not rows:
        print("No open card: every card is decided (or is another card's result).")
    return 0


def card_text(card: Card, width: int = 110) -> str:
    """One card as plain text: the claim, the test stated before the data, what the data give, the verdict and
    how often its rule is wrong."""
    h = card.hypothesis

    def para(label: str, text: str) -> str:
        return textwrap.fill(f"{label}: {text}", width=width, subsequent_indent="    ")

    lines = [f"({h.id}) {h.title}: {card.shown.upper()}", para("  verdict", card.verdict_text()),
             para("  paper", h.claim),
             para("  hypothesis", h.hypothesis), para("  statistic", h.statistic), para("  control", h.control),
             para("  rule", h.rule.text())]
    if card.missing:
        lines.append(para("  not computed yet", "; ".join(card.missing)))
    else:
        lines.append(para("  measured", card.measured))
        if card.mde is not None:  # a card that is another card's result has no estimate of its own
            lines.append(para("  minimum detectable effect (information, not a gate)",
                              f"{card.mde:.2f} {h.rule.unit} (paper: {h.paper_effect})"))
            lines.append(para("  how often this rule is wrong", calibration_line(card.calibration)))
        lines += [para("  note", n) for n in card.notes]
        lines.append(para("  protocol here", card.protocol))
    return "\n".join(lines) + "\n"


def cmd_report(args) -> int:
    if args.what == "lesson":
        return _lesson_handout(args)
    found = _findings(args)
    title, intro = report_title(found)
    from headprune_core.findings.staged import read_staged
    from headprune_core.reports.report import write_report  # here: it draws with plotly, which findings never need
    cards = read_staged(found.study, found.plan, draws=found.draws, first=found).cards
    out = write_report(cards, args.out or f"findings.{args.format}", fmt=args.format, title=title,
                       intro=intro, papers=papers_section(found.study.store, draws=found.draws))
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB, {args.format})")
    return 0


def _lesson_handout(args) -> int:
    """``headprune report lesson NAME``: the lesson's handout (HTML: each step's notes and figure, offline)."""
    from headprune_core.plans.lessons import available
    from headprune_core.reports.handout import write_handout  # here: it draws with plotly, as the report does

    found, problems = available()
    if not args.plan or args.plan not in found:
        known = ", ".join(found) or "none"
        raise KeyError(f"no lesson {args.plan!r} here (lessons: {known})"
                       + (f"; unreadable: {'; '.join(problems)}" if problems else ""))
    if args.format != "html":
        raise ValueError("a lesson's handout is HTML (its figures are charts): drop --format md")
    lesson = found[args.plan]
    plan = find_plan(lesson.plan or "demo")
    if args.model:
        plan = replace(plan, model=args.model)
    out = write_handout(lesson, args.out or f"{lesson.name}.html", plan=plan,
                        study=plan.study(device=args.device, progress=False), draws=args.draws)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB): {len(lesson.steps)} steps of {lesson.title}")
    return 0
