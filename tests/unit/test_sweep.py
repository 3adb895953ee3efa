"""Sweep specs and job graphs without Ray: validation, expansion into the study's own jobs, dependencies,
re-fine-tunings expanded once ranked, estimates from measured times, and the worker function run in-process."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from headprune_core.base.files import write_file_atomic
from headprune_core.cli.main import main
from headprune_core.plans.plan import plan_jobs, run_plan
from headprune_core.plans.sweep import SweepSpec, build_graph
from headprune_core.plans.sweep_cost import dry_run, format_dry_run
from headprune_core.plans.sweep_ray import run_job
from headprune_core.plans.sweep_record import SweepRecord, list_sweeps
from headprune_core.runs.estimate import THREAD_SCALING, estimate, job_work, measured_rates
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study


def _spec(model: str, **over) -> dict:
    spec = {"name": "t", "models": [model], "tasks": ["pos"], "langs": ["en", "de"], "strategies": ["importance"],
            "random_seeds": [0, 1], "curve_step": 4, "score_sentences": 40, "eval_sentences": 40,
            "train": {"max_train_sentences": 120, "epochs": 2.0, "lr": 1e-3}}
    return {**spec, **over}


@pytest.mark.parametrize("data, message", [
    ([], "sweep spec: a sweep spec is a JSON object of fields, got list"),
    ({"models": ["m"]}, "sweep spec: a sweep spec needs a name"),
    ({"name": "../x"}, "sweep name"),
    ({"name": "s", "model": "m"}, "write 'model' as 'models' (a list: the sweep's grid)"),
    ({"name": "s", "sources": {}}, "write 'sources' as 'data'"),
    ({"name": "s", "models": []}, "models must be a non-empty list of model names"),
    ({"name": "s", "seeds": [1, "2"]}, "seeds must be a list of whole numbers"),
    ({"name": "s", "resources": {"train": {"num_cpus": 1}}}, "resources for unknown job kind 'train'; known: "
                                                             "finetune, score, eval, curve, refinetune"),
    ({"name": "s", "resources": {"score": {"num_cpus": -1}}},
     "resources.score.num_cpus must be a number of at least 0"),
    ({"name": "s", "resources": {"score": {"memory": 1}}}, "resources.score takes num_cpus, num_gpus"),
    ({"name": "s", "preset": "nope"}, "unknown study plan 'nope'; known: demo, findings"),
    ({"name": "s", "epochs": 3}, "unknown plan fields ['epochs']"),
    ({"name": "s", "_model": "x"}, "unknown plan fields ['_model']"),
    ({"name": "s", "strategies": ["best"]}, "unknown strategy 'best'"),
    ({"name": "s", "prune_levels": [0.5, 1.5]}, "prune_levels must be shares of the heads in (0, 1]"),
    ({"name": "s", "refinetune": {"max_k": -1}}, "refinetune[0]: max_k must be 0 or more"),
    ({"name": "s", "refinetune": {"k": 3}}, "unknown refinetune options ['k']"),
    ({"name": "s", "refinetune": [{}, {"strategy": "best"}]}, "refinetune[1]: unknown re-fine-tuning strategy 'best'"),
    ({"name": "s", "refinetune": [{"tasks": ["ner"]}]}, "refinetune[0]: tasks must be a list of the plan's tasks"),
    ({"name": "s", "refinetune": [{"shares": [2]}]}, "refinetune[0]: shares must be shares of the heads in (0, 1]"),
    ({"name": "s", "refinetune": [{"seeds": [1, 1]}]}, "refinetune[0]: seeds must be distinct integers"),
    ({"name": "s", "refinetune": [{"train": {"lr": -1}}]}, "epochs, lr and head_lr must be positive"),
    ({"name": "s", "refinetune": [{"train": {"pruned": []}}]}, "train options ['pruned'] are not fine-tuning"),
    ({"name": "s", "refinetune": "yes"}, "refinetune must be a list of objects"),
    ({"name": "s", "kinds": []}, "kinds must be a non-empty list of job kinds"),
    ({"name": "s", "kinds": "curve"}, "kinds must be a non-empty list of job kinds"),
    ({"name": "s", "kinds": ["curves"]}, "unknown job kind 'curves' in kinds; known: finetune, score, eval, curve"),
])
def test_bad_specs_fail_before_any_work(data, message):
    with pytest.raises(ValueError) as err:
        SweepSpec.from_dict(data)
    assert message in str(err.value) and str(err.value).startswith("sweep spec: ")


def test_unknown_field_names_the_sweep_fields_too():
    with pytest.raises(ValueError, match="a sweep spec also has: name, description, preset, models, data, seeds"):
        SweepSpec.from_dict({"name": "s", "epochs": 3})


def test_preset_spec_is_the_preset(tmp_path):
    from headprune_core.plans.presets import find_plan
    spec = SweepSpec.from_dict({"name": "d", "preset": "demo"})
    (plan,) = spec.plans()
    demo = find_plan("demo")
    assert {**plan.to_dict(), "name": "demo", "description": ""} == {**demo.to_dict(), "description": ""}
    grid = SweepSpec.from_dict({"name": "d", "preset": "demo", "seeds": [1, 2], "langs": ["en", "de"],
                                "models": ["me5-small", "minilm-l6-en"]})
    plans = grid.plans()
    assert [(p.model, p.train["seed"]) for p in plans] == [("me5-small", 1), ("me5-small", 2),
                                                            ("minilm-l6-en", 1), ("minilm-l6-en", 2)]
    assert all(p.langs == ("en", "de") and p.train["max_train_sentences"] == 300 for p in plans)
    assert grid.label(3) == "minilm-l6-en, seed 2"


def test_local_data_in_a_spec_file_is_relative_to_it(tmp_path):
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "s.json").write_text(json.dumps({"name": "s", "tasks": ["mine"], "langs": ["sw"],
                                               "source_langs": ["sw"], "data": [{"mine": "sw.conll"}]}))
    spec = SweepSpec.from_file(folder / "s.json")
    assert spec.data[0]["mine"] == str(folder / "sw.conll")


def test_graph_is_the_studies_jobs_deduplicated_in_dependency_order(tiny_cache, tmp_path):
    root, model = tiny_cache
    store = Store(tmp_path / "runs")
    spec = SweepSpec.from_dict(_spec(model, models=[model, model], seeds=[13, 14]))
    graph = build_graph(spec, store=store)
    one = spec.plans()[0]
    # the same model twice is one set of jobs; two seeds are two
    keys = [f"{j.cfg.kind}/{j.cfg.key()}" for p in spec.plans()[:2] for j in plan_jobs(Study(model, store=store), p)]
    assert list(graph.jobs) == list(dict.fromkeys(keys))
    assert len(graph.jobs) == 2 * len(plan_jobs(Study(model, store=store), one))
    seen = set()
    for nid, node in graph.jobs.items():
        assert set(node.deps) <= seen, node.what  # everything a job reads comes before it
        seen.add(nid)
        if node.cfg.kind == "curve" and node.cfg.strategy == "importance":
            assert node.deps == [node.cfg.finetune.kind + "/" + node.cfg.finetune.key(),
                                 "score/" + node.cfg.ranking.key()]
    assert [n.what for n in graph.jobs.values() if n.cfg.kind == "finetune"] == \
        ["fine-tune pos (cross, en) [seed 13]", "fine-tune pos (cross, en) [seed 14]"]
    assert graph.counts()["todo"] == len(graph.jobs)
    ready = graph.ready()
    assert [n.cfg.kind for n in ready] == ["finetune", "finetune"]  # nothing else can start before them


def test_kinds_keep_those_jobs_and_what_they_read(tiny_cache, tmp_path, monkeypatch):
    """A spec restricted to some job kinds is a part of the full sweep with the same keys (what start.sh runs
    before the dashboard, then the rest behind it); a kind's inputs are in it whatever their kind."""
    root, model = tiny_cache
    store = _cache(root, tmp_path / "cache", monkeypatch)
    full = build_graph(SweepSpec.from_dict(_spec(model)), store=store)
    first = build_graph(SweepSpec.from_dict(_spec(model, kinds=["eval", "finetune", "score"])), store=store)
    assert first.spec.kinds == ("finetune", "score", "eval")
    assert {n.cfg.kind for n in full.jobs.values()} == {"finetune", "score", "eval", "curve"}
    assert list(first.jobs) == [nid for nid, n in full.jobs.items() if n.cfg.kind != "curve"]
    curves = build_graph(SweepSpec.from_dict(_spec(model, kinds=["curve"])), store=store)
    read = {d for n in full.jobs.values() if n.cfg.kind == "curve" for d in n.deps}
    assert set(curves.jobs) == {n for n, node in full.jobs.items() if node.cfg.kind == "curve"} | read
    assert {full.jobs[d].cfg.kind for d in read} == {"finetune", "score"}  # not the target languages' scores
    assert len(read) < sum(n.cfg.kind in ("finetune", "score") for n in full.jobs.values())
    # the first part computed, the full sweep has only the curves left
    while ready := first.ready():
        for node in ready:
            run_job({"kind": node.cfg.kind, "key": node.cfg.key(), "config": node.cfg.to_dict(),
                     "what": node.what, "plan": {"model": model, "sources": {}, "finetuned": False},
                     "cache": str(store.root.parent), "device": "cpu", "run": "r", "markers": str(tmp_path / "m")})
            node.state = "done"
    rest = build_graph(SweepSpec.from_dict(_spec(model)), store=store)
    assert {n.cfg.kind for n in rest.jobs.values() if n.state == "todo"} == {"curve"}
    assert rest.counts()["cached"] == len(first.jobs)


