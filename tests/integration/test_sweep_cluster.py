"""The CLI against existing Ray clusters. With ``ray start --head`` (2 CPUs, token authentication): two
overlapping ``sweep --address`` runs share one cache folder and compute each job once; ``--dry-run`` then finds
everything cached. With several nodes on this machine (a head and 1- or 2-CPU worker nodes, simulated with
``ray.cluster_utils.Cluster``): jobs spread over the nodes within their memory, equal to a sequential run's; a node
killed during a fine-tune costs that attempt only; a killed head stops the sweep saying so, and a rerun resumes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from headprune_core.plans.sweep import SweepSpec, build_graph
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


def ray_processes(folder: str) -> list[int]:
    """The processes of the Ray cluster whose temp folder is ``folder``: those that name it (or its session folder
    inside it) on their command line, and their descendants (workers and agents, which rename themselves
    ``ray::...``). This test's cluster's alone, never another cluster's on the machine."""
    named, parent = set(), {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state, ppid = (proc / "stat").read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, IndexError, ValueError):
            continue
        if state in ("Z", "X"):  # dead: a zombie waits for its parent to collect it, and runs nothing
            continue
        parent[int(proc.name)] = int(ppid)
        if folder in cmdline:
            named.add(int(proc.name))
    found, grew = set(named), True
    while grew:
        more = {pid for pid, ppid in parent.items() if ppid in found and pid not in found}
        found |= more
        grew = bool(more)
    return sorted(found)


def stop_ray_in(folder: str, *, within: float = 30.0) -> list[int]:
    """Stop the Ray cluster of ``folder`` alone (``ray stop`` stops every Ray process on the machine, a user's own
    cluster included): SIGTERM, then SIGKILL what is left after ``within`` seconds, again for ``within`` seconds
    (a process dying under load, or one a dying raylet started meanwhile). Returns what the SIGTERM left."""
    for pid in ray_processes(folder):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.time() + within
    while ray_processes(folder) and time.time() < deadline:
        time.sleep(0.5)
    left = ray_processes(folder)
    deadline = time.time() + within
    while (alive := ray_processes(folder)) and time.time() < deadline:
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
    return left


@pytest.fixture
def cluster():
    """A Ray head of its own (its own temp folder), stopped alone afterwards."""
    port = _free_port()
    folder = tempfile.mkdtemp(prefix="hpray-", dir="/tmp")  # short: Ray's socket paths live under it
    started = _ray("start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
                   "--object-store-memory=200000000", "--disable-usage-stats", f"--temp-dir={folder}")
    assert started.returncode == 0, started.stderr[-2000:]
    assert ray_processes(folder), "the head's processes do not name its temp folder"
    yield f"127.0.0.1:{port}"
    # a process that 'ray stop' takes for a Ray worker (its command line names default_worker.py), standing for a
    # user's own cluster on the machine: stopping the test's cluster leaves it running
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "default_worker.py"])
    try:
        stop_ray_in(folder, within=10.0)  # then SIGKILL: a raylet may outlive its SIGTERM for 30 s
        assert not ray_processes(folder)
        assert bystander.poll() is None, "stopping the test's cluster stopped another process"
    finally:
        bystander.kill()
        bystander.wait()
        shutil.rmtree(folder, ignore_errors=True)


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


# --- several nodes on this machine (ray.cluster_utils.Cluster): placement, a lost node, a lost head ------------

BENCH_OUT = os.environ.get("HEADPRUNE_CLUSTER_NUMBERS")  # a file for the measured figures (docs/sweeps.md)


def _grid(cache: Path, models: list[str], **over) -> dict:
    grid = {"models": [str(cache / "models" / m) for m in models], "tasks": ["pos"], "langs": ["en", "de"],
            "strategies": ["importance"], "random_seeds": [0], "curve_step": 6, "score_sentences": 30,
            "eval_sentences": 30, "seeds": [1], "train": {"max_train_sentences": 100, "epochs": 2.0}}
    return {**grid, **over}


def _sweep(spec: Path, cache: Path, address: str, *more: str, env: dict | None = None,
           wait: bool = True) -> subprocess.CompletedProcess | subprocess.Popen:
    cmd = [sys.executable, "-m", "headprune_core", "sweep", str(spec), "--cache", str(cache), "--address", address,
           *more]
    run_env = {**os.environ, "HEADPRUNE_CACHE": str(cache.parent / "elsewhere"), **(env or {})}
    if wait:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO, env=run_env)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=run_env)


