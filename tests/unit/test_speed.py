"""Timing side by side and the FLOP model of pruned encoders (headprune_core.encoders.speed)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from headprune_core.encoders.classifier import HeadedEncoder, TaskHead
from headprune_core.encoders.heads import pruned_copy
from headprune_core.encoders.speed import encoder_flops, flop_limit, interleaved, measure_speed, paired_ratios, spread
from tests.helpers.tiny_models import tiny_encoder


def _model(family="bert", attn="eager", labels=3):
    enc = tiny_encoder(family, attn_implementation=attn)
    return HeadedEncoder(enc, {"t": TaskHead("token", tuple("ABCDE"[:labels]))}, dropout=0.0).eval()


def _batch(seq=10, n=3):
    g = torch.Generator().manual_seed(0)
    return {"input_ids": torch.randint(5, 50, (n, seq), generator=g), "attention_mask": torch.ones(n, seq,
                                                                                                    dtype=torch.long)}


def test_interleaved_rotates_the_order_and_times_every_function():
    calls = []
    fns = {name: (lambda n=name: calls.append(n)) for name in ("a", "b", "c")}
    times = interleaved(fns, repeats=3, warmup=1)
    assert calls == list("abc") + list("abc") + list("bca") + list("cab")  # warm-up, then rotated rounds
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 3, "c": 3}
    with pytest.raises(ValueError, match="repeats"):
        interleaved(fns, repeats=0)


def test_spread_and_paired_ratios():
    s = spread([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (s["median"], s["q25"], s["q75"], s["n"]) == (3.0, 2.0, 4.0, 5)
    assert paired_ratios([2.0, 3.0], [1.0, 2.0]) == [2.0, 1.5]


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_matmul_flops_equal_torchs_flop_counter(attn):
    """The analytic count of matrix products equals what torch counts on a real forward pass, for the full model
    and for a physically pruned one with an emptied layer."""
    model = _model(attn=attn)
    batch = _batch(seq=10, n=3)
    mask = torch.ones(2, 4)
    mask[0, :] = 0  # a whole layer
    mask[1, 1] = 0
    for m, counted_mask in ((model, None), (pruned_copy(model, mask), None), (model, mask)):
        parts = encoder_flops(m, 10, mask=counted_mask, n_labels=3, elementwise=False)
        if attn == "sdpa":  # torch's counter has no formula for the CPU fused attention kernel
            parts["attention scores"] = 0
        ours = 3 * sum(parts.values())
        if counted_mask is not None:
            m = pruned_copy(model, counted_mask)  # the mask argument counts what pruning would leave
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            m(**batch)
        assert counter.get_total_flops() == ours


def test_flop_model_parts_and_limit():
    model = _model()
    full = encoder_flops(model, 16)
    none = encoder_flops(model, 16, mask=torch.zeros(2, 4))
    assert none["attention projections"] == none["attention scores"] == 0
    assert none["FFN"] == full["FFN"] and none["embedding"] == full["embedding"]
    half = torch.ones(2, 4)
    half[:, :2] = 0
    part = encoder_flops(model, 16, mask=half)
    assert part["attention projections"] == full["attention projections"] / 2
    assert flop_limit(model, half, 16) == pytest.approx(sum(full.values()) / sum(part.values()))
    # longer sequences: attention scores weigh more, so the same pruning can save more
    assert flop_limit(model, half, 64) > flop_limit(model, half, 8) > 1


def test_measure_speed_prunes_a_copy_and_reports_paired_ratios():
    model = _model()
    mask = torch.ones(2, 4)
    mask[0, :3] = 0
    res = measure_speed(model, mask, _batch(), repeats=3)
    hidden, head_dim = 32, 8  # each head: q, k, v rows (weights and biases) and its output-projection columns
    per_head = 3 * (head_dim * hidden + head_dim) + hidden * head_dim
    assert res["params_full"] - res["params_pruned"] == 3 * per_head and res["heads_pruned"] == 3
    ratios = np.array(res["times_full_ms"]) / np.array(res["times_pruned_ms"])
    assert len(ratios) == res["repeats"] == 3
    assert res["speedup"] == pytest.approx(float(np.median(ratios)))
    assert res["speedup_q25"] <= res["speedup"] <= res["speedup_q75"]
    assert res["latency_full_ms"] == pytest.approx(float(np.median(res["times_full_ms"])))
    assert res["flop_limit"] == pytest.approx(flop_limit(model, mask, 10))
    assert model.encoder.encoder.layer[0].attention.self.num_attention_heads == 4  # original untouched
