"""Benchmark: gate_grad (weights frozen, only the gates need gradients) vs a full-parameter backward, and the
other scoring methods, on the same batches of the embedded model, in one run. Prints ratios.

    PYTHONPATH=. python bench/bench_scoring.py [--model me5-small] [--sentences 160] [--repeats 2]
"""

from __future__ import annotations

import argparse
import time

import torch

from headprune_core.classifier import HeadedEncoder, TaskHead
from headprune_core.importance import score_heads
from headprune_core.models import load_model
from headprune_core.study import Study


def full_backward(model, batches) -> None:
    """What scoring would cost if every weight needed its gradient (as when head_mask rode on training)."""
    model.eval()
    for b in batches:
        loss, _ = model.loss(b)
        loss.backward()
        model.zero_grad(set_to_none=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="me5-small")
    ap.add_argument("--sentences", type=int, default=160)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    study = Study(args.model, progress=False)
    data = study.data("pos", "en")
    model = HeadedEncoder(load_model(args.model).encoder, {"pos": TaskHead("token", tuple(data.labels))})
    batches = study.eval_batches("pos", "en", "validation", args.sentences, batch_size=16)
    n_tok = sum(int((b["labels"] != -100).sum()) for b in batches)
    print(f"{args.model}: {len(batches)} batches, {n_tok} labelled tokens, {torch.get_num_threads()} threads")
    timings = {}
    jobs = {"full backward (all weights)": lambda: full_backward(model, batches)}
    for method in ("gate_grad", "kv_grad", "taylor", "entropy"):
        jobs[method] = lambda m=method: score_heads(model, batches, method=m)
    for name, job in jobs.items():
        job()  # warm-up
        best = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            job()
            best = min(best, time.perf_counter() - t0)
        timings[name] = best
    base = timings["full backward (all weights)"]
    for name, secs in timings.items():
        print(f"  {name:28} {secs:7.2f} s   {secs / base:5.2f} x full backward")


if __name__ == "__main__":
    main()