def _record(cache: Path, name: str) -> dict:
    return json.loads((cache / "sweeps" / name / "progress.json").read_text())


def _entries_whole(cache: Path) -> dict[str, float]:
    """Every entry folder of the cache is a whole entry (no half entry: a killed writer's staging folder is
    hidden and belongs to a dead process, which ``cache gc`` removes); returns key -> when it was written."""
    from headprune_core.base.files import temp_is_dead
    store = Store(cache / "runs")
    entries = {e.key: e.created for e in store.entries()}
    folders = [p for kind in (cache / "runs").iterdir() if kind.is_dir() for p in kind.iterdir() if p.is_dir()]
    assert sorted(p.name for p in folders if not p.name.startswith(".")) == sorted(entries)
    assert all(temp_is_dead(p) for p in folders if p.name.startswith(".") and "lock" not in p.name)
    return entries


def _computed_once(rec: dict, entries: dict) -> None:
    """Each entry was computed by exactly one job of the record (retried attempts never wrote twice)."""
    assert all(j["state"] == "done" for j in rec["jobs"]), [j for j in rec["jobs"] if j["state"] != "done"]
    assert sorted(j["key"] for j in rec["jobs"] if j["computed"]) == sorted(entries)


@pytest.fixture
def nodes(request):
    from tests.helpers.cluster import SimulatedCluster
    made = []

    def start(workers):
        made.append(SimulatedCluster(workers))
        return made[-1]

    yield start
    for cluster in made:
        cluster.shutdown()


@pytest.mark.beside  # a simulated cluster's nodes: made to pass beside a CPU-heavy process
def test_a_sweep_on_three_worker_nodes_equals_the_local_sequential_run(tiny_cache, tmp_path, nodes, monkeypatch):
    """Two models' jobs on worker nodes a and b (1 CPU each) and c (2 CPUs but memory for one job): the dry run
    counts the cluster's nodes and what fits at once; jobs run on several nodes, c never two at once, each
    computed once, and the cache equals a sequential run's at one thread."""
    from tests.helpers.cluster import NodeMemory, assert_same_entries, sequential_store, shared_cache
    from tests.helpers.fixture_cache import write_model
    root, _ = tiny_cache
    cache = shared_cache(root, tmp_path / "shared-cache")
    write_model(cache / "models" / "tiny-bert-b", seed=5)  # other weights: other keys, another Study per worker
    spec = tmp_path / "three.json"
    spec.write_text(json.dumps({"name": "three", **_grid(cache, ["tiny-bert", "tiny-bert-b"])}))
    # c: 2 CPUs, memory for one job (0.75 GB) but not two, and room for the idle workers Ray keeps (0.85 GB seen)
    shape = {"worker-a": (1, 1.5), "worker-b": (1, 1.5), "worker-c": (2, 1.2)}  # name: CPUs, GB for jobs
    cluster = nodes(shape)
    dry = _sweep(spec, cache, cluster.address, "--dry-run")
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert f"on the cluster at {cluster.address}: 4 node(s), 4 CPUs, 0 GPUs" in dry.stdout, dry.stdout
    # c has 2 CPUs but memory for one 0.8 GB job: 3 fine-tunes at once, not 4
    (row,) = [line.split() for line in dry.stdout.splitlines() if line.strip().startswith("finetune ")]
    assert row[1:4] == ["2", "0", "2"] and row[-3:] == ["0.8", "GB", "3"], dry.stdout
    graph = build_graph(SweepSpec.from_file(spec), store=Store(cache / "runs"))
    asked = max(graph.request(n)["memory"] for n in graph.jobs.values()) / 2**30  # the most a job asks for, GB
    memory = NodeMemory(cluster)
    run = _sweep(spec, cache, cluster.address)
    peaks = memory.stop()
    assert run.returncode == 0, run.stderr[-3000:]
    rec = _record(cache, "three")
    entries = _entries_whole(cache)
    assert len(entries) == 2 * 10 and "20 jobs: 0 were cached, 20 computed, 0 failed, 0 skipped, 0 retried" in \
        run.stdout
    _computed_once(rec, entries)
    ran_on = {}
    for job in rec["jobs"]:
        ran_on.setdefault(job["node"].split(" ")[0], []).append(job["span"])
    assert len(ran_on) >= 2 and set(ran_on) <= {"worker-a", "worker-b", "worker-c"}, ran_on
    spans = sorted(ran_on.get("worker-c", []))
    assert all(end <= nxt for (_, end), (nxt, _) in zip(spans, spans[1:])), "c ran two jobs at once"
    for name, peak in peaks.items():  # each worker under what its jobs asked for; each node under its own memory
        # the request is an estimate: 10% over it is allowed (resident memory varies with the load on the host)
        assert 0 < peak["one_worker_peak_gb"] <= 1.1 * asked, (name, peak, asked)
        assert peak["workers_peak_gb"] <= shape[name][1], (name, peak)
    monkeypatch.setenv("HEADPRUNE_CACHE", str(cache))
    seq = sequential_store(SweepSpec.from_file(spec), tmp_path / "seq")
    assert_same_entries(Store(cache / "runs"), seq)
    _save_numbers("three_nodes", {"seconds": _seconds(run.stdout), "jobs_per_node": {k: len(v) for k, v in
                                                                                      ran_on.items()},
                                  "memory": peaks})


