"""Registered user corpora: a user's own files (or a Hub data set), validated and converted once into the cache.

``register(name, lang, files)`` reads the files (every format of :mod:`formats`; one file is split 80/10/10
with the embedded corpora's seed, three files are train/validation/test), checks every line, and writes
``<cache>/data/<name>/<lang>/`` in the embedded corpus format (``{train,validation,test}.jsonl`` +
``meta.json`` with labels, counts, the original files and a content fingerprint). From then on ``name`` is a
task like the embedded ones: ``get_task(name)``, ``load_task(name, lang)``, study plans and the dashboard read
it, offline. A bad file is refused naming its line, and nothing already registered is touched: the new folder is
built aside and renamed into place only when complete.

>>> # register("mytags", "sw", ["train.conll", "dev.conll", "test.conll"])
>>> # load_task("mytags", "sw")
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

from headprune_core.base.files import check_name, key_lock, remove_dir
from headprune_core.base.specs import canonical_json
from headprune_core.data.corpora import SPLITS, write_corpus
from headprune_core.data.formats import CorpusError, TextRecord, TokenRecord
from headprune_core.data.loading import infer_labels, read_splits
from headprune_core.data.registry import TASKS, USER_FORMAT, data_root, registered, user_dir
from headprune_core.data.tagsets import UNIVERSAL_TAGS

_LANG = re.compile(r"^[a-z]{2,3}([-_][A-Za-z0-9]{2,8})*$")


class AlreadyRegistered(FileExistsError):
    """A corpus of this name and language is registered already (use replace=True / --force)."""


def check_lang(lang: str) -> str:
    """A language code like ``sw``, ``pt-BR`` or ``gsw`` (it becomes a folder name)."""
    if not isinstance(lang, str) or not _LANG.match(lang):
        raise ValueError(f"language code {lang!r}: expected an ISO 639 code such as 'sw', 'de' or 'pt-BR'")
    return lang


def records_fingerprint(records: list[dict], splits: dict[str, list[int]]) -> str:
    """A short hash of every record (canonical JSON) in each split, in order: what a registration holds."""
    h = hashlib.sha256()
    for split in SPLITS:
        h.update(split.encode() + b"\0")
        for i in splits[split]:
            h.update(canonical_json(records[i]).encode() + b"\n")
    return h.hexdigest()[:16]


def _as_dict(rec) -> dict:
    if isinstance(rec, TokenRecord):
        return {"tokens": list(rec.tokens), "tags": [str(t) for t in rec.tags]}
    out = {"text": rec.text, "label": str(rec.label)}
    if rec.text_pair is not None:
        out["text_pair"] = rec.text_pair
    return out


def register(name: str, lang: str, files: Sequence[str | Path] | None = None, *, format: str | None = None,
             columns: Sequence[str] = (), tagset: str | None = None, labels: Sequence[str] | None = None,
             data=None, replace: bool = False, description: str = "") -> dict:
    """Validate and convert a corpus into ``<cache>/data/<name>/<lang>``; returns its meta.

    Give ``files`` (1 file: seeded 80/10/10 split; 3 files: train, validation, test) or ``data`` (a
    :class:`~headprune_core.data.loading.TaskData` already loaded, e.g. from the Hub). ``name`` may not be a
    built-in task. An existing registration is kept unless ``replace``.
    """

    check_name(name, "data set name")
    check_lang(lang)
    if name in TASKS:
        raise ValueError(f"{name!r} is a built-in task; register your corpus under another name")
    final = user_dir(name, lang)
    if final.exists() and not replace:
        raise AlreadyRegistered(f"a corpus {name}/{lang} is registered already ({final}); replace it with "
                                "--force (replace=True) or pick another name")
    if data is not None:
        by_split = {s: _rows_as_records(data, s) for s in SPLITS}
        origin = {"source": data.meta.get("source_kind", "loaded"),
                  **{k: v for k, v in data.meta.items() if k in ("hub_path", "hub_config", "files")}}
        kind = data.kind
        labels = labels or data.labels
    else:
        by_split, origin = read_splits(files or (), format=format, columns=columns, tagset=tagset)
        first = next(r for recs in by_split.values() for r in recs)
        kind = "token" if isinstance(first, TokenRecord) else "sentence"
        if tagset is not None:
            labels = labels or UNIVERSAL_TAGS
    labels = list(labels) if labels else infer_labels(by_split, kind)
    _check_labels(by_split, labels, kind)
    records, index = [], {}
    for split in SPLITS:  # each split's records become dicts and are let go (a big corpus is never held twice)
        recs = by_split.pop(split)
        index[split] = list(range(len(records), len(records) + len(recs)))
        records += [_as_dict(r) for r in recs]
        del recs
    meta = {"kind": kind, "labels": labels, "user": USER_FORMAT, "name": name,
            "description": description or f"user data {name} ({lang})", "origin": origin,
            "source": f"registered user data: {origin}", "licence": "the user's own data",
            "fingerprint": records_fingerprint(records, index)}
    with name_lock(name, lang):  # two registrations of one name at once: the second sees the first's
        if final.exists() and not replace:
            raise AlreadyRegistered(f"a corpus {name}/{lang} was registered while this one was read ({final}); "
                                    "replace it with --force (replace=True) or pick another name")
        write_corpus(name, lang, records, meta, folder=final, splits=index)
        return json.loads((final / "meta.json").read_text(encoding="utf-8"))


def name_lock(name: str, lang: str):
    """The inter-process lock of one registered name and language (``<cache>/data/.locks/``; the OS releases it
    when its holder dies): registering and removing hold it, and check the folder again under it."""
    return key_lock(data_root() / ".locks" / f"{name}.{lang}.lock")


def _check_labels(by_split: dict[str, list], labels: list[str], kind: str) -> None:
    known = set(labels)
    for recs in by_split.values():
        for rec in recs:
            values = rec.tags if kind == "token" else [rec.label]
            for i, v in enumerate(values):
                if str(v) not in known:
                    where = rec.where(i) if kind == "token" else rec.where()
                    raise CorpusError(f"{where}: {'tag' if kind == 'token' else 'label'} {v!r} is not in the "
                                      f"label list {labels}")


def _rows_as_records(data, split: str) -> list:
    ds = data.dataset[split]
    out = []
    for i, row in enumerate(ds):
        if data.kind == "token":
            out.append(TokenRecord(list(row["tokens"]), [data.labels[t] for t in row["tags"]], split,
                                   [i + 1] * len(row["tokens"])))
        else:
            out.append(TextRecord(row["text"], data.labels[row["label"]], row.get("text_pair"), split, i + 1))
    return out


def remove(name: str, lang: str | None = None) -> list[Path]:
    """Delete a registered corpus (one language, or all); returns the folders removed."""
    found = registered().get(name)
    if not found or (lang is not None and lang not in found):
        raise KeyError(f"no registered corpus {name}{'/' + lang if lang else ''}; registered: "
                       f"{', '.join(f'{n}/{l}' for n, ls in registered().items() for l in ls) or 'none'}")
    gone = []
    for l in ([lang] if lang else list(found)):
        with name_lock(name, l):
            remove_dir(user_dir(name, l))
        gone.append(user_dir(name, l))
    parent = data_root() / name
    if parent.is_dir() and not any(parent.iterdir()):
        parent.rmdir()
    return gone
