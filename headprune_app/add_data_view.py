"""The Add data page's bridge to the core: keep uploaded files, preview them as the core reads them, register
them (``headprune_core.data.user``), and load Hub data sets by name. No Streamlit widgets here besides caching.

Uploads are written under ``<cache>/uploads/<content hash>/`` (the file's own name, made safe), so a preview is
computed once per content and the same bytes are never stored twice.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import streamlit as st

from headprune_app import cached
from headprune_core.base.cache import cache_root
from headprune_core.base.files import safe_filename, write_file_atomic
from headprune_core.data.loading import load_local
from headprune_core.data.preview import corpus_report, examples
from headprune_core.data.refs import load_ref, parse_ref
from headprune_core.data.registry import registered
from headprune_core.data.user import register
from headprune_core.encoders.models import load_tokenizer

MAX_UPLOAD_MB = 50  # .streamlit/config.toml server.maxUploadSize
UPLOAD_TYPES = ["conll", "conllu", "txt", "tsv", "iob", "bio", "jsonl", "json", "csv", "parquet"]
SPLIT_HINTS = {"train": ("train",), "validation": ("dev", "valid", "val"), "test": ("test",)}


def keep_upload(name: str, data: bytes) -> Path:
    """Store an uploaded file under the cache (by content hash); returns its path."""
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = cache_root() / "uploads" / digest / safe_filename(Path(name).name or "upload")
    if not path.is_file() or path.stat().st_size != len(data):
        write_file_atomic(path, data)
    return path


def guess_splits(names: list[str]) -> dict[str, str]:
    """Which of three file names is train / validation / test, from the names (else in the given order)."""
    out: dict[str, str] = {}
    for split, hints in SPLIT_HINTS.items():
        found = [n for n in names if any(h in n.lower() for h in hints) and n not in out.values()]
        if found:
            out[split] = found[0]
    if len(out) != 3:
        return dict(zip(SPLIT_HINTS, names))
    return out


@st.cache_data(show_spinner=False, max_entries=32)
def preview(paths: tuple[str, ...], task: str, lang: str, fmt: str | None, columns: tuple[str, ...],
            tagset: str | None, model: str, max_length: int) -> dict:
    """What the core reads from ``paths`` (1 or 3 files): the corpus report with the model's tokenizer
    alignment, and the first sentences as (word, tag) rows. Raises the core's errors (file:line)."""

    kw = {"columns": columns} if columns else {}
    data = load_local(task, lang, list(paths), format=fmt, tagset=tagset, **kw)
    report = corpus_report(data, tokenizer=load_tokenizer(model), max_length=max_length)
    report["first"] = examples(data, 5)
    return report


def register_files(paths: tuple[str, ...], name: str, lang: str, *, fmt, columns, tagset, replace: bool,
                   originals: list[str]) -> dict:
    meta = register(name, lang, list(paths), format=fmt, columns=columns, tagset=tagset, replace=replace,
                    description=f"uploaded: {', '.join(originals)}")
    refresh()
    return meta


def register_hub(ref_text: str, name: str, lang: str, *, columns, replace: bool) -> dict:
    """Load a Hub data set (``hub:NAME[:CONFIG]`` or ``NAME[:CONFIG]``) and register it under ``name``."""
    text = ref_text.strip()
    ref = parse_ref(text if text.startswith("hub") else f"hub:{text}", columns=columns or None)
    data = load_ref(ref, name, lang)
    meta = register(name, lang, data=data, replace=replace, description=f"Hugging Face Hub: {ref}")
    refresh()
    return meta


def message(err: BaseException, kept: dict[str, Path]) -> str:
    """An error as the user should read it: uploaded files by their own names, not their place in the cache."""
    text = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
    for name, path in kept.items():
        text = text.replace(str(path), name)
    return text


def refresh() -> None:
    """Forget cached task lists, so the sidebar offers a new corpus at once."""
    cached.prepared_languages.clear()


def registered_table() -> list[dict]:
    return [{"task": name, "language": lang, "kind": m["kind"], "labels": len(m["labels"]),
             **{s: m.get("counts", {}).get(s, 0) for s in ("train", "validation", "test")},
             "from": m.get("description", ""), "fingerprint": m.get("fingerprint", "")}
            for name, by_lang in registered().items() for lang, m in by_lang.items()]
