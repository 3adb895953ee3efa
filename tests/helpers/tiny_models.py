"""Tiny random encoders (2 layers, 4 heads) of every family headprune supports, built in memory."""

from __future__ import annotations

import torch
from transformers import (
    BertConfig,
    BertModel,
    DistilBertConfig,
    DistilBertModel,
    ElectraConfig,
    ElectraModel,
    RobertaConfig,
    RobertaModel,
    XLMRobertaConfig,
    XLMRobertaModel,
)

FAMILIES = ["bert", "roberta", "xlm-roberta", "distilbert", "electra"]
VOCAB = 120


def tiny_encoder(family: str = "bert", *, layers: int = 2, heads: int = 4, hidden: int = 32,
                 attn_implementation: str = "eager"):
    """A randomly initialised encoder of ``family`` in eval mode, fp32, seeded."""
    torch.manual_seed(0)
    common = dict(vocab_size=VOCAB, max_position_embeddings=64, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)
    if family == "bert":
        model = BertModel(BertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                                     intermediate_size=2 * hidden, **common), add_pooling_layer=False)
    elif family == "roberta":
        model = RobertaModel(RobertaConfig(hidden_size=hidden, num_hidden_layers=layers,
                                           num_attention_heads=heads, intermediate_size=2 * hidden,
                                           pad_token_id=1, **common), add_pooling_layer=False)
    elif family == "xlm-roberta":
        model = XLMRobertaModel(XLMRobertaConfig(hidden_size=hidden, num_hidden_layers=layers,
                                                 num_attention_heads=heads, intermediate_size=2 * hidden,
                                                 pad_token_id=1, **common), add_pooling_layer=False)
    elif family == "electra":
        model = ElectraModel(ElectraConfig(hidden_size=hidden, embedding_size=hidden // 2,
                                           num_hidden_layers=layers, num_attention_heads=heads,
                                           intermediate_size=2 * hidden, **common))
    elif family == "distilbert":
        model = DistilBertModel(DistilBertConfig(vocab_size=VOCAB, dim=hidden, n_layers=layers, n_heads=heads,
                                                 hidden_dim=2 * hidden, max_position_embeddings=64,
                                                 dropout=0.0, attention_dropout=0.0))
    else:
        raise ValueError(family)
    model.config._attn_implementation = attn_implementation
    return model.eval()


def random_batch(batch: int = 3, seq: int = 9, *, seed: int = 1) -> dict[str, torch.Tensor]:
    """Token ids and an attention mask with some padding in the last row."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (batch, seq), generator=g)
    attn = torch.ones(batch, seq, dtype=torch.long)
    attn[-1, seq - 3:] = 0
    return {"input_ids": ids, "attention_mask": attn}
