"""Benchmark: forward latency and size of the physically pruned embedded model vs the full model, for several
numbers of pruned heads, sdpa and eager attention, in one run. Prints ratios.

    PYTHONPATH=. python bench/bench_pruned_speed.py [--batch 32] [--seq 128]
"""

from __future__ import annotations

import argparse

import torch

from headprune_core.classifier import HeadedEncoder, TaskHead
from headprune_core.evaluate import measure_speed, strategy_mask
from headprune_core.heads import head_shape
from headprune_core.models import load_model


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="me5-small")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    g = torch.Generator().manual_seed(0)
    for attn in ("sdpa", "eager"):
        loaded = load_model(args.model, attn_implementation=attn)
        model = HeadedEncoder(loaded.encoder, {"t": TaskHead("token", ("A", "B"))}).eval()
        batch = {"input_ids": torch.randint(5, 1000, (args.batch, args.seq), generator=g),
                 "attention_mask": torch.ones(args.batch, args.seq, dtype=torch.long)}
        shape = head_shape(model)
        for k in (36, 72, 108, 144):
            mask = strategy_mask(shape, "random", k, seed=0)
            r = measure_speed(model, mask, batch, repeats=args.repeats)
            print(f"{attn:5} pruned {k:3}/{shape[0] * shape[1]}: params {r['params_pruned'] / 1e6:6.1f}M of "
                  f"{r['params_full'] / 1e6:6.1f}M, latency {r['latency_pruned_ms']:7.1f} ms vs "
                  f"{r['latency_full_ms']:7.1f} ms = {r['speedup']:.2f}x faster")


if __name__ == "__main__":
    main()