def test_running_says_whether_a_sweep_of_that_name_runs(tiny_cache, tmp_path, monkeypatch, capsys):
    """``sweep SPEC --running`` (start.sh asks it before starting the demo sweep in the background): 0 while a
    live driver's record says running, 1 when none or when its driver is gone."""
    root, model = tiny_cache
    store = _cache(root, tmp_path / "cache", monkeypatch)
    spec_file = tmp_path / "t.json"
    spec_file.write_text(json.dumps(_spec(model)))
    assert main(["sweep", str(spec_file), "--running"]) == 1
    progress = SweepRecord(build_graph(SweepSpec.from_file(spec_file), store=store), "run1")
    progress.write(force=True)  # state running, driver: this process
    assert main(["sweep", str(spec_file), "--running"]) == 0
    assert "sweep t runs: 0 of " in capsys.readouterr().out
    rec_file = progress.folder / "progress.json"
    rec = json.loads(rec_file.read_text())
    rec["driver"]["pid"] = 2**22 + 12345  # no such process: a driver killed without saying so
    rec_file.write_text(json.dumps(rec))
    assert main(["sweep", str(spec_file), "--running"]) == 1
    progress.state = "done"
    progress.write(force=True)
    assert main(["sweep", str(spec_file), "--running"]) == 1


