"""Learned head pruning (hard-concrete gates, expected-L0 term): the gate maths, reaching a target sparsity,
folded gates = gated model, a zero gate = the head removed, and a Study's learned fine-tune cached like any."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from headprune_core.encoders.classifier import HeadedEncoder, TaskHead
from headprune_core.encoders.heads import head_gates, prune_heads
from headprune_core.methods.learned import GateTrainer, HardConcrete, LearnedHeads, fold_gates
from headprune_core.methods.train import finetune
from headprune_core.runs.config import FinetuneConfig, l0_options, l0_pairs, nested_configs
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study
from tests.helpers.rows import token_rows
from tests.helpers.tiny_models import random_batch, tiny_encoder


def test_prob_open_is_the_share_of_nonzero_samples():
    gates = HardConcrete((3, 4), init=0.0, seed=1)
    with torch.no_grad():
        gates.log_alpha.copy_(torch.linspace(-3, 3, 12).view(3, 4))
        samples = torch.stack([gates.sample() for _ in range(4000)])  # (n, 3, 4)
    share = (samples > 0).float().mean(0)
    assert torch.allclose(share, gates.prob_open().detach(), atol=0.03)
    assert samples.min() == 0 and samples.max() == 1  # stretched and clipped: exact zeros and ones occur


def test_deterministic_keeps_the_expected_number_of_heads_with_the_largest_log_alpha():
    gates = HardConcrete((2, 4), seed=0)
    with torch.no_grad():
        gates.log_alpha.copy_(torch.tensor([[5.0, -5.0, 4.0, -4.0], [3.0, -3.0, 6.0, -6.0]]))
    z = gates.deterministic()
    assert round(float(gates.prob_open().detach().sum())) == 4 and int((z > 0).sum()) == 4
    assert ((z > 0) == (gates.log_alpha > 0)).all()
    assert int((gates.deterministic(n_keep=6) > 0).sum()) == 6


def _gated_training(*, target=None, penalty=None, epochs=30, seed=0, gate_lr=0.5):
    torch.manual_seed(seed)
    model = HeadedEncoder(tiny_encoder("bert"), {"tok": TaskHead("token", ("A", "B", "C"))}, dropout=0.0)
    trainer = GateTrainer((2, 4), target=target, penalty=penalty, gate_lr=gate_lr, seed=seed)
    log = finetune(model, {"tok": token_rows()}, pad_id=0, epochs=epochs, lr=3e-3, batch_size=8,
                   gates=trainer)
    return model, trainer, log


@pytest.mark.parametrize("target", [0.25, 0.5, 0.75])
def test_lagrangian_reaches_the_target_sparsity(target):
    _, trainer, log = _gated_training(target=target)
    res = trainer.result()
    assert abs(float(trainer.expected_share().detach()) - (1 - target)) < 0.06
    assert res["n_kept"] == round(8 * (1 - target))
    assert log.mean_loss("tok", window=6) < log.mean_loss("tok", first=True, window=6)  # still learns the task


def test_a_larger_l0_penalty_keeps_fewer_heads():
    kept = [_gated_training(penalty=p, epochs=20)[1].result()["expected_kept"] for p in (0.0, 0.002, 0.02)]
    assert kept[0] > kept[1] > kept[2]


def test_folded_gates_compute_the_gated_model_and_a_zero_gate_is_the_head_removed():
    torch.manual_seed(0)
    model = HeadedEncoder(tiny_encoder("bert"), {"tok": TaskHead("token", ("A", "B", "C"))}, dropout=0.0).eval()
    z = torch.tensor([[1.0, 0.0, 0.4, 0.0], [0.0, 0.7, 1.0, 0.0]])
    b = random_batch()
    with torch.no_grad(), head_gates(model, z):
        gated = model(b["input_ids"], b["attention_mask"])
    folded = fold_gates(copy.deepcopy(model), z)
    with torch.no_grad():
        assert torch.allclose(folded(b["input_ids"], b["attention_mask"]), gated, atol=1e-5)
        removed = prune_heads(copy.deepcopy(folded), (z > 0).float())
        assert torch.allclose(removed(b["input_ids"], b["attention_mask"]), gated, atol=1e-5)
    with pytest.raises(ValueError, match="shape"):
        fold_gates(model, torch.ones(3, 4))


def test_l0_options_are_checked():
    assert l0_options(l0_pairs({"target": 0.5}))["target"] == 0.5
    assert l0_pairs({"target": 0.5, "epochs": 1.0}) == (("target", 0.5),)  # defaults left out of the key
    with pytest.raises(ValueError, match="exactly one"):
        l0_options({"epochs": 2})
    with pytest.raises(ValueError, match="exactly one"):
        l0_options({"target": 0.5, "penalty": 1.0})
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        l0_options({"target": 1.0})
    with pytest.raises(ValueError, match="unknown learned-pruning options"):
        l0_options({"target": 0.5, "sparsity": 2})
    with pytest.raises(ValueError, match="exactly one"):
        FinetuneConfig(model="m", tasks=("pos",), train_langs=("en",), l0=(("epochs", 2.0),))


def test_study_learns_which_heads_to_keep_from_its_fine_tune_and_caches_it(tiny_cache, monkeypatch, tmp_path):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    study = Study(model, store=Store(tmp_path / "runs"), progress=False)
    base = study.finetune_config("pos", ("en",), max_train_sentences=100, epochs=2.0, lr=1e-3)
    ft = study.finetune_config("pos", ("en",), max_train_sentences=100, epochs=2.0, lr=1e-3,
                               l0=l0_pairs({"target": 0.5, "epochs": 6.0}))
    assert ft.base() == base and base.base() is None and ft.key() != base.key()
    assert nested_configs(ft) == [base]  # a sweep runs the fine-tune first
    learned = study.learned(ft)
    assert isinstance(learned, LearnedHeads) and learned.kept.shape == study.head_shape
    assert learned.sparsity == 0.5 and abs(log_expected(study, ft) - 0.5) < 0.1
    assert set(np.unique(learned.kept)) == {0.0, 1.0}
    assert study.store.has(base)  # its own entry, trained before the gates
    log = study.store.get(ft)["log"]
    assert log["learned"]["n_kept"] == int(learned.kept.sum())
    # the stored model computes the kept heads only: gating the removed ones off changes nothing
    m = study.finetuned(ft)
    b = random_batch()
    with torch.no_grad():
        plain = m(b["input_ids"], b["attention_mask"])
        with head_gates(m, torch.tensor(learned.kept, dtype=torch.float32)):
            masked = m(b["input_ids"], b["attention_mask"])
    assert torch.allclose(plain, masked, atol=1e-5)
    # cached: a fresh Study computes nothing
    store = Store(tmp_path / "runs")
    again = Study(model, store=store, progress=False).learned(ft)
    assert np.array_equal(again.kept, learned.kept) and store.computations == 0
    # another seed is another run with the same options
    assert study.reseeded(ft, 14).l0 == ft.l0


def log_expected(study: Study, ft) -> float:
    """Expected share of heads removed at the end of a learned-pruning fine-tune."""
    learned = study.store.get(ft)["log"]["learned"]
    return 1 - learned["expected_kept"] / learned["n_heads"]
