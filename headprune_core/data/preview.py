"""What a corpus holds, before anyone trains on it: counts, labels, first examples, and how a tokenizer cuts it.

The Add data page and ``python -m headprune_core data show`` print the same report.

>>> # corpus_report(load_task("pos", "de"), tokenizer=load_tokenizer("me5-small"))["alignment"]["words_lost"]
"""

from __future__ import annotations

from collections import Counter

from headprune_core.base.defaults import MAX_LENGTH
from headprune_core.data.align import tokenize_sentence_task, tokenize_token_task


def example_text(row: dict, labels: list[str], kind: str) -> str:
    """One example as ``word/TAG word/TAG ...`` or ``[label] text (|| pair)``."""
    if kind == "token":
        return " ".join(f"{w}/{labels[t]}" for w, t in zip(row["tokens"], row["tags"]))
    pair = f" || {row['text_pair']}" if row.get("text_pair") is not None else ""
    return f"[{labels[row['label']]}] {row['text']}{pair}"


def examples(data, n: int = 5, *, split: str = "train") -> list[dict]:
    """The first ``n`` examples of a split, with label names: ``{"words", "tags"}`` or ``{"text", "label"}``."""
    ds = data.dataset[split]
    out = []
    for row in ds.select(range(min(n, len(ds)))):
        if data.kind == "token":
            out.append({"words": list(row["tokens"]), "tags": [data.labels[t] for t in row["tags"]]})
        else:
            out.append({"text": row["text"], "label": data.labels[row["label"]],
                        **({"text_pair": row["text_pair"]} if row.get("text_pair") is not None else {})})
    return out


def label_counts(data, split: str = "train") -> dict[str, int]:
    """How often each label occurs in ``split`` (every label listed, zeros included)."""
    ds = data.dataset[split]
    col = "tags" if data.kind == "token" else "label"
    counts = Counter()
    for value in ds[col]:
        counts.update(value if data.kind == "token" else [value])
    return {lab: int(counts.get(i, 0)) for i, lab in enumerate(data.labels)}


def corpus_report(data, *, tokenizer=None, max_length: int = MAX_LENGTH, n: int = 5) -> dict:
    """Counts, label counts (train), the first ``n`` examples as text and, with a tokenizer, the alignment:
    sentences truncated at ``max_length`` and words lost (token tasks) over all splits."""
    rep = {"task": data.task, "lang": data.lang, "kind": data.kind, "labels": list(data.labels),
           "counts": {s: len(d) for s, d in data.dataset.items()}, "label_counts": label_counts(data),
           "examples": [example_text(r, data.labels, data.kind)
                        for r in data.dataset["train"].select(range(min(n, len(data.dataset["train"]))))]}
    if tokenizer is not None:
        fn = tokenize_token_task if data.kind == "token" else tokenize_sentence_task
        _, stats = fn(data.dataset, tokenizer, max_length=max_length)
        rep["alignment"] = {"max_length": max_length, "sentences": stats.sentences, "words": stats.words,
                            "subwords": stats.subwords, "truncated": stats.sentences_truncated,
                            "words_lost": stats.words_lost, "words_lost_share": stats.words_lost_share,
                            "pieces_per_word": stats.subwords / stats.words if stats.words else 0.0}
    return rep
