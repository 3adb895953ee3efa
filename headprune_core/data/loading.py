"""Loading a task's data from embedded corpora and local files into ``TaskData`` (the Hub: :mod:`hub`; every
source behind one call: :func:`headprune_core.data.refs.load_task`).

Whatever the source, the result is a ``TaskData`` whose ``dataset`` is a ``DatasetDict`` with the splits
``train``, ``validation`` and ``test``. Token tasks have columns ``tokens`` (list[str]) and ``tags``
(list[int], indices into ``labels``); sentence tasks have ``text`` (str), ``label`` (int) and, for sentence
pairs, ``text_pair`` (str).

>>> # data = load_task("pos", "de")
>>> # data.labels[data.dataset["train"][0]["tags"][0]]
>>> # load_task("pos", "xx", source="local", files={"train": "a.conll", "validation": "b.conll", "test": "c.conll"})
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import pyarrow as pa

from headprune_core.base.files import read_json
from headprune_core.data.corpora import PREPARE_HINT, SPLIT_SEED, SPLITS, corpus_dir, is_prepared, split_indices
from headprune_core.data.formats import (
    MAX_LABELS,
    CorpusError,
    FileFormat,
    TextRecord,
    TokenRecord,
    iter_jsonl,
    read_file,
)
from headprune_core.data.registry import TASKS, TaskInfo, UnknownName, check_language, get_task, user_dir
from headprune_core.data.tagsets import UNIVERSAL_TAGS, TagMapper


class NotPrepared(FileNotFoundError):
    """The embedded corpora have not been converted yet."""


@dataclass
class TaskData:
    """A task's data in one language: three splits, the label names, and where it came from."""

    dataset: datasets.DatasetDict
    labels: list[str]
    kind: str
    task: str
    lang: str
    meta: dict = field(default_factory=dict)

    @property
    def is_pair(self) -> bool:
        return "text_pair" in self.dataset["train"].column_names

    def __repr__(self) -> str:
        counts = {s: len(d) for s, d in self.dataset.items()}
        return f"TaskData({self.task}/{self.lang}, {self.kind}, {len(self.labels)} labels, {counts})"


def features_for(kind: str, labels: Sequence[str], *, pair: bool = False) -> datasets.Features:
    """The column types of a task: ClassLabel tags/label so that names travel with the data."""
    if kind == "token":
        return datasets.Features({"tokens": datasets.List(datasets.Value("string")),
                                  "tags": datasets.List(datasets.ClassLabel(names=list(labels)))})
    cols = {"text": datasets.Value("string")}
    if pair:
        cols["text_pair"] = datasets.Value("string")
    cols["label"] = datasets.ClassLabel(names=list(labels))
    return datasets.Features(cols)


def encode_records(records: list, labels: Sequence[str], *, kind: str, split: str = "") -> datasets.Dataset:
    """Records -> a Dataset with label indices; a label missing from ``labels`` raises with file:line."""
    index = {l: i for i, l in enumerate(labels)}

    what = "tag" if kind == "token" else "label"

    def lookup(value, where: str):
        key = value if isinstance(value, str) else None
        if key is None and isinstance(value, int) and not isinstance(value, bool):
            if 0 <= value < len(labels):
                return value
            raise CorpusError(f"{where}: {what} index {value} out of range for {len(labels)} labels")
        if key not in index:
            raise CorpusError(f"{where}: {what} {value!r} is not in the label list {list(labels)}")
        return index[key]

    if kind == "token":
        cols = {"tokens": [], "tags": []}
        for rec in records:
            if not isinstance(rec, TokenRecord):
                raise CorpusError(f"{rec.where()}: a sentence record where token records were expected")
            cols["tokens"].append(list(rec.tokens))
            try:  # the common case, without building an error location for every token
                tags = [index[t] for t in rec.tags]
            except (KeyError, TypeError):
                tags = [lookup(t, rec.where(i)) for i, t in enumerate(rec.tags)]
            cols["tags"].append(tags)
        return _dataset(cols, features_for(kind, labels))
    pair = any(getattr(r, "text_pair", None) is not None for r in records)
    cols = {"text": [], "label": []} | ({"text_pair": []} if pair else {})
    for rec in records:
        if not isinstance(rec, TextRecord):
            raise CorpusError(f"{rec.where()}: a token record where sentence records were expected")
        cols["text"].append(rec.text)
        cols["label"].append(lookup(rec.label, rec.where()))
        if pair:
            if rec.text_pair is None:
                raise CorpusError(f"{rec.where()}: missing 'text_pair' in a file of sentence pairs")
            cols["text_pair"].append(rec.text_pair)
    return _dataset(cols, features_for(kind, labels, pair=pair))


