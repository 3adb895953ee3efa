"""The ``study`` command: a preset or a plan file, one job after another through the cache."""

from __future__ import annotations

import sys

from headprune_core.base.progress import TqdmProgress
from headprune_core.cli.multitask import cmd_gradts
from headprune_core.cli.runs import with_ci, with_cli_sources
from headprune_core.multitask.plan import GRADTS_PRESETS
from headprune_core.plans.plan import plan_jobs, run_plan
from headprune_core.plans.presets import find_plan
from headprune_core.plans.sweep_cost import check_study_memory
from headprune_core.runs.estimate import describe_estimate, estimate_jobs


def cmd_study(args) -> int:
    if args.preset in GRADTS_PRESETS:  # `study gradts-demo` is the same as `gradts gradts-demo`
        for name in ("units", "primaries", "method"):
            setattr(args, name, None)
        return cmd_gradts(args)
    plan = find_plan(args.preset)
    plan = plan.restricted(langs=args.langs, tasks=args.tasks, sentences=args.sentences)
    plan = with_cli_sources(plan, args)
    _check_plan_langs(plan)
    check_study_memory(plan.model, plan.train, args.device)  # before any work
    study = plan.study(device=args.device)
    _print_estimate(study, plan)
    bar = TqdmProgress(f"study {plan.name}", unit="job", leave=True)
    try:
        res = run_plan(study, plan, on_progress=bar)
    finally:
        bar.close()
    print(f"{res['jobs']} jobs, {res['computed']} computed, {res['seconds']:.1f} s")
    _print_summary(study, plan)
    return 0


def _print_estimate(study, plan) -> None:
    """Before a study starts: how many results are missing and about how long they take here."""
    todo = [j.cfg for j in plan_jobs(study, plan) if not study.store.has(j.cfg)]
    if not todo:
        return
    print(f"study {plan.name}: {len(todo)} results to compute, {describe_estimate(estimate_jobs(study.store, todo))}",
          file=sys.stderr)


def _check_plan_langs(plan) -> None:
    """Every language of the plan belongs to one of its tasks (a typo would otherwise silently drop it)."""
    known = sorted({lang for task in plan.tasks for lang in plan.task_langs(task)})
    unknown = [lang for lang in plan.langs if lang not in known and "*" not in known]
    if unknown:
        raise ValueError(f"unknown language(s) {', '.join(unknown)} for the plan's tasks "
                         f"({', '.join(plan.tasks)}); known: {', '.join(known)}")


def _print_summary(study, plan) -> None:
    for task in plan.tasks:
        train_langs = plan.source_langs if plan.settings[0] == "cross" else plan.task_langs(task)
        ft = study.finetune_config(task, train_langs, setting=plan.settings[0], **plan.train)
        for lang in plan.task_langs(task):
            ev = study.evaluation(study.eval_config(ft, task, lang, max_sentences=plan.eval_sentences))
            print(f"  {task:6} {lang}: {ev['metric']} {with_ci(ev)}")
