"""How fast a physically pruned model runs, measured fairly, and how fast it could run at most.

Timing on a shared machine is noisy and drifts (CPU frequency, other processes), so the models compared are timed
*interleaved*: one run of each per round, the order rotated every round, after a warm-up; results are medians
with their spread, and a speed-up is the median of the per-round ratios. The analytic side counts floating-point
operations of the encoder as built and as pruned (:func:`encoder_flops`): removing heads removes their query, key,
value and output-projection slices and their attention scores, nothing else, so the FLOP ratio is the speed-up a
compute-bound run can reach. Used by the dashboard's latency panel and by ``python -m bench``.

>>> # r = measure_speed(model, mask, batch); r["speedup"], r["speedup_q25"], r["speedup_q75"], r["flop_limit"]
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

from headprune_core.encoders.device import autocast, device_of, to_device
from headprune_core.encoders.heads import base_model, count_parameters, head_dim, head_shape, present_mask, pruned_copy

SOFTMAX_FLOPS = 5  # per attention score: max, subtract, exp, sum, divide
LAYERNORM_FLOPS = 8  # per element: mean, variance, normalise, scale, shift


def synchronize(device: torch.device | None) -> None:
    """Wait for queued GPU work (a no-op on the CPU), so a timer stops when the work is really done."""
    if device is not None and device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved(fns: dict[str, Callable[[], object]], *, repeats: int = 7, warmup: int = 1,
                device: torch.device | None = None) -> dict[str, list[float]]:
    """Seconds of each function over ``repeats`` rounds; each round runs every function once, the order rotated
    round by round, so drift and noise fall on all of them alike. ``warmup`` untimed rounds first."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            fns[name]()
    synchronize(device)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            synchronize(device)
            start = time.perf_counter()
            fns[name]()
            synchronize(device)
            times[name].append(time.perf_counter() - start)
    return times


def forward_fn(model: torch.nn.Module, inputs: dict) -> Callable[[], None]:
    """A no-argument forward pass of ``model`` on ``inputs`` (no gradients, autocast where safe), to be timed."""
    device = device_of(model)

    def run() -> None:
        with torch.no_grad(), autocast(device):
            model(**inputs)
    return run


def spread(values) -> dict:
    """Median and quartiles of ``values``."""
    arr = np.asarray(values, dtype=np.float64)
    q25, median, q75 = np.percentile(arr, [25, 50, 75])
    return {"median": float(median), "q25": float(q25), "q75": float(q75), "n": int(arr.size)}


def paired_ratios(numerator: list[float], denominator: list[float]) -> list[float]:
    """Per-round ratios of two interleaved timings (e.g. full / pruned = speed-up)."""
    return [a / b for a, b in zip(numerator, denominator) if b > 0]


def hidden_sizes(model: torch.nn.Module) -> tuple[int, int]:
    """(hidden size, FFN inner size) of the encoder, whatever its family calls them."""
    config = base_model(model).config
    hidden = getattr(config, "hidden_size", None) or config.dim  # DistilBERT names them dim / hidden_dim
    ffn = getattr(config, "intermediate_size", None) or config.hidden_dim
    return int(hidden), int(ffn)


def encoder_flops(model: torch.nn.Module, seq: int, *, mask: torch.Tensor | None = None,
                  n_labels: int = 0, elementwise: bool = True) -> dict[str, float]:
    """Floating-point operations of one sequence of ``seq`` tokens through the encoder, by part.

    Heads counted are those physically present in ``model`` and, if ``mask`` is given, kept by it (1 = keep).
    A multiply-add is 2 FLOPs. Parts: ``embedding`` (adding the three embeddings and their LayerNorm: lookups
    themselves are free), ``attention projections`` (query, key, value and output slices of the present heads),
    ``attention scores`` (QK^T, softmax, scores times V), ``FFN`` (both linear layers and GELU), ``other``
    (the layers' LayerNorms and residual adds, and a token classifier of ``n_labels``). Batch size scales every
    part alike, so ratios do not depend on it. ``elementwise=False`` counts matrix products only (what
    ``torch.utils.flop_counter`` counts; the tests compare the two).
    """
    hidden, ffn = hidden_sizes(model)
    present = present_mask(model)
    if mask is not None:
        present = present * (torch.as_tensor(mask, dtype=torch.float32) != 0)
    return config_flops(hidden=hidden, ffn=ffn, head_dim=head_dim(model), heads=present.sum(dim=1).tolist(),
                        seq=seq, n_labels=n_labels, elementwise=elementwise)


