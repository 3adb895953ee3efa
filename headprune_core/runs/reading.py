"""What a Study reads: the model and tokenizer, each task's data, and the fingerprints of exactly the rows a run
reads.

:class:`StudyData` is the half of :class:`~headprune_core.runs.study.Study` that loads and fingerprints (the
other half turns configurations into cached results). Only what a run reads is read, tokenised and hashed: a run
of 200 sentences of a 500,000-sentence split touches 200 rows.

Why inheritance, not composition: a Study *is* what it reads plus what it computes from it, and its callers
(pages, plans, GradTS, the sweep's workers) use both halves through one object (``study.store``,
``study.data(...)``, ``study.scores(...)``); holding a StudyData and forwarding two dozen attributes would add a
layer that says nothing. The split is one-way: StudyData never uses a name only Study defines (a test checks
it), so it can be read, tested and used alone; Study adds configurations and cached results, every one through
its ``_cached``.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any, Self

import numpy as np
from datasets import concatenate_datasets

from headprune_core.base.choices import HELDOUT
from headprune_core.base.defaults import DEFAULT_MODEL
from headprune_core.base.progress import Progress, TqdmProgress
from headprune_core.base.specs import canonical_json
from headprune_core.data import tokenize_sentence_task, tokenize_token_task
from headprune_core.data.refs import EMBEDDED, load_ref, parse_sources, ref_for
from headprune_core.encoders.models import checkpoint_classifier, config_head_shape, load_model, model_fingerprint
from headprune_core.methods.train import batches
from headprune_core.runs.store import Store


class StudyData:
    """The model, its tokenizer and the tasks' data of a Study, loaded lazily, with the fingerprints of what a
    run reads (its rows' content, in order, with the label names and the task kind)."""

    def __init__(self, model_id: str = DEFAULT_MODEL, *, store: Store | None = None, device: str = "auto",
                 progress: bool = True, on_progress: Progress | None = None, sources=None,
                 finetuned: bool = False):
        """
        Args:
            model_id: embedded name, local folder or Hub id of the encoder.
            sources: where each task's data comes from: ``{"task" or "task/lang": data reference}`` (see
                :mod:`headprune_core.data.refs`; e.g. ``{"ner": "hub:wikiann", "pos/sw": "sw.conllu"}``);
                everything else reads the embedded or registered corpora.
            progress: with no ``on_progress``, draw tqdm bars on the terminal.
            on_progress: where the Study reports how far its runs are (:mod:`headprune_core.base.progress`).
            finetuned: ``model_id`` is a fine-tuned token-classification checkpoint: its classifier is used as
                is (no fine-tuning), and the data's labels are mapped onto the checkpoint's label names.
        """
        self.model_id = model_id
        self.store = store or Store()
        self.device = device
        self.progress = progress  # with no on_progress: tqdm bars on the terminal, or none
        self.on_progress: Progress | None = on_progress if on_progress is not None else (
            TqdmProgress() if progress else None)
        self.sources = parse_sources(sources)
        self.checkpoint = None
        if finetuned:
            self.checkpoint = checkpoint_classifier(model_id)
        self._loaded = None
        self._base: StudyData | None = None  # a Study this one shares its loaded model with (with_sources)
        self._data: dict[tuple[str, str], Any] = {}
        self._rows: dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]] = {}  # row digests, which are known
        self._tokenized: dict[tuple[str, str, str, int], tuple[Any, dict]] = {}
        self._heldout: dict[tuple[str, str, str], Any] = {}
        self._model_fp: str | None = None
        self._shape: tuple[int, int] | None = None

    # --- resources -----------------------------------------------------------------------------------------
    @property
    def loaded(self):
        """The base encoder and tokenizer (loaded once)."""
        if self._loaded is None:
            if self._base is not None:
                self._loaded = self._base.loaded
            else:
                self._loaded = load_model(self.model_id, device=self.device)
        return self._loaded

    @property
    def model_fp(self) -> str:
        """Content fingerprint of the model's weights, config and tokenizer (Hub: its resolved commit)."""
        if self._model_fp is None:
            self._model_fp = model_fingerprint(self.model_id)
        return self._model_fp

    @property
    def head_shape(self) -> tuple[int, int]:
        """``(layers, heads)`` of the model, from its config (no weights loaded)."""
        if self._shape is None:
            self._shape = config_head_shape(self.model_id)
        return self._shape

    def with_sources(self, sources) -> Self:
        """A Study of the same model and store reading ``sources`` on top of this one's (shares the loaded
        model and its fingerprints, never this Study's data)."""
        other = type(self)(self.model_id, store=self.store, device=self.device, progress=self.progress,
                      on_progress=self.on_progress)
        other.sources = {**self.sources, **parse_sources(sources)}
        other.checkpoint = self.checkpoint
        other._loaded, other._model_fp, other._shape = self._loaded, self._model_fp, self._shape
        if self._loaded is None:  # load once for both
            other._base = self
        return other

    def source_for(self, task: str, lang: str):
        """The data reference of ``task`` in ``lang``: ``task/lang``, then ``task``, then the embedded corpus."""
        return ref_for(self.sources, task, lang) or EMBEDDED

    def data(self, task: str, lang: str):
        """The task's ``TaskData`` for one language (splits, labels, kind), from :meth:`source_for`."""
        if (task, lang) not in self._data:
            labels = list(self.checkpoint["labels"]) if self.checkpoint else None
            self._data[(task, lang)] = load_ref(self.source_for(task, lang), task, lang, labels=labels)
        return self._data[(task, lang)]

    def majority_share(self, task: str, lang: str, split: str, limit: int | None) -> float:
        """What always answering the most frequent label scores on the ``limit`` sentences a run reads of a split,
        in % (token tasks: of their words; sentence tasks: of the sentences): the floor of the metric."""
        ds = self._split(task, lang, split).select(subset_indices(self.split_size(task, lang, split), limit))
        column = "tags" if "tags" in ds.column_names else "label"
        values = [t for row in ds[column] for t in row] if column == "tags" else list(ds[column])
        if not values:
            raise ValueError(f"{task}/{lang} {split}: no labels to take the most frequent of")
        return 100.0 * max(Counter(values).values()) / len(values)

    def split_size(self, task: str, lang: str, split: str) -> int:
        return len(self._split(task, lang, split))

    def _split(self, task: str, lang: str, split: str):
        d = self.data(task, lang)
        if split == HELDOUT and "test" in d.dataset and "train" in d.dataset:
            if (task, lang, HELDOUT) not in self._heldout:  # test first: a cap keeps a sample of both
                self._heldout[(task, lang, HELDOUT)] = concatenate_datasets([d.dataset["test"], d.dataset["train"]])
            return self._heldout[(task, lang, HELDOUT)]
        if split not in d.dataset:
            raise ValueError(f"{task}/{lang} has no split {split!r}; it has: {', '.join(d.dataset)}")
        return d.dataset[split]

    def read_fp(self, task: str, lang: str, split: str, limit: int | None, *, seed: int = 0,
                rows: tuple[int, ...] | None = None) -> str:
        """Fingerprint of exactly the examples a run reads: the content of the rows
        ``subset_indices(len(split), limit, seed)`` (or of the given ``rows``), in order, with the label names and
        the task kind. A changed sentence or label gives a new key."""
        ds = self._split(task, lang, split)
        n = len(ds)
        d = self.data(task, lang)
        h = hashlib.sha256(canonical_json({"task": task, "lang": lang, "kind": d.kind,
                                           "labels": list(d.labels)}).encode())
        if rows is not None and rows and max(rows) >= n:
            raise ValueError(f"{task}/{lang} {split} has {n} rows; row {max(rows)} was asked for")
        wanted = subset_indices(n, limit, seed=seed) if rows is None else list(rows)
        for digest in self._row_digests((task, lang, split), ds, wanted):
            h.update(digest)
        return h.hexdigest()[:16]

    def _row_digests(self, key: tuple[str, str, str], ds, wanted: list[int], *, batch: int = 10_000):
        """The SHA-256 of each of rows ``wanted`` of ``ds``: only those rows are read, 10,000 at a time (a split of
        500,000 sentences is never a Python list), and each digest is kept for the next call (32 bytes a row)."""
        if key not in self._rows:
            self._rows[key] = (np.zeros((len(ds), 32), dtype=np.uint8), np.zeros(len(ds), dtype=bool))
        digests, done = self._rows[key]
        todo = sorted({i for i in wanted if not done[i]})
        for start in range(0, len(todo), batch):
            part = todo[start:start + batch]
            for i, row in zip(part, ds.select(part).to_list()):
                digests[i] = np.frombuffer(hashlib.sha256(canonical_json(row).encode()).digest(), dtype=np.uint8)
                done[i] = True
        return [digests[i].tobytes() for i in wanted]

    def tokenized(self, task: str, lang: str, split: str, max_length: int, rows: list[int] | None = None):
        """The tokenised ``rows`` of a split (all when None), in that order: input_ids, attention_mask, labels,
        and their alignment stats. Only those rows are tokenised (each row alone, so a row's ids do not depend on
        which others are asked): a run reading 200 sentences of a 500,000-sentence split tokenises 200."""
        key = (task, lang, split, max_length, None if rows is None else _rows_key(rows))
        if key not in self._tokenized:
            d = self.data(task, lang)
            fn = tokenize_token_task if d.kind == "token" else tokenize_sentence_task
            ds = self._split(task, lang, split)
            if rows is not None and list(rows) != list(range(len(ds))):
                ds = ds.select(list(rows))
            ds, stats = fn(ds, self.loaded.tokenizer, max_length=max_length)
            self._tokenized[key] = (ds, _stats_dict(stats))
        return self._tokenized[key]

    def eval_batches(self, task: str, lang: str, split: str, limit: int | None, *, max_length: int,
                     batch_size: int = 32, half: int = 0, resample: int | None = None):
        """Batches of the ``limit`` sentences a run reads (``half`` 1 or 2: every other one of them; with a
        ``resample`` seed, :func:`resampled_rows` of them)."""
        rows = scored_rows(subset_indices(self.split_size(task, lang, split), limit), half, resample)
        ds, _ = self.tokenized(task, lang, split, max_length, rows=rows)
        return batches(ds, batch_size=batch_size, pad_id=self.pad_id)

    @property
    def pad_id(self) -> int:
        """The tokenizer's padding id (0 when it has none)."""
        return self.loaded.tokenizer.pad_token_id or 0


