"""The app's Streamlit caches around core calls: one shared Study per (model, cache folder), stored results read
by their path and modification time, per-sentence inspections keyed by their inputs, and the page-level reads built
on them. Pages call these and render; they never compute themselves.

* :func:`~headprune_app.resident.resident`: one :class:`~headprune_core.runs.study.Study` per (model, cache
  folder), shared by every browser session and kept at module level (Streamlit's ``clear_cache`` cannot drop
  it). Its models are only ever gated inside ``head_gates`` (the core does that), never hooked here.
* ``st.cache_data``: reads of stored results, keyed by the entry's path and modification time, so a recomputed
  or deleted entry is never served stale; per-sentence inspections keyed by their inputs.
* Model work (an evaluation, tagging, attention, a timing) waits its turn in the server's compute queue
  (:mod:`headprune_app.queue_slots`). Long jobs with a progress bar: :mod:`headprune_app.computing`; the
  "what is missing, compute it?" panels: :mod:`headprune_app.panels`; the pruned model's zip:
  :mod:`headprune_app.downloads`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st
import torch

from headprune_app import roles
from headprune_app.compute_queue import AlreadyQueued
from headprune_app.page_end import end_page
from headprune_app.queue_slots import compute_queue, place, queued, slot
from headprune_app.resident import resident
from headprune_core.base.cache import cache_root
from headprune_core.base.progress import TimeCapExceeded
from headprune_core.data import NotPrepared, UnknownName, get_task, list_tasks, load_task
from headprune_core.data.corpora import is_prepared
from headprune_core.encoders import models
from headprune_core.encoders.inspector import head_attention, tag_sentence
from headprune_core.encoders.models import ModelLoadError
from headprune_core.encoders.speed import measure_speed
from headprune_core.methods.evaluate import strategy_mask
from headprune_core.methods.importance import normalise
from headprune_core.methods.similarity import spearman_chance_band, spearman_matrix
from headprune_core.plans import selection as S
from headprune_core.runs.config import RunConfig
from headprune_core.runs.store import ENTRY, Store
from headprune_core.runs.study import Study

Item = tuple[str, RunConfig]  # (what, config) of a result a page needs


@resident()
def _study(model_id: str, root: str, finetuned: bool = False) -> Study:
    return Study(model_id, store=Store(Path(root) / "runs"), progress=False, finetuned=finetuned)


@resident()
def _sourced(model_id: str, root: str, finetuned: bool, sources_json: str) -> Study:
    return _study(model_id, root, finetuned).with_sources(json.loads(sources_json))


def study(model_id: str, *, sources: dict | None = None, finetuned: bool = False) -> Study:
    """The shared Study of ``model_id`` for the current cache folder (``HEADPRUNE_CACHE``); with data
    ``sources`` (a plan's), a Study of its own that shares the loaded model."""
    return study_in(str(cache_root()), model_id, sources=sources, finetuned=finetuned)


def study_in(root: str, model_id: str, *, sources: dict | None = None, finetuned: bool = False) -> Study:
    """:func:`study` for the cache folder ``root`` (no Streamlit call: a background thread may ask)."""
    if not sources:
        return _study(model_id, root, finetuned)
    return _sourced(model_id, root, finetuned, json.dumps(sources, sort_keys=True))


def study_for(sel: S.Selection) -> Study:
    """The Study a page needs for the frame's choices: the model, the plan's data sources, checkpoint mode."""
    return study(sel.model, sources=sel.plan.sources, finetuned=sel.finetuned)


def model_info(model_id: str) -> dict:
    """Name, description, caveat note, readiness and shape of a model, without loading its weights."""
    return _model_info(model_id, str(cache_root()))


@st.cache_data(show_spinner=False, ttl=60)
def _model_info(model_id: str, root: str) -> dict:
    """Name, description, caveat note, readiness and shape of a model, without loading its weights."""
    info: dict[str, Any] = {"id": model_id, "ready": False, "problem": None, "note": None, "description": None,
                            "n_layers": None, "n_heads": None}
    if model_id in models.EMBEDDED:
        entry = models.EMBEDDED[model_id]
        info.update(description=entry.description, note=entry.note, quantised=entry.quantised)
    try:
        source, src = models.resolve(model_id)
        info["n_layers"], info["n_heads"] = models.config_head_shape(model_id)  # unsupported family, offline ...
    except (models.ModelLoadError, ValueError, OSError) as err:
        info["problem"] = str(err)
        return info
    info["ready"] = True
    if source == "hub":
        info["description"] = info["description"] or f"Hugging Face Hub model {model_id}"
        return info
    meta = models.read_meta(Path(src)) or {}
    info["note"] = info["note"] or meta.get("note")
    info["description"] = info["description"] or meta.get("description") or f"local model folder {src}"
    return info


def head_shape(model_id: str) -> tuple[int, int]:
    """(layers, heads) of the model, read from its config."""
    info = model_info(model_id)
    return int(info["n_layers"]), int(info["n_heads"])


def problems() -> tuple[type[BaseException], ...]:
    """What a page shows as a one-line error instead of a traceback (a compute-queue refusal included)."""
    return (ModelLoadError, NotPrepared, UnknownName, ValueError, KeyError, OSError, AlreadyQueued,
            TimeCapExceeded)


def status(study: Study, cfg: RunConfig) -> str:
    """``ok``, ``missing`` or ``corrupt`` (files missing, of the wrong size, or written for another config),
    without loading the entry."""
    return study.store.status(cfg)


@st.cache_data(show_spinner=False, max_entries=2048)
def _read(path: str, mtime_ns: int, _store: Store, _cfg: RunConfig) -> dict | None:
    return _store.get(_cfg)


def read(study: Study, cfg: RunConfig) -> dict | None:
    """Stored artifacts of ``cfg`` (never computes); None if absent or corrupt. Not for fine-tuned weights."""
    path = study.store.path_for(cfg)
    try:
        mtime = (path / ENTRY).stat().st_mtime_ns
    except OSError:
        return None
    return _read(str(path), mtime, study.store, cfg)


def state(study: Study, cfg: RunConfig) -> str:
    """Like :func:`status`, but also ``corrupt`` when the files exist and cannot be read."""
    s = status(study, cfg)
    if s == "ok" and cfg.kind != "finetune" and read(study, cfg) is None:
        return "corrupt"
    return s


def evaluation(study: Study, cfg) -> dict:
    """Metric and report for an evaluation config: read when cached, else computed now (one pass, seconds)."""
    found = read(study, cfg)
    if found is not None:
        return found["result"]
    if not roles.is_teacher():
        ok, used = roles.take_evaluation(place())
        if not ok:
            st.warning(f"Not evaluated: this browser has stored {used} new evaluations on this server, the most one "
                       "student may (each is kept for everyone); the teacher can evaluate more.",
                       icon=":material/hourglass_disabled:")
            end_page()
    try:
        with queued("evaluate under a mask"), st.spinner("Evaluating under this mask ..."):
            return study.evaluation(cfg)
    except (AlreadyQueued, TimeCapExceeded) as err:
        st.warning(f"Not evaluated: {err}.", icon=":material/hourglass_disabled:")
        end_page()


def mask_key(mask) -> tuple:
    return tuple(tuple(int(v) for v in row) for row in np.asarray(mask))


@st.cache_data(show_spinner=False, max_entries=64)
def _measure(ft_key: str, mask: tuple, task: str, lang: str, _st: Study, _ft) -> dict:
    with compute_queue().slot("time the pruned model", exclusive=True, priority=0):  # alone: a timing (teacher's)
        model = _st.finetuned(_ft)
        batch = _st.eval_batches(task, lang, "test", 32, max_length=_ft.max_length, batch_size=32)[-1]  # longest
        if len(model.tasks) > 1:
            batch = {**batch, "task": task}
        return measure_speed(model, torch.tensor(mask, dtype=torch.float32), batch)


def measure(study: Study, ft, mask, task: str, lang: str) -> dict:
    """Parameters and latency of the physically pruned model vs the full one (timed on this machine; it takes
    the machine alone, so not for a student in class mode)."""
    roles.require("Timing the pruned model")
    return _measure(ft.key(), mask_key(mask), task, lang, study, ft)


@st.cache_data(show_spinner=False, max_entries=256)
def _tag(ft_key: str, task: str, words: tuple, mask: tuple | None, _st: Study, _ft) -> dict:
    with slot("tag a sentence"):  # silent: short work shows no waiting line
        model = _st.finetuned(_ft)
        m = torch.tensor(mask, dtype=torch.float32) if mask is not None else None
        return tag_sentence(model, _st.loaded.tokenizer, list(words), task=task if len(model.tasks) > 1 else None,
                            mask=m, max_length=_ft.max_length)


def tag(study: Study, ft, task: str, words: Sequence[str], mask=None) -> dict:
    """The model's labels for ``words`` (with the heads of ``mask`` gated off)."""
    return _tag(ft.key(), task, tuple(words), None if mask is None else mask_key(mask), study, ft)


@st.cache_data(show_spinner=False, max_entries=256)
def _attention(ft_key: str, words: tuple, layer: int, head: int, mask: tuple | None, _st: Study, _ft):

    with slot("one head's attention"):
        m = torch.tensor(mask, dtype=torch.float32) if mask is not None else None
        pieces, att = head_attention(_st.finetuned(_ft), _st.loaded.tokenizer, list(words), layer, head, mask=m,
                                     max_length=_ft.max_length)
        return pieces, att.numpy()


def attention(study: Study, ft, words: Sequence[str], layer: int, head: int, mask=None):
    """(pieces, (seq, seq) attention) of one head on the sentence."""
    return _attention(ft.key(), tuple(words), layer, head, None if mask is None else mask_key(mask), study, ft)


@st.cache_data(show_spinner=False, max_entries=64)
def sample_sentences(task: str, lang: str, root: str, n: int = 5) -> list[str]:
    """``n`` short test sentences (6 to 14 words, else the shortest) of a prepared corpus, for the inspector."""
    try:
        ds = load_task(task, lang).dataset["test"]  # embedded or registered
    except problems():
        return []
    first = ds.select(range(min(100, len(ds))))
    texts = [" ".join(r["tokens"]) if "tokens" in r else r["text"] for r in first]
    short = [t for t in texts if 6 <= len(t.split()) <= 14]
    return (short or sorted(texts, key=len))[:n]


@st.cache_data(show_spinner=False, ttl=30)
def prepared_languages(task: str, root: str) -> list[str]:
    """Languages of ``task`` whose embedded corpus is prepared (or registered) in this cache."""
    try:
        info = get_task(task)
    except problems():
        return []
    if "registered" in info.sources:
        return list(info.languages)
    return [lang for lang in info.languages if lang != "*" and is_prepared(task, lang)]


def task_names(root: str) -> list[str]:
    """Tasks with data in this cache: the embedded ones, then the user's registered corpora."""
    return [t.name for t in list_tasks() if "embedded" in t.sources or "registered" in t.sources]


def entries(kind: str | None = None):
    """Cache entries (newest first) of the current cache folder."""
    return Store().entries(kind)


def importance_maps(study: Study, sel: S.Selection) -> tuple[dict, dict, list[Item]]:
    """(raw maps, shown maps, items needed) for every selected language: shown = normalised as the frame says.

    Only cached maps are returned; the items list every (language) score the page needs, for offer_compute.
    """
    items = [(f"head scores {sel.task}/{lang} ({sel.method})", S.score_config(study, sel, lang)) for lang in sel.langs]
    raws, maps = {}, {}
    for (_, cfg), lang in zip(items, sel.langs):
        found = read(study, cfg)
        if found is not None:
            raws[lang] = np.asarray(found["raw"], dtype=np.float64)
            maps[lang] = normalise(raws[lang], normalize=sel.normalize, minmax=sel.minmax)
    return raws, maps, items


def spearman(maps: dict) -> tuple[list[str], np.ndarray, float]:
    """(names, Spearman matrix, chance band for random rankings of this many heads)."""
    names, rho = spearman_matrix(maps)
    return names, rho, spearman_chance_band(next(iter(maps.values())).size)


def ranking(study: Study, sel: S.Selection, lang: str) -> np.ndarray | None:
    """``lang``'s head scores normalised as the frame says (what pruning orders heads by); None if not cached."""
    found = read(study, S.score_config(study, sel, lang))
    return None if found is None else normalise(found["raw"], normalize=sel.normalize)


def mask(shape: tuple[int, int], strategy: str, k: int, *, ranking: np.ndarray | None = None, seed: int = 0,
         part: str = "middle", custom=None) -> np.ndarray:
    """The (layers, heads) 0/1 mask of a strategy (the core's ``strategy_mask``), as a numpy array."""
    return strategy_mask(shape, strategy, k, ranking=ranking, seed=seed, part=part, custom=custom).numpy()


def curves(study: Study, sel: S.Selection, lang: str) -> tuple[list[dict], dict]:
    """Every cached curve for ``lang`` (with display names) and the configs of all candidates by name."""
    out, configs = [], {}
    for name, cfg in S.curve_candidates(study, sel, lang):
        configs[name] = cfg
        found = read(study, cfg)
        if found is not None:
            out.append({**found["curve"], "name": name})
    return out, configs


def delete(entry) -> bool:
    """Delete one listed cache entry (the owner's: refused for a student in class mode)."""
    if not roles.allowed("Deleting cache entries"):
        return False
    return Store().delete(entry)


def root() -> str:
    """The cache folder in use (``HEADPRUNE_CACHE`` or ``cache/``)."""
    return str(cache_root())


def selection() -> S.Selection:
    """The frame's choices for this run (set by app.py before the page runs)."""
    sel = st.session_state.get("selection")
    if sel is None:
        st.error("This page is part of the headprune dashboard: start it with `streamlit run app.py`.")
        end_page()
    return sel
