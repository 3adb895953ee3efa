"""Commands on tasks together: ``affinity`` (GradTS head maps and Kendall tau), ``gradts`` (selections checked by
multi-task training) and ``stemcells`` (learned pruning across tasks)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from headprune_core.base.progress import TqdmProgress
from headprune_core.cli.runs import with_cli_sources
from headprune_core.methods.similarity import cluster_order
from headprune_core.methods.uncertainty import ci_text, diff_text
from headprune_core.multitask.affinity import rank_auxiliary, select_threshold
from headprune_core.multitask.gradts import GradTS, format_table
from headprune_core.multitask.plan import find_gradts_plan
from headprune_core.multitask.stemcells import StemCells
from headprune_core.runs.study import Study


def gradts_plan(name: str, args):
    """A GradTS preset or JSON plan file, restricted by the command's options."""
    plan = find_gradts_plan(name)
    primary = getattr(args, "primary", None)
    plan = plan.restricted(units=getattr(args, "units", None),
                           primaries=getattr(args, "primaries", None) or ((primary,) if primary else None),
                           sentences=args.sentences, method=getattr(args, "method", None))
    plan = with_cli_sources(plan, args)
    if getattr(args, "threshold", None) is not None:
        plan = replace(plan, threshold=args.threshold)
    if getattr(args, "max_trial", None) is not None:
        if args.max_trial < 0:
            raise ValueError(f"--max-trial must be 0 (every candidate) or more, got {args.max_trial}")
        plan = replace(plan, max_trial=args.max_trial or None)
    if getattr(args, "train_seeds", None):
        plan = replace(plan, train_seeds=args.train_seeds)
    if getattr(args, "fg_threshold", None) is not None:
        plan = replace(plan, fg_threshold=args.fg_threshold)
    return plan


def gradts_runner(plan, args, desc: str):
    """(GradTS, its tqdm bar): the bar advances on every cached step and names it."""
    bar = TqdmProgress(desc, unit="step", leave=True)
    return GradTS(Study(plan.model, device=args.device), plan, on_progress=bar), bar


def print_tau(names, tau, kind: str) -> None:
    order = cluster_order(tau)
    names = [names[i] for i in order]
    tau = np.asarray(tau)[np.ix_(order, order)]
    width = max(len(n) for n in names)
    print(f"{kind} between the units' head maps (clustered order):")
    print(" " * (width + 1) + " ".join(f"{i:>6}" for i in range(len(names))))
    for i, (n, row) in enumerate(zip(names, tau)):
        print(f"{n:>{width}} " + " ".join(f"{v:6.2f}" for v in row) + f"  [{i}]")
    off = tau[~np.eye(len(tau), dtype=bool)]
    print(f"off-diagonal: min {off.min():.3f}, mean {off.mean():.3f}, max {off.max():.3f}")


def cmd_affinity(args) -> int:
    plan = gradts_plan(args.plan, args)
    gts, bar = gradts_runner(plan, args, "head maps")
    gts.expected = 2 * len(gts.units)
    aff = gts.affinity()
    bar.close()
    matrix = aff["tau"] if args.correlation == "kendall" else aff["spearman"]
    print_tau(aff["names"], matrix, "Kendall tau" if args.correlation == "kendall" else "Spearman rho")
    print(f"maps: {plan.method}, fine-tuned alone on {plan.train}, scored on {plan.score_sentences} sentences")
    for primary in (args.primary,) if args.primary else gts.primaries:
        ranking = rank_auxiliary(aff["names"], matrix, primary)
        chosen = set(select_threshold(ranking, plan.threshold))
        print(f"\nauxiliary units for {primary} (* = above the threshold {plan.threshold}):")
        for name, value in ranking:
            print(f"  {'*' if name in chosen else ' '} {name:20} {value:+.3f}")
    return 0


