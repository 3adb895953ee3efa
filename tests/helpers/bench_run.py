"""``python -m bench --quick`` as the slow tests run it: some sections into a results folder, then read back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_quick(out: Path, sections: str, env: dict | None = None) -> dict:
    """``python -m bench --quick --only SECTIONS`` into ``out``: each section's JSON by name."""
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--only", sections, "--results", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=1800, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}


def check_written(out: Path, sections: dict) -> None:
    """Each section is in the RESULTS.md the run wrote, with its command and rows."""
    text = (out / "RESULTS.md").read_text()
    for s in sections.values():
        assert f"## {s['title']}" in text and s["command"].startswith("python -m bench --quick")
        assert s["rows"] and s["machine"]
