"""The Study: every result for one model, computed through the cache, with progress.

:class:`Study` turns run configurations into results (fine-tuned weights, importance maps, evaluations,
curves, re-fine-tuning tables, per-example maps, bandit searches), each through
:class:`~headprune_core.runs.store.Store`, so a second look is instant and an interrupted run resumes from what
is cached. Its ``*_config`` builders are the only way to make configurations with honest keys. What to compute
(plans, presets, their jobs) is :mod:`headprune_core.plans`.

>>> # study = Study("me5-small"); ev = study.evaluation(study.eval_config(study.finetune_config("pos"), "pos", "de"))
"""

from __future__ import annotations

import copy
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

import numpy as np
import torch
from datasets import concatenate_datasets

from headprune_core.base.artifacts import Weights
from headprune_core.base.choices import HELDOUT
from headprune_core.base.defaults import DEFAULT_MODEL
from headprune_core.base.specs import canonical_json
from headprune_core.data import tokenize_sentence_task, tokenize_token_task
from headprune_core.data.refs import EMBEDDED, load_ref, parse_sources, ref_for
from headprune_core.encoders.classifier import HeadedEncoder, TaskHead
from headprune_core.encoders.heads import head_shape, prune_heads
from headprune_core.encoders.models import checkpoint_classifier, config_head_shape, load_model, model_fingerprint
from headprune_core.methods.bandit import bandit_search
from headprune_core.methods.evaluate import curve, default_steps, evaluate
from headprune_core.methods.importance import instance_kv_maps, normalise, score_heads
from headprune_core.methods.learned import GateTrainer, LearnedHeads, fold_gates
from headprune_core.methods.train import batches, finetune, load_trained, trained_weights
from headprune_core.runs.config import (
    FIXED_BY_RUN,
    BanditConfig,
    CurveConfig,
    EvalConfig,
    FinetuneConfig,
    InstanceConfig,
    RefinetuneConfig,
    RunConfig,
    ScoreConfig,
    l0_options,
    nested_configs,
    split_unit,
    train_unit_names,
    train_units,
)
from headprune_core.runs.retrain import assemble, refinetune_parts
from headprune_core.runs.store import Store

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int | None], None]
"""on_progress(what, done, total): called as work advances (for a UI progress bar)."""