def _dataset(cols: dict, features: datasets.Features) -> datasets.Dataset:
    """An in-memory Dataset of already-encoded columns, built as one Arrow table.

    ``Dataset.from_dict`` would re-encode every value in Python and hash the table for a fingerprint (2.5 s of
    the 3.4 s a fully cached demo study spent loading its 16 corpora); labels are indices already, and a random
    fingerprint is what ``datasets`` itself uses for in-memory data it cannot hash."""
    table = pa.Table.from_pydict(cols, schema=features.arrow_schema)
    return datasets.Dataset(table, info=datasets.DatasetInfo(features=features), fingerprint=uuid.uuid4().hex)


def infer_labels(records_by_split: Mapping[str, list], kind: str) -> list[str]:
    """Label names seen in the data: sorted, with 'O' first for BIO tags."""
    values = [v for records in records_by_split.values() for rec in records
              for v in (rec.tags if kind == "token" else [rec.label])]
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        low, high = min(values), max(values)
        if low < 0 or high >= MAX_LABELS:
            bad = low if low < 0 else high
            rec, i = next((rec, i) for records in records_by_split.values() for rec in records
                          for i, v in enumerate(rec.tags if kind == "token" else [rec.label]) if v == bad)
            raise CorpusError(f"{rec.where(i) if kind == 'token' else rec.where()}: label index {bad:,}: integer "
                              f"labels are indices 0 to {MAX_LABELS - 1:,} (give the label names with labels= / "
                              "a label column of names)")
        return [str(i) for i in range(high + 1)]  # indices: names are the indices themselves
    seen = {str(v) for v in values}
    if len(seen) > MAX_LABELS:
        first = next((rec for records in records_by_split.values() for rec in records), None)
        raise CorpusError(f"{first.path if first else 'the data'}: {len(seen):,} distinct labels; a task has at "
                          f"most {MAX_LABELS:,} (is the label column an id or a number?)")
    labels = sorted(seen)
    if "O" in seen:
        labels = ["O"] + [l for l in labels if l != "O"]
    return labels


def check_splits(dd: datasets.DatasetDict, where: str) -> None:
    for split in SPLITS:
        if split not in dd:
            raise CorpusError(f"{where}: no {split!r} split (have: {', '.join(dd) or 'none'})")
        if len(dd[split]) == 0:
            raise CorpusError(f"{where}: the {split!r} split is empty")


def from_records(by_split: Mapping[str, list], task: TaskInfo | None, name: str, lang: str, *,
                  kind: str | None, labels: Sequence[str] | None, meta: dict) -> TaskData:
    """Records per split -> ``TaskData`` (kind and labels from the arguments, the task, or the records)."""
    first = next((r for recs in by_split.values() for r in recs), None)
    kind = kind or (task.kind if task else None) or ("token" if isinstance(first, TokenRecord) else "sentence")
    if labels is None and task is not None and task.labels:
        labels = task.labels
    labels = list(labels) if labels is not None else infer_labels(by_split, kind)
    dd = datasets.DatasetDict({s: encode_records(recs, labels, kind=kind, split=s) for s, recs in by_split.items()})
    check_splits(dd, f"{name}/{lang}")
    return TaskData(dd, labels, kind, name, lang, meta)


