"""The ``bundle`` command: a plan's results packed into one file (``export``) and checked into a cache
(``import``). ``export --out`` replaces an earlier bundle there, anything else only with ``--force``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from headprune_core.base.files import OutputExists
from headprune_core.encoders.models import config_head_shape
from headprune_core.findings.plan import findings_plan
from headprune_core.plans.bundle import export_bundle, import_bundle, is_bundle
from headprune_core.plans.presets import find_plan


def claim_bundle_file(out: str | Path, *, force: bool = False) -> Path:
    """Check that ``out`` may receive a bundle: new, an earlier headprune bundle, or (with ``force``) any file;
    raise :class:`OutputExists` if not. A folder is always refused. Nothing is touched here."""
    out = Path(out)
    if out.is_dir():
        raise OutputExists(f"{out} is a folder; give a file name for the bundle")
    if (out.exists() or out.is_symlink()) and not force and not is_bundle(out):
        raise OutputExists(f"{out} exists and is not a headprune bundle; nothing was touched. Choose a new file "
                           "name, or use --force to replace it")
    return out


def cmd_bundle(args) -> int:
    if args.bundle_command == "export":
        claim_bundle_file(args.out, force=args.force)  # before any work
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
