"""Gates and physical pruning, for every supported encoder family."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2Model

from headprune_core.encoders.heads import (
    UnsupportedModelError,
    count_parameters,
    head_gates,
    head_shape,
    kept_heads,
    present_mask,
    prune_heads,
)
from tests.helpers.tiny_models import FAMILIES, random_batch, tiny_encoder


def _out(model, batch):
    with torch.no_grad():
        return model(**batch).last_hidden_state


def _n_hooks(model) -> int:
    return sum(len(m._forward_pre_hooks) for m in model.modules())


@pytest.mark.parametrize("family", FAMILIES)
def test_all_ones_gates_change_nothing(family):
    model, batch = tiny_encoder(family), random_batch()
    plain = _out(model, batch)
    with head_gates(model, torch.ones(head_shape(model))):
        gated = _out(model, batch)
    assert torch.equal(plain, gated)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_zero_gate_equals_physical_pruning(family, attn):
    model, batch = tiny_encoder(family, attn_implementation=attn), random_batch()
    mask = torch.ones(head_shape(model))
    mask[0, 1] = 0
    mask[1, [0, 2, 3]] = 0
    with head_gates(model, mask):
        gated = _out(model, batch)
    before = count_parameters(model)
    prune_heads(model, mask)
    pruned = _out(model, batch)
    assert (gated - pruned).abs().max().item() <= 1e-4
    assert count_parameters(model) < before
    assert kept_heads(model, 1) == [1]
    assert torch.equal(present_mask(model), mask)


@pytest.mark.parametrize("family", FAMILIES)
def test_layer_with_every_head_removed_still_runs(family):
    model, batch = tiny_encoder(family), random_batch()
    mask = torch.ones(head_shape(model))
    mask[1] = 0
    with head_gates(model, mask):
        gated = _out(model, batch)
    prune_heads(model, mask)
    pruned = _out(model, batch)
    assert kept_heads(model, 1) == []
    assert (gated - pruned).abs().max().item() <= 1e-4
    assert torch.isfinite(pruned).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_second_prune_on_top_of_first(family):
    model, batch = tiny_encoder(family), random_batch()
    first = torch.ones(head_shape(model))
    first[0, 0] = 0
    second = first.clone()
    second[0, [2, 3]] = 0  # layer 0 keeps only head 1
    second[1, 3] = 0
    with head_gates(model, second):
        gated = _out(model, batch)
    prune_heads(model, first)
    prune_heads(model, second)
    assert kept_heads(model, 0) == [1]
    assert kept_heads(model, 1) == [0, 1, 2]
    assert (gated - _out(model, batch)).abs().max().item() <= 1e-4
    # gates on a pruned model still take the original shape and gate the right heads
    third = second.clone()
    third[1, 1] = 0
    with head_gates(model, third):
        gated_again = _out(model, batch)
    prune_heads(model, third)
    assert (gated_again - _out(model, batch)).abs().max().item() <= 1e-4
    # then the rest of layer 0 goes too
    fourth = third.clone()
    fourth[0] = 0
    with head_gates(model, fourth):
        gated_last = _out(model, batch)
    prune_heads(model, fourth)
    assert (gated_last - _out(model, batch)).abs().max().item() <= 1e-4


def test_gate_gradient_matches_finite_difference():
    model = tiny_encoder("bert").double()
    batch = random_batch()
    target = torch.randn(3, 9, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(3))

    def loss_at(mask):
        with head_gates(model, mask):
            return ((model(**batch).last_hidden_state - target) ** 2).mean()

    mask = torch.full(head_shape(model), 0.7, dtype=torch.float64, requires_grad=True)
    loss_at(mask).backward()
    eps = 1e-6
    for layer, head in [(0, 0), (0, 3), (1, 2)]:
        up, down = mask.detach().clone(), mask.detach().clone()
        up[layer, head] += eps
        down[layer, head] -= eps
        with torch.no_grad():
            fd = (loss_at(up) - loss_at(down)) / (2 * eps)
        assert mask.grad[layer, head].item() == pytest.approx(fd.item(), rel=1e-5, abs=1e-9)
    assert mask.grad.abs().sum() > 0


def test_hooks_removed_on_exit_and_after_exception():
    model, batch = tiny_encoder("bert"), random_batch()
    assert _n_hooks(model) == 0
    with head_gates(model, torch.zeros(head_shape(model))):
        assert _n_hooks(model) == 2
    assert _n_hooks(model) == 0
    with pytest.raises(RuntimeError, match="boom"), head_gates(model, torch.zeros(head_shape(model))):
        raise RuntimeError("boom")
    assert _n_hooks(model) == 0
    plain = _out(model, batch)
    assert torch.equal(plain, _out(tiny_encoder("bert"), batch))


def test_zero_gate_changes_output():
    model, batch = tiny_encoder("bert"), random_batch()
    mask = torch.ones(head_shape(model))
    mask[0, 2] = 0
    with head_gates(model, mask):
        gated = _out(model, batch)
    assert (gated - _out(model, batch)).abs().max() > 1e-3


def test_wrong_mask_shape_and_unsupported_family():
    model = tiny_encoder("bert")
    with pytest.raises(ValueError, match=r"shape \(3, 4\).*\(2, 4\)"), head_gates(model, torch.ones(3, 4)):
        pass
    gpt2 = GPT2Model(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=10))
    with pytest.raises(UnsupportedModelError, match="supported: bert, .*distilbert.*xlm-roberta"):
        head_shape(gpt2)


@pytest.mark.parametrize("family", FAMILIES)
def test_attention_probs_match_eager_weights(family):
    from headprune_core.encoders.heads import attention_probs
    model, batch = tiny_encoder(family), random_batch()
    with torch.no_grad():
        ref = model(**batch, output_attentions=True).attentions
    ours = attention_probs(model, batch["input_ids"], batch["attention_mask"])
    assert len(ours) == len(ref) == 2
    for a, b in zip(ours, ref):
        assert a.shape == b.shape
        assert (a - b).abs().max().item() <= 1e-5