def load_embedded(task: str, lang: str) -> TaskData:
    """A prepared embedded corpus from ``cache/corpora/<task>/<lang>``, or a registered user corpus from
    ``cache/data/<task>/<lang>``."""
    info = get_task(task)
    if "registered" in info.sources:
        check_language(info, lang)
        folder = user_dir(task, lang)
        meta = read_json(folder / "meta.json", "registered corpus metadata")
        return _from_corpus_folder(folder, task, lang, kind=meta["kind"], labels=meta["labels"],
                                   meta={**meta, "source_kind": "registered", "path": str(folder)})
    if "embedded" not in info.sources:
        raise UnknownName(f"task {task!r} has no embedded corpus; its sources: {', '.join(info.sources)}")
    check_language(info, lang)
    folder = corpus_dir(task, lang)
    if not is_prepared(task, lang):
        raise NotPrepared(f"the embedded corpus {task}/{lang} is not prepared (no {folder}); {PREPARE_HINT}")
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    return _from_corpus_folder(folder, task, lang, kind=info.kind, labels=meta["labels"],
                               meta={**meta, "source_kind": "embedded", "path": str(folder)})


CHUNK = 20_000
"""Records encoded at a time when a prepared or registered corpus is read: a split of 500,000 sentences is never
held as Python objects all at once, only as Arrow columns."""


def _from_corpus_folder(folder: Path, task: str, lang: str, *, kind: str, labels: Sequence[str],
                        meta: dict) -> TaskData:
    """A corpus folder written by :func:`~headprune_core.data.corpora.write_corpus` (its labels known), read and
    encoded :data:`CHUNK` records at a time."""
    labels = list(labels)
    dd = {}
    for split in SPLITS:
        parts, chunk = [], []
        for rec in iter_jsonl(folder / f"{split}.jsonl"):
            chunk.append(rec)
            if len(chunk) == CHUNK:
                parts.append(encode_records(chunk, labels, kind=kind, split=split))
                chunk = []
        if chunk or not parts:
            parts.append(encode_records(chunk, labels, kind=kind, split=split))
        dd[split] = parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)
    dd = datasets.DatasetDict(dd)
    check_splits(dd, f"{task}/{lang}")
    return TaskData(dd, labels, kind, task, lang, meta)


def load_local(task: str, lang: str, files, *, format: FileFormat | None = None,
               labels: Sequence[str] | None = None, kind: str | None = None, tagset: str | None = None,
               **read_kw) -> TaskData:
    """Local files: one per split (``{"train": ..., "validation": ..., "test": ...}`` or a list of three in
    that order), or a single file split 80/10/10 with the embedded corpora's seed.

    ``task`` may be a registered task (its kind and, for pos/name, its labels are used) or any new name (then
    give ``kind``, or it is inferred from the records). With a label list (given or the task's), a tag that is
    not in it raises ``ValueError`` naming the file and line. ``tagset`` (e.g. "penn", "stts", "upos") maps
    native tags onto the universal tags first, strictly: a tag missing from the table raises with file:line.
    """
    if isinstance(files, (str, Path)):
        files = [files]
    elif isinstance(files, Mapping):
        missing = [s for s in SPLITS if s not in files]
        if missing:
            raise ValueError(f"local files for {task}/{lang}: no file for split(s) {', '.join(missing)}; "
                             f"give files={{'train': ..., 'validation': ..., 'test': ...}}")
        files = [files[s] for s in SPLITS]
    if len(files) not in (1, 3):
        raise ValueError(f"local files for {task}/{lang}: give one file (split 80/10/10) or three (train, "
                         f"validation, test), got {len(files)}")
    by_split, origin = read_splits(files, format=format, tagset=tagset, **read_kw)
    if tagset is not None:
        labels = labels or UNIVERSAL_TAGS
    return from_records(by_split, TASKS.get(task), task, lang, kind=kind, labels=labels,
                         meta={"source_kind": "local", **origin})


