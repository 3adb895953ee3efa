"""Many users at once: gates are per call (never seen by another thread), two processes asking for one key
compute it once, and a study killed with SIGKILL at random points leaves no half entry and resumes."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertModel

from headprune_core.encoders.heads import head_gates
from headprune_core.runs.store import Store, check_entry

REPO = Path(__file__).resolve().parents[2]


def _tiny_bert() -> BertModel:
    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                intermediate_size=64), add_pooling_layer=False).eval()


def test_an_open_gate_is_invisible_to_other_threads():
    """Thread A holds head_gates(all heads off) open while thread B runs the same model: B sees the model as it
    is, A sees its gates."""
    model = _tiny_bert()
    ids = torch.tensor([[1, 5, 7, 9, 2]])
    with torch.no_grad():
        plain = model(ids).last_hidden_state
        with head_gates(model, torch.zeros(2, 4)):
            gated = model(ids).last_hidden_state
    assert not torch.allclose(plain, gated)
    opened, b_done = threading.Event(), threading.Event()
    seen = {}

    def a():
        with torch.no_grad(), head_gates(model, torch.zeros(2, 4)):
            opened.set()
            assert b_done.wait(30)
            seen["a"] = model(ids).last_hidden_state

    def b():
        assert opened.wait(30)
        with torch.no_grad():
            seen["b"] = model(ids).last_hidden_state
        b_done.set()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert torch.equal(seen["b"], plain) and torch.equal(seen["a"], gated)
    assert not any(m._forward_pre_hooks for m in model.modules())  # nothing left on the shared model


def test_concurrent_masks_on_one_model_equal_their_sequential_results():
    model = _tiny_bert()
    ids = torch.randint(3, 50, (4, 12))
    masks = [torch.ones(2, 4), torch.tensor([[0, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.float32),
             torch.tensor([[0, 0, 0, 0], [1, 0, 1, 0]], dtype=torch.float32)]
    with torch.no_grad():
        expected = []
        for m in masks:
            with head_gates(model, m):
                expected.append(model(ids).last_hidden_state)
    barrier = threading.Barrier(len(masks))
    wrong = []

    def worker(i: int):
        barrier.wait()
        for _ in range(15):
            with torch.no_grad(), head_gates(model, masks[i]):
                out = model(ids).last_hidden_state
            if not torch.allclose(out, expected[i], atol=1e-6):
                wrong.append(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(masks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not wrong, f"masks {sorted(set(wrong))} saw another thread's gates"


def _python(code: str, env: dict, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _env(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            **{k: str(v) for k, v in extra.items()}}


STORE_WORKER = """
    import json, os, sys, time
    import numpy as np
    from headprune_core.runs.config import FinetuneConfig, ScoreConfig
    from headprune_core.runs.store import Store
    ft = FinetuneConfig(model="m", tasks=("pos",), train_langs=("en",), model_fp="m" * 16, data_fp="d" * 16)
    cfg = ScoreConfig(finetune=ft, task="pos", lang="de", data_fp="s" * 16)
    go = os.environ["GO"]
    while not os.path.exists(go):
        time.sleep(0.01)

    def compute():
        with open(os.environ["LOG"], "a") as f:
            f.write(f"{os.getpid()}\\n")
        time.sleep(1.0)  # long enough for the other process to ask for the same key meanwhile
        return {"raw": np.arange(6.0) + os.getpid()}

    out = Store(os.environ["ROOT"]).get_or_compute(cfg, compute)
    print(json.dumps(out["raw"].tolist()))
"""


def test_two_processes_asking_for_one_key_compute_it_once(tmp_path):
    env = _env(ROOT=tmp_path / "runs", LOG=tmp_path / "computed.log", GO=tmp_path / "go")
    procs = [_python(STORE_WORKER, env) for _ in range(2)]
    time.sleep(3.0)  # both processes imported and wait for the go file
    (tmp_path / "go").write_text("")
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    computed = (tmp_path / "computed.log").read_text().split()
    assert len(computed) == 1, f"computed {len(computed)} times"
    results = [json.loads(o[0]) for o in outs]
    assert results[0] == results[1] == (np.arange(6.0) + int(computed[0])).tolist()
    kinds = [p for p in (tmp_path / "runs" / "score").iterdir()]
    assert len(kinds) == 1 and not kinds[0].name.startswith(".")  # one entry, no temp folder left


CLI_WORKER = """
    import os, sys
    import headprune_core.runs.study as study
    real = study.finetune
    def counted(*args, **kwargs):
        with open(os.environ["LOG"], "a") as f:
            f.write("train\\n")
        return real(*args, **kwargs)
    study.finetune = counted
    from headprune_core.cli.main import main
    sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.parallel
