"""Physical pruning: forward latency of models with 25, 50 and 75% of their heads removed (random heads, seed 0)
against the full model, at 32, 128 and 512 tokens, batch 1 and 32, sdpa and eager attention, next to two limits:

- the FLOP limit (:func:`headprune_core.encoders.speed.flop_limit`): removing heads removes their projection slices and
  attention scores, nothing else (embeddings, FFN, LayerNorms stay);
- the time-share limit: the same, but with the share of *time* the full model spends in each layer's
  self-attention module and output projection, measured by hooks in the same run. Where the attention modules take
  a larger share of the time than of the FLOPs (reshapes, softmax and masking are memory-bound, not counted as
  FLOPs), a measured speed-up can exceed the FLOP limit without anything being wrong.

Every pruned model is timed interleaved with the full one (rotated order, a warm-up round); the speed-up is the
median of the per-round ratios with its quartiles. Parameter counts are checked against the exact size of the
removed slices.
"""

from __future__ import annotations

import time

import torch

from bench import workload
from bench.report import Goal, Section
from headprune_core.encoders.device import autocast, pick_device
from headprune_core.encoders.heads import (
    adapter_for,
    count_parameters,
    encoder_layers,
    head_dim,
    head_shape,
    pruned_copy,
)
from headprune_core.encoders.speed import (
    flop_limit,
    forward_fn,
    hidden_sizes,
    interleaved,
    paired_ratios,
    spread,
    synchronize,
)
from headprune_core.methods.evaluate import strategy_mask

FRACTIONS = (0.25, 0.5, 0.75)


def removed_parameters(model, mask: torch.Tensor) -> int:
    """Parameters removed with the heads ``mask`` zeroes: each head's query, key and value rows (weights and
    biases) and its output-projection columns."""
    hidden, _ = hidden_sizes(model)
    d = head_dim(model)
    return int((mask == 0).sum()) * (3 * (d * hidden + d) + hidden * d)


def attention_time(model, inputs: dict, device, rounds: int = 3) -> tuple[list[float], float]:
    """Seconds per forward pass spent in each layer's self-attention module plus its output projection, and in
    the whole pass (medians of ``rounds``), from hooks around those modules."""
    adapter = adapter_for(model)
    spent = [[0.0] * len(encoder_layers(model)) for _ in range(rounds)]
    starts: dict[tuple, float] = {}
    current = [0]

    def pre(key):
        def hook(module, args):
            synchronize(device)
            starts[key] = time.perf_counter()
        return hook

    def post(key, layer):
        def hook(module, args, output):
            synchronize(device)
            spent[current[0]][layer] += time.perf_counter() - starts[key]
        return hook

    handles = []
    for i, layer in enumerate(encoder_layers(model)):
        for path in (adapter.attn, adapter.out):
            mod = layer.get_submodule(path)
            handles += [mod.register_forward_pre_hook(pre((i, path))), mod.register_forward_hook(post((i, path), i))]
    totals = []
    try:
        with torch.no_grad(), autocast(device):
            model(**inputs)  # warm-up
            for r in range(rounds):
                current[0] = r
                start = time.perf_counter()
                model(**inputs)
                totals.append(time.perf_counter() - start)
    finally:
        for h in handles:
            h.remove()
    per_layer = [spread([spent[r][i] for r in range(rounds)])["median"] for i in range(len(spent[0]))]
    return per_layer, spread(totals)["median"]


def share_limit(per_layer: list[float], total: float, mask: torch.Tensor) -> float:
    """Speed-up if the attention modules' time shrank in proportion to the heads removed from each layer."""
    heads = mask.shape[1]
    saved = sum(t * float((mask[i] == 0).sum()) / heads for i, t in enumerate(per_layer))
    return total / (total - saved)


