"""Fine-tune an encoder with one classifier per task (token or sentence), single- or multi-task.

Tokenised data are sequences of dicts with ``input_ids``, ``attention_mask`` and ``labels`` (per sub-word for
token tasks, -100 where unlabelled; one int for sentence tasks), e.g. a ``datasets.Dataset``.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from headprune_core.base.artifacts import Weights
from headprune_core.base.progress import Progress, report
from headprune_core.encoders.classifier import HeadedEncoder
from headprune_core.encoders.device import autocast, device_of, to_device
from headprune_core.encoders.heads import head_gates

WORD_EMBEDDINGS = ("embeddings.word_embeddings.weight",)


def collate(rows: Sequence[dict], *, pad_id: int, task: str | None = None) -> dict:
    """Pad a list of tokenised rows into one batch of tensors (labels padded with -100)."""
    width = max(len(r["input_ids"]) for r in rows)
    n = len(rows)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    attn = torch.zeros((n, width), dtype=torch.long)
    token_level = isinstance(rows[0]["labels"], (list, tuple))
    labels = torch.full((n, width), -100, dtype=torch.long) if token_level else torch.zeros(n, dtype=torch.long)
    for i, r in enumerate(rows):
        m = len(r["input_ids"])
        ids[i, :m] = torch.as_tensor(r["input_ids"])
        attn[i, :m] = torch.as_tensor(r["attention_mask"])
        if token_level:
            labels[i, :m] = torch.as_tensor(r["labels"])
        else:
            labels[i] = int(r["labels"])
    batch = {"input_ids": ids, "attention_mask": attn, "labels": labels}
    if task is not None:
        batch["task"] = task
    return batch


def batches(data, *, batch_size: int, pad_id: int, task: str | None = None, shuffle: bool = False,
            seed: int = 0, limit: int | None = None) -> list[dict]:
    """Split ``data`` (first ``limit`` rows) into padded batches; sorted by length when not shuffled."""
    n = len(data) if limit is None else min(limit, len(data))
    rows = [data[i] for i in range(n)]
    if shuffle:
        random.Random(seed).shuffle(rows)
    else:  # less padding, same results: evaluation is order-independent
        rows.sort(key=lambda r: len(r["input_ids"]))
    return [collate(rows[i:i + batch_size], pad_id=pad_id, task=task) for i in range(0, n, batch_size)]


def schedule(sizes: dict[str, int], *, sampling: str, seed: int) -> list[tuple[str, int]]:
    """Order of (task, batch index) for one epoch of multi-task training.

    ``proportional``: every batch of every task once, shuffled together (tasks appear in proportion to their
    size). ``round_robin``: tasks take turns; smaller tasks cycle until the largest is used up.
    """
    rng = random.Random(seed)
    if sampling == "proportional":
        order = [(t, i) for t, n in sizes.items() for i in range(n)]
        rng.shuffle(order)
        return order
    if sampling != "round_robin":
        raise ValueError(f"unknown sampling {sampling!r}; known: proportional, round_robin")
    longest = max(sizes.values())
    return [(t, i % sizes[t]) for i in range(longest) for t in sizes if sizes[t] > 0]


@dataclass
class TrainLog:
    """What happened during fine-tuning: per-step losses by task, wall time."""

    losses: dict[str, list[float]] = field(default_factory=dict)
    steps: int = 0
    seconds: float = 0.0
    epochs: float = 0.0

    def mean_loss(self, task: str, *, first: bool = False, window: int = 10) -> float:
        values = self.losses[task]
        part = values[:window] if first else values[-window:]
        return sum(part) / len(part)

    def to_dict(self) -> dict:
        return {"losses": self.losses, "steps": self.steps, "seconds": round(self.seconds, 2),
                "epochs": self.epochs}


def optimizer_for(model: HeadedEncoder, *, lr: float, head_lr: float | None,
                  freeze_embeddings: bool) -> tuple[list[nn.Parameter], torch.optim.Optimizer]:
    """The trainable parameters and their AdamW (encoder at ``lr``, classifiers at ``head_lr``), after freezing
    the word embeddings when asked."""
    if freeze_embeddings:
        for name, p in model.encoder.named_parameters():
            if name in WORD_EMBEDDINGS:
                p.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    head_ids = {id(p) for p in model.heads.parameters()}
    groups = [{"params": [p for p in params if id(p) not in head_ids], "lr": lr},
              {"params": [p for p in params if id(p) in head_ids], "lr": head_lr or lr}]
    return params, torch.optim.AdamW(groups, weight_decay=0.01)


def finetune(model: HeadedEncoder, train: dict[str, object], *, pad_id: int, epochs: float = 2.0,
             lr: float = 5e-5, head_lr: float | None = 1e-3, batch_size: int = 16, sampling: str = "proportional",
             seed: int = 13, freeze_embeddings: bool = True, on_progress: Progress | None = None,
             gates=None) -> TrainLog:
    """Fine-tune ``model`` in place on ``train`` (task name -> tokenised rows); AdamW, linear decay.

    A fractional ``epochs`` trains on that share of the last epoch's schedule. Freezing the word embeddings
    (most of a multilingual model's parameters) barely changes accuracy and halves time and memory. The
    freshly initialised classifiers learn at ``head_lr`` (None: ``lr``), so small data sets converge.
    ``gates`` (a :class:`headprune_core.methods.learned.GateTrainer`) trains hard-concrete head gates with their
    sparsity term alongside (learned head pruning).
    """
    device = device_of(model)
    torch.manual_seed(seed)
    params, opt = optimizer_for(model, lr=lr, head_lr=head_lr, freeze_embeddings=freeze_embeddings)
    per_task = {t: batches(d, batch_size=batch_size, pad_id=pad_id, task=t if len(train) > 1 else None,
                           shuffle=True, seed=seed) for t, d in train.items()}
    plan: list[tuple[str, int]] = []
    for epoch in range(math.ceil(epochs)):
        order = schedule({t: len(b) for t, b in per_task.items()}, sampling=sampling, seed=seed + epoch)
        share = min(1.0, epochs - epoch)
        plan += order[:max(1, int(round(len(order) * share)))]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / max(1, len(plan))))
    log = TrainLog(losses={t: [] for t in train}, epochs=epochs)
    model.train()
    start = time.perf_counter()
    for step, (task, index) in enumerate(plan, 1):
        batch = to_device(per_task[task][index], device)
        if gates is None:
            with autocast(device):
                loss, _ = model.loss(batch)
            total = loss
        else:
            with head_gates(model, gates.sample()), autocast(device):
                loss, _ = model.loss(batch)
            total = loss + gates.penalty((step - 1) / len(plan))
        total.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if gates is not None:
            gates.step()
        log.losses[task].append(loss.item())
        report(on_progress, "training", step, len(plan))
    model.eval()
    log.steps, log.seconds = len(plan), time.perf_counter() - start
    return log


def trained_weights(model: HeadedEncoder, *, freeze_embeddings: bool) -> Weights:
    """The state dict minus what fine-tuning left untouched (the frozen word embeddings)."""
    skip = {f"encoder.{n}" for n in WORD_EMBEDDINGS} if freeze_embeddings else set()
    return Weights({k: v for k, v in model.state_dict().items() if k not in skip})


def load_trained(model: HeadedEncoder, weights: dict[str, torch.Tensor]) -> HeadedEncoder:
    """Load stored fine-tuned weights into a freshly built ``model``; only frozen embeddings may be missing."""
    missing, unexpected = model.load_state_dict(weights, strict=False)
    allowed = {f"encoder.{n}" for n in WORD_EMBEDDINGS}
    if unexpected or set(missing) - allowed:
        raise ValueError(f"stored weights do not fit this model: missing {sorted(set(missing) - allowed)[:5]}, "
                         f"unexpected {sorted(unexpected)[:5]}")
    return model.eval()

