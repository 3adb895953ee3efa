"""An encoder with one classification head per task: token tagging or sentence classification.

One model class serves single-task and multi-task fine-tuning, importance scoring and evaluation, so head gates
and pruning (which act on ``base_model``) work the same for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

Kind = Literal["token", "sentence"]


@dataclass(frozen=True)
class TaskHead:
    """What one task's classifier predicts."""

    kind: Kind
    labels: tuple[str, ...]


class HeadedEncoder(nn.Module):
    """``encoder`` (a transformers base model) plus a linear classifier per task.

    Token tasks classify every sub-word position; sentence tasks classify the mean of the sub-word states.
    Batches are dicts with ``input_ids``, ``attention_mask``, ``labels`` and, for several tasks, ``task``.
    """

    def __init__(self, encoder: nn.Module, tasks: dict[str, TaskHead], *, dropout: float = 0.1):
        super().__init__()
        if not tasks:
            raise ValueError("a HeadedEncoder needs at least one task")
        self.encoder = encoder
        self.tasks = dict(tasks)
        self.dropout = nn.Dropout(dropout)
        hidden = int(getattr(encoder.config, "hidden_size", None) or encoder.config.dim)
        self.heads = nn.ModuleDict({name: nn.Linear(hidden, len(t.labels)) for name, t in tasks.items()})

    @property
    def base_model(self) -> nn.Module:
        return self.encoder

    @property
    def config(self):
        return self.encoder.config

    def task_name(self, task: str | None) -> str:
        """The classifier that ``task`` names (None: the only one); unknown names fail listing the known."""
        if task is None:
            if len(self.tasks) != 1:
                raise ValueError(f"this model has several tasks ({', '.join(self.tasks)}); say which")
            return next(iter(self.tasks))
        if task not in self.tasks:
            raise ValueError(f"unknown task {task!r} for this model; known: {', '.join(self.tasks)}")
        return task

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, task: str | None = None,
                **encoder_kwargs) -> torch.Tensor:
        """Logits: ``(batch, seq, labels)`` for token tasks, ``(batch, labels)`` for sentence tasks."""
        name = self.task_name(task)
        states = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                              **encoder_kwargs).last_hidden_state  # (batch, seq, hidden)
        if self.tasks[name].kind == "sentence":
            weights = attention_mask.unsqueeze(-1).to(states.dtype)  # (batch, seq, 1)
            states = (states * weights).sum(1) / weights.sum(1).clamp(min=1)  # (batch, hidden)
        return self.heads[name](self.dropout(states))

    def loss(self, batch: dict) -> tuple[torch.Tensor, int]:
        """Mean cross-entropy over labelled positions (label -100 is ignored) and how many there were."""
        logits = self(batch["input_ids"], batch["attention_mask"], task=batch.get("task"))
        labels = batch["labels"]
        n = int((labels != -100).sum())
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                                           ignore_index=-100)
        return loss, n

    def example_losses(self, batch: dict) -> torch.Tensor:
        """``(batch,)``: each example's own mean cross-entropy over its labelled positions (0 if it has none), so
        the gradient of their sum is, per example, that example's gradient alone."""
        logits = self(batch["input_ids"], batch["attention_mask"], task=batch.get("task"))
        labels = batch["labels"]
        if labels.dim() == 1:  # sentence task: (batch,)
            return nn.functional.cross_entropy(logits.float(), labels, reduction="none")
        per_token = nn.functional.cross_entropy(logits.float().transpose(1, 2), labels, ignore_index=-100,
                                                reduction="none")  # (batch, seq)
        counts = (labels != -100).sum(1).clamp(min=1)
        return per_token.sum(1) / counts
