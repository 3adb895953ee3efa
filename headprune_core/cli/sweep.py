"""The ``sweep`` command: grids of plans on Ray (imports ray, so it is a module of its own)."""

from __future__ import annotations

import sys

from headprune_core.base.progress import TqdmProgress
from headprune_core.data.hub import HubUnavailable
from headprune_core.encoders.models import ModelLoadError
from headprune_core.plans.sweep import SweepSpec, build_graph, local_shape
from headprune_core.plans.sweep_cost import check_memory, dry_run, format_dry_run
from headprune_core.plans.sweep_ray import check_reachable, retry_text, run_sweep, shape_at
from headprune_core.plans.sweep_record import list_sweeps, progress_summary, running_sweeps


def cmd_sweep(args) -> int:
    spec = SweepSpec.from_file(args.spec)
    if args.running:
        for rec, s in running_sweeps():
            if rec.get("name") == spec.name:
                print(f"sweep {spec.name} runs: {s['finished']} of {s['total']} jobs finished")
                return 0
        print(f"no sweep {spec.name} runs on this cache")
        return 1
    if args.address:
        check_reachable(args.address)  # before any work: Ray itself waits minutes for an address that never answers
    for option, given in (("--plan-only", args.plan_only), ("--gpu-type", args.gpu_type)):
        if given and not args.dry_run:
            print(f"{option} is an option of a dry run: give --dry-run too", file=sys.stderr)
            return 2
    graph = _graph(spec, args)
    if args.dry_run:
        cluster = shape_at(args.address) if args.address else None
        print(format_dry_run(dry_run(graph, cpus=args.cpus, cluster=cluster, gpu=args.gpu_type or "A100")))
        return 0
    check_memory(graph, shape_at(args.address) if args.address else local_shape(args.cpus))  # before any work
    counts = graph.counts()
    _say_resumed(spec.name, counts, len(graph.jobs))
    bar = TqdmProgress(f"sweep {spec.name}", unit="job", leave=True, lines=("retrying ",))
    bar("cached" if counts["cached"] else "starting", counts["cached"], len(graph.jobs))
    try:
        res = run_sweep(graph, address=args.address, cpus=args.cpus, gpus=args.gpus, on_progress=bar)
    finally:
        bar.close()
    print(f"{res.jobs} jobs: {res.cached} were cached, {res.computed} computed, {len(res.failed)} failed, "
          f"{len(res.skipped)} skipped, {len(res.retried)} retried; {res.seconds:.1f} s (Ray start "
          f"{res.ray_seconds:.1f} s)")
    for note in res.notes:
        print(f"  note: {note}")
    for node in res.retried:
        print(f"  retried: {node.what}: " + "; ".join(retry_text(r) for r in node.retries)
              + (f"; done on {node.ray_node}" if node.state == "done" else ""))
    for node in res.failed:
        print(f"  failed after {node.attempts} attempt(s): {node.what}: {node.error}", file=sys.stderr)
    for node in res.skipped:
        print(f"  skipped: {node.what}: {node.error}", file=sys.stderr)
    return 0 if res.ok else 1


def _graph(spec, args):
    """The sweep's jobs; a dry run that cannot reach a Hub model or data set plans from the recorded tables
    (runs/planning.py) and says so."""
    try:
        return build_graph(spec, device=args.device, planning=args.plan_only)
    except (HubUnavailable, ModelLoadError) as err:
        if not args.dry_run:
            raise
        first = " ".join(str(err).split())
        print(f"note: {first[:300]}{'...' if len(first) > 300 else ''}\nnote: planning from the recorded sizes "
              "of the Hub's models and data sets instead (headprune_core/data/hub_sizes.json, "
              "headprune_core/encoders/known_models.json)")
        return build_graph(spec, device=args.device, planning=True)


def _say_resumed(name: str, counts: dict, total: int) -> None:
    """When the last run of this sweep stopped before its end (a lost head, a killed command), say that this one
    resumes from the cache."""
    for rec in list_sweeps():
        if rec.get("name") == name:
            state = progress_summary(rec)["state"]
            if state in ("interrupted", "stopped"):
                print(f"sweep {name}: its last run was {state} before its end; resuming from the cache "
                      f"({counts['cached']} of {total} jobs cached)")
            return