@pytest.mark.beside  # a simulated cluster's nodes: made to pass beside a CPU-heavy process
def test_a_node_lost_during_a_fine_tune_costs_only_that_attempt(tiny_cache, tmp_path, nodes):
    """Worker node a or b dies while it trains a fine-tune: the sweep resubmits the job to the node left and says
    so (the lost node named), no half entry is left, and nothing that had landed is computed again."""
    from tests.helpers.cluster import on_marker, shared_cache
    root, _ = tiny_cache
    cache = shared_cache(root, tmp_path / "shared-cache")
    spec = tmp_path / "lose.json"  # fine-tunes long enough to be caught running (several seconds each)
    spec.write_text(json.dumps({"name": "lose", **_grid(cache, ["tiny-bert"], seeds=[1, 2, 3],
                                                         train={"max_train_sentences": 240, "epochs": 30.0})}))
    cluster = nodes({"worker-a": (1, 1.5), "worker-b": (1, 1.5)})
    markers = cache / "sweeps" / "lose" / "running"
    landed = {}

    def in_training_after_a_landing(m: dict) -> bool:  # events: a step of its training done (its marker says
        # so), its entry not landed, others' entries landed
        landed.update({e.key: e.created for e in Store(cache / "runs").entries()})
        return m["attempt"] == 1 and m.get("done", 0) >= 1 and m.get("step", "").startswith("fine-tuning") and \
            m["key"] not in landed and bool(landed)

    def kill(m: dict) -> None:
        cluster.kill_node(m["node"].split(" ")[0])
        m["lost_after"] = time.time() - m["started"]  # the work the lost attempt had done

    killer, killed = on_marker(markers, in_training_after_a_landing, kill)
    run = _sweep(spec, cache, cluster.address)
    killer.join()
    assert killed, "no fine-tune was seen running"
    assert run.returncode == 0, run.stderr[-3000:]
    lost = killed["node"]
    assert f"retrying {killed['what']} (attempt 2): attempt 1 lost with its node on {lost}" in run.stdout + \
        run.stderr, run.stdout[-3000:]
    assert "0 failed, 0 skipped, 1 retried" in run.stdout and f"retried: {killed['what']}: " in run.stdout
    rec = _record(cache, "lose")
    entries = _entries_whole(cache)
    _computed_once(rec, entries)
    assert len(entries) == 3 * 10 and landed
    (victim,) = [j for j in rec["jobs"] if j["key"] == killed["key"]]
    assert victim["attempts"] == 2 and victim["computed"] and victim["node"] != lost
    assert [(r["attempt"], r["node"], r["lost"]) for r in victim["retries"]] == [(1, lost, True)]
    assert all(not j["retries"] for j in rec["jobs"] if j is not victim)
    # the Runs page's sweep table reads the record as list_sweeps gives it: the retry, the lost node named
    from headprune_app.runs_view import sweep_rows
    from headprune_core.plans.sweep_record import list_sweeps

    (listed,) = [r for r in list_sweeps(cache) if r["name"] == "lose"]
    assert [r["retried"] for r in sweep_rows(listed, now=time.time()) if "retried" in r] == [
        f"attempt 1 lost with its node on {lost}; then done"]
    # what had landed before the node died was never written again
    assert all(entries[key] == created for key, created in landed.items())
    assert not [f for f in markers.iterdir() if json.loads(f.read_text())["run"] == rec["run"]]
    _save_numbers("lost_node", {"seconds": _seconds(run.stdout), "retries": victim["retries"],
                                "landed_before": len(landed), "lost_attempt_seconds": round(killed["lost_after"], 1),
                                "retry_seconds": round(victim["seconds"], 1)})


