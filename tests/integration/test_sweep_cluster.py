"""The CLI against an existing Ray cluster (``ray start --head`` here, 2 CPUs): ``sweep --address`` runs a small
sweep on it into a chosen cache folder, ``--dry-run`` then finds everything cached, and the exit code says
whether every job finished."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from headprune_core.store import Store

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
PORT = 6391
# the cluster's shared secret, as every node and the sweep's machine would be given it (README: Sweeps)
AUTH = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": uuid.uuid4().hex}


def _ray(*args: str) -> subprocess.CompletedProcess:
    ray = Path(sys.executable).parent / "ray"
    return subprocess.run([str(ray), *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, **AUTH})


@pytest.fixture
def cluster():
    started = _ray("start", "--head", f"--port={PORT}", "--num-cpus=2", "--include-dashboard=false",
                   "--object-store-memory=200000000", "--disable-usage-stats")
    assert started.returncode == 0, started.stderr[-2000:]
    yield f"127.0.0.1:{PORT}"
    _ray("stop", "--force")


def test_sweep_on_an_existing_cluster_from_the_cli(tiny_cache, tmp_path, cluster):
    root, model = tiny_cache
    cache = tmp_path / "shared-cache"  # what every node would mount at the same path
    cache.mkdir()
    for part in ("models", "corpora"):
        shutil.copytree(root / part, cache / part)
    spec = tmp_path / "grid.json"
    spec.write_text(json.dumps({
        "name": "grid", "models": [str(cache / "models" / "tiny-bert")], "tasks": ["pos"], "langs": ["en", "de"],
        "strategies": ["importance"], "random_seeds": [0], "curve_step": 6, "score_sentences": 30,
        "eval_sentences": 30, "seeds": [1, 2], "train": {"max_train_sentences": 100, "epochs": 2.0}}))
    env = {**os.environ, **AUTH, "HEADPRUNE_CACHE": str(tmp_path / "elsewhere")}  # --cache wins
    cmd = [sys.executable, "-m", "headprune_core", "sweep", str(spec), "--cache", str(cache)]
    ran = subprocess.run(cmd + ["--address", cluster], capture_output=True, text=True, timeout=600, cwd=REPO,
                         env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    jobs = len(Store(cache / "runs").entries())
    assert f"{jobs} jobs: 0 were cached, {jobs} computed, 0 failed, 0 skipped" in ran.stdout
    assert jobs == 2 * (1 + 2 + 2 + 5)  # per seed: fine-tune, 2 scores, 2 evaluations, 2 + 3 (English) curves
    dry = subprocess.run(cmd + ["--dry-run"], capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert dry.returncode == 0 and f"{jobs} jobs, {jobs} cached, 0 to compute" in dry.stdout, dry.stdout
    progress = json.loads((cache / "sweeps" / "grid" / "progress.json").read_text())
    assert progress["state"] == "done" and progress["counts"]["done"] == jobs
    assert not (tmp_path / "elsewhere").exists()
