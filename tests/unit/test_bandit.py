"""AUTOSEM's first stage: Thompson sampling over Beta-Bernoulli posteriors, and the bandit in a training loop
moving toward the auxiliary task that helps on a constructed case."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from headprune_core.encoders.classifier import HeadedEncoder, TaskHead
from headprune_core.methods.bandit import BetaBernoulli, bandit_search
from headprune_core.methods.train import batches
from tests.helpers.rows import token_rows
from tests.helpers.tiny_models import tiny_encoder


def test_thompson_sampling_favours_the_arm_that_pays():
    bandit = BetaBernoulli(["good", "coin", "bad"], seed=0)
    rng = np.random.default_rng(1)
    pays = {"good": 0.8, "coin": 0.5, "bad": 0.2}
    chosen = {a: 0 for a in pays}
    for _ in range(400):
        arm = bandit.choose()
        chosen[arm] += 1
        bandit.update(arm, float(rng.random() < pays[arm]))
    means = bandit.means()
    assert means["good"] > means["coin"] > means["bad"]
    assert abs(means["good"] - 0.8) < 0.1 and chosen["good"] > chosen["coin"] > chosen["bad"]


def test_decay_forgets_old_rewards():
    bandit = BetaBernoulli(["a"], decay=0.5, seed=0)
    for _ in range(50):
        bandit.update("a", 1.0)
    assert bandit.alpha[0] + bandit.beta[0] == pytest.approx(2 + 1 / (1 - 0.5), abs=1e-6)  # bounded evidence
    for _ in range(20):
        bandit.update("a", 0.0)
    assert bandit.means()["a"] < 0.4  # recent failures dominate
    with pytest.raises(ValueError, match="decay"):
        BetaBernoulli(["a"], decay=0.0)


def _noisy(rows, seed):
    g = torch.Generator().manual_seed(seed)
    return [{**r, "labels": [-100 if l == -100 else int(torch.randint(0, 3, (1,), generator=g)) for l in r["labels"]]}
            for r in rows]


def test_the_bandit_moves_toward_the_auxiliary_task_that_helps():
    """Primary: a token task with 8 training sentences; 'same' is more data of the same task (helps), 'noise'
    the same kind of sentences with random labels (hurts). In each of 4 seeded runs the bandit trains 'same'
    more often than 'noise', and its posterior mean for 'same' is higher on average (one run's dev-loss
    rewards are noisy enough to swap the means)."""
    means = {"same": [], "noise": []}
    for seed in range(4):
        torch.manual_seed(seed)
        tasks = {t: TaskHead("token", ("A", "B", "C")) for t in ("primary", "same", "noise")}
        model = HeadedEncoder(tiny_encoder("bert"), tasks, dropout=0.0)
        train = {"primary": token_rows(8, seed=10), "same": token_rows(96, seed=11),
                 "noise": _noisy(token_rows(96, seed=12), seed)}
        dev = batches(token_rows(32, seed=13), batch_size=16, pad_id=0, task="primary")
        res = bandit_search(model, train, dev, primary="primary", pad_id=0, rounds=60, round_steps=2, lr=3e-3,
                            head_lr=3e-3, decay=0.9, seed=seed)
        assert res["chosen"]["same"] > res["chosen"]["noise"], seed
        assert res["steps"] == 120 and len(res["history"]) == 60
        assert set(res["selected"]) == {t for t in ("same", "noise") if res["means"][t] > 0.5}
        for t in means:
            means[t].append(res["means"][t])
    assert np.mean(means["same"]) > np.mean(means["noise"]) + 0.1
    with pytest.raises(ValueError, match="primary task 'x'"):
        bandit_search(model, train, dev, primary="x", pad_id=0)