def capped(size: int, limit: int | None) -> int:
    """The rows a cap of ``limit`` sentences reads from a split of ``size`` (all when None or larger)."""
    return size if limit is None else min(limit, size)


def _rows_key(rows) -> str:
    """A short stand-in for a list of row indices in a cache key of tokenised rows."""
    return hashlib.sha256(np.asarray(list(rows), dtype=np.int64).tobytes()).hexdigest()[:16]


def subset_indices(size: int, n: int | None, *, seed: int = 0) -> list[int]:
    """Row indices of a seeded random sample of ``n`` of ``size`` rows, in corpus order (all if ``n`` is None
    or larger). Splits keep corpus order, and some corpora are sorted by label: the first ``n`` would be biased.
    """
    if n is None or n >= size:
        return list(range(size))
    return sorted(int(i) for i in np.random.default_rng(seed).permutation(size)[:n])


def scored_rows(rows: list[int], half: int = 0, resample: int | None = None) -> list[int]:
    """The rows a scoring reads of the ``rows`` its cap reads: all; ``half`` 1 or 2, every other one of them; with
    a ``resample`` seed, :func:`resampled_rows` of them (the run's key fingerprints exactly these)."""
    if resample is not None:
        return resampled_rows(rows, half, resample)
    return list(rows[half - 1::2]) if half else list(rows)


def resampled_rows(rows: list[int], half: int, seed: int) -> list[int]:
    """The rows one training run scores when its sentences are drawn again (Findings card c): ``rows`` split into
    two halves at random, then each half drawn with replacement to its own size (a bootstrap draw, so each run reads
    a new sample of the pool and a new split, and no sentence is in both halves). ``half`` 1 or 2: that half; 0:
    both. Seeded by ``seed`` (the run's training seed), in corpus order."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(np.asarray(rows, dtype=np.int64))
    cut = len(order) // 2
    drawn = [np.sort(rng.choice(part, size=len(part), replace=True)) if len(part) else part
             for part in (order[:cut], order[cut:])]
    picked = drawn if half == 0 else [drawn[half - 1]]
    return [int(i) for part in picked for i in part]


def _stats_dict(stats) -> dict:
    if stats is None:
        return {}
    if isinstance(stats, dict):
        return dict(stats)
    return stats.to_dict()
