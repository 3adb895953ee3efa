"""Learned head pruning: per-head hard-concrete gates with an expected-L0 penalty, trained during fine-tuning.

Louizos et al. (2018) relax a 0/1 gate into a *hard-concrete* variable: a stretched, clipped binary concrete
sample ``z = min(1, max(0, sigmoid((log u - log(1-u) + log_alpha) / beta) * (zeta - gamma) + gamma))`` whose
probability of being non-zero, ``sigmoid(log_alpha - beta * log(-gamma / zeta))``, is differentiable: its sum is
the expected number of heads kept (the expected L0 norm). Voita et al. (2019) put one such gate on each head
and fine-tune with the penalty; He & Choi (2021) use learned head pruning to find the heads each task needs.

Two ways to ask for sparsity:

* ``target``: the share of heads to remove. A Lagrangian term ``l1 (E - t) + l2 (E - t)^2`` on the expected
  kept share ``E`` (Wang et al. 2020; CoFi), whose multipliers are trained to *maximise* the loss, drives ``E``
  to the target ``t``, which is warmed up linearly from all heads over the first half of training. The final
  mask keeps exactly the target's number of heads, those with the largest ``log_alpha``.
* ``penalty``: a fixed weight on ``E`` (the plain L0 objective: as few heads as the task allows).

Otherwise the gates become deterministic at the end: the ``round(expected kept)`` heads with the largest ``log_alpha``
keep their deterministic value ``clip(sigmoid(log_alpha) (zeta - gamma) + gamma, 0, 1)``, the others get 0.
Each gate is folded into the columns of its layer's output projection, so the stored model computes exactly the
gated model, and a head with gate 0 contributes nothing: the same as removing it (tested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from headprune_core.encoders.heads import adapter_for, encoder_layers, head_dim, head_shape, kept_heads


class HardConcrete(nn.Module):
    """One hard-concrete gate per head, ``(layers, heads)``; ``forward()`` samples in training mode."""

    def __init__(self, shape: tuple[int, int], *, init: float = 3.0, beta: float = 2 / 3, gamma: float = -0.1,
                 zeta: float = 1.1, seed: int = 0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.log_alpha = nn.Parameter(init + 0.01 * torch.randn(shape, generator=gen))
        self.beta, self.gamma, self.zeta = beta, gamma, zeta
        self.generator = gen

    def sample(self) -> torch.Tensor:
        """A stochastic gate per head (reparameterised: gradients reach ``log_alpha``)."""
        u = torch.rand(self.log_alpha.shape, generator=self.generator).clamp(1e-6, 1 - 1e-6)
        u = u.to(self.log_alpha.device)
        s = torch.sigmoid((torch.log(u) - torch.log1p(-u) + self.log_alpha) / self.beta)
        return (s * (self.zeta - self.gamma) + self.gamma).clamp(0, 1)

    def prob_open(self) -> torch.Tensor:
        """P(gate != 0) per head; its sum is the expected number of heads kept."""
        return torch.sigmoid(self.log_alpha - self.beta * math.log(-self.gamma / self.zeta))

    def deterministic(self, n_keep: int | None = None) -> torch.Tensor:
        """Test-time gates: the ``n_keep`` heads with the largest ``log_alpha`` (default: the expected number
        kept, rounded) keep their deterministic value, the others are 0."""
        with torch.no_grad():
            soft = (torch.sigmoid(self.log_alpha) * (self.zeta - self.gamma) + self.gamma).clamp(0, 1)
            n = int(round(float(self.prob_open().detach().sum()))) if n_keep is None else int(n_keep)
            flat = self.log_alpha.flatten()
            order = torch.argsort(flat, descending=True, stable=True)
            keep = torch.zeros_like(flat, dtype=torch.bool)
            keep[order[:max(0, min(n, flat.numel()))]] = True
            out = torch.where(keep.view_as(soft), soft, torch.zeros_like(soft))
            # a kept head whose deterministic value rounds to 0 would be removed silently: keep it barely open
            return torch.where(keep.view_as(soft) & (out == 0), torch.full_like(out, 1e-3), out)

    def forward(self) -> torch.Tensor:
        return self.sample() if self.training else self.deterministic()


class GateTrainer:
    """The gates, the sparsity term and their optimiser for one learned-pruning phase (used by
    :func:`headprune_core.methods.train.finetune`): ``sample()`` before each forward pass, ``penalty(progress)`` added
    to the loss, ``step()`` after ``backward()``."""

    def __init__(self, shape: tuple[int, int], *, target: float | None = None, penalty: float | None = None,
                 gate_lr: float = 0.1, init: float = 3.0, seed: int = 0, device: torch.device | str = "cpu"):
        if (target is None) == (penalty is None):
            raise ValueError("give exactly one of target (share of heads to remove) and penalty (L0 weight)")
        self.gates = HardConcrete(shape, init=init, seed=seed).to(device)
        self.target, self.weight = target, penalty
        self.n = shape[0] * shape[1]
        # Lagrange multipliers (target mode); the quadratic one starts at 20 so that a fine-tune of a few dozen
        # steps gets there (from 0 it took ~150 steps of the tiny test model to reach a target)
        self.lambdas = nn.Parameter(torch.tensor([0.0, 20.0], device=device))
        self.opt = torch.optim.Adam([{"params": [self.gates.log_alpha], "lr": gate_lr},
                                     {"params": [self.lambdas], "lr": gate_lr / 10, "maximize": True}])
        self.history: list[dict] = []

    def sample(self) -> torch.Tensor:
        return self.gates.sample()

    def expected_share(self) -> torch.Tensor:
        """Expected share of heads kept (the expected L0 norm over the number of heads)."""
        return self.gates.prob_open().sum() / self.n

    def current_target(self, progress: float) -> float:
        """Kept share aimed at after ``progress`` (0-1) of training: warmed up from 1 over the first half."""
        return 1.0 - self.target * min(1.0, progress / 0.5)

    def penalty(self, progress: float) -> torch.Tensor:
        share = self.expected_share()
        if self.target is None:
            term = self.weight * share
        else:
            gap = share - self.current_target(progress)
            term = self.lambdas[0] * gap + self.lambdas[1] * gap ** 2
        if len(self.history) < 10_000:
            self.history.append({"progress": round(progress, 4), "expected_kept": round(float(share.detach()), 4)})
        return term

    def step(self) -> None:
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)

    def result(self) -> dict:
        """Final gates (deterministic), kept mask and the training trace, as JSON-able lists."""
        # a target asks for that many heads: keep exactly them, ranked by log_alpha (E is reported beside it)
        z = self.gates.deterministic(None if self.target is None else round(self.n * (1 - self.target)))
        return {"log_alpha": self.gates.log_alpha.detach().cpu().tolist(),
                "prob_open": self.gates.prob_open().detach().cpu().tolist(),
                "gates": z.cpu().tolist(), "kept": (z > 0).float().cpu().tolist(),
                "n_kept": int((z > 0).sum()), "n_heads": self.n,
                "expected_kept": round(float(self.expected_share().detach()) * self.n, 2),
                "target": self.target, "penalty": self.weight,
                "trace": self.history[:: max(1, len(self.history) // 50)]}


def fold_gates(model: nn.Module, gates: torch.Tensor) -> nn.Module:
    """Multiply each head's columns of its layer's output projection by its gate, in place: the model then
    computes what it computed under ``head_gates(model, gates)``, and a 0 gate removes the head's contribution."""
    adapter, size = adapter_for(model), head_dim(model)
    if tuple(gates.shape) != head_shape(model):
        raise ValueError(f"gates have shape {tuple(gates.shape)}, the model has {head_shape(model)} (layers, heads)")
    with torch.no_grad():
        for i, layer in enumerate(encoder_layers(model)):
            kept = kept_heads(model, i)
            if not kept:
                continue
            out = layer.get_submodule(adapter.out).weight  # (hidden, kept heads * head_dim)
            scale = gates[i, kept].to(out.device, out.dtype).repeat_interleave(size)  # (kept * head_dim,)
            out.mul_(scale)
    return model