def config_flops(*, hidden: int, ffn: int, head_dim: int, heads: list[int], seq: int, n_labels: int = 0,
                 elementwise: bool = True) -> dict[str, float]:
    """:func:`encoder_flops` from sizes alone (no model built): ``heads`` is the number of heads in each layer.
    A dry run estimates a job's GPU time from it (runs/gpu_estimate.py)."""
    n_layers, d, e = len(heads), head_dim, 1 if elementwise else 0
    proj = sum(2 * seq * hidden * h * d * 4 for h in heads)  # (seq, hidden) x (hidden, h*d), 3 in + 1 out
    scores = sum(h * (2 * seq * seq * d * 2 + e * SOFTMAX_FLOPS * seq * seq) for h in heads)
    ffn_flops = n_layers * (2 * seq * hidden * ffn * 2 + e * 8 * seq * ffn)
    embedding = e * seq * hidden * (2 + LAYERNORM_FLOPS)
    other = e * n_layers * 2 * seq * hidden * (1 + LAYERNORM_FLOPS) + 2 * seq * hidden * n_labels
    parts = {"embedding": embedding, "attention projections": proj, "attention scores": scores, "FFN": ffn_flops,
             "other": other}
    return {k: float(v) for k, v in parts.items()}


def flop_limit(model: torch.nn.Module, mask: torch.Tensor, seq: int) -> float:
    """The most a compute-bound forward pass can speed up by removing the heads ``mask`` zeroes, at ``seq``."""
    full = sum(encoder_flops(model, seq).values())
    return full / sum(encoder_flops(model, seq, mask=mask).values())


def measure_speed(model: torch.nn.Module, mask: torch.Tensor, batch: dict, *, repeats: int = 7,
                  warmup: int = 1) -> dict:
    """Parameters and forward latency of ``model`` vs a physically pruned copy (``mask``: 1 = keep), timed
    interleaved on ``batch``; the speed-up is the median of the per-round ratios, with its quartiles, next to
    the FLOP limit for this sequence length. The original model is untouched."""
    device = device_of(model)
    small = pruned_copy(model, mask)
    inputs = {**to_device({k: batch[k] for k in ("input_ids", "attention_mask")}, device), "task": batch.get("task")}

    was = model.training
    model.eval(), small.eval()
    try:
        times = interleaved({"full": forward_fn(model, inputs), "pruned": forward_fn(small, inputs)},
                            repeats=repeats, warmup=warmup, device=device)
    finally:
        model.train(was)
    full, pruned = spread(times["full"]), spread(times["pruned"])
    ratio = spread(paired_ratios(times["full"], times["pruned"]))
    return {"params_full": count_parameters(model), "params_pruned": count_parameters(small),
            "latency_full_ms": full["median"] * 1000, "latency_pruned_ms": pruned["median"] * 1000,
            "latency_full_iqr_ms": [full["q25"] * 1000, full["q75"] * 1000],
            "latency_pruned_iqr_ms": [pruned["q25"] * 1000, pruned["q75"] * 1000],
            "speedup": ratio["median"], "speedup_q25": ratio["q25"], "speedup_q75": ratio["q75"],
            "times_full_ms": [t * 1000 for t in times["full"]], "times_pruned_ms": [t * 1000 for t in times["pruned"]],
            "flop_limit": flop_limit(model, mask, int(inputs["input_ids"].shape[1])),
            "repeats": repeats, "heads_pruned": int((torch.as_tensor(mask) == 0).sum()),
            "batch_shape": list(inputs["input_ids"].shape), "device": device.type,
            "shape": list(head_shape(model))}
