"""The findings preset on this machine: its wall time after the demo (what ``scripts/start.sh`` computes) and the
cards it decides on the page (controlled across the cards) and alone, with each card's one-sided error rates and
the page-wide rates.

A fresh cache (the prepared model and corpora linked from this checkout's) first gets the demo's results as
``scripts/start.sh`` computes them (``sweeps/demo-first.json``, then ``sweeps/demo.json``; not timed), then
``headprune sweep sweeps/findings.json`` is timed, and ``headprune findings --format json`` reads the cards.
``--quick`` times nothing: it reads the cards and the projection of an empty cache (every code path of the
reading, in seconds).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.demo import REPO, linked_cache, run_measured
from bench.report import Goal, Section

DECIDED = ("reproduced", "not reproduced: smaller here than the paper's", "the other way")


def _cpus() -> int:
    return max(1, min(4, len(os.sched_getaffinity(0))))


def _json(args: list[str], env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-m", "headprune_core", *args], cwd=REPO, env=env, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"headprune {' '.join(args)} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def card_rows(doc: dict) -> list[list]:
    """One row per card: the verdict on the page and the card's own, estimate and interval per part, df, runs,
    and the card's one-sided error rates."""
    rows = []
    for c in doc["cards"]:
        ests = c["numbers"].get("estimates", {})
        est = "; ".join(f"{'' if k == 'all' else k + ': '}{e['diff']:+.2f} [{e['low']:+.2f}, {e['high']:+.2f}], "
                        f"{e['df']:.0f} df, {e['n_runs']} runs" for k, e in ests.items()) or "-"
        cal = c.get("calibration") or {}
        wrong = "-"
        if cal:
            wrong = (f"{100 * cal['false_reproduced']:.1f}% / {100 * cal['false_not_reproduced']:.1f}% / "
                     f"{100 * cal['false_other_way']:.1f}%")
        rows.append([c["id"], c["verdict"], c["verdict_unadjusted"], est, wrong])
    return rows


def _sweep_seconds(work: Path) -> tuple[float, str]:
    """The findings sweep's time in the last full run in ``work``: as measured (``sweep-seconds.json``), or, for
    a run before that file, the sweep's own closing line in its log."""
    saved = work / "sweep-seconds.json"
    if saved.is_file():
        return float(json.loads(saved.read_text())["seconds"]), "as measured then"
    found = re.findall(r"^\d+ jobs: .*?; ([\d.]+) s", (work / "findings.log").read_text(), re.M)
    if not found:
        raise RuntimeError(f"no findings sweep time in {work}: run the section in full first")
    return float(found[-1]), "the sweep's own closing line (without its process start)"


def run(*, quick: bool = False, model: str = "me5-small", device: str = "auto", work: Path | None = None,
        reread: bool = False) -> Section:
    """The section; ``reread``: the cards read again from the last full run's cache in ``work`` (after a change to
    how cards are read), its sweep time kept."""
    work = Path(work or tempfile.mkdtemp(prefix="headprune-bench-findings-"))
    cache = work / "cache"
    work.mkdir(parents=True, exist_ok=True)
    if reread and not cache.is_dir():
        raise RuntimeError(f"no cache of a full run in {work} to read again")
    if cache.exists() and not reread:
        shutil.rmtree(cache)
    if not reread:
        linked_cache(cache)
    log = work / "findings.log"
    env = {**os.environ, "HEADPRUNE_CACHE": str(cache), "TOKENIZERS_PARALLELISM": "false"}
    cpus = str(_cpus())
    seconds, reread_note = None, ""
    if reread:
        seconds, how = _sweep_seconds(work)
        reread_note = (f" The cards were read again (--reread) at {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} "
                       f"UTC from that run's cache, after a change to how cards are read; the sweep's time is the "
                       f"run's, {how}.")
    elif not quick:
        for spec in ("sweeps/demo-first.json", "sweeps/demo.json"):
            run_measured(["headprune_core", "sweep", spec, "--cpus", cpus], env, log)
        seconds = run_measured(["headprune_core", "sweep", "sweeps/findings.json", "--cpus", cpus], env, log)["seconds"]
        (work / "sweep-seconds.json").write_text(json.dumps({"seconds": seconds}))
    draws = ["--draws", "100"] if quick else []
    doc = _json(["findings", "--format", "json", *draws], env)
    projection = _json(["findings", "--plan", "--format", "json"], env)
    (work / "findings.json").write_text(json.dumps(doc, indent=1))
    rows = card_rows(doc)
    decided = [r[0] for r in rows if r[1] in DECIDED]
    alone = [r[0] for r in rows if r[2] in DECIDED]
    calibrated = [c["calibration"] for c in doc["cards"] if c.get("calibration")]
    worst = max((max(c["false_reproduced"], c["false_not_reproduced"], c["false_other_way"]) for c in calibrated),
                default=None)
    page = doc["family"]
    rates = page["rates"]
    page_worst = max(rates["claims_true"]["any_false_against"], rates["claims_false"]["any_false_reproduced"])
    goals = [Goal("the findings preset after the demo, 2 cores", "<= 60 min",
                  "-" if seconds is None else f"{seconds / 60:.1f} min",
                  None if seconds is None else seconds <= 3600),
             Goal("cards decided on the page (controlled across cards)", ">= 8 of 17",
                  f"{len(decided)} ({', '.join(decided) or 'none'}); by the cards alone {len(alone)}",
                  None if quick else len(decided) >= 8),
             Goal("every card's one-sided errors (false reproduced / not reproduced / the other way at 0)",
                  "<= 2.5% + 3 MC s.e.", "-" if worst is None else f"at most {100 * worst:.1f}% "
                  f"({len(calibrated)} cards)", None if quick or worst is None else worst <= 0.025 + 3 * (
                      0.025 * 0.975 / max(1, min(c["draws"] for c in calibrated))) ** 0.5),
             Goal("the page: any false verdict when all claims are true, or all false (simulated)", "<= 5%",
                  f"{100 * page_worst:.1f}%", None if quick else page_worst <= 0.05)]
    notes = [f"Cache {cache} (empty but for the linked model and corpora); {cpus} sweep workers. "
             + ("Quick: nothing computed, the cards and the projection of an empty cache read." if quick else
                "The demo's results first (not timed), then the findings sweep timed." + reread_note),
             f"Page ({page['procedure']}): all claims true, P(any false not reproduced or the other way) "
             f"{100 * rates['claims_true']['any_false_against']:.1f}% (cards alone "
             f"{100 * rates['claims_true']['any_false_against_unadjusted']:.1f}%); all claims false, P(any false "
             f"reproduced) {100 * rates['claims_false']['any_false_reproduced']:.1f}% (cards alone "
             f"{100 * rates['claims_false']['any_false_reproduced_unadjusted']:.1f}%); {rates['draws']} simulated "
             "pages, cards drawn independently.",
             "Open or not computed cards the staged mode gives more runs when open (headprune findings --plan): "
             + (", ".join(r["card"] for r in projection["cards"] if r["more_runs"]) or "none") + "."]
    return Section("findings", "The findings preset: time on 2 cores and the cards it decides",
                   ["card", "verdict on the page", "card alone", "estimate [95%], df, runs",
                    "false reproduced / not reproduced / the other way at 0"],
                   rows, goals, notes)