def _cache(root: Path, folder: Path, monkeypatch) -> Store:
    """A new cache folder using the fixture's model and corpora, made the current one."""
    folder.mkdir(parents=True)
    (folder / "models").symlink_to(root / "models")
    (folder / "corpora").symlink_to(root / "corpora")
    monkeypatch.setenv("HEADPRUNE_CACHE", str(folder))
    return Store(folder / "runs")


def test_worker_function_computes_through_the_store_and_a_rerun_reads(tiny_cache, tmp_path, monkeypatch):
    """``run_job`` (what each Ray task runs) driven in-process in the graph's order: every job computed once,
    the result equals the sequential study's, and the progress record says so."""
    root, model = tiny_cache
    store = _cache(root, tmp_path / "cache", monkeypatch)
    spec = SweepSpec.from_dict(_spec(model, prune_levels=[0.25, 0.5], refinetune={"max_k": 2}))
    graph = build_graph(spec, store=store)
    (rc_node,) = [n for n in graph.jobs.values() if n.cfg.kind == "refinetune"]
    assert not rc_node.expanded
    report = dry_run(graph)
    # k = 1, 2 pruned fine-tunes; per level k = 0, 1, 2 a dev and 2 test evaluations
    assert report["later_jobs"] == 2 + 3 * (1 + 2)
    progress = SweepRecord(graph, "run1")
    computed = 0
    while ready := graph.ready():
        for node in ready:
            res = run_job({"kind": node.cfg.kind, "key": node.cfg.key(), "config": node.cfg.to_dict(),
                           "what": node.what, "plan": {"model": model, "sources": {}, "finetuned": False},
                           "cache": str(store.root.parent), "device": "cpu", "run": "run1",
                           "markers": str(progress.folder / "running")})
            assert res["attempt"] == 1 and res["key"] == node.cfg.key()
            node.state, computed = "done", computed + res["computed"]
    assert rc_node.expanded and all(n.state == "done" for n in graph.jobs.values())
    assert computed == len(graph.jobs) and not list((progress.folder / "running").iterdir())
    progress.state = "done"
    progress.write(force=True)
    (rec,) = [r for r in list_sweeps() if r["name"] == "t"]
    assert rec["counts"]["done"] == len(graph.jobs) and rec["state"] == "done" and rec["driver_alive"]
    # the curves use the prune levels (and 0), and equal what the sequential study computes in another store
    curve = next(n for n in graph.jobs.values() if n.cfg.kind == "curve" and n.cfg.strategy == "importance")
    assert curve.cfg.steps == (0, 3, 6)  # 25% and 50% of 3 x 4 heads
    seq = Study(model, store=Store(tmp_path / "seq"), progress=False)
    plan = spec.plans()[0]
    run_plan(seq, plan)
    assert seq.curve(curve.cfg) == Study(model, store=store, progress=False).curve(curve.cfg)
    assert seq.refinetune(rc_node.cfg) == store.get(rc_node.cfg)["result"]
    again = build_graph(spec, store=store)
    assert again.counts()["cached"] == len(again.jobs) and not again.ready()