def test_two_cli_processes_fine_tune_once(tiny_cache, tmp_path):
    root, model = tiny_cache
    env = _env(HEADPRUNE_CACHE=root, LOG=tmp_path / "train.log")
    args = ["finetune", "--model", model, "--max-train", "60", "--epochs", "3", "--seed", "77"]
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(CLI_WORKER), *args], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert (tmp_path / "train.log").read_text().split() == ["train"]
    keys = {o[0].strip().rsplit("key ", 1)[-1] for o in outs}
    assert len(keys) == 1


def _plan_file(tmp_path: Path, model: str) -> Path:
    plan = {"name": "crash", "description": "killed at random points", "model": model, "tasks": ["pos", "name"],
            "langs": ["en", "de"], "strategies": ["importance"], "random_seeds": [0, 1], "curve_step": 2,
            "score_sentences": 40, "eval_sentences": 40,
            "train": {"max_train_sentences": 120, "epochs": 2.0, "lr": 1e-3}}
    path = tmp_path / "crash.json"
    path.write_text(json.dumps(plan))
    return path


def _finished(runs: Path) -> int:
    """How many entries are in place (cheap: folder names only)."""
    return sum(1 for kind in runs.glob("*") if not kind.name.startswith(".") for e in kind.iterdir()
               if not e.name.startswith(".")) if runs.is_dir() else 0


def _entries_are_whole(runs: Path) -> int:
    """Every folder under a real key name is a complete, checked entry; returns how many there are."""
    n = 0
    for kind in runs.iterdir() if runs.is_dir() else []:
        if kind.name.startswith("."):
            continue
        for entry in kind.iterdir():
            if entry.name.startswith("."):
                continue  # temp folders of killed writers: never read, cleaned by the next writer
            check_entry(entry, None, hashes=True)
            n += 1
    return n


@pytest.mark.slow
@pytest.mark.parallel
def test_study_killed_at_ten_random_points_resumes_without_half_entries(tiny_cache, tmp_path):
    import shutil
    root, model = tiny_cache
    cache = tmp_path / "cache"
    shutil.copytree(root / "corpora", cache / "corpora")
    plan = _plan_file(tmp_path, model)
    env = _env(HEADPRUNE_CACHE=cache)
    cmd = [sys.executable, "-m", "headprune_core", "study", str(plan)]

    shutil.copytree(root / "corpora", tmp_path / "clean" / "corpora")
    clean = subprocess.run(cmd, cwd=REPO, env=_env(HEADPRUNE_CACHE=tmp_path / "clean"), capture_output=True,
                           text=True, timeout=600)
    assert clean.returncode == 0, clean.stderr[-2000:]
    jobs = int(clean.stdout.split(" jobs,")[0].split()[-1])

    rng = random.Random(1234)
    counts, points = [], []
    for _ in range(10):  # each kill at a random point of the work left: once `target` entries exist, + a delay
        done = counts[-1] if counts else 0
        target = min(jobs - 1, done + rng.randint(0, max(1, jobs // 5)))  # ~jobs/10 further on average
        delay = rng.uniform(0.0, 0.5)
        points.append((target, round(delay, 2)))
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while _finished(cache / "runs") < target and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        counts.append(_entries_are_whole(cache / "runs"))  # raises on any half entry
    print(f"kill points (entries, then seconds): {points}; entries after each kill: {counts} of {jobs}")
    assert counts == sorted(counts) and len(set(counts)) >= 3  # kills at several stages; nothing finished lost
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    computed = int(done.stdout.split(" computed")[0].split()[-1])
    assert computed == jobs - counts[-1]  # the rerun computed only what was missing
    assert _entries_are_whole(cache / "runs") == jobs
    clean_store, store = Store(tmp_path / "clean" / "runs"), Store(cache / "runs")
    assert {e.key for e in store.entries()} == {e.key for e in clean_store.entries()}
    for e in store.entries("eval"):  # killed and resumed: the same numbers as the clean run
        assert store.read(e)["result"]["score"] == clean_store.read(clean_store.find(e.key))["result"]["score"]
