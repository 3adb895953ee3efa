"""The Add data page's bridge to the core: keep uploaded files, preview them as the core reads them, register
them (``headprune_core.data.user``), load Hub data sets by name, and the page's panels (which file is which
split, the preview, the new corpus's head-importance map).

Uploads are written under ``<cache>/uploads/<content hash>/`` (the file's own name, made safe), so a preview is
computed once per content and the same bytes are never stored twice.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import streamlit as st

from headprune_app import cached, captions, figures, panels, roles
from headprune_app.page_end import end_page
from headprune_core.base.cache import cache_root
from headprune_core.base.files import safe_filename, write_file_atomic
from headprune_core.data.loading import load_local
from headprune_core.data.preview import corpus_report, examples
from headprune_core.data.refs import load_ref, parse_ref
from headprune_core.data.registry import registered
from headprune_core.data.user import register
from headprune_core.encoders.models import load_tokenizer
from headprune_core.figures.heads import importance_heatmap
from headprune_core.methods.importance import normalise
from headprune_core.plans import selection as S
from headprune_core.runs.config import FinetuneConfig

MAX_UPLOAD_MB = 50  # .streamlit/config.toml server.maxUploadSize
UPLOAD_TYPES = ["conll", "conllu", "txt", "tsv", "iob", "bio", "jsonl", "json", "csv", "parquet"]
SPLIT_HINTS = {"train": ("train",), "validation": ("dev", "valid", "val"), "test": ("test",)}


def keep_upload(name: str, data: bytes) -> Path:
    """Store an uploaded file under the cache (by content hash); returns its path."""
    roles.require("Uploading data")
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


def pick_splits(names: list[str]) -> list[str]:
    """The uploaded files in split order: one file as it is; of three, which is train, validation and test
    (guessed from the names, then chosen in three select boxes). Stops the page while two splits share a file."""
    if len(names) != 3:
        return names
    guess = guess_splits(names)
    chosen = [col.selectbox(split, names, index=names.index(guess[split]), key=f"split:{split}")
              for col, split in zip(st.columns(3), guess)]
    if len(set(chosen)) != 3:
        st.error("Give each split its own file.")
        end_page()
    return chosen


def column_names(text: str) -> tuple[str, ...]:
    """Column names typed as a comma-separated list.

    >>> column_names(" tokens, ner_tags ,")
    ('tokens', 'ner_tags')
    """
    return tuple(x.strip() for x in text.split(",") if x.strip())


def read_options(fmt: str, columns_text: str, tagset: str) -> dict:
    """The reading options as the core takes them (``fmt``, ``columns``, ``tagset``) from the widgets' values:
    "from the suffix" and "no" are None."""
    return {"fmt": None if fmt == "from the suffix" else fmt, "columns": column_names(columns_text),
            "tagset": None if tagset == "no" else tagset}


def max_length(sel: S.Selection) -> int:
    """Sub-word tokens per sentence the plan fine-tunes with (what the alignment statistics count against)."""
    return int(sel.plan.train.get("max_length", FinetuneConfig.max_length))


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
    roles.require("Registering data")
    meta = register(name, lang, list(paths), format=fmt, columns=columns, tagset=tagset, replace=replace,
                    description=f"uploaded: {', '.join(originals)}")
    refresh()
    return meta


def register_hub(ref_text: str, name: str, lang: str, *, columns, replace: bool) -> dict:
    """Load a Hub data set (``hub:NAME[:CONFIG]`` or ``NAME[:CONFIG]``) and register it under ``name``."""
    roles.require("Registering data")
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


def preview_panel(rep: dict, model: str) -> None:
    """What headprune reads from the files (:func:`preview`): counts, labels, words lost to truncation by
    ``model``'s tokenizer, the first sentences and the label set."""
    st.subheader("Preview")
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Kind", f"{rep['kind']} task")
    m2.metric("Sentences", " / ".join(str(v) for v in rep["counts"].values()), help="train / validation / test")
    m3.metric("Labels", len(rep["labels"]))
    if "alignment" in rep:
        al = rep["alignment"]
        m4.metric("Words lost to truncation", f"{al['words_lost']} ({100 * al['words_lost_share']:.2f}%)",
                  help=f"{al['truncated']} of {al['sentences']} sentences are longer than {al['max_length']} "
                       f"tokens; {al['pieces_per_word']:.2f} sub-word pieces per word")
        st.caption(captions.alignment_caption(model, al))
    left, right = st.columns([3, 2])
    with left:
        st.markdown("**First sentences (train)**")
        for i, ex in enumerate(rep["first"]):
            if rep["kind"] == "token":
                st.dataframe(pd.DataFrame([ex["tags"]], columns=[f"{j}:{w}" for j, w in enumerate(ex["words"])],
                                          index=["tag"]), key=f"ex{i}")
            else:
                st.markdown(f"- `{ex['label']}` {ex['text']}")
    with right:
        st.markdown("**Label set (train counts)**")
        st.dataframe(pd.DataFrame({"label": list(rep["label_counts"]), "count": list(rep["label_counts"].values())}),
                     hide_index=True)


def own_importance(sel: S.Selection, task: str, lang: str) -> None:
    """The head-importance map of a corpus just registered: fine-tuned and scored with the plan's settings (the
    result the Head importance page shows for this task), offered when not cached."""
    st.subheader(f"Head importance on {task}/{lang}")
    study = cached.study(sel.model, finetuned=sel.finetuned)
    ft = panels.guarded(study.finetune_config, task, (lang,), **sel.plan.train, what="Cannot use this corpus")
    sc = study.score_config(ft, task, lang, method=sel.method, max_sentences=sel.plan.score_sentences)
    st.caption(captions.own_map_caption(task, lang, sel.plan.train, sel.method, sel.plan.score_sentences))
    if panels.offer_compute(study, [(f"head scores {task}/{lang} ({sel.method})", sc)], key=f"own:{task}:{lang}",
                            note="fine-tuning and scoring take a minute or more on a CPU"):
        shown = normalise(cached.read(study, sc)["raw"], normalize=sel.normalize, minmax=sel.minmax)
        figures.show(importance_heatmap(shown), key="own_map", name=f"importance_{task}_{lang}",
                     title=f"Head importance of {task} in {lang} ({sel.method})")