@dataclass(frozen=True)
class LearnedHeads:
    """What a learned-pruning fine-tune kept: the 0/1 mask, gate values and expected L0, per task set."""

    kept: np.ndarray  # (layers, heads) 1 = kept
    gates: np.ndarray  # (layers, heads) deterministic gate values
    prob_open: np.ndarray  # (layers, heads) P(gate != 0) at the end
    log_alpha: np.ndarray  # (layers, heads) the gates' location: what orders the heads (kept = the largest)
    target: float | None
    penalty: float | None

    @classmethod
    def from_log(cls, learned: dict) -> LearnedHeads:
        return cls(np.asarray(learned["kept"], dtype=float), np.asarray(learned["gates"], dtype=float),
                   np.asarray(learned["prob_open"], dtype=float), np.asarray(learned["log_alpha"], dtype=float),
                   learned.get("target"), learned.get("penalty"))

    def ranking(self) -> np.ndarray:
        """A ``(layers, heads)`` importance map for pruning k heads by the learned gates: kept heads above
        removed ones, each group ordered by ``log_alpha`` (pruning the learned set's size gives that set)."""
        return self.log_alpha - self.log_alpha.min() + np.where(self.kept > 0, 1e6, 0.0)

    @property
    def sparsity(self) -> float:
        """Share of heads removed."""
        return float(1 - self.kept.mean())
