"""Tokenise task data for a model and align word labels to sub-words.

Token tasks: words are given to a fast tokenizer with ``is_split_into_words=True``; ``word_ids()`` tells which
word each sub-word came from. The FIRST sub-word of each word carries the word's label, every other sub-word
and every special token gets -100 (ignored by the loss and the metrics). With an XLM-R style Unigram tokenizer
10-12% of words start with a bare "▁" piece: that piece is the first sub-word and carries the label, as any
first sub-word does.

Sentences longer than ``max_length`` are truncated, never dropped: ``AlignStats`` counts the sentences that
were cut and the words that lost their label (evaluate only on what the model sees, and report these counts).
Words that the tokenizer turns into no sub-word at all (e.g. a lone zero-width character) cannot be labelled
either: they are counted separately.

>>> # tok_ds, stats = tokenize_token_task(data.dataset, tokenizer, max_length=128); print(stats)
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import datasets
import numpy as np

from headprune_core.base.defaults import MAX_LENGTH

IGNORE_INDEX = -100


@dataclass
class AlignStats:
    """What tokenisation did to the words: totals, and per split when a DatasetDict was given."""

    sentences: int = 0
    words: int = 0
    subwords: int = 0
    sentences_truncated: int = 0
    words_lost: int = 0
    words_without_subwords: int = 0
    per_split: dict[str, AlignStats] = field(default_factory=dict)

    @property
    def words_lost_share(self) -> float:
        return self.words_lost / self.words if self.words else 0.0

    def add(self, other: AlignStats) -> None:
        for f in fields(self):
            if f.name != "per_split":
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "per_split"}
        if self.per_split:
            out["per_split"] = {k: v.to_dict() for k, v in self.per_split.items()}
        return out

    def __str__(self) -> str:
        return (f"{self.sentences} sentences, {self.words} words -> {self.subwords} sub-words; "
                f"{self.sentences_truncated} sentences truncated, {self.words_lost} words lost "
                f"({100 * self.words_lost_share:.2f}%), {self.words_without_subwords} words without sub-words")


def _require_fast(tokenizer) -> None:
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError(f"{type(tokenizer).__name__} is not a fast tokenizer: word_ids() (needed to align word "
                        "labels to sub-words) only exists on fast tokenizers")


def align_labels(word_ids: list[int | None], tags: list[int]) -> list[int]:
    """Labels per sub-word: the word's tag on its first sub-word, -100 elsewhere."""
    out, prev = [], None
    for w in word_ids:
        out.append(IGNORE_INDEX if w is None or w == prev else tags[w])
        if w is not None:
            prev = w
    return out


def _tokenize_tokens(ds: datasets.Dataset, tokenizer, max_length: int, keep_word_ids: bool
                     ) -> tuple[datasets.Dataset, AlignStats]:
    stats = AlignStats()

    def fn(batch):
        enc = tokenizer(batch["tokens"], is_split_into_words=True, truncation=True, max_length=max_length)
        full = tokenizer(batch["tokens"], is_split_into_words=True, truncation=False, verbose=False)
        labels, wids = [], []
        for i, tags in enumerate(batch["tags"]):
            w = enc.word_ids(i)
            labels.append(align_labels(w, tags))
            wids.append([-1 if x is None else x for x in w])
            n = len(tags)
            kept = {x for x in w if x is not None}
            present = {x for x in full.word_ids(i) if x is not None}
            stats.sentences += 1
            stats.words += n
            stats.subwords += sum(1 for x in w if x is not None)
            stats.words_without_subwords += n - len(present)
            lost = len(present - kept)
            stats.words_lost += lost
            stats.sentences_truncated += int(len(full["input_ids"][i]) > len(enc["input_ids"][i]))
        out = {k: v for k, v in enc.items()}
        out["labels"] = labels
        if keep_word_ids:
            out["word_ids"] = wids
        return out

    # load_from_cache_file=False: the stats are counted while mapping, so the map must really run.
    tok = ds.map(fn, batched=True, remove_columns=ds.column_names, load_from_cache_file=False,
                 desc="tokenising")
    return tok, stats


