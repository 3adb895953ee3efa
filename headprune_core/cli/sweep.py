"""The ``sweep`` command: grids of plans on Ray (imports ray, so it is a module of its own)."""

from __future__ import annotations

import sys

from tqdm.auto import tqdm

from headprune_core.plans.progress import running_sweeps
from headprune_core.plans.sweep import SweepSpec, build_graph, dry_run, format_dry_run
from headprune_core.plans.sweep_ray import check_reachable, run_sweep


def cmd_sweep(args) -> int:
    spec = SweepSpec.from_file(args.spec)
    if args.running:
        for rec, s in running_sweeps():
            if rec.get("name") == spec.name:
                print(f"sweep {spec.name} runs: {s['finished']} of {s['total']} jobs finished")
                return 0
        print(f"no sweep {spec.name} runs on this cache")
        return 1
    if args.address and not args.dry_run:
        check_reachable(args.address)  # before any work: Ray itself waits minutes for an address that never answers
    graph = build_graph(spec, device=args.device)
    if args.dry_run:
        print(format_dry_run(dry_run(graph, cpus=args.cpus)))
        return 0
    counts = graph.counts()
    bar = tqdm(desc=f"sweep {spec.name}", unit="job", total=len(graph.nodes), initial=counts["cached"])

    def on_event(node, g) -> None:
        bar.total = len(g.nodes)
        if node.state in ("done", "failed", "skipped", "cached"):
            bar.update(1)
        bar.set_postfix_str(f"{node.state}: {node.what}"[:80])

    res = run_sweep(graph, address=args.address, cpus=args.cpus, gpus=args.gpus, on_event=on_event)
    bar.close()
    print(f"{res.jobs} jobs: {res.cached} were cached, {res.computed} computed, {len(res.failed)} failed, "
          f"{len(res.skipped)} skipped; {res.seconds:.1f} s (Ray start {res.ray_seconds:.1f} s)")
    for node in res.failed:
        print(f"  failed after {node.attempts} attempt(s): {node.what}: {node.error}", file=sys.stderr)
    for node in res.skipped:
        print(f"  skipped: {node.what}: {node.error}", file=sys.stderr)
    return 0 if res.ok else 1
