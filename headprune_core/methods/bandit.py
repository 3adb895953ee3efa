"""A search baseline for auxiliary-task selection: AUTOSEM's first stage (Guo et al. 2019).

During multi-task training a non-stationary Beta-Bernoulli bandit with Thompson sampling chooses which task
trains next: every task (the primary included) is an arm with a Beta posterior; each round draws a utility
from every posterior, trains a few batches of the arm with the largest draw, and rewards that arm with 1 when
the primary task's dev loss went down since the previous round (else 0). Posteriors decay toward the prior
every round (``decay``), so early rewards fade as training moves on. At the end, the auxiliary tasks whose
posterior mean is above ``keep`` (more likely to help than not) are selected; the primary is then trained
with them like any other selection (AUTOSEM's second stage, learned mixing ratios, is not run: every
selection here trains with the same proportional sampling).

AUTOSEM rewards an improvement of the dev *metric*; with a hundred dev sentences the metric often does not
move between rounds, so here the dev *loss* (on the same sentences) decides.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from headprune_core.base.progress import Progress, report
from headprune_core.encoders.device import autocast, device_of, to_device
from headprune_core.methods.train import batches, optimizer_for


class BetaBernoulli:
    """Thompson sampling over ``arms`` with Beta(``prior``) posteriors that decay toward the prior.

    >>> b = BetaBernoulli(["a", "b"], seed=0)
    >>> b.update("a", 1); round(b.means()["a"], 2)
    0.67
    """

    def __init__(self, arms: Sequence[str], *, prior: tuple[float, float] = (1.0, 1.0), decay: float = 1.0,
                 seed: int = 0):
        if not arms:
            raise ValueError("a bandit needs at least one arm")
        if not 0 < decay <= 1:
            raise ValueError(f"decay must be in (0, 1], got {decay}")
        self.arms = list(arms)
        self.prior = prior
        self.decay = decay
        self.alpha = np.full(len(arms), float(prior[0]))
        self.beta = np.full(len(arms), float(prior[1]))
        self.rng = np.random.default_rng(seed)

    def choose(self) -> str:
        """The arm with the largest utility drawn from its posterior."""
        return self.arms[int(np.argmax(self.rng.beta(self.alpha, self.beta)))]

    def update(self, arm: str, reward: float) -> None:
        """Decay every posterior toward the prior, then add ``reward`` (0 or 1) to ``arm``'s."""
        a0, b0 = self.prior
        self.alpha = a0 + self.decay * (self.alpha - a0)
        self.beta = b0 + self.decay * (self.beta - b0)
        i = self.arms.index(arm)
        self.alpha[i] += reward
        self.beta[i] += 1 - reward

    def means(self) -> dict[str, float]:
        """Posterior mean utility of each arm: the probability that it helps."""
        return {a: float(x) for a, x in zip(self.arms, self.alpha / (self.alpha + self.beta))}


def _dev_loss(model: nn.Module, dev: list[dict], device) -> float:
    """Mean loss of the primary task over its dev batches, weighted by labelled positions."""
    model.eval()
    total = n = 0.0
    with torch.no_grad():
        for batch in dev:
            batch = to_device(batch, device)
            with autocast(device):
                loss, count = model.loss(batch)
            total += float(loss) * count
            n += count
    model.train()
    return total / max(n, 1)


def bandit_search(model: nn.Module, train: dict[str, object], dev: list[dict], *, primary: str, pad_id: int,
                  rounds: int = 40, round_steps: int = 4, batch_size: int = 8, lr: float = 5e-5,
                  head_lr: float | None = 1e-3, decay: float = 0.9, keep: float = 0.5, seed: int = 13,
                  freeze_embeddings: bool = True, on_progress: Progress | None = None) -> dict:
    """Train ``model`` (a multi-task :class:`~headprune_core.encoders.classifier.HeadedEncoder`) for ``rounds`` rounds
    of ``round_steps`` batches of the task a :class:`BetaBernoulli` bandit chooses, rewarded by the primary's dev loss
    (``dev``: batches tagged with the primary task) going down.

    Returns ``{"selected", "means", "alpha", "beta", "history", "chosen", "seconds", "steps"}``.
    """
    if primary not in train:
        raise ValueError(f"the primary task {primary!r} is not among the training tasks: {', '.join(train)}")
    device = device_of(model)
    torch.manual_seed(seed)
    params, opt = optimizer_for(model, lr=lr, head_lr=head_lr, freeze_embeddings=freeze_embeddings)
    per_task = {t: batches(d, batch_size=batch_size, pad_id=pad_id, task=t, shuffle=True, seed=seed)
                for t, d in train.items()}
    position = {t: 0 for t in per_task}
    bandit = BetaBernoulli(list(train), decay=decay, seed=seed)
    rng = random.Random(seed)
    start = time.perf_counter()
    model.train()
    previous = _dev_loss(model, dev, device)
    history = []
    for r in range(rounds):
        task = bandit.choose()
        for _ in range(round_steps):
            if position[task] >= len(per_task[task]):  # a task used up starts a new shuffled pass
                rng.shuffle(per_task[task])
                position[task] = 0
            batch = per_task[task][position[task]]
            position[task] += 1
            batch = to_device(batch, device)
            with autocast(device):
                loss, _ = model.loss(batch)
            loss.backward()
            nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
        current = _dev_loss(model, dev, device)
        reward = float(current < previous)
        bandit.update(task, reward)
        history.append({"round": r, "task": task, "dev_loss": round(current, 5), "reward": reward})
        previous = current
        report(on_progress, "training (bandit)", r + 1, rounds)
    model.eval()
    means = bandit.means()
    chosen = {t: sum(h["task"] == t for h in history) for t in train}
    return {"selected": sorted(t for t in train if t != primary and means[t] > keep), "means": means,
            "alpha": dict(zip(bandit.arms, bandit.alpha.tolist())),
            "beta": dict(zip(bandit.arms, bandit.beta.tolist())), "history": history, "chosen": chosen,
            "seconds": round(time.perf_counter() - start, 2), "steps": rounds * round_steps}
