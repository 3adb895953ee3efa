"""Importance scoring: shapes, determinism, direction, normalisations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from headprune_core.base.choices import METHODS
from headprune_core.encoders.classifier import HeadedEncoder, TaskHead
from headprune_core.encoders.heads import head_shape, prune_heads
from headprune_core.methods.importance import normalise, score_heads
from headprune_core.methods.similarity import spearman_matrix
from tests.helpers.tiny_models import random_batch, tiny_encoder


def _model(kind="token", family="bert"):
    torch.manual_seed(0)
    return HeadedEncoder(tiny_encoder(family), {"t": TaskHead(kind, ("A", "B", "C"))}).eval()


def _batches(kind="token", n=3):
    out = []
    for i in range(n):
        b = random_batch(seed=10 + i)
        g = torch.Generator().manual_seed(i)
        if kind == "token":
            labels = torch.randint(0, 3, b["input_ids"].shape, generator=g)
            labels[b["attention_mask"] == 0] = -100
        else:
            labels = torch.randint(0, 3, (b["input_ids"].shape[0],), generator=g)
        out.append({**b, "labels": labels})
    return out


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", ["token", "sentence"])
def test_shape_and_determinism(method, kind):
    model = _model(kind)
    a = score_heads(model, _batches(kind), method=method, seed=3)
    b = score_heads(model, _batches(kind), method=method, seed=3)
    assert a.scores.shape == head_shape(model) == (2, 4)
    assert np.array_equal(a.scores, b.scores)
    assert np.isfinite(a.scores).all()
    if method != "random":
        assert a.n_batches == 3 and a.n_tokens > 0
        assert (a.raw > 0).any()
    # weights are untouched and unfrozen afterwards
    assert all(p.requires_grad for p in model.parameters())
    assert all(p.grad is None for p in model.parameters())


def test_random_differs_by_seed():
    model = _model()
    assert not np.array_equal(score_heads(model, [], method="random", seed=1).scores,
                              score_heads(model, [], method="random", seed=2).scores)


@pytest.mark.parametrize("method", ["gate_grad", "taylor"])
def test_useless_head_ranks_last(method):
    model = _model()
    attn = model.encoder.encoder.layer[1].attention.self
    with torch.no_grad():  # head (1, 2) now outputs exactly zero
        attn.value.weight[16:24] = 0
        attn.value.bias[16:24] = 0
    imp = score_heads(model, _batches(), method=method)
    assert imp.scores[1, 2] == 0.0
    assert np.argmin(imp.scores.ravel()) == 1 * 4 + 2
    assert (np.delete(imp.scores.ravel(), 6) > 0).all()


def test_gate_grad_token_normalised_and_pruned_heads_score_zero():
    model = _model()
    one = score_heads(model, _batches(n=1), method="gate_grad")
    mask = torch.ones(2, 4)
    mask[0, 3] = 0
    prune_heads(model, mask)
    pruned = score_heads(model, _batches(n=1), method="gate_grad")
    assert pruned.raw[0, 3] == 0.0 and (pruned.raw.ravel()[[0, 1, 2, 4, 5, 6, 7]] > 0).all()
    assert one.raw.sum() < 1.0  # divided by the ~25 labelled tokens


def test_entropy_uniform_attention_scores_zero():
    model = _model()
    attn = model.encoder.encoder.layer[0].attention.self
    with torch.no_grad():  # zero queries -> uniform attention over the real tokens
        attn.query.weight.zero_()
        attn.query.bias.zero_()
    imp = score_heads(model, _batches(), method="entropy")
    assert np.allclose(imp.raw[0], 0.0, atol=1e-6)
    assert (imp.raw[1] > 0).all()


def test_normalisations():
    raw = np.array([[1.0, 3.0], [0.0, 4.0]])
    assert np.allclose(normalise(raw, normalize="layer_sum"), [[0.25, 0.75], [0, 1]])
    l2 = normalise(raw, normalize="layer_l2")
    assert np.allclose(np.linalg.norm(l2, axis=1), 1.0)
    mm = normalise(raw, normalize="none", minmax=True)
    assert mm.min() == 0.0 and mm.max() == 1.0 and mm[0, 0] == 0.25
    with pytest.raises(ValueError, match="unknown normalisation 'zz'; known: none, layer_l2, layer_sum"):
        normalise(raw, normalize="zz")


def test_unknown_method_and_empty_data():
    model = _model()
    with pytest.raises(ValueError, match="unknown importance method 'x'; known: gate_grad"):
        score_heads(model, _batches(), method="x")
    with pytest.raises(ValueError, match="empty"):
        score_heads(model, [], method="gate_grad")


def test_spearman_matrix_matches_scipy():
    from scipy.stats import spearmanr
    rng = np.random.default_rng(0)
    maps = {k: rng.random((2, 4)) for k in "abc"}
    names, m = spearman_matrix(maps)
    assert names == ["a", "b", "c"]
    assert m[0, 2] == pytest.approx(spearmanr(maps["a"].ravel(), maps["c"].ravel()).statistic)
    assert np.allclose(m, m.T) and np.allclose(np.diag(m), 1)


@pytest.mark.parametrize("n, tol", [(144, 0.012), (12, 0.03)])
def test_spearman_chance_band_holds_95_percent_of_random_rankings(n, tol):
    """The band's half-width is the 95th percentile of |rho| between independent random rankings (simulated)."""
    from headprune_core.methods.similarity import spearman_chance_band
    rng = np.random.default_rng(0)
    base = np.arange(n, dtype=np.float64)
    rhos = [np.corrcoef(base, rng.permutation(n))[0, 1] for _ in range(6000)]  # ranks: Pearson = Spearman
    band = spearman_chance_band(n)
    assert band == pytest.approx(np.quantile(np.abs(rhos), 0.95), abs=tol)
    assert band == pytest.approx(1.96 / np.sqrt(n - 1), abs=0.02)
    assert spearman_chance_band(n, level=0.99) > band
    with pytest.raises(ValueError, match="at least 4 ranked items"):
        spearman_chance_band(3)


def test_per_example_kv_maps_equal_kv_grad_on_each_example_alone():
    """GradTS-fg's batched per-example maps: one backward per batch gives each example's own kv_grad map."""
    from headprune_core.methods.importance import instance_kv_maps
    from headprune_core.methods.train import batches
    from tests.helpers.rows import sentence_rows, token_rows
    for kind, rows, labels in (("token", token_rows(10), ("A", "B", "C")), ("sentence", sentence_rows(10), ("n", "p"))):
        torch.manual_seed(0)
        model = HeadedEncoder(tiny_encoder("bert"), {"t": TaskHead(kind, labels)}, dropout=0.0)
        maps = instance_kv_maps(model, batches(rows, batch_size=4, pad_id=0, shuffle=True))
        alone = [score_heads(model, [b], method="kv_grad").raw
                 for b in batches(rows, batch_size=1, pad_id=0, shuffle=True)]  # the same order (same seed)
        assert maps.shape == (10, 2, 4) and np.allclose(maps, np.stack(alone), rtol=1e-5, atol=1e-9), kind
        assert len({m.tobytes() for m in maps}) == 10  # examples differ
    assert not any(m._forward_hooks for m in model.modules())  # no hook left on the model