class Study:
    """Computes and caches every result for one model. Expensive resources load lazily.

    Its ``*_config`` builders are the only way to make run configurations with honest keys: they fill in the
    fingerprints (of the model and of the exact examples a run reads) and the effective values (a sentence cap
    above what a split holds becomes the split's size; options a strategy or method does not read get fixed
    values), so two requests that compute the same thing share one cache entry.
    """

    def __init__(self, model_id: str = DEFAULT_MODEL, *, store: Store | None = None, device: str = "auto",
                 progress: bool = True, on_progress: Progress | None = None, sources=None,
                 finetuned: bool = False):
        """
        Args:
            model_id: embedded name, local folder or Hub id of the encoder.
            sources: where each task's data comes from: ``{"task" or "task/lang": data reference}`` (see
                :mod:`headprune_core.data.refs`; e.g. ``{"ner": "hub:wikiann", "pos/sw": "sw.conllu"}``);
                everything else reads the embedded or registered corpora.
            finetuned: ``model_id`` is a fine-tuned token-classification checkpoint: its classifier is used as
                is (no fine-tuning), and the data's labels are mapped onto the checkpoint's label names.
        """
        self.model_id = model_id
        self.store = store or Store()
        self.device = device
        self.progress = progress
        self.on_progress = on_progress
        self.sources = parse_sources(sources)
        self.checkpoint = None
        if finetuned:
            self.checkpoint = checkpoint_classifier(model_id)
        self._loaded = None
        self._base: Study | None = None  # a Study this one shares its loaded model with (with_sources)
        self._data: dict[tuple[str, str], Any] = {}
        self._rows: dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]] = {}  # row digests, which are known
        self._tokenized: dict[tuple[str, str, str, int], tuple[Any, dict]] = {}
        self._heldout: dict[tuple[str, str, str], Any] = {}
        self._models: dict[str, HeadedEncoder] = {}
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

    def with_sources(self, sources) -> Study:
        """A Study of the same model and store reading ``sources`` on top of this one's (shares the loaded
        model and its fingerprints, never this Study's data)."""
        other = Study(self.model_id, store=self.store, device=self.device, progress=self.progress,
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
        """Fingerprint of exactly the examples a run reads: the content of the rows ``subset_indices(len(split), limit, seed)`` (or of
        the given ``rows``), in order, with the label names and the task kind. A changed sentence or label gives
        a new key."""
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
                     batch_size: int = 32, half: int = 0):
        """Batches of the ``limit`` sentences a run reads (``half`` 1 or 2: every other one of them)."""
        ds, _ = self.tokenized(task, lang, split, max_length,
                               rows=subset_indices(self.split_size(task, lang, split), limit))
        pad = self.loaded.tokenizer.pad_token_id or 0
        if half:
            ds = ds.select(range(half - 1, len(ds), 2))
        return batches(ds, batch_size=batch_size, pad_id=pad)

    # --- configurations ------------------------------------------------------------------------------------
    def finetune_config(self, tasks: tuple[str, ...] | str, train_langs: tuple[str, ...] | str = ("en",), *,
                        setting: str = "cross", **overrides) -> FinetuneConfig:
        """A fine-tuning config with fingerprints and effective values filled in.

        ``cross``: train on ``train_langs`` (usually one source language), evaluate on others zero-shot;
        ``multi``: ``train_langs`` are all the languages trained on jointly.
        """
        tasks = (tasks,) if isinstance(tasks, str) else tuple(tasks)
        train_langs = (train_langs,) if isinstance(train_langs, str) else tuple(train_langs)
        if self.checkpoint is not None:
            return self._checkpoint_config(tasks, train_langs, setting, overrides)
        ft = FinetuneConfig(model=self.model_id, tasks=tasks, train_langs=train_langs, setting=setting,
                            **overrides)
        units = train_units(ft)
        largest = max(self.split_size(task, lang, "train") for task, lang in units)
        cap = largest if ft.max_train_sentences is None else min(ft.max_train_sentences, largest)
        fps = "|".join(self.read_fp(task, lang, "train", cap, seed=ft.seed, rows=ft.kept_rows(unit))
                       for unit, (task, lang) in zip(train_unit_names(ft), units))
        return ft.replace(max_train_sentences=cap, model_fp=self.model_fp,
                          data_fp=hashlib.sha256(fps.encode()).hexdigest()[:16])

    def _checkpoint_config(self, tasks, train_langs, setting, overrides) -> FinetuneConfig:
        """The "fine-tuning" of a fine-tuned checkpoint: nothing is trained, its classifier is used as is.

        Training options cannot change anything, so they keep their defaults (one key per checkpoint and task);
        only ``max_length`` (how evaluation and scoring cut sentences) is kept."""
        if len(tasks) != 1:
            raise ValueError(f"a fine-tuned checkpoint has one classifier; got tasks {', '.join(tasks)}")
        labels = canonical_json(list(self.checkpoint["labels"]))
        keep = {k: v for k, v in overrides.items() if k == "max_length"}
        return FinetuneConfig(model=self.model_id, tasks=tasks, train_langs=train_langs, setting=setting,
                              from_checkpoint=True, max_train_sentences=None, model_fp=self.model_fp,
                              data_fp=hashlib.sha256(f"checkpoint labels {labels}".encode()).hexdigest()[:16],
                              **keep)

    def _read(self, ft: FinetuneConfig, task: str, lang: str, split: str, max_sentences: int | None,
              max_length: int | None) -> dict:
        """Effective reading options of an evaluation-like run, with the fingerprint of what it reads."""
        data_task = split_unit(task)[0]
        size = self.split_size(data_task, lang, split)
        cap = size if max_sentences is None else min(max_sentences, size)
        return {"split": split, "max_sentences": cap, "max_length": max_length or ft.max_length,
                "data_fp": self.read_fp(data_task, lang, split, cap)}

    def score_config(self, ft: FinetuneConfig, task: str, lang: str, *, method: str = "gate_grad",
                     split: str = "validation", max_sentences: int | None = 300, max_length: int | None = None,
                     seed: int = 0, half: int = 0) -> ScoreConfig:
        """A scoring config; ``half`` 1 or 2 scores every other one of the sentences read (first or second
        half, for split-half reliability)."""
        read = self._read(ft, task, lang, split, max_sentences, max_length)
        if half:
            rows = subset_indices(self.split_size(split_unit(task)[0], lang, split), read["max_sentences"])
            read["data_fp"] = self.read_fp(split_unit(task)[0], lang, split, None, rows=tuple(rows[half - 1::2]))
        return ScoreConfig(finetune=ft, task=task, lang=lang, method=method,
                           seed=seed if method == "random" else 0, half=half, **read)

    def curve_config(self, ft: FinetuneConfig, task: str, lang: str, *, strategy: str = "importance",
                     ranking_lang: str | None = None, method: str = "gate_grad", score_sentences: int = 300,
                     normalize: str = "layer_sum", steps: tuple[int, ...] | list[int] = (), step: int = 0,
                     seeds: tuple[int, ...] | list[int] = (0,), split: str = "test",
                     max_sentences: int | None = 500, max_length: int | None = None) -> CurveConfig:
        """A curve config; ``layers`` has its three points, the others explicit steps (default: every
        ``step`` heads, one layer's worth when 0); only ``random`` keeps its seeds, only ranked strategies
        their ranking and normalisation."""
        ranking = None
        if strategy in ("importance", "reverse"):
            ranking = self.score_config(ft, task, ranking_lang or lang, method=method,
                                        max_sentences=score_sentences)
        else:
            normalize = "none"
        if strategy == "layers":
            steps = ()
        elif not steps:
            steps = default_steps(self.head_shape, step=step or None)
        return CurveConfig(finetune=ft, task=task, lang=lang, strategy=strategy, ranking=ranking,
                           normalize=normalize, steps=tuple(int(k) for k in steps), step=0,
                           seeds=tuple(int(s) for s in seeds) if strategy == "random" else (0,),
                           **self._read(ft, task, lang, split, max_sentences, max_length))

    def eval_config(self, ft: FinetuneConfig, task: str, lang: str, mask=None, *, split: str = "test",
                    max_sentences: int | None = 500, max_length: int | None = None) -> EvalConfig:
        """An evaluation config; a mask keeping every head is no mask (one entry for the unpruned model)."""
        rows = ()
        if mask is not None:
            arr = np.asarray(mask, dtype=np.float64)
            if arr.ndim != 2 or arr.shape != self.head_shape:
                raise ValueError(f"head mask has shape {arr.shape}, the model has {self.head_shape} "
                                 "(layers, heads)")
            if not np.isin(arr, (0.0, 1.0)).all():
                raise ValueError("head mask entries must be 0 (pruned) or 1 (kept)")
            if not (arr == 1).all():
                rows = tuple(tuple(float(v) for v in row) for row in arr)
        return EvalConfig(finetune=ft, task=task, lang=lang, mask=rows,
                          **self._read(ft, task, lang, split, max_sentences, max_length))

    def instance_config(self, ft: FinetuneConfig, unit: str, *, max_sentences: int | None, seed: int,
                        max_length: int | None = None) -> InstanceConfig:
        """Per-example maps of ``unit``'s training rows (drawn like a fine-tune with ``max_sentences`` and
        ``seed``) from the fine-tuned model ``ft``."""
        task, lang = split_unit(unit, ft.train_langs[0])
        size = self.split_size(task, lang, "train")
        cap = size if max_sentences is None else min(max_sentences, size)
        return InstanceConfig(finetune=ft, task=unit, lang=lang, max_sentences=cap, seed=seed if cap < size else 0,
                              max_length=max_length or ft.max_length,
                              data_fp=self.read_fp(task, lang, "train", cap, seed=seed))

    def bandit_config(self, ft: FinetuneConfig, primary: str, *, dev_sentences: int | None = 100,
                      **options) -> BanditConfig:
        """AUTOSEM's search over the units of ``ft`` for ``primary`` (its dev split read as fingerprinted)."""
        task, lang = split_unit(primary, ft.train_langs[0])
        read = self._read(ft, task, lang, "validation", dev_sentences, None)
        return BanditConfig(finetune=ft, primary=primary, dev_sentences=read["max_sentences"],
                            data_fp=read["data_fp"], **options)

    # --- results -------------------------------------------------------------------------------------------
    def finetuned(self, ft: FinetuneConfig) -> HeadedEncoder:
        """The fine-tuned model of ``ft`` (trained and cached on first use, then loaded)."""
        key = ft.key()
        model = self._models.get(key)
        if model is None:  # sessions of the dashboard may ask at once: each keeps the model it got
            if ft.l0 and not self.store.has(ft):
                self.finetuned(ft.base())  # first, so each entry's seconds are its own work
            result = self.store.get_or_compute(ft, lambda: self._train(ft))
            model = self._build(ft)
            if ft.from_checkpoint:
                model.heads.load_state_dict({k.removeprefix("heads."): v for k, v in result["weights"].items()})
                model.eval()
            else:
                load_trained(model, result["weights"])
            self._models = {key: model, **dict(list(self._models.items())[:1])}  # keep the 2 newest
        return model

    def forget_models(self) -> None:
        """Drop the fine-tuned models held in memory (their entries stay in the cache): the next use loads
        them from the cache again, or trains them if their entries are gone."""
        self._models.clear()

    def train_log(self, ft: FinetuneConfig) -> dict:
        self.finetuned(ft)
        return self.store.get(ft)["log"]

    def _build(self, ft: FinetuneConfig) -> HeadedEncoder:
        encoder = copy.deepcopy(self.loaded.encoder)
        heads = {}
        for unit in ft.tasks:
            if ft.from_checkpoint:
                if self.checkpoint is None:
                    raise ValueError(f"{ft.model} was not opened as a fine-tuned checkpoint (Study(..., "
                                     "finetuned=True), --finetuned)")
                heads[unit] = TaskHead("token", tuple(self.checkpoint["labels"]))
                continue
            d = self.data(*split_unit(unit, ft.train_langs[0]))
            heads[unit] = TaskHead(d.kind, tuple(d.labels))
        torch.manual_seed(ft.seed)
        model = HeadedEncoder(encoder, heads).to(next(encoder.parameters()).device)
        if ft.pruned:
            mask = torch.ones(head_shape(model))
            for layer, head in ft.pruned:
                mask[layer, head] = 0
            prune_heads(model, mask)
        return model

    def _train(self, ft: FinetuneConfig) -> dict:
        if ft.from_checkpoint:
            weights = Weights({f"heads.{ft.tasks[0]}.{k}": v for k, v in self.checkpoint["weights"].items()})
            return {"weights": weights, "log": {"checkpoint": self.model_id, "steps": 0, "seconds": 0.0,
                                                "labels": list(self.checkpoint["labels"]),
                                                "note": "classifier of the fine-tuned checkpoint, used as is"}}
        model = self._build(ft)
        train, stats = self.train_data(ft)
        gates, epochs, what = None, ft.epochs, "fine-tuning"
        if ft.l0:  # learned head pruning: continue from the base fine-tune with hard-concrete gates
            opts = l0_options(ft.l0)
            model.load_state_dict(self.finetuned(ft.base()).state_dict())
            gates = GateTrainer(head_shape(model), target=opts["target"], penalty=opts["penalty"],
                                gate_lr=opts["gate_lr"], init=opts["init"], seed=ft.seed, device=_device_of(model))
            epochs, what = opts["epochs"], "learning which heads to prune"
        self._report(f"{what} {'+'.join(ft.tasks)} on {'+'.join(ft.train_langs)}", 0, None)
        train_log = finetune(model, train, pad_id=self.loaded.tokenizer.pad_token_id or 0, epochs=epochs,
                             lr=ft.lr, head_lr=ft.head_lr, batch_size=ft.batch_size, sampling=ft.sampling, seed=ft.seed,
                             freeze_embeddings=ft.freeze_embeddings, progress=self.progress,
                             on_step=lambda d, n: self._report(what, d, n), gates=gates)
        log = {**train_log.to_dict(), "data": stats, "device": str(_device_of(model))}
        if gates is not None:
            learned = gates.result()
            fold_gates(model, torch.tensor(learned["gates"]))
            log["learned"] = learned
        return {"weights": trained_weights(model, freeze_embeddings=ft.freeze_embeddings), "log": log}

    def train_data(self, ft: FinetuneConfig) -> tuple[dict, dict]:
        """The tokenised training rows of each unit of ``ft`` (its seeded subset, or its ``keep`` rows) and the
        alignment statistics per (task, language)."""
        parts: dict[str, list] = {unit: [] for unit in ft.tasks}
        stats = {}
        for unit, (task, lang) in zip(train_unit_names(ft), train_units(ft)):
            rows = ft.kept_rows(unit)
            rows = subset_indices(self.split_size(task, lang, "train"), ft.max_train_sentences, seed=ft.seed) \
                if rows is None else list(rows)
            ds, st = self.tokenized(task, lang, "train", ft.max_length, rows=rows)
            parts[unit].append(ds)
            stats[f"{task}/{lang}"] = {**st, "train_sentences": len(ds)}
        train = {unit: concatenate_datasets(p) if len(p) > 1 else p[0] for unit, p in parts.items() if len(p[0])}
        if not train:
            raise ValueError(f"nothing to train {'+'.join(ft.tasks)} on: every unit has 0 training rows")
        return train, stats

    def learned(self, ft: FinetuneConfig):
        """The heads a learned-pruning fine-tune (``ft.l0``) kept: a :class:`~headprune_core.methods.learned.LearnedHeads`."""
        if not ft.l0:
            raise ValueError("this fine-tune has no learned pruning (FinetuneConfig.l0 is empty)")
        log = self.store.get_part(ft, "log")  # cached: the log alone, without loading the weights
        if log is None:
            self.finetuned(ft)
            log = self.store.get_part(ft, "log") or self.store.get(ft)["log"]
        return LearnedHeads.from_log(log["learned"])

    def _inputs_first(self, cfg: RunConfig) -> None:
        """Compute what ``cfg`` reads (its fine-tune, its ranking's scores) before ``cfg`` itself when ``cfg`` is
        not cached, so each entry's recorded seconds are its own work (the sweep's estimates read them)."""
        if self.store.has(cfg):
            return
        for inner in nested_configs(cfg):
            if inner.kind == "finetune":
                self.finetuned(inner)
            elif inner.kind == "score":
                self.scores(inner)

    def scores(self, sc: ScoreConfig) -> dict:
        """Raw importance map ``scores["raw"]`` (layers, heads) and its metadata ``scores["meta"]``."""
        self._inputs_first(sc)

        def compute():
            model = self.finetuned(sc.finetune)
            data = self.eval_batches(split_unit(sc.task)[0], sc.lang, sc.split, sc.max_sentences,
                                     max_length=sc.max_length, batch_size=16, half=sc.half)
            self._report(f"scoring heads: {sc.task}/{sc.lang}", 0, len(data))
            imp = score_heads(model, _with_task(data, sc.task, model), method=sc.method, seed=sc.seed,
                              progress=self.progress,
                              on_step=lambda d, n: self._report(f"scoring heads: {sc.task}/{sc.lang}", d, n))
            return {"raw": imp.raw, "meta": imp.to_meta()}
        return self.store.get_or_compute(sc, compute)

    def importance(self, sc: ScoreConfig, *, normalize: str = "layer_sum", minmax: bool = True) -> np.ndarray:
        return normalise(self.scores(sc)["raw"], normalize=normalize, minmax=minmax)

    def evaluation(self, ec: EvalConfig) -> dict:
        """Metric and report under ``ec.mask`` (empty = no heads off)."""
        self._inputs_first(ec)

        def compute():
            model = self.finetuned(ec.finetune)
            mask = torch.tensor(ec.mask, dtype=torch.float32) if ec.mask else None
            data = self.eval_batches(split_unit(ec.task)[0], ec.lang, ec.split, ec.max_sentences,
                                     max_length=ec.max_length)
            d = self.data(split_unit(ec.task)[0], ec.lang)
            return {"result": evaluate(model, _with_task(data, ec.task, model), d.labels, kind=d.kind, mask=mask)}
        return self.store.get_or_compute(ec, compute)["result"]

    def curve(self, cc: CurveConfig) -> dict:
        """Metric vs heads pruned for one strategy (see :func:`headprune_core.methods.evaluate.curve`)."""
        self._inputs_first(cc)

        def compute():
            model = self.finetuned(cc.finetune)
            ranking = None
            if cc.ranking is not None:
                ranking = normalise(self.scores(cc.ranking)["raw"], normalize=cc.normalize)
            data = self.eval_batches(split_unit(cc.task)[0], cc.lang, cc.split, cc.max_sentences,
                                     max_length=cc.max_length)
            d = self.data(split_unit(cc.task)[0], cc.lang)
            what = f"curve {cc.strategy}: {cc.task}/{cc.lang}"
            self._report(what, 0, None)
            res = curve(model, _with_task(data, cc.task, model), d.labels, kind=d.kind, strategy=cc.strategy,
                        steps=list(cc.steps) or default_steps(head_shape(model), step=cc.step or None),
                        ranking=ranking, seeds=cc.seeds, progress=self.progress,
                        on_step=lambda done, n: self._report(what, done, n))
            return {"curve": res}
        return self.store.get_or_compute(cc, compute)["curve"]

    def reseeded(self, ft: FinetuneConfig, seed: int) -> FinetuneConfig:
        """``ft`` trained with another seed (which also draws another subset of the training sentences, so the
        data fingerprint is recomputed)."""
        if seed == ft.seed or ft.from_checkpoint:
            return ft
        opts = {f.name: getattr(ft, f.name) for f in fields(ft) if f.name not in FIXED_BY_RUN}
        return replace(self.finetune_config(ft.tasks, ft.train_langs, setting=ft.setting,
                                            **{**opts, "seed": seed, "keep": ft.keep, "l0": ft.l0}),
                       pruned=ft.pruned)

    def refinetune(self, rc: RefinetuneConfig) -> dict:
        """Prune by ``rc.strategy`` at each level, re-fine-tune per seed, pick k on dev, test everywhere; see
        :func:`~headprune_core.runs.retrain.assemble` for the result (with bootstrap intervals)."""
        self._inputs_first(rc)
        if not self.store.has(rc):
            parts = refinetune_parts(self, rc)
            for i, part in enumerate(parts):  # each part its own entry, with its own time
                self._report(f"re-fine-tuning: {rc.strategy} {part.label} (seed {part.seed})", i, len(parts))
                self.finetuned(part.finetune)
                for ec in (part.dev, *part.tests.values()):
                    self.evaluation(ec)

        def compute():
            parts = refinetune_parts(self, rc)
            results = []
            for part in parts:
                results.append((part, self.evaluation(part.dev), {lang: self.evaluation(ec)
                                                                  for lang, ec in part.tests.items()}))
            return {"result": assemble(rc, results)}
        return self.store.get_or_compute(rc, compute)["result"]

    def instances(self, ic: InstanceConfig) -> dict:
        """``{"maps": (examples, layers, heads) raw per-example kv_grad maps, "rows": train-split row of each}``."""
        self._inputs_first(ic)

        def compute():
            model = self.finetuned(ic.finetune)
            task, lang = split_unit(ic.task)[0], ic.lang
            picked = subset_indices(self.split_size(task, lang, ic.split), ic.max_sentences, seed=ic.seed)
            ds, _ = self.tokenized(task, lang, ic.split, ic.max_length, rows=picked)
            # by length (less padding); batches() sorts by length too, stably, so map i is row rows[i]
            order = sorted(range(len(picked)), key=lambda j: len(ds[j]["input_ids"]))
            rows = [picked[j] for j in order]
            pad = self.loaded.tokenizer.pad_token_id or 0
            data = batches(ds.select(order), batch_size=16, pad_id=pad)
            what = f"per-example head maps: {ic.task}"
            self._report(what, 0, len(data))
            start = time.perf_counter()
            maps = instance_kv_maps(model, _with_task(data, ic.task, model), progress=self.progress,
                                    on_step=lambda d, n: self._report(what, d, n))
            return {"maps": maps.astype(np.float32), "rows": np.asarray(rows, dtype=np.int64),
                    "meta": {"seconds": round(time.perf_counter() - start, 2), "examples": len(rows)}}
        return self.store.get_or_compute(ic, compute)

    def bandit(self, bc: BanditConfig) -> dict:
        """AUTOSEM's first stage (:func:`headprune_core.methods.bandit.bandit_search`) on ``bc``'s units, from the
        pretrained encoder; the result names the selected auxiliary units."""

        def compute():
            ft = bc.finetune
            model = self._build(ft)
            train, _ = self.train_data(ft)
            task, lang = split_unit(bc.primary, ft.train_langs[0])
            dev = _with_task(self.eval_batches(task, lang, "validation", bc.dev_sentences,
                                               max_length=ft.max_length), bc.primary, model)
            what = f"bandit search for {bc.primary}"
            self._report(what, 0, bc.rounds)
            res = bandit_search(model, train, dev, primary=bc.primary, pad_id=self.loaded.tokenizer.pad_token_id or 0,
                                rounds=bc.rounds, round_steps=bc.round_steps, batch_size=ft.batch_size, lr=ft.lr,
                                head_lr=ft.head_lr, decay=bc.decay, keep=bc.keep, seed=ft.seed,
                                freeze_embeddings=ft.freeze_embeddings, progress=self.progress,
                                on_step=lambda d, n: self._report(what, d, n))
            return {"result": res}
        return self.store.get_or_compute(bc, compute)["result"]

    def compute(self, cfg: RunConfig) -> Any:
        """The result of any run configuration this Study makes (computed and stored on a miss): a fine-tuned
        model, scores, an evaluation, a curve or a re-fine-tuning table."""
        methods = {"finetune": self.finetuned, "score": self.scores, "eval": self.evaluation, "curve": self.curve,
                   "refinetune": self.refinetune, "instances": self.instances, "bandit": self.bandit}
        if cfg.kind not in methods:
            raise ValueError(f"a Study cannot compute {cfg.kind!r} runs; it computes: {', '.join(methods)}")
        return methods[cfg.kind](cfg)

    def _report(self, what: str, done: int, total: int | None) -> None:
        if self.on_progress is not None:
            self.on_progress(what, done, total)


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


def _with_task(data: list[dict], task: str, model: HeadedEncoder) -> list[dict]:
    """Tag batches with their task (classifier name) when the model has several."""
    if len(model.tasks) == 1:
        return data
    if task not in model.tasks:
        raise ValueError(f"the model has no classifier for {task!r}; it has: {', '.join(model.tasks)}")
    return [{**b, "task": task} for b in data]


def _device_of(model) -> torch.device:
    return next(model.parameters()).device


def _stats_dict(stats) -> dict:
    if stats is None:
        return {}
    if isinstance(stats, dict):
        return dict(stats)
    return stats.to_dict()
