"""The ``bundle`` command: a plan's results packed into one file (``export``) and checked into a cache
(``import``)."""

from __future__ import annotations

from dataclasses import replace

from headprune_core.encoders.models import config_head_shape
from headprune_core.findings.plan import findings_plan
from headprune_core.plans.bundle import export_bundle, import_bundle
from headprune_core.plans.presets import find_plan


def cmd_bundle(args) -> int:
    if args.bundle_command == "export":
        plan = find_plan(args.plan)
        if args.model:
            plan = replace(plan, model=args.model)
        findings = findings_plan(plan, config_head_shape(plan.model))  # what its Findings page reads
        also = (findings,) if findings != plan else ()
        done = export_bundle(plan, args.out, with_weights=args.with_weights, device=args.device, also=also)
        print(f"wrote {done.path}: {done.entries} results of plan {plan.name}, {done.bytes / 1e6:,.1f} MB before "
              "compression" + (f"; {done.weights_left_out} fine-tuned models' weights left out (--with-weights "
                              "packs them)" if done.weights_left_out else "")
              + (f"; {done.missing} results the plan reads are not computed here and not in the bundle"
                 if done.missing else "")
              + (f"; the Findings page's results computed here are in it ({findings.name}; {done.also_missing} "
                 "not computed)" if also else ""))
        return 0
    done = import_bundle(args.file)
    print(f"imported {args.file}: {done.entries} results checked, {done.added} added, {done.kept} already in the "
          f"cache and kept ({done.bytes / 1e6:,.1f} MB)")
    for line in done.plans:
        print(line)
    return 0
