"""Metrics agree with seqeval; strategies give the right masks; evaluation under a mask."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from seqeval.metrics import accuracy_score, f1_score
from seqeval.scheme import IOB2

from headprune_core.encoders.classifier import HeadedEncoder, TaskHead
from headprune_core.methods.evaluate import (
    curve,
    default_steps,
    evaluate,
    layer_mask,
    layer_pairs,
    layers_mask,
    order_by,
    score_predictions,
    strategy_mask,
)
from headprune_core.methods.train import batches, finetune
from tests.helpers.tiny_models import tiny_encoder

BIO = ["O", "B-NAME", "I-NAME", "B-LOC", "I-LOC"]


def test_entity_f1_equals_seqeval_on_fixed_examples():
    gold = [[0, 1, 2, 0, 3], [1, 0, 0], [3, 4, 0, 1]]
    pred = [[0, 1, 2, 0, 0], [1, 2, 0], [3, 4, 0, 0]]
    res = score_predictions(gold, pred, BIO, kind="token")
    g = [[BIO[i] for i in s] for s in gold]
    p = [[BIO[i] for i in s] for s in pred]
    assert res["metric"] == "entity F1"
    assert res["score"] == pytest.approx(100 * f1_score(g, p, mode="strict", scheme=IOB2))
    assert res["score"] == pytest.approx(100 * 2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5))
    assert set(res["report"]) >= {"NAME", "LOC", "micro avg"}
    assert res["report"]["LOC"]["recall"] == pytest.approx(0.5)


def test_accuracy_and_per_tag_report():
    labels = ["NOUN", "VERB", "DET"]
    gold, pred = [[0, 1, 2, 0], [2, 0]], [[0, 1, 0, 0], [2, 1]]
    res = score_predictions(gold, pred, labels, kind="token")
    assert res["metric"] == "accuracy"
    assert res["score"] == pytest.approx(100 * accuracy_score([[str(i) for i in s] for s in gold],
                                                              [[str(i) for i in s] for s in pred]))
    assert res["report"]["NOUN"] == {"accuracy": pytest.approx(200 / 3), "support": 3, "predicted": 3}
    sent = score_predictions([0, 1, 1, 0], [0, 1, 0, 0], ["neg", "pos"], kind="sentence")
    assert sent["score"] == 75.0 and sent["n"] == 4
    with pytest.raises(ValueError, match="no labelled tokens"):
        score_predictions([[]], [[]], labels, kind="token")


def test_strategies_masks():
    ranking = np.array([[0.5, 0.1, 0.9], [0.2, 0.8, 0.3]])
    imp = strategy_mask((2, 3), "importance", 2, ranking=ranking)
    assert imp.tolist() == [[1, 0, 1], [0, 1, 1]]  # 0.1 and 0.2 go first
    rev = strategy_mask((2, 3), "reverse", 2, ranking=ranking)
    assert rev.tolist() == [[1, 1, 0], [1, 0, 1]]  # 0.9 and 0.8 go first
    r1 = strategy_mask((2, 3), "random", 4, seed=1)
    assert int((r1 == 0).sum()) == 4 and torch.equal(r1, strategy_mask((2, 3), "random", 4, seed=1))
    assert any(not torch.equal(r1, strategy_mask((2, 3), "random", 4, seed=s)) for s in range(2, 6))
    assert strategy_mask((2, 3), "importance", 0, ranking=ranking).sum() == 6
    assert strategy_mask((2, 3), "importance", 6, ranking=ranking).sum() == 0
    assert order_by(np.array([1.0, 1.0, 0.0])).tolist() == [2, 0, 1]  # ties keep position order
    custom = strategy_mask((2, 3), "custom", custom=[[1, 0, 1], [1, 1, 1]])
    assert custom.tolist() == [[1, 0, 1], [1, 1, 1]]


def test_layer_thirds():
    assert layer_mask((12, 2), "bottom")[:, 0].tolist() == [0] * 4 + [1] * 8
    assert layer_mask((12, 2), "middle")[:, 0].tolist() == [1] * 4 + [0] * 4 + [1] * 4
    assert layer_mask((12, 2), "top")[:, 0].tolist() == [1] * 8 + [0] * 4
    assert layer_mask((6, 1), "middle")[:, 0].tolist() == [1, 1, 0, 0, 1, 1]


def test_strategy_errors():
    ranking = np.zeros((2, 3))
    with pytest.raises(ValueError, match="cannot prune 7 heads: the model has 6"):
        strategy_mask((2, 3), "importance", 7, ranking=ranking)
    with pytest.raises(ValueError, match="unknown strategy 'best'; known: importance, reverse"):
        strategy_mask((2, 3), "best", 1)
    with pytest.raises(ValueError, match=r"custom mask has shape \(3, 3\)"):
        strategy_mask((2, 3), "custom", custom=np.ones((3, 3)))
    with pytest.raises(ValueError, match="0 \\(pruned\\) or 1"):
        strategy_mask((2, 3), "custom", custom=np.full((2, 3), 0.5))
    with pytest.raises(ValueError, match="unknown layer part 'side'"):
        strategy_mask((2, 3), "layers", part="side")
    assert default_steps((2, 3)) == [0, 3, 6]


def _model_and_batches():
    """A tiny model trained to tag each token with (previous token id) mod 3: only attention can do it."""
    torch.manual_seed(0)
    model = HeadedEncoder(tiny_encoder("bert"), {"t": TaskHead("token", ("A", "B", "C"))}, dropout=0.0)
    g = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(400):
        ids = torch.randint(5, 20, (8,), generator=g).tolist()
        rows.append({"input_ids": ids, "attention_mask": [1] * 8, "labels": [-100] + [i % 3 for i in ids[:-1]]})
    finetune(model, {"t": rows[:320]}, pad_id=0, epochs=10, lr=3e-3, batch_size=16)
    return model, batches(rows[320:], batch_size=16, pad_id=0)


def test_mask_changes_metric_and_curve_shape():
    model, batches = _model_and_batches()
    full = evaluate(model, batches, ["A", "B", "C"], kind="token")
    none = evaluate(model, batches, ["A", "B", "C"], kind="token", mask=torch.zeros(2, 4))
    assert full["n"] == none["n"] == 80 * 7
    assert full["score"] > 90 and none["score"] < 60
    ranking = np.arange(8.0).reshape(2, 4)
    c = curve(model, batches, ["A", "B", "C"], kind="token", strategy="importance", ranking=ranking,
              steps=[0, 4, 8])
    assert c["k"] == [0, 4, 8] and c["mean"][0] == pytest.approx(full["score"])
    assert c["mean"][2] == pytest.approx(none["score"])
    r = curve(model, batches, ["A", "B", "C"], kind="token", strategy="random", steps=[0, 4], seeds=[0, 1, 2])
    assert r["n_seeds"] == 3 and r["std"][0] == 0.0
    lay = curve(model, batches, ["A", "B", "C"], kind="token", strategy="layers")
    assert lay["labels"] == ["bottom", "middle", "top"]


@pytest.mark.parametrize("n", range(5, 25))
def test_layer_pairs_use_the_same_layers_in_both_arms(n):
    pairs = layer_pairs(n)
    adjacent = [pairs["adjacent low"], pairs["adjacent high"]]
    apart = [pairs["apart outer"], pairs["apart inner"]]
    assert all(b - a == 1 for a, b in adjacent) and all(abs(b - a) >= 2 for a, b in apart)
    assert sorted(sum(adjacent, ())) == sorted(sum(apart, ())) and len(set(sum(adjacent, ()))) == 4
    assert all(0 <= layer < n for pair in pairs.values() for layer in pair)
    mask = layers_mask((n, 4), pairs["apart inner"])
    assert mask.sum() == 4 * (n - 2) and not mask[pairs["apart inner"][0]].any()
