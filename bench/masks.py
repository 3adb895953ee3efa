"""Mask evaluation: what the dashboard's slider costs. Evaluating a new head mask (gate hooks, forward pass,
predictions and the metric) against one plain forward pass over the same sentences, and reading a point that is
already cached (building its key and reading the stored entry), as the dashboard does for a k seen before.
The browser's end-to-end time for the slider is in the demo section (it needs the demo study's cache)."""

from __future__ import annotations

import tempfile
import time

import numpy as np
import torch

from bench import workload
from bench.report import Goal, Section
from headprune_core.encoders.device import pick_device
from headprune_core.encoders.heads import head_shape
from headprune_core.encoders.speed import interleaved, paired_ratios, spread
from headprune_core.methods.evaluate import evaluate, strategy_mask
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study


def cached_point_ms(st: Study, model, batches: list[dict], labels, reads: int) -> dict:
    """Store one evaluation the way the study does, then time showing it again from a fresh store object:
    the eval config (its key) plus the entry read. Median and quartiles in ms."""
    with tempfile.TemporaryDirectory(prefix="headprune-bench-store-") as root:
        study = Study(st.model_id, store=Store(root), progress=False)
        ft = study.finetune_config(workload.TASK, (workload.LANG,))
        mask = strategy_mask(head_shape(model), "random", 40, seed=1).numpy()
        cfg = study.eval_config(ft, workload.TASK, workload.LANG, mask, max_sentences=workload.n_sentences(batches))
        study.store.put(cfg, {"result": evaluate(model, batches, labels, kind="token",
                                                 mask=torch.tensor(mask))})
        fresh = Study(st.model_id, store=Store(root), progress=False)
        fresh.eval_config(ft, workload.TASK, workload.LANG, mask, max_sentences=cfg.max_sentences)  # untimed:
        # the dashboard's Study has its data loaded and hashed already; what a seen k costs is key + read
        times = []
        for _ in range(reads):
            start = time.perf_counter()
            c = fresh.eval_config(ft, workload.TASK, workload.LANG, mask, max_sentences=cfg.max_sentences)
            found = fresh.store.get(c)
            times.append((time.perf_counter() - start) * 1000)
            if found is None:
                raise RuntimeError("the stored evaluation was not found again")
    return spread(times)


def run(*, model: str = "me5-small", device: str = "auto", quick: bool = False) -> Section:
    n, repeats, reads = (32, 2, 5) if quick else (200, 7, 50)
    st = workload.study(model)
    m = workload.model(st, device=device)  # transformers' default attention, as the dashboard loads it
    batches = workload.sentences(st, "test", n, batch_size=32)
    labels = st.data(workload.TASK, workload.LANG).labels
    shape = head_shape(m)
    rng = np.random.default_rng(0)

    def new_mask():
        k = int(rng.integers(1, shape[0] * shape[1]))
        evaluate(m, batches, labels, kind="token", mask=strategy_mask(shape, "random", k, seed=int(rng.integers(1e9))))

    times = interleaved({"forward": lambda: workload.forward_only(m, batches), "mask": new_mask},
                        repeats=repeats, warmup=1, device=pick_device(device))
    ratio = spread(paired_ratios(times["mask"], times["forward"]))
    fwd, ev = spread(times["forward"]), spread(times["mask"])
    cached = cached_point_ms(st, m, batches, labels, reads)
    sents = workload.n_sentences(batches)
    rows = [["one plain forward pass (no gradients, no metric)", sents, f"{fwd['median'] * 1000:.0f}", "1"],
            ["evaluate a new mask (gates, forward, predictions, metric)", sents, f"{ev['median'] * 1000:.0f}",
             f"{ratio['median']:.3f} ({ratio['q25']:.3f}-{ratio['q75']:.3f})"],
            ["show a cached point (eval config + stored entry read)", sents,
             f"{cached['median']:.1f} ({cached['q25']:.1f}-{cached['q75']:.1f})", "-"]]
    goals = [Goal("new mask / plain forward pass", "<= 1.1", f"{ratio['median']:.3f}",
                  ratio["median"] <= 1.1 if not quick else None),
             Goal("show a cached point", "<= 100 ms", f"{cached['median']:.1f} ms",
                  cached["median"] <= 100 if not quick else None)]
    notes = [f"{sents} English POS test sentences (the demo's evaluation size), batches of 32 as the study "
             f"evaluates; {repeats} interleaved rounds, each with a new random mask; cached reads: median of "
             f"{reads}. Ratios are medians of per-round ratios (quartiles in brackets)."]
    return Section("masks", "Mask evaluation: a new mask vs a plain forward pass; a cached point",
                   ["what", "sentences", "ms", "x forward pass"], rows, goals, notes)
