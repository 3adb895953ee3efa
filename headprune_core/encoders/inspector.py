"""Look at one sentence: the model's predictions with and without a head mask, and one head's attention.

For the dashboard's head inspector (and notebooks). The model is never left changed: masks are applied with
:func:`headprune_core.encoders.heads.head_gates` only for the forward pass.

>>> # words = split_words("Anna sees the big dog ."); tag_sentence(model, tokenizer, words)["labels"]
"""

from __future__ import annotations

import contextlib
import re

import torch

from headprune_core.base.defaults import MAX_LENGTH
from headprune_core.encoders.device import device_of, to_device
from headprune_core.encoders.heads import attention_probs, head_gates, kept_heads

MAX_CHARS = 2000
"""The most characters of a typed sentence the inspector reads (the model reads far fewer tokens anyway)."""


def split_words(text: str) -> list[str]:
    """Words and punctuation marks as separate tokens (the corpora's tokenisation), for any script."""
    return re.findall(r"\w+(?:[-'’]\w+)*|[^\w\s]", text)


def bounded_words(text: str, max_length: int = MAX_LENGTH) -> tuple[list[str], str]:
    """The words of ``text`` the model can read, and a note when some were cut: at most :data:`MAX_CHARS`
    characters are split, and at most ``max_length - 2`` words kept (each word is at least one token, beside the
    two special ones), before any tokenising, so a sentence of a million words costs no more than a short one."""
    cut_chars = len(text) > MAX_CHARS
    words = split_words(text[:MAX_CHARS])
    keep = max(1, max_length - 2)
    note = ""
    if cut_chars or len(words) > keep:
        note = (f"Only the first {min(len(words), keep)} words are read (the model reads {max_length} tokens; "
                f"the inspector at most {MAX_CHARS:,} characters): the rest of the sentence was cut.")
    return words[:keep], note


def readable_tokens(model, max_length: int) -> int:
    """The most tokens ``model`` reads in one sentence: ``max_length``, or fewer where its position embeddings
    end sooner (RoBERTa-like models start their positions after the padding id)."""
    config = getattr(getattr(model, "encoder", model), "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if not positions:
        return max_length
    if getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        positions -= (getattr(config, "pad_token_id", None) or 1) + 1
    return max(2, min(max_length, positions))


def _encode(model, tokenizer, words: list[str], max_length: int) -> tuple[dict, list[int | None], list[str]]:
    device = device_of(model)
    enc = tokenizer(words, is_split_into_words=True, truncation=True, max_length=readable_tokens(model, max_length),
                    return_tensors="pt")
    word_ids = enc.word_ids(0)
    pieces = tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    return to_device({k: enc[k] for k in ("input_ids", "attention_mask")}, device), word_ids, pieces


def tag_sentence(model, tokenizer, words: list[str], *, task: str | None = None,
                 mask: torch.Tensor | None = None, max_length: int = MAX_LENGTH) -> dict:
    """Predicted labels of ``words`` (first sub-word of each word) or of the whole sentence.

    Returns ``{"kind", "labels", "probs", "pieces", "word_ids"}``: for token tasks one label and its probability
    per word (None for words cut by truncation); for sentence tasks one label and the probability of each class.
    """
    if not words:
        raise ValueError("nothing to tag: the sentence has no words")
    name = model.task_name(task)
    head = model.tasks[name]
    inputs, word_ids, pieces = _encode(model, tokenizer, words, max_length)
    gates = head_gates(model, mask) if mask is not None else contextlib.nullcontext()
    model.eval()
    with gates, torch.no_grad():
        logits = model(inputs["input_ids"], inputs["attention_mask"], task=name).float()
    probs = logits.softmax(-1)[0]
    if head.kind == "sentence":  # probs: (labels,)
        best = int(probs.argmax())
        return {"kind": "sentence", "labels": [head.labels[best]],
                "probs": {lab: float(p) for lab, p in zip(head.labels, probs)}, "pieces": pieces,
                "word_ids": word_ids}
    labels: list[str | None] = [None] * len(words)
    scores: list[float | None] = [None] * len(words)
    seen = set()
    for pos, w in enumerate(word_ids):  # probs: (seq, labels)
        if w is None or w in seen:
            continue
        seen.add(w)
        best = int(probs[pos].argmax())
        labels[w], scores[w] = head.labels[best], float(probs[pos, best])
    return {"kind": "token", "labels": labels, "probs": scores, "pieces": pieces, "word_ids": word_ids}


def head_attention(model, tokenizer, words: list[str], layer: int, head: int, *,
                   mask: torch.Tensor | None = None, max_length: int = MAX_LENGTH) -> tuple[list[str], torch.Tensor]:
    """Sub-word pieces and head ``(layer, head)``'s attention over them, ``(seq, seq)`` (rows: queries).

    With ``mask``, the pattern is computed while the masked heads are gated off (their effect on the layer
    inputs is included). A head removed physically has no pattern: ``ValueError``.
    """
    inputs, _, pieces = _encode(model, tokenizer, words, max_length)
    kept = kept_heads(model, layer)
    if head not in kept:
        raise ValueError(f"head {head} of layer {layer} was removed from this model")
    gates = head_gates(model, mask) if mask is not None else contextlib.nullcontext()
    with gates:
        probs = attention_probs(model, inputs["input_ids"], inputs["attention_mask"])
    return pieces, probs[layer][0, kept.index(head)].cpu()  # (seq, seq)
