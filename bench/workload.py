"""What the benchmark sections measure on: the model (the embedded default unless told otherwise) with a POS
tagging head, and real English POS sentences of the embedded corpora, tokenised as the study does it.

The tagging head is freshly initialised (seeded): speed does not depend on training, and every section compares
methods on the very same weights, so no fine-tuning is needed.
"""

from __future__ import annotations

import torch

from headprune_core.encoders.classifier import HeadedEncoder, TaskHead
from headprune_core.encoders.device import autocast, pick_device
from headprune_core.encoders.models import load_model
from headprune_core.runs.study import Study

TASK, LANG = "pos", "en"


def study(model_id: str) -> Study:
    return Study(model_id, progress=False)


def model(st: Study, *, attn: str | None = None, device: str = "auto") -> HeadedEncoder:
    """The study's model with a seeded POS head, in eval mode, on ``device`` (``attn``: sdpa, eager or None for
    transformers' default)."""
    labels = tuple(st.data(TASK, LANG).labels)
    encoder = load_model(st.model_id, attn_implementation=attn).encoder
    torch.manual_seed(0)
    return HeadedEncoder(encoder, {TASK: TaskHead("token", labels)}, dropout=0.0).to(pick_device(device)).eval()


def sentences(st: Study, split: str, n: int, *, batch_size: int = 16, max_length: int = 128) -> list[dict]:
    """The split's first ``n`` sentences (the study's seeded subset), in padded batches sorted by length."""
    return st.eval_batches(TASK, LANG, split, n, max_length=max_length, batch_size=batch_size)


def padded_singletons(st: Study, split: str, n: int, *, length: int = 128) -> list[dict]:
    """The same sentences one per batch, each padded to ``length`` tokens (bertology's data pipeline)."""
    pad = st.pad_id
    out = []
    for b in st.eval_batches(TASK, LANG, split, n, max_length=length, batch_size=1):
        extra = length - b["input_ids"].shape[1]
        out.append({"input_ids": torch.nn.functional.pad(b["input_ids"], (0, extra), value=pad),
                    "attention_mask": torch.nn.functional.pad(b["attention_mask"], (0, extra), value=0),
                    "labels": torch.nn.functional.pad(b["labels"], (0, extra), value=-100)})
    return out


def n_sentences(batches: list[dict]) -> int:
    return sum(int(b["input_ids"].shape[0]) for b in batches)


def forward_only(model, batches: list[dict]) -> None:
    """One plain forward pass over ``batches`` (no gradients, no metric): the unit other timings are put in."""
    device = next(model.parameters()).device
    with torch.no_grad(), autocast(device):
        for b in batches:
            model(b["input_ids"].to(device), b["attention_mask"].to(device))
