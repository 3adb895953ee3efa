"""A physically pruned model saved to a folder loads back with the same outputs."""

from __future__ import annotations

import json

import pytest
import torch

from headprune_core.encoders.classifier import HeadedEncoder, TaskHead
from headprune_core.encoders.heads import count_parameters, head_gates, kept_heads
from headprune_core.encoders.pruned import load_pruned, save_pruned
from tests.helpers.tiny_models import FAMILIES, random_batch, tiny_encoder


@pytest.mark.parametrize("family", FAMILIES)
def test_save_and_load_pruned_model(tmp_path, family):
    model = HeadedEncoder(tiny_encoder(family, attn_implementation="sdpa"),
                          {"pos": TaskHead("token", ("A", "B"))}).eval()
    mask = torch.ones(2, 4)
    mask[0, [0, 2]] = 0
    mask[1] = 0  # a whole layer
    batch = random_batch()
    with torch.no_grad(), head_gates(model, mask):
        gated = model(batch["input_ids"], batch["attention_mask"])
    out = save_pruned(model, mask, tmp_path / "pruned", meta={"base_model": "tiny"})
    assert json.loads((out / "headprune_pruned.json").read_text())["heads_removed"] == \
        [[0, 0], [0, 2], [1, 0], [1, 1], [1, 2], [1, 3]]
    loaded = load_pruned(out)
    assert kept_heads(loaded, 0) == [1, 3] and kept_heads(loaded, 1) == []
    assert count_parameters(loaded) < count_parameters(model)
    with torch.no_grad():
        again = loaded(batch["input_ids"], batch["attention_mask"])
    assert (again - gated).abs().max().item() <= 1e-4
    assert kept_heads(model, 0) == [0, 1, 2, 3]  # the original stays whole


def test_load_rejects_a_plain_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a headprune pruned-model folder"):
        load_pruned(tmp_path)
