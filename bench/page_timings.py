"""Measure how long each dashboard page's script takes, cold and warm, with Streamlit's AppTest.

``python -m bench.page_timings [--cache DIR]`` (default: the repository's cache/, i.e. the demo study).
Cold: the first visit of each page in a fresh Python process (the app's first run also pays the imports);
warm: visiting it again. Also times the prune slider: a new k (one evaluation pass) and a k seen before.
Server-side script time only; the browser adds rendering (see ``python -m tests.helpers.browser``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = ("home", "importance", "prune", "inspector", "runs")


def _timed(at) -> float:
    start = time.perf_counter()
    at.run()
    if at.exception:
        raise RuntimeError([e.value for e in at.exception])
    return time.perf_counter() - start


def measure(cache: str | None = None, *, k: int = 72) -> dict[str, tuple[float, float]]:
    if cache:
        os.environ["HEADPRUNE_CACHE"] = str(Path(cache).resolve())
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=900)
    out = {"first run (imports + home)": (_timed(at), float("nan"))}
    for page in PAGES:
        at.switch_page(f"headprune_app/pages/{page}.py")
        cold = _timed(at)
        at.switch_page(f"headprune_app/pages/{page}.py")
        out[page] = (cold, _timed(at))
    at.switch_page("headprune_app/pages/prune.py")
    at.run()
    at.slider(key="k").set_value(k)
    new_k = _timed(at)
    at.slider(key="k").set_value(0).run()
    at.slider(key="k").set_value(k)
    out[f"prune: slider to k={k} (new / seen before)"] = (new_k, _timed(at))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=None, help="cache folder (default: $HEADPRUNE_CACHE or cache/)")
    ap.add_argument("--k", type=int, default=72)
    args = ap.parse_args(argv)
    rows = measure(args.cache, k=args.k)
    print("| page | cold (s) | warm (s) |\n|---|---|---|")
    for name, (cold, warm) in rows.items():
        print(f"| {name} | {cold:.2f} | {warm:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