def cmd_gradts(args) -> int:
    plan = gradts_plan(args.preset, args)
    gts, bar = gradts_runner(plan, args, f"gradts {plan.name}")
    gts.expected = gts.expected_jobs()
    out = gts.run()
    bar.close()
    res = out["result"]
    if plan.note:
        print(f"note: {plan.note}")
    print_tau(res["names"], out["tau"], "Kendall tau")
    for v in res["validation"]:
        print(f"\n{v['primary']}: ranking " + ", ".join(f"{n} {t:+.2f}" for n, t in v["ranking"]))
        print(f"  GradTS-thres (tau > {plan.threshold}): {', '.join(v['thres']) or 'none'}")
        print("  GradTS-trial: " + "; ".join(f"{'+'.join(t['aux']) or 'alone'} dev {t['dev']:.1f}"
                                             for t in v["trial"]["trials"])
              + f" -> {', '.join(v['trial']['selected']) or 'alone'}")
        fg = v["fg"]
        print(f"  GradTS-fg (tau > {fg['threshold']}): " + ", ".join(
            f"{u} {f['kept']}/{f['examples']} (median tau {f['tau_median']:+.2f})" for u, f in fg["summary"].items()))
        for seed, b in v["bandit"].items():
            print(f"  bandit seed {seed} ({b['seconds']:.0f} s): " + ", ".join(
                f"{u} {m:.2f}" for u, m in sorted(b["means"].items(), key=lambda kv: -kv[1]))
                  + f" -> {', '.join(b['selected']) or 'alone'}")
    print()
    print(format_table(res))
    s = res["seconds"]
    print(f"\nwall time: {s['wall']:.0f} s when computed (maps {s['wall_maps']:.0f} s, multi-task runs and "
          f"evaluations {s['wall_multitask']:.0f} s); training+scoring of the maps {s['maps_total']:.0f} s, "
          f"multi-task training {s['multitask_total']:.0f} s; key {gts.config().key()}")
    return 0


def cmd_stemcells(args) -> int:
    plan = gradts_plan(args.preset, args)
    gts, bar = gradts_runner(plan, args, f"learned pruning {plan.name}")
    l0 = {"penalty": args.penalty} if args.penalty is not None else {"target": args.target}
    cells = StemCells(gts, l0={**l0, "epochs": args.l0_epochs})
    res = cells.run(on_progress=bar)
    bar.close()
    n, shape = len(res["units"]), res["shape"]
    n_heads = shape[0] * shape[1]
    how = f"L0 weight {args.penalty:g}" if args.penalty is not None else \
        f"{args.target:.0%} of {n_heads} heads removed per run"
    print(f"learned pruning (hard-concrete gates, {how}, {args.l0_epochs:g} epoch(s) after each fine-tune) of "
          f"{n} units of plan {plan.name}; heads kept per run: "
          + ", ".join(f"{r['unit']} {r['kept']}" for r in res["per_task"]) + f", all together {res['multi_kept_n']}")
    print(f"heads kept by at least k of {n} tasks (random sets of the same size: expected):")
    for k in range(1, n + 1):
        print(f"  k={k}: {res['claimed'][k]:4d}   (chance {res['claimed_chance'][k]:6.1f})")
    sg = res["stem_vs_gradient"]
    print(f"stem cells (kept by >= {res['majority']}): {len(res['stem_cells'])}: "
          + ", ".join(f"L{a}H{b} ({c})" for a, b, c in res["stem_cells"][:20]))
    print(f"gradient top sets of the same size: {sg['gradient']} heads in >= {res['majority']} tasks; in both: "
          f"{sg['both']} (Jaccard {sg['jaccard']:.2f}); multi-task run keeps {res['multi_kept_n']}")
    print(f"{'unit':18} {'kept':>5} {'grad overlap':>13} {'alone':>16} {'alone, L0':>16} {'multi, L0':>16} "
          f"{'multi - alone':>24}")
    for r in res["per_task"]:
        d = r["multi_vs_single"]
        print(f"{r['unit']:18} {r['kept']:5d} {r['overlap_gradient']:7.0%} ({r['overlap_chance']:.0%}) "
              f"{ci_text(r['single']):>16} {ci_text(r['single_learned']):>16} {ci_text(r['multi_learned']):>16} "
              f"{diff_text(d):>24}")
    return 0
