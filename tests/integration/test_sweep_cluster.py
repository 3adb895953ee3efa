"""The CLI against an existing Ray cluster (``ray start --head`` here, 2 CPUs, token authentication): two
overlapping ``sweep --address`` runs share one cache folder and compute each job once; ``--dry-run`` then finds
everything cached."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from headprune_core.runs.store import Store

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
# the cluster's shared secret, as every node and the sweep's machine would be given it (README: Sweeps)
AUTH = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": uuid.uuid4().hex}


def _ray(*args: str) -> subprocess.CompletedProcess:
    ray = Path(sys.executable).parent / "ray"
    return subprocess.run([str(ray), *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, **AUTH})


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def cluster():
    port = _free_port()
    started = _ray("start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                   "--object-store-memory=200000000", "--disable-usage-stats")
    assert started.returncode == 0, started.stderr[-2000:]
    yield f"127.0.0.1:{port}"
    _ray("stop", "--force")


def test_two_sweeps_on_an_existing_cluster_share_one_cache(tiny_cache, tmp_path, cluster):
    """Two users start overlapping sweeps at once on one cluster and one shared cache: every job is computed
    once in all (the second asker waits on the key's lock and reads), and a dry run then finds all cached."""
    root, model = tiny_cache
    cache = tmp_path / "shared-cache"  # what every node would mount at the same path
    cache.mkdir()
    for part in ("models", "corpora"):
        shutil.copytree(root / part, cache / part)
    grid = {"models": [str(cache / "models" / "tiny-bert")], "tasks": ["pos"], "langs": ["en", "de"],
            "strategies": ["importance"], "random_seeds": [0], "curve_step": 6, "score_sentences": 30,
            "eval_sentences": 30, "train": {"max_train_sentences": 100, "epochs": 2.0}}
    specs = []
    for name, seeds in (("alice", [1, 2]), ("bob", [2, 3])):  # seed 2 is in both
        specs.append(tmp_path / f"{name}.json")
        specs[-1].write_text(json.dumps({"name": name, "seeds": seeds, **grid}))
    env = {**os.environ, **AUTH, "HEADPRUNE_CACHE": str(tmp_path / "elsewhere")}  # --cache wins
    runs = [subprocess.Popen([sys.executable, "-m", "headprune_core", "sweep", str(spec), "--cache", str(cache),
                              "--address", cluster], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=REPO, env=env) for spec in specs]
    outs = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err[-3000:] for _, err in outs]
    per_seed = 1 + 2 + 2 + 5  # fine-tune, 2 scores, 2 evaluations, 2 + 3 (English) curves
    entries = Store(cache / "runs").entries()
    assert len(entries) == 3 * per_seed
    computed = [int(re.search(r"(\d+) computed", out).group(1)) for out, _ in outs]
    assert sum(computed) == len(entries)  # seed 2's jobs once, by whichever sweep got there first
    for out, _ in outs:
        assert f"{2 * per_seed} jobs: " in out and "0 failed, 0 skipped" in out
    dry = subprocess.run([sys.executable, "-m", "headprune_core", "sweep", str(specs[0]), "--cache", str(cache),
                          "--dry-run"], capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert dry.returncode == 0 and f"{2 * per_seed} jobs, {2 * per_seed} cached, 0 to compute" in dry.stdout
    for name in ("alice", "bob"):
        progress = json.loads((cache / "sweeps" / name / "progress.json").read_text())
        counts = progress["counts"]  # a job the other sweep finished first is found cached at submit time
        assert progress["state"] == "done" and counts["done"] + counts["cached"] == 2 * per_seed
    assert not (tmp_path / "elsewhere").exists()
