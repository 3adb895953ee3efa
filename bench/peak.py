"""Run a module as ``__main__`` and write this process's peak resident memory (VmHWM, KiB) to a file at exit.

    python -m bench.peak OUT_FILE MODULE [ARGS ...]

Why not ``wait4``'s ``ru_maxrss``: Linux carries the parent's high-water mark into a child at ``exec``, so a
benchmark process that has a model loaded would make every command it starts look at least as big. VmHWM read
from inside the command's own process counts only that process (not the children it starts).
"""

from __future__ import annotations

import atexit
import runpy
import sys
from pathlib import Path


def _write_peak(out: str) -> None:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            Path(out).write_text(line.split()[1])


def main() -> None:
    out, module, *args = sys.argv[1:]
    atexit.register(_write_peak, out)
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
