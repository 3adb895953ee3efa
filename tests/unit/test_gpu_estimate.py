"""GPU time in a dry run (runs/gpu_estimate.py): measured on a GPU where this cache holds such jobs (entries record
their device, and a GPU's times never enter the CPU's rates), else from FLOPs with its assumptions said."""

from __future__ import annotations

import pytest

from headprune_core.encoders.known import known_config
from headprune_core.encoders.speed import config_flops
from headprune_core.runs.config import FinetuneConfig
from headprune_core.runs.estimate import job_work, measured_rates
from headprune_core.runs.gpu_estimate import (
    ASSUMED_TOKENS,
    GPU_PEAK,
    UTILISATION,
    assumptions,
    flops_seconds,
    gpu_estimate,
    token_flops,
)
from headprune_core.runs.store import Store

BERT = known_config("bert-base-cased")


def _ft(**over) -> FinetuneConfig:
    return FinetuneConfig(model="bert-base-cased", tasks=("pos",), train_langs=("en",),
                          **{"max_train_sentences": 100, "epochs": 2.0, "model_fp": "m" * 16, "data_fp": "d" * 16,
                             **over})


def test_flops_follow_the_models_sizes():
    # a BERT-base forward pass is about 2 FLOPs per weight per token (85M weights outside the embeddings)
    per_token = token_flops(BERT, 64) / 64
    assert 2 * 85e6 < per_token < 2 * 85e6 * 1.15
    # 64 tokens, 1,000 sentences evaluated: FLOPs over the peak times the utilisation
    expected = 1000 * token_flops(BERT, ASSUMED_TOKENS) / (GPU_PEAK["A100"] * UTILISATION)
    assert flops_seconds("eval", 1000, BERT) == pytest.approx(expected)
    assert flops_seconds("finetune", 1000, BERT) == pytest.approx(3 * expected)  # backward: two forward passes more
    assert flops_seconds("eval", 1000, BERT, gpu="H100") < flops_seconds("eval", 1000, BERT)
    assert flops_seconds("eval", 1000, BERT, max_length=16) < flops_seconds("eval", 1000, BERT)  # shorter cut
    full = sum(config_flops(hidden=768, ffn=3072, head_dim=64, heads=[12] * 12, seq=64).values())
    half = sum(config_flops(hidden=768, ffn=3072, head_dim=64, heads=[6] * 12, seq=64).values())
    assert half < full  # pruned heads cost less
    with pytest.raises(ValueError, match="unknown GPU 'X1'"):
        flops_seconds("eval", 1, BERT, gpu="X1")
    assert "64 tokens a sentence and 30% of the A100's 312 TFLOPS bf16 peak assumed" in assumptions("A100")


def test_a_gpu_measured_job_is_used_and_kept_out_of_the_cpu_rates(tmp_path):
    store = Store(tmp_path)
    ft = _ft()
    store.put(ft, {"log": {"seconds": 20.0}}, seconds=20.0, device="cuda:NVIDIA H100 80GB HBM3")
    assert job_work(ft) == 200
    assert measured_rates(store) == {}  # a GPU's time is no CPU rate
    gpu = measured_rates(store, gpu=True)
    assert gpu == {("finetune", "bert-base-cased"): {0: (0.1, 1)}}
    secs, how = gpu_estimate(_ft(max_train_sentences=1000, seed=2), BERT, gpu)
    assert (secs, how) == (pytest.approx(200.0), "measured on a GPU")
    # another kind was never measured on a GPU: FLOPs; an unknown model: unknown
    from headprune_core.runs.config import EvalConfig
    ev = EvalConfig(finetune=ft, task="pos", lang="en", split="test", max_sentences=500, max_length=128,
                    data_fp="e" * 16)
    secs, how = gpu_estimate(ev, BERT, gpu)
    assert how == "FLOPs" and secs == pytest.approx(flops_seconds("eval", 500, BERT))
    assert gpu_estimate(ev, None, gpu) == (None, "unknown")
    assert store.entries()[0].device == "cuda:NVIDIA H100 80GB HBM3"