def tokenize_token_task(dataset: datasets.Dataset | datasets.DatasetDict, tokenizer, *, max_length: int = MAX_LENGTH,
                        keep_word_ids: bool = True):
    """Tokenise a token task (columns tokens, tags) and align labels; returns (tokenized, AlignStats).

    Output columns: input_ids, attention_mask (token_type_ids if the tokenizer makes them), labels, and
    word_ids (-1 for special tokens) unless ``keep_word_ids=False``. A DatasetDict gives a DatasetDict and
    stats with ``per_split``.

    >>> # tok, stats = tokenize_token_task(load_task("pos", "fr").dataset, tokenizer); stats.words_lost
    """
    _require_fast(tokenizer)
    if isinstance(dataset, datasets.DatasetDict):
        total, out = AlignStats(), {}
        for split, ds in dataset.items():
            out[split], st = _tokenize_tokens(ds, tokenizer, max_length, keep_word_ids)
            total.add(st)
            total.per_split[split] = st
        return datasets.DatasetDict(out), total
    return _tokenize_tokens(dataset, tokenizer, max_length, keep_word_ids)


def _tokenize_sentences(ds: datasets.Dataset, tokenizer, max_length: int) -> tuple[datasets.Dataset, AlignStats]:
    stats = AlignStats()
    pair = "text_pair" in ds.column_names

    def fn(batch):
        args = (batch["text"], batch["text_pair"]) if pair else (batch["text"],)
        enc = tokenizer(*args, truncation=True, max_length=max_length)
        full = tokenizer(*args, truncation=False, verbose=False)
        for i in range(len(batch["text"])):
            stats.sentences += 1
            stats.subwords += len(enc["input_ids"][i])
            stats.sentences_truncated += int(len(full["input_ids"][i]) > len(enc["input_ids"][i]))
        out = {k: v for k, v in enc.items()}
        out["labels"] = list(batch["label"])
        return out

    tok = ds.map(fn, batched=True, remove_columns=ds.column_names, load_from_cache_file=False,
                 desc="tokenising")
    return tok, stats


def tokenize_sentence_task(dataset: datasets.Dataset | datasets.DatasetDict, tokenizer, *,
                           max_length: int = MAX_LENGTH):
    """Tokenise a sentence task (text[, text_pair], label); returns (tokenized, AlignStats).

    Pairs are encoded together and truncated longest-first; ``sentences_truncated`` counts the cut examples.
    """
    if isinstance(dataset, datasets.DatasetDict):
        total, out = AlignStats(), {}
        for split, ds in dataset.items():
            out[split], st = _tokenize_sentences(ds, tokenizer, max_length)
            total.add(st)
            total.per_split[split] = st
        return datasets.DatasetDict(out), total
    return _tokenize_sentences(dataset, tokenizer, max_length)


def shuffled_labels(ds: datasets.Dataset, *, seed: int) -> datasets.Dataset:
    """A tokenised training set with its labels permuted at random (seeded): a sentence task's labels across its
    sentences; a token task's across every labelled token of the set (positions marked -100 stay unlabelled). Each
    label keeps its frequency and each sentence its length and words, but a label no longer belongs to its input:
    a model trained on it learns the data's shape and the encoder's habits, not the task (a control)."""
    rng = np.random.default_rng(seed)
    labels = ds["labels"]
    if not labels or not isinstance(labels[0], list):
        return ds.remove_columns("labels").add_column("labels", [int(v) for v in rng.permutation(labels)])
    flat = np.array([v for row in labels for v in row if v != -100], dtype=np.int64)
    flat = iter(rng.permutation(flat).tolist())
    shuffled = [[v if v == -100 else next(flat) for v in row] for row in labels]
    return ds.remove_columns("labels").add_column("labels", shuffled)