def test_dry_run_estimates_from_measured_job_times(tiny_cache, tmp_path, capsys, monkeypatch):
    root, model = tiny_cache
    store = _cache(root, tmp_path / "cache", monkeypatch)
    spec13 = SweepSpec.from_dict(_spec(model, seeds=[13]))
    run_plan(Study(model, store=store, progress=False), spec13.plans()[0])
    measured = {e.kind: e for e in store.entries()}
    assert all(e.seconds is not None and e.seconds > 0 for e in store.entries())
    threads = measured["finetune"].threads
    assert threads == torch.get_num_threads()
    report = dry_run(build_graph(spec13, store=store), cpus=2)
    assert report["todo"] == 0 and report["cached"] == report["jobs"] and report["seconds"] == 0
    # jobs with as many CPUs as the measured ones: the same work as the one measured fine-tune takes its time,
    # twice (two seeds)
    spec14 = SweepSpec.from_dict(_spec(model, seeds=[14, 15], resources={k: {"num_cpus": threads} for k in
                                                                          ("finetune", "score", "eval", "curve")}))
    graph = build_graph(spec14, store=store)
    report = dry_run(graph, cpus=2)
    assert report["todo"] == report["jobs"] == len(graph.jobs) and not report["unknown_kinds"]
    assert report["kinds"]["finetune"]["seconds"] == pytest.approx(2 * measured["finetune"].seconds)
    assert report["wall_seconds"] >= report["seconds"] * threads / 2 - 1e-9
    assert report["wall_seconds"] >= report["critical_seconds"] and not report["notes"]
    # one CPU a job (the default): scaled from the measured thread count
    one = dry_run(build_graph(SweepSpec.from_dict(_spec(model, seeds=[14, 15])), store=store), cpus=2)
    scale = (threads / 1) ** THREAD_SCALING
    assert one["kinds"]["finetune"]["seconds"] == pytest.approx(2 * measured["finetune"].seconds * scale)
    assert (threads == 1) == (not one["notes"])
    text = format_dry_run(report)
    assert "0 cached" in text and "from " in text and "measured entries" in text
    # the CLI prints the same (a spec file, the dry run computes nothing)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**_spec(model, seeds=[14, 15])}))
    before = len(store.entries())
    assert main(["sweep", str(path), "--dry-run", "--cache", str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    assert "sweep t: 2 grid point(s)" in out and len(store.entries()) == before


def test_job_work_units(tiny_cache, tmp_path):
    root, model = tiny_cache
    study = Study(model, store=Store(tmp_path / "runs"), progress=False)
    ft = study.finetune_config("pos", ("en",), max_train_sentences=100, epochs=2.0)
    assert job_work(ft) == 100 * 2.0
    ec = study.eval_config(ft, "pos", "de", max_sentences=30)
    assert job_work(ec) == ec.max_sentences == min(30, study.split_size("pos", "de", "test"))
    cc = study.curve_config(ft, "pos", "en", strategy="random", steps=(0, 4, 8), seeds=(0, 1), max_sentences=30,
                            score_sentences=30)
    assert job_work(cc) == 30 * 3 * 2


def test_a_plans_gradts_validation_is_one_sweep_job(tiny_cache, tmp_path, monkeypatch):
    """A plan's ``gradts`` (here a plan file) becomes one job; the worker computes it from the plan sent with
    the job, and its entry is the one the sequential GradTS gives."""
    from headprune_core.multitask.gradts import GradTS
    from headprune_core.multitask.plan import GradTSPlan
    root, model = tiny_cache
    store = _cache(root, tmp_path / "cache", monkeypatch)
    gplan = {"name": "g", "description": "tiny", "model": model, "units": ["pos/en", "name/en", "pos/de"],
             "primaries": ["pos/en"], "max_trial": 1, "random_seeds": [0], "score_sentences": 20,
             "eval_sentences": 20, "train": {"max_train_sentences": 40, "epochs": 1.0, "lr": 1e-3},
             "train_seeds": [13], "bandit": {"rounds": 3, "round_steps": 2, "dev_sentences": 10}}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(gplan))
    spec = SweepSpec.from_dict(_spec(model, langs=["en"], strategies=["importance"], gradts=[str(path)]))
    graph = build_graph(spec, store=store)
    (node,) = [n for n in graph.jobs.values() if n.cfg.kind == "gradts"]
    assert graph.gradts_plan(node) == GradTSPlan.from_file(path) and not node.deps
    report = dry_run(graph)
    assert report["kinds"]["gradts"]["todo"] == 1
    res = run_job({"kind": "gradts", "key": node.cfg.key(), "config": node.cfg.to_dict(), "what": node.what,
                   "plan": {"model": model, "sources": {}, "finetuned": False}, "gradts": gplan,
                   "cache": str(store.root.parent), "device": "cpu", "run": "r", "markers": str(tmp_path / "m")})
    assert res["computed"] and store.has(node.cfg)
    seq = GradTS(Study(model, store=Store(tmp_path / "seq"), progress=False), GradTSPlan.from_file(path)).run()
    mine = store.get(node.cfg)
    def rows(res):  # times aside
        return [{k: v for k, v in r.items() if k != "train_seconds"} for r in res["result"]["validation"][0]["rows"]]
    assert rows(mine) == rows(seq) and len(rows(mine)) >= 4
    # its measured time estimates a larger GradTS (findings-full's) by the sentence-epochs it trains on
    rates = measured_rates(store)
    bigger = dataclasses.replace(node.cfg, train=tuple(sorted({**dict(node.cfg.train), "max_train_sentences": 400,
                                                               "epochs": 3.0}.items())))
    (small, how), (big, _) = estimate(node.cfg, rates), estimate(bigger, rates)
    assert how.startswith("measured") and big == pytest.approx(30 * small)
    with pytest.raises(ValueError, match="gradts: unknown GradTS plan 'nope'"):
        SweepSpec.from_dict(_spec(model, gradts=["nope"]))


def test_an_address_is_checked_before_ray_waits_on_it():
    """Where nothing listens, refused at once; where something takes connections but is no Ray cluster, or the
    host never answers, given up at the timeout; each error names the address (Ray alone retries for minutes)."""
    import socket
    import threading

    from headprune_core.plans.sweep_ray import check_reachable
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        threading.Thread(target=lambda: [server.accept() for _ in range(50)], daemon=True).start()
        with pytest.raises(RuntimeError, match=rf"no Ray cluster at 127\.0\.0\.1:{port}: something takes "
                                               r"connections there, but no Ray answered within 5 s"):
            check_reachable(f"127.0.0.1:{port}", timeout=5)
    with socket.socket() as unused:  # bound, never listening: nothing takes connections there
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        with pytest.raises(RuntimeError, match=rf"no Ray cluster at 127\.0\.0\.1:{port}: Connection refused \("):
            check_reachable(f"127.0.0.1:{port}", timeout=2)
    with pytest.raises(RuntimeError, match=r"no Ray cluster at 10\.255\.255\.1:6379: "):
        check_reachable("10.255.255.1:6379", timeout=3)
    check_reachable("auto")  # Ray's own lookup, and ray:// client addresses, are Ray's to resolve


def test_the_retry_decision_counts_lost_and_failed_attempts_apart():
    """After an attempt that did not finish: a lost one whose entry landed is done (never computed again); lost
    attempts are retried LOST_RETRIES times and errors ERROR_RETRIES times, each counted apart; then failed."""
    from headprune_core.plans.sweep_ray import ERROR_RETRIES, LOST_RETRIES, retry_decision
    lost = [{"lost": True}] * LOST_RETRIES
    errors = [{"lost": False}] * ERROR_RETRIES
    assert retry_decision(lost=True, landed=True, retries=lost) == "done"
    assert retry_decision(lost=True, landed=False, retries=[]) == "retry"
    assert retry_decision(lost=True, landed=False, retries=lost[:-1] + errors) == "retry"  # errors do not count
    assert retry_decision(lost=True, landed=False, retries=lost) == "failed"
    assert retry_decision(lost=False, landed=False, retries=lost) == "retry"  # losses do not count against errors
    assert retry_decision(lost=False, landed=False, retries=errors) == "failed"


def test_a_sweep_reports_each_job_in_a_line_and_a_retry_with_its_reason():
    """The sweep's progress (``on_progress(what, finished, jobs)``): a job's state and name, and a resubmitted
    job says which attempt and why the last one was redone."""
    from headprune_core.plans.sweep import JobNode
    from headprune_core.plans.sweep_ray import job_label
    job = JobNode("finetune/abc", "fine-tune pos", cfg=None, plan=0, state="running", attempts=1)
    assert job_label(job) == "running: fine-tune pos"
    job.retries.append({"attempt": 1, "node": "w1 (ab12)", "reason": "lost with its node", "lost": True})
    job.attempts = 2
    assert job_label(job) == "retrying fine-tune pos (attempt 2): attempt 1 lost with its node on w1 (ab12)"
    job.state = "done"
    assert job_label(job) == "done: fine-tune pos"


def test_a_running_job_writes_how_far_it_is_into_its_marker(tiny_cache, tmp_path, monkeypatch):
    """The marker of a running job says its step and count (what a test waits on to know a fine-tune is in
    training: an event, not a duration), and goes when the job ends."""
    import headprune_core.plans.sweep_ray as sweep_ray
    root, model = tiny_cache
    store = _cache(root, tmp_path / "cache", monkeypatch)
    graph = build_graph(SweepSpec.from_dict(_spec(model)), store=store)
    ft = next(n for n in graph.jobs.values() if n.cfg.kind == "finetune")
    written = []
    monkeypatch.setattr(sweep_ray, "write_file_atomic", lambda path, text: written.append(json.loads(text)) or
                        write_file_atomic(path, text))
    markers = tmp_path / "m"
    run_job({"kind": "finetune", "key": ft.cfg.key(), "config": ft.cfg.to_dict(), "what": ft.what,
             "plan": {"model": model, "sources": {}, "finetuned": False}, "cache": str(store.root.parent),
             "device": "cpu", "run": "r", "markers": str(markers)})
    assert "done" not in written[0] and written[0]["key"] == ft.cfg.key()  # the marker as the job starts
    steps = [w for w in written[1:] if w["step"].startswith("fine-tuning")]
    trained = [w for w in steps if w["done"]]
    assert trained and all(w["done"] <= w["total"] for w in trained)  # a step of training done, of its total
    assert not list(markers.iterdir())  # gone when the job ended
    assert all(s.on_progress is None for s in sweep_ray._WORKER_STUDIES.values())  # no stale marker writer
