"""The ``findings`` and ``report`` commands: the Findings cards of the current cache, as text or JSON, or as a
report to hand out (HTML or Markdown); neither computes."""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace

from headprune_core.findings.calibration import family
from headprune_core.findings.cards import Card, Findings
from headprune_core.findings.plan import findings_plan
from headprune_core.findings.report import calibration_line, family_text, report_title, summary_rows, write_report
from headprune_core.plans.presets import find_plan


def _findings(args) -> Findings:
    plan = find_plan(args.plan)
    if args.model:
        plan = replace(plan, model=args.model)
    study = plan.study(device=args.device)
    return Findings(study, findings_plan(plan, study.head_shape), draws=args.draws)


def cmd_findings(args) -> int:
    found = _findings(args)
    plan = found.plan
    cards = [found.card(c) for c in args.card] if args.card else found.cards()
    missing = found.missing()
    fam = family(cards)
    if args.format == "json":
        print(json.dumps({"plan": plan.name, "model": plan.model, "missing_jobs": len(missing),
                          "cards": [c.to_dict() for c in cards], "family": fam}, indent=2))
        return 0
    print(f"Findings of plan {plan.name} ({plan.model}): {len(missing)} of {len(found.jobs)} results not computed "
          f"yet{' (headprune study ' + plan.name + ' computes them)' if missing else ''}.\n")
    for row in summary_rows(cards, fam):
        print(f"  {row['card']:>3}  {row['verdict']:<46} {row['here']}  (paper: {row['paper']}; after Holm: "
              f"{row['after Holm']}, BH: {row['after BH']})")
    print("\n" + textwrap.fill(family_text(fam), width=110) + "\n")
    for card in cards:
        print(card_text(card))
    return 0


def card_text(card: Card, width: int = 110) -> str:
    """One card as plain text: the claim, the test stated before the data, what the data give, the verdict and
    how often its rule is wrong."""
    h = card.hypothesis

    def para(label: str, text: str) -> str:
        return textwrap.fill(f"{label}: {text}", width=width, subsequent_indent="    ")

    lines = [f"({h.id}) {h.title}: {card.verdict.upper()}", para("  verdict", card.verdict_text()),
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
    found = _findings(args)
    title, intro = report_title(found)
    out = write_report(found.cards(), args.out or f"findings.{args.format}", fmt=args.format, title=title,
                       intro=intro)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB, {args.format})")
    return 0