def read_splits(files: Sequence[str | Path], *, format: str | None = None, columns: Sequence[str] = (),
                tagset: str | None = None, seed: int | None = None, **read_kw) -> tuple[dict[str, list], dict]:
    """Records per split from 1 file (seeded 80/10/10) or 3 files (train, validation, test); every line checked.

    ``tagset`` maps native tags onto the universal tags, strictly (a tag missing from the table raises with
    file:line); ``read_kw`` goes to the format's reader (e.g. ``column="xpos"`` for CoNLL-U)."""
    files = [Path(f) for f in files]
    if len(files) not in (1, 3):
        raise ValueError(f"give one file (split 80/10/10) or three (train, validation, test), got {len(files)}")
    kw = {**read_kw, **({"columns": tuple(columns)} if columns else {})}
    if len(files) == 1:
        records = read_file(files[0], format, **kw)  # type: ignore[arg-type]
        if len(records) < 3:
            raise CorpusError(f"{files[0]}: {len(records)} example(s); a single file is split 80/10/10 and needs "
                              "at least 3 (better: hundreds)")
        idx = split_indices(len(records), seed=SPLIT_SEED if seed is None else seed)
        by_split = {s: [records[i] for i in idx[s]] for s in SPLITS}
        origin = {"files": [str(files[0])], "split": "seeded 80/10/10"}
    else:
        by_split = {s: read_file(f, format, **kw) for s, f in zip(SPLITS, files)}  # type: ignore[arg-type]
        origin = {"files": [str(f) for f in files], "split": "train/validation/test files"}
    kinds = {type(r).__name__ for recs in by_split.values() for r in recs}
    if len(kinds) > 1:
        raise CorpusError(f"{', '.join(map(str, files))}: some files hold tagged words and others sentences")
    for split, recs in by_split.items():
        if not recs:
            where = files[0] if len(files) == 1 else files[SPLITS.index(split)]
            raise CorpusError(f"{where}: the {split!r} split is empty")
    if tagset is not None:
        mapper = TagMapper(tagset, strict=True)  # type: ignore[arg-type]
        for recs in by_split.values():
            for rec in recs:
                for i, t in enumerate(rec.tags):
                    if str(t) not in mapper.table and mapper.key(str(t)) not in mapper.table:
                        raise CorpusError(f"{rec.where(i)}: tag {t!r} is not in the {tagset} table")
                rec.tags = [mapper.map(str(t)) for t in rec.tags]
    return by_split, origin


def relabel(data: TaskData, labels: Sequence[str]) -> TaskData:
    """``data`` with its label indices re-mapped onto ``labels`` (by name, in that order).

    For a fine-tuned checkpoint, whose classifier fixes the label order: a label of the data that the
    checkpoint does not know raises ``ValueError`` naming both lists.
    """
    labels = list(labels)
    if labels == list(data.labels):
        return data
    missing = [l for l in data.labels if l not in labels]
    if missing:
        raise CorpusError(f"{data.task}/{data.lang}: label(s) {missing} of the data are not labels of the "
                          f"model's classifier {labels}")
    index = [labels.index(l) for l in data.labels]
    col = "tags" if data.kind == "token" else "label"

    def remap(batch):
        if data.kind == "token":
            return {col: [[index[t] for t in row] for row in batch[col]]}
        return {col: [index[t] for t in batch[col]]}

    pair = data.is_pair
    dd = datasets.DatasetDict({s: ds.map(remap, batched=True, features=features_for(data.kind, labels, pair=pair))
                               for s, ds in data.dataset.items()})
    return TaskData(dd, labels, data.kind, data.task, data.lang, {**data.meta, "relabelled": True})
