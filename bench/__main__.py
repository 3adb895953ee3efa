"""``python -m bench``: headprune's speed claims measured side by side with their references and limits.

    python -m bench                      # every section; writes bench/results/*.json and bench/RESULTS.md
    python -m bench --only pruning       # one section again (the others keep their last measurement)
    python -m bench --quick              # small sizes, every code path (the slow test tier); writes to a temp dir

Sections: scoring (gate_grad vs a bertology-style reference), masks (a new mask vs a plain forward pass; a cached
point), pruning (latency of physically pruned models vs the FLOP limit), panel (the dashboard's latency estimate,
former and current, repeated), demo (cold/warm demo study, dashboard memory and slider time in a real browser),
bigdata (peak memory of registering and scoring a 500,000-sentence parquet corpus), classroom (N browser sessions
walking the dashboard at once on one server), findings (the findings preset's time after the demo and the cards it
decides; the longest). RESULTS.md gives the time each section took. Absolute times on a shared 2-core machine are
noisy: every section compares ratios measured in one run, interleaved, and reports medians with their spread.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys
import tempfile
import time
from pathlib import Path

from bench import report

HERE = Path(__file__).resolve().parent
SECTIONS = ("scoring", "masks", "pruning", "panel", "demo", "bigdata", "classroom", "findings")
MODULES = {"panel": "pruning"}
RUNNERS = {"panel": "panel_estimators"}
HEADER = """# headprune benchmarks

Every measured figure of headprune lives here, with the command that measured it: the README and docs/ link here,
or quote a figure through a marker that `tests/unit/test_docs_figures.py` checks against this file.

The sections `python -m bench` writes say which command measured them and when. Times are medians of interleaved
repeats on the machine named in each section; ratios compare runs made side by side in one process. A goal not met
is marked **no** and explained in the notes. Parts measured by hand (a `###` subsection, or a `##` section after
the written ones) say how and when; `python -m bench` keeps them when it writes this file. A figure other pages
quote is marked `<!--fig NAME-->` just before its value (a goal of a written section is quoted as
`<!--fig SECTION: GOAL-->`).
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, all code paths (CI); results to a temp dir")
    ap.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections: {', '.join(SECTIONS)}")
    ap.add_argument("--model", default="me5-small", help="model for scoring, masks and pruning")
    ap.add_argument("--device", default="auto", help="auto (CUDA if present, bf16 autocast), cpu or cuda")
    ap.add_argument("--results", default=None, help="folder for the sections' JSON (default bench/results, "
                                                    "or a temp folder with --quick)")
    ap.add_argument("--out", default=None, help="Markdown file (default: RESULTS.md beside the results; "
                                                "bench/RESULTS.md for a full run)")
    ap.add_argument("--no-browser", action="store_true", help="demo section without the dashboard in Chromium")
    ap.add_argument("--reread", action="store_true",
                    help="findings section: read the cards again from the last full run's cache (after a change to "
                         "how cards are read), keeping its sweep time; computes nothing")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        ap.error(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    if args.reread and (names != ["findings"] or args.quick):
        ap.error("--reread reads the findings section's last full run again: use it with --only findings alone")
    results = Path(args.results) if args.results else \
        (Path(tempfile.mkdtemp(prefix="headprune-bench-")) if args.quick else HERE / "results")
    out = Path(args.out) if args.out else (HERE / "RESULTS.md" if results == HERE / "results"
                                           else results / "RESULTS.md")
    command = "python -m bench " + shlex.join(argv if argv is not None else sys.argv[1:])
    for name in names:
        module = importlib.import_module(f"bench.{MODULES.get(name, name)}")
        run = getattr(module, RUNNERS.get(name, "run"))
        kwargs = {"quick": args.quick}
        if name == "demo":
            kwargs.update(work=results / "demo-work", browser_too=not (args.no_browser or args.quick))
        elif name == "findings":
            kwargs.update(model=args.model, device=args.device, work=results / "findings-work", reread=args.reread)
        else:
            kwargs.update(model=args.model, device=args.device)
        print(f"== {name} ...", flush=True)
        start = time.perf_counter()
        section = report.stamp(run(**kwargs), command.strip(), time.perf_counter() - start)
        report.save(section, results)
        print(report.render_section(section), flush=True)
    kept = out.read_text(encoding="utf-8") if out.is_file() else ""
    out.write_text(report.render(report.load_all(results, list(SECTIONS)), HEADER, kept=kept), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