@pytest.mark.beside  # a simulated cluster's nodes: made to pass beside a CPU-heavy process
def test_a_lost_head_stops_the_sweep_saying_so_and_a_rerun_resumes(tiny_cache, tmp_path, nodes):
    """The head dies mid-sweep (Ray cannot bring it back without GCS fault tolerance): the sweep says so and exits
    75 (before Ray would end it without a word), every entry in the cache is whole; on a new cluster the same
    command resumes, computing only what is missing."""
    from tests.helpers.cluster import on_marker, shared_cache
    root, _ = tiny_cache
    cache = shared_cache(root, tmp_path / "shared-cache")
    spec = tmp_path / "head.json"
    # 4 seeds, 40 jobs, fine-tunes of about 10 s: the head dies once 2 entries landed, so at least 2 fine-tunes
    # (on 2 one-CPU nodes) are left, more than the 5 s the sweep waits for a lost head. A driver goes on pushing
    # jobs to the workers it already leased with the head gone: with short jobs a loaded CI finished the sweep
    # first.
    spec.write_text(json.dumps({"name": "head", **_grid(cache, ["tiny-bert"], seeds=[1, 2, 3, 4],
                                                        train={"max_train_sentences": 240, "epochs": 60.0})}))
    total = 4 * 10
    first = nodes({"worker-a": (1, 1.5), "worker-b": (1, 1.5)})
    # the head dies on events: 2 entries landed and a fine-tune is into its training (its marker says so)
    killer, killed = on_marker(cache / "sweeps" / "head" / "running", lambda m: m.get("done", 0) >= 1 and
                               m.get("step", "").startswith("fine-tuning") and
                               len(Store(cache / "runs").entries()) >= 2, lambda m: first.kill_head())
    run = _sweep(spec, cache, first.address, env={"RAY_gcs_rpc_server_reconnect_timeout_s": "8"}, wait=False)
    killer.join()
    assert killed, "no fine-tune was seen training after 2 entries landed"
    out, err = run.communicate(timeout=120)
    assert run.returncode == 75, (out[-2000:], err[-3000:])
    assert f"the Ray head at {first.address} has not answered" in err and "rerun the same command" in err
    assert _record(cache, "head")["state"] == "interrupted"
    first.shutdown()
    before = _entries_whole(cache)
    assert 2 <= len(before) < total
    second = nodes({"worker-a": (1, 1.5), "worker-b": (1, 1.5)})
    again = _sweep(spec, cache, second.address)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"its last run was interrupted before its end; resuming from the cache ({len(before)} of {total} jobs " \
           "cached)" in again.stdout
    assert f"{total} jobs: {len(before)} were cached, {total - len(before)} computed, 0 failed" in again.stdout
    after = _entries_whole(cache)
    assert len(after) == total and all(after[key] == created for key, created in before.items())
    _save_numbers("lost_head", {"cached_at_rerun": len(before), "rerun_seconds": _seconds(again.stdout)})


def _seconds(out: str) -> float:
    return float(re.search(r"; ([\d.]+) s \(Ray start", out).group(1))


def _save_numbers(what: str, numbers: dict) -> None:
    """Add the measured figures to $HEADPRUNE_CLUSTER_NUMBERS (JSON), when set: docs/sweeps.md quotes them."""
    if not BENCH_OUT:
        return
    path = Path(BENCH_OUT)
    saved = json.loads(path.read_text()) if path.is_file() else {}
    path.write_text(json.dumps({**saved, what: numbers}, indent=1))
