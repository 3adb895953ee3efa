"""How long jobs take on a GPU: measured where the cache holds jobs computed on one, else estimated from FLOPs.

A paper plan is meant for a GPU box or a cluster, and its dry run may run where no GPU ever ran a job. Then each
job's time is its floating-point operations (:func:`~headprune_core.encoders.speed.config_flops` of the model's
config at :data:`ASSUMED_TOKENS` tokens a sentence; a training or scoring pass is :data:`PASSES` forward passes)
over the GPU's dense bf16 peak (:data:`GPU_PEAK`) times an assumed utilisation (:data:`UTILISATION`). Each of those
is an assumption, and the dry run says so beside every such number: padding, data loading and evaluation overhead
can put the truth 2 to 3 times away. A kind of job measured on a GPU in this cache (entries record their device)
uses its measured rate instead, and says on which GPU.

>>> round(flops_seconds("eval", 1000, {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
...                                    "num_attention_heads": 12, "vocab_size": 30522}, gpu="A100"), 2)
0.12
"""

from __future__ import annotations

from headprune_core.encoders.speed import config_flops
from headprune_core.runs.estimate import Rates, job_work, later_jobs, model_of, rate_seconds

GPU_PEAK = {"A100": 312e12, "H100": 989e12, "L4": 121e12}
"""Dense bf16 tensor-core peaks in FLOP/s from NVIDIA's data sheets (A100 SXM 312 TFLOPS; H100 SXM 989 TFLOPS;
L4 121 TFLOPS); headprune trains under bf16 autocast on CUDA."""
UTILISATION = 0.3
"""The share of the peak a job is assumed to reach (an assumption, not measured: fine-tuning a base-size encoder
on short padded batches in eager PyTorch reaches a fraction of the peak)."""
ASSUMED_TOKENS = 64
"""Tokens a sentence (or a sentence pair) is assumed to have after padding to its batch (an assumption; the real
mean depends on the data set and the tokenizer, and a job never exceeds its max_length)."""
PASSES = {"finetune": 3.0, "score": 3.0, "eval": 1.0, "curve": 1.0, "gradts": 3.0, "refinetune": 0.0}
"""Forward-pass equivalents per sentence: training and scoring run backward too (about twice a forward pass)."""


def token_flops(config: dict, tokens: int = ASSUMED_TOKENS) -> float:
    """Forward FLOPs of one sequence of ``tokens`` through an encoder of ``config`` (BERT-style field names)."""
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    return sum(config_flops(hidden=hidden, ffn=config["intermediate_size"], head_dim=hidden // heads,
                            heads=[heads] * config["num_hidden_layers"], seq=tokens).values())


def flops_seconds(kind: str, work: float, config: dict, *, gpu: str = "A100", max_length: int = 128) -> float:
    """Seconds of ``work`` units of job ``kind`` (:func:`~headprune_core.runs.estimate.job_work`'s sentences or
    sentence-epochs) on ``gpu`` from FLOPs (see the module: every factor is an assumption)."""
    if gpu not in GPU_PEAK:
        raise ValueError(f"unknown GPU {gpu!r} for a FLOPs estimate; known: {', '.join(GPU_PEAK)}")
    per_sentence = token_flops(config, min(ASSUMED_TOKENS, max_length))
    return work * PASSES.get(kind, 1.0) * per_sentence / (GPU_PEAK[gpu] * UTILISATION)


def gpu_estimate(cfg, config: dict | None, rates: Rates, *, gpu: str = "A100") -> tuple[float | None, str]:
    """(seconds on one GPU, how it was estimated) for one job: a rate measured on a GPU for its kind and model
    (``rates``: :func:`~headprune_core.runs.estimate.measured_rates` with ``gpu=True``), else FLOPs of its model's
    ``config``, else (None, "unknown")."""
    ft = cfg if cfg.kind == "finetune" else getattr(cfg, "finetune", None)
    max_length = getattr(cfg, "max_length", None) or getattr(ft, "max_length", None) or 128
    return _work_seconds(cfg.kind, model_of(cfg), job_work(cfg), config, rates, gpu=gpu, max_length=max_length)


def _work_seconds(kind: str, model: str, work: float, config: dict | None, rates: Rates, *, gpu: str,
                  max_length: int) -> tuple[float | None, str]:
    """:func:`gpu_estimate` for ``work`` units of ``kind`` of ``model``."""
    if work == 0:
        return 0.0, "assembles cached parts"
    if (kind, model) in rates:
        return rate_seconds(kind, model, work, rates, 1)[0], "measured on a GPU"
    if config is None:
        return None, "unknown"
    return flops_seconds(kind, work, config, gpu=gpu, max_length=max_length), "FLOPs"


def later_gpu_seconds(rc, config: dict | None, rates: Rates, *, gpu: str = "A100") -> float | None:
    """A re-fine-tuning's parts on one GPU before its ranking is scored (as
    :func:`~headprune_core.runs.estimate.later_seconds`): a fine-tune like its own per level and seed, a dev and a
    test evaluation per language for each."""
    ft, _ = gpu_estimate(rc.finetune, config, rates, gpu=gpu)
    ev, _ = _work_seconds("eval", rc.finetune.model, float(rc.max_sentences or 0), config, rates, gpu=gpu,
                          max_length=rc.finetune.max_length or 128)
    if ft is None or ev is None:
        return None
    fts, evals = later_jobs(rc)
    return fts * ft + evals * ev


def assumptions(gpu: str) -> str:
    """The FLOPs estimate's assumptions, in words (printed beside every number that rests on them)."""
    return (f"FLOPs estimate: {ASSUMED_TOKENS} tokens a sentence and {UTILISATION:.0%} of the {gpu}'s "
            f"{GPU_PEAK[gpu] / 1e12:.0f} TFLOPS bf16 peak assumed; padding, data loading and evaluation overhead "
            "can put it 2-3x off")
