"""Fine-tuning: losses fall for token, sentence and mixed multi-task training; weights round-trip."""

from __future__ import annotations

import torch

from headprune_core.encoders.classifier import HeadedEncoder, TaskHead
from headprune_core.methods.evaluate import evaluate
from headprune_core.methods.train import batches, collate, finetune, load_trained, schedule, trained_weights
from tests.helpers.rows import sentence_rows, token_rows
from tests.helpers.tiny_models import tiny_encoder


def test_collate_pads():
    b = collate([{"input_ids": [5, 6], "attention_mask": [1, 1], "labels": [1, -100]},
                 {"input_ids": [7], "attention_mask": [1], "labels": [2]}], pad_id=0, task="t")
    assert b["input_ids"].tolist() == [[5, 6], [7, 0]] and b["attention_mask"].tolist() == [[1, 1], [1, 0]]
    assert b["labels"].tolist() == [[1, -100], [2, -100]] and b["task"] == "t"


def test_schedule():
    prop = schedule({"a": 3, "b": 1}, sampling="proportional", seed=0)
    assert sorted(prop) == [("a", 0), ("a", 1), ("a", 2), ("b", 0)]
    rr = schedule({"a": 3, "b": 1}, sampling="round_robin", seed=0)
    assert rr == [("a", 0), ("b", 0), ("a", 1), ("b", 0), ("a", 2), ("b", 0)]


def test_multitask_training_lowers_both_losses_and_weights_round_trip():
    torch.manual_seed(0)
    tasks = {"tok": TaskHead("token", ("A", "B", "C")), "sent": TaskHead("sentence", ("neg", "pos"))}
    model = HeadedEncoder(tiny_encoder("bert"), tasks, dropout=0.0)
    train = {"tok": token_rows(), "sent": sentence_rows()}
    log = finetune(model, train, pad_id=0, epochs=10, lr=3e-3, batch_size=8,
                   freeze_embeddings=True)
    for task in tasks:
        assert log.mean_loss(task, window=6) < 0.8 * log.mean_loss(task, first=True, window=6), task
    assert log.steps == 10 * (6 + 6)
    tok_batches = batches(token_rows(16, seed=5), batch_size=8, pad_id=0, task="tok")
    acc = evaluate(model, tok_batches, ["A", "B", "C"], kind="token")["score"]
    weights = trained_weights(model, freeze_embeddings=True)
    assert "encoder.embeddings.word_embeddings.weight" not in weights
    torch.manual_seed(0)
    fresh = HeadedEncoder(tiny_encoder("bert"), tasks, dropout=0.0)
    load_trained(fresh, weights)
    assert evaluate(fresh, tok_batches, ["A", "B", "C"], kind="token")["score"] == acc