def run(*, model: str = "me5-small", device: str = "auto", quick: bool = False) -> Section:
    seqs, batch_sizes, fractions = ((32,), (1,), (0.5,)) if quick else ((32, 128, 512), (1, 32), FRACTIONS)
    dev = pick_device(device)
    st = workload.study(model)
    rows, goals, above = [], [], []
    for attn in ("sdpa", "eager"):
        m = workload.model(st, attn=attn, device=device)
        shape = head_shape(m)
        total_heads = shape[0] * shape[1]
        masks = {f: strategy_mask(shape, "random", round(f * total_heads), seed=0) for f in fractions}
        small = {f: pruned_copy(m, masks[f]).eval() for f in fractions}
        full_params = count_parameters(m)
        exact = {f: full_params - count_parameters(small[f]) == removed_parameters(m, masks[f]) for f in fractions}
        g = torch.Generator().manual_seed(0)
        for batch in batch_sizes:
            for seq in seqs:
                inputs = {"input_ids": torch.randint(5, 1000, (batch, seq), generator=g).to(dev),
                          "attention_mask": torch.ones(batch, seq, dtype=torch.long, device=dev)}
                per_layer, total = attention_time(m, inputs, dev)
                repeats = 3 if quick else (5 if total > 1.0 else 11)
                variants = {"full": forward_fn(m, inputs), **{f: forward_fn(small[f], inputs) for f in fractions}}
                times = interleaved(variants, repeats=repeats, warmup=1, device=dev)
                full_ms = spread(times["full"])["median"] * 1000
                for f in fractions:
                    r = spread(paired_ratios(times["full"], times[f]))
                    lim = flop_limit(m, masks[f], seq)
                    shl = share_limit(per_layer, total, masks[f])
                    rows.append([attn, batch, seq, f"{int(f * 100)}%", f"{full_ms:.1f}",
                                 f"{spread(times[f])['median'] * 1000:.1f}",
                                 f"{r['median']:.3f} ({r['q25']:.2f}-{r['q75']:.2f})", lim, r["median"] / lim, shl,
                                 f"{(full_params - count_parameters(small[f])) / 1e6:.2f}M", exact[f]])
                    if r["q25"] > lim:
                        above.append(f"{attn}, batch {batch}, {seq} tokens, {int(f * 100)}%: {r['median']:.2f}x "
                                     f"(quartiles {r['q25']:.2f}-{r['q75']:.2f}) vs FLOP limit {lim:.2f}x, "
                                     f"time-share limit {shl:.2f}x")
                    if f == 0.5 and seq == 128:
                        goals.append(Goal(f"{attn}, batch {batch}: speed-up / FLOP limit at 50% and 128 tokens",
                                          ">= 0.9", f"{r['median'] / lim:.2f}",
                                          r["median"] / lim >= 0.9 if not quick else None))
        goals.append(Goal(f"{attn}: parameters drop by exactly the removed slices", "exact",
                          ", ".join(f"{int(f * 100)}%: {'exact' if exact[f] else 'off'}" for f in fractions),
                          all(exact.values())))
        del m, small
    notes = [f"Device {dev.type}" + (" with bf16 autocast" if dev.type == "cuda" else ", fp32") +
             f"; random token ids, all tokens attended; heads removed at random (seed 0) from {model}.",
             "'x of limit' = measured speed-up / FLOP limit. The time-share limit is computed from the full model's "
             "time in its attention modules in this run (hooks), in proportion to the heads removed per layer."]
    if above:
        notes.append("Above the FLOP limit (lower quartile of the speed-up above it): " + "; ".join(above) +
                     ". See the time-share column: the attention modules' share of time exceeds their share of "
                     "FLOPs (memory-bound reshapes, softmax and masking, which grow with the number of heads).")
    return Section("pruning", "Physical pruning: latency vs the FLOP limit",
                   ["attention", "batch", "tokens", "heads removed", "full ms", "pruned ms",
                    "speed-up (quartiles)", "FLOP limit", "x of limit", "time-share limit", "params removed",
                    "params exact"], rows, goals, notes)


def sequential_speedup(full, small, inputs: dict, *, repeats: int = 5) -> float:
    """The latency panel's former estimate: one warm-up, then ``repeats`` runs of the full model, then
    ``repeats`` of the pruned one, ratio of the two medians (no interleaving)."""
    def timed(m) -> float:
        times = []
        with torch.no_grad():
            m(**inputs)
            for _ in range(repeats):
                start = time.perf_counter()
                m(**inputs)
                times.append(time.perf_counter() - start)
        return spread(times)["median"]
    return timed(full) / timed(small)


def panel_estimators(*, model: str = "me5-small", device: str = "auto", quick: bool = False) -> Section:
    """The dashboard's latency panel, old estimate vs new, each repeated: how far apart do repeated
    measurements of the same pruned model land? (The issue saw 1.41x at 72 of 144 heads.)"""
    from headprune_core.encoders.speed import measure_speed

    trials = 1 if quick else 8
    st = workload.study(model)
    m = workload.model(st, device=device)  # default attention, as the dashboard loads it
    n = 4 if quick else 32  # the panel's batch: 32 test sentences
    batch = workload.sentences(st, "test", n, batch_size=n)[-1]
    inputs = {"input_ids": batch["input_ids"].to(m.encoder.device),
              "attention_mask": batch["attention_mask"].to(m.encoder.device)}
    shape = head_shape(m)
    mask = strategy_mask(shape, "random", shape[0] * shape[1] // 2, seed=0)
    small = pruned_copy(m, mask).eval()
    old, new = [], []
    for _ in range(trials):  # alternate the two estimators so drift hits both
        old.append(sequential_speedup(m, small, inputs))
        new.append(measure_speed(m, mask, batch)["speedup"])
    lim = flop_limit(m, mask, int(inputs["input_ids"].shape[1]))
    per_layer, total = attention_time(m, inputs, m.encoder.device)
    shl = share_limit(per_layer, total, mask)
    rows = [[name, trials, f"{min(v):.2f}", f"{spread(v)['median']:.2f}", f"{max(v):.2f}", f"{lim:.2f}",
             sum(x > lim for x in v), f"{shl:.2f}"]
            for name, v in (("former: sequential medians, 5 runs each", old),
                            ("now: interleaved, 7 rounds, median of ratios", new))]
    notes = [f"Batch: the panel's, {n} English POS test sentences padded to {inputs['input_ids'].shape[1]} tokens; "
             f"{shape[0] * shape[1] // 2} of {shape[0] * shape[1]} heads removed at random (seed 0); default "
             "attention (sdpa) as the dashboard loads the model. Each trial is one press of the panel's button."]
    return Section("panel", "The latency panel: one measurement, repeated", ["estimate", "trials", "min",
                   "median", "max", "FLOP limit", "trials above the limit", "time-share limit"], rows, [], notes)
