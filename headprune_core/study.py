"""A study = model x tasks x languages x settings, run end to end through the cache, with progress.

:class:`Study` turns run configurations into results (fine-tuned weights, importance maps, evaluations,
curves), each through :class:`headprune_core.store.Store`, so a second look is instant and an interrupted run
resumes from what is cached. Presets (``demo`` ...) expand into a list of jobs.

>>> # study = Study("me5-small"); run_plan(study, PRESETS["demo"])
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from headprune_core.classifier import HeadedEncoder, TaskHead
from headprune_core.config import (FIXED_BY_RUN, METHODS, SETTINGS, STRATEGIES, BanditConfig, CurveConfig,
                                   EvalConfig, FinetuneConfig, InstanceConfig, RefinetuneConfig, RunConfig,
                                   ScoreConfig, canonical_json, check_train_options, l0_options, nested_configs)
from headprune_core.evaluate import curve, default_steps, evaluate, strategy_mask
from headprune_core.files import check_name, read_json
from headprune_core.heads import head_shape, prune_heads
from headprune_core.importance import instance_kv_maps, normalise, score_heads
from headprune_core.store import Store
from headprune_core.train import batches, finetune, load_trained, trained_weights

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int | None], None]
"""on_progress(what, done, total): called as work advances (for a UI progress bar)."""


def split_unit(unit: str, default_lang: str | None = None) -> tuple[str, str | None]:
    """``"pos/de"`` -> ``("pos", "de")``; a bare task name keeps ``default_lang``.

    A fine-tuning run's tasks are units: a bare task trains on every ``train_langs`` language, ``task/lang``
    only on that language (GradTS mixes tasks of different languages in one multi-task run).
    """
    task, _, lang = unit.partition("/")
    return task, (lang or default_lang)


class Study:
    """Computes and caches every result for one model. Expensive resources load lazily.

    Its ``*_config`` builders are the only way to make run configurations with honest keys: they fill in the
    fingerprints (of the model and of the exact examples a run reads) and the effective values (a sentence cap
    above what a split holds becomes the split's size; options a strategy or method does not read get fixed
    values), so two requests that compute the same thing share one cache entry.
    """

    def __init__(self, model_id: str = "me5-small", *, store: Store | None = None, device: str = "auto",
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
        from headprune_core.data.refs import parse_sources
        self.model_id = model_id
        self.store = store or Store()
        self.device = device
        self.progress = progress
        self.on_progress = on_progress
        self.sources = parse_sources(sources)
        self.checkpoint = None
        if finetuned:
            from headprune_core.models import checkpoint_classifier
            self.checkpoint = checkpoint_classifier(model_id)
        self._loaded = None
        self._base: Study | None = None  # a Study this one shares its loaded model with (with_sources)
        self._data: dict[tuple[str, str], Any] = {}
        self._rows: dict[tuple[str, str, str], list[bytes]] = {}
        self._tokenized: dict[tuple[str, str, str, int], tuple[Any, dict]] = {}
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
                from headprune_core.models import load_model
                self._loaded = load_model(self.model_id, device=self.device)
        return self._loaded

    @property
    def model_fp(self) -> str:
        """Content fingerprint of the model's weights, config and tokenizer (Hub: its resolved commit)."""
        if self._model_fp is None:
            from headprune_core.models import model_fingerprint
            self._model_fp = model_fingerprint(self.model_id)
        return self._model_fp

    @property
    def head_shape(self) -> tuple[int, int]:
        """``(layers, heads)`` of the model, from its config (no weights loaded)."""
        if self._shape is None:
            from headprune_core.models import config_head_shape
            self._shape = config_head_shape(self.model_id)
        return self._shape

    def with_sources(self, sources) -> "Study":
        """A Study of the same model and store reading ``sources`` on top of this one's (shares the loaded
        model and its fingerprints, never this Study's data)."""
        from headprune_core.data.refs import parse_sources
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
        from headprune_core.data.refs import EMBEDDED, ref_for
        return ref_for(self.sources, task, lang) or EMBEDDED

    def data(self, task: str, lang: str):
        """The task's ``TaskData`` for one language (splits, labels, kind), from :meth:`source_for`."""
        from headprune_core.data.refs import load_ref
        if (task, lang) not in self._data:
            labels = list(self.checkpoint["labels"]) if self.checkpoint else None
            self._data[(task, lang)] = load_ref(self.source_for(task, lang), task, lang, labels=labels)
        return self._data[(task, lang)]

    def split_size(self, task: str, lang: str, split: str) -> int:
        return len(self._split(task, lang, split))

    def _split(self, task: str, lang: str, split: str):
        d = self.data(task, lang)
        if split not in d.dataset:
            raise ValueError(f"{task}/{lang} has no split {split!r}; it has: {', '.join(d.dataset)}")
        return d.dataset[split]

    def read_fp(self, task: str, lang: str, split: str, limit: int | None, *, seed: int = 0,
                rows: tuple[int, ...] | None = None) -> str:
        """Fingerprint of exactly the examples a run reads: the content of ``subset(split, limit, seed)`` (or of
        the given ``rows``), in order, with the label names and the task kind. A changed sentence or label gives
        a new key."""
        key = (task, lang, split)
        if key not in self._rows:
            self._rows[key] = [hashlib.sha256(canonical_json(row).encode()).digest()
                               for row in self._split(task, lang, split).to_list()]
        stored = self._rows[key]
        d = self.data(task, lang)
        h = hashlib.sha256(canonical_json({"task": task, "lang": lang, "kind": d.kind,
                                           "labels": list(d.labels)}).encode())
        if rows is not None and rows and max(rows) >= len(stored):
            raise ValueError(f"{task}/{lang} {split} has {len(stored)} rows; row {max(rows)} was asked for")
        for i in (subset_indices(len(stored), limit, seed=seed) if rows is None else rows):
            h.update(stored[i])
        return h.hexdigest()[:16]

    def tokenized(self, task: str, lang: str, split: str, max_length: int):
        """Tokenised split (input_ids, attention_mask, labels) and its alignment stats."""
        from headprune_core.data import tokenize_sentence_task, tokenize_token_task
        key = (task, lang, split, max_length)
        if key not in self._tokenized:
            d = self.data(task, lang)
            fn = tokenize_token_task if d.kind == "token" else tokenize_sentence_task
            ds, stats = fn(self._split(task, lang, split), self.loaded.tokenizer, max_length=max_length)
            self._tokenized[key] = (ds, _stats_dict(stats))
        return self._tokenized[key]

    def eval_batches(self, task: str, lang: str, split: str, limit: int | None, *, max_length: int,
                     batch_size: int = 32):
        ds, _ = self.tokenized(task, lang, split, max_length)
        pad = self.loaded.tokenizer.pad_token_id or 0
        return batches(subset(ds, limit), batch_size=batch_size, pad_id=pad)

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
                     seed: int = 0) -> ScoreConfig:
        return ScoreConfig(finetune=ft, task=task, lang=lang, method=method,
                           seed=seed if method == "random" else 0,
                           **self._read(ft, task, lang, split, max_sentences, max_length))

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
        if key not in self._models:
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
        return self._models[key]

    def train_log(self, ft: FinetuneConfig) -> dict:
        self.finetuned(ft)
        return self.store.get(ft)["log"]

    def _build(self, ft: FinetuneConfig) -> HeadedEncoder:
        import copy
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
            from headprune_core.store import Weights
            weights = Weights({f"heads.{ft.tasks[0]}.{k}": v for k, v in self.checkpoint["weights"].items()})
            return {"weights": weights, "log": {"checkpoint": self.model_id, "steps": 0, "seconds": 0.0,
                                                "labels": list(self.checkpoint["labels"]),
                                                "note": "classifier of the fine-tuned checkpoint, used as is"}}
        model = self._build(ft)
        train, stats = self.train_data(ft)
        gates, epochs, what = None, ft.epochs, "fine-tuning"
        if ft.l0:  # learned head pruning: continue from the base fine-tune with hard-concrete gates
            from headprune_core.learned import GateTrainer, fold_gates
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
        from datasets import concatenate_datasets
        parts: dict[str, list] = {unit: [] for unit in ft.tasks}
        stats = {}
        for unit, (task, lang) in zip(train_unit_names(ft), train_units(ft)):
            ds, st = self.tokenized(task, lang, "train", ft.max_length)
            rows = ft.kept_rows(unit)
            parts[unit].append(subset(ds, ft.max_train_sentences, seed=ft.seed) if rows is None
                               else ds.select(list(rows)))
            stats[f"{task}/{lang}"] = {**st, "train_sentences": len(parts[unit][-1])}
        train = {unit: concatenate_datasets(p) if len(p) > 1 else p[0] for unit, p in parts.items() if len(p[0])}
        if not train:
            raise ValueError(f"nothing to train {'+'.join(ft.tasks)} on: every unit has 0 training rows")
        return train, stats

    def learned(self, ft: FinetuneConfig):
        """The heads a learned-pruning fine-tune (``ft.l0``) kept: a :class:`~headprune_core.learned.LearnedHeads`."""
        from headprune_core.learned import LearnedHeads
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
                                     max_length=sc.max_length, batch_size=16)
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
        """Metric vs heads pruned for one strategy (see :func:`headprune_core.evaluate.curve`)."""
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

    def refinetune_parts(self, rc: RefinetuneConfig) -> list[RefinetunePart]:
        """The cached runs :meth:`refinetune` is made of, once its ranking is scored: per level and training seed
        the pruned fine-tune, its dev evaluation (first training language) and its test evaluations (every
        evaluation language). A sweep runs them as jobs of their own."""
        task = rc.finetune.tasks[0]
        dev_lang = rc.finetune.train_langs[0]
        shape = self.head_shape
        ranking = None
        if rc.ranking is not None and rc.strategy in ("importance", "reverse"):
            ranking = normalise(self.scores(rc.ranking)["raw"], normalize=rc.normalize)
        parts = []
        for label, what in rc.points():
            if isinstance(what, int) and what > shape[0] * shape[1]:
                raise ValueError(f"cannot prune {what} heads before fine-tuning: the model has "
                                 f"{shape[0] * shape[1]} ({shape[0]} layers x {shape[1]} heads)")
            if what == 0:
                mask = torch.ones(shape)
            elif rc.strategy == "layers":
                mask = strategy_mask(shape, "layers", part=what)
            else:
                mask = strategy_mask(shape, rc.strategy, what, ranking=ranking, seed=rc.random_seed)
            pruned = tuple((int(a), int(b)) for a, b in zip(*np.where(mask.numpy() == 0)))
            for seed in rc.train_seeds():
                ft = replace(self.reseeded(rc.finetune, seed), pruned=pruned)
                dev = self.eval_config(ft, task, dev_lang, split="validation", max_sentences=rc.max_sentences)
                tests = {lang: self.eval_config(ft, task, lang, max_sentences=rc.max_sentences)
                         for lang in rc.eval_langs or (dev_lang,)}
                parts.append(RefinetunePart(label, len(pruned), seed, ft, dev, tests))
        return parts

    def refinetune(self, rc: RefinetuneConfig) -> dict:
        """Prune by ``rc.strategy`` at each level, re-fine-tune per seed, pick k on dev, test everywhere; see
        :func:`headprune_core.retrain.assemble` for the result (with bootstrap intervals)."""
        from headprune_core.retrain import assemble
        self._inputs_first(rc)
        if not self.store.has(rc):
            parts = self.refinetune_parts(rc)
            for i, part in enumerate(parts):  # each part its own entry, with its own time
                self._report(f"re-fine-tuning: {rc.strategy} {part.label} (seed {part.seed})", i, len(parts))
                self.finetuned(part.finetune)
                for ec in (part.dev, *part.tests.values()):
                    self.evaluation(ec)

        def compute():
            parts = self.refinetune_parts(rc)
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
            ds, _ = self.tokenized(task, lang, ic.split, ic.max_length)
            # by length (less padding); batches() sorts by length too, stably, so map i is row rows[i]
            rows = sorted(subset_indices(len(ds), ic.max_sentences, seed=ic.seed),
                          key=lambda r: len(ds[r]["input_ids"]))
            pad = self.loaded.tokenizer.pad_token_id or 0
            data = batches(ds.select(rows), batch_size=16, pad_id=pad)
            what = f"per-example head maps: {ic.task}"
            self._report(what, 0, len(data))
            start = time.perf_counter()
            maps = instance_kv_maps(model, _with_task(data, ic.task, model), progress=self.progress,
                                    on_step=lambda d, n: self._report(what, d, n))
            return {"maps": maps.astype(np.float32), "rows": np.asarray(rows, dtype=np.int64),
                    "meta": {"seconds": round(time.perf_counter() - start, 2), "examples": len(rows)}}
        return self.store.get_or_compute(ic, compute)

    def bandit(self, bc: BanditConfig) -> dict:
        """AUTOSEM's first stage (:func:`headprune_core.bandit.bandit_search`) on ``bc``'s units, from the
        pretrained encoder; the result names the selected auxiliary units."""
        from headprune_core.bandit import bandit_search

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


@dataclass(frozen=True)
class RefinetunePart:
    """One pruned fine-tune of a re-fine-tuning: its level, heads pruned, seed and the runs it is made of."""

    label: str
    k: int
    seed: int
    finetune: FinetuneConfig
    dev: EvalConfig
    tests: dict[str, EvalConfig]

    def configs(self) -> list[RunConfig]:
        return [self.finetune, self.dev, *self.tests.values()]


def subset_indices(size: int, n: int | None, *, seed: int = 0) -> list[int]:
    """Row indices of a seeded random sample of ``n`` of ``size`` rows, in corpus order (all if ``n`` is None
    or larger). Splits keep corpus order, and some corpora are sorted by label: the first ``n`` would be biased.
    """
    if n is None or n >= size:
        return list(range(size))
    return sorted(int(i) for i in np.random.default_rng(seed).permutation(size)[:n])


def subset(ds, n: int | None, *, seed: int = 0):
    """The rows of :func:`subset_indices` of a dataset."""
    if n is None or n >= len(ds):
        return ds
    return ds.select(subset_indices(len(ds), n, seed=seed))


def train_units(ft: FinetuneConfig) -> list[tuple[str, str]]:
    """(task, language) of every training part of ``ft``, in training order: a bare task trains on every
    ``train_langs`` language, a ``task/lang`` unit on its own language only."""
    out = []
    for unit in ft.tasks:
        task, lang = split_unit(unit)
        out += [(task, lang)] if lang else [(task, l) for l in ft.train_langs]
    return out


def train_unit_names(ft: FinetuneConfig) -> list[str]:
    """The unit (classifier name) of each entry of :func:`train_units`."""
    return [unit for unit in ft.tasks for _ in ([0] if split_unit(unit)[1] else ft.train_langs)]


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


# --- presets -----------------------------------------------------------------------------------------------

def _plan_choice(value: str, known: tuple[str, ...], what: str, where: str) -> None:
    if value not in known:
        raise ValueError(f"{where}: unknown {what} {value!r}; known: {', '.join(known)}")


@dataclass(frozen=True)
class StudyPlan:
    """What a preset computes. Every job goes through the cache."""

    name: str
    description: str
    model: str = "me5-small"
    tasks: tuple[str, ...] = ("pos", "name")
    langs: tuple[str, ...] = ("en", "de", "es", "fr", "it", "nl", "pt", "tr")
    source_langs: tuple[str, ...] = ("en",)
    settings: tuple[str, ...] = ("cross",)
    method: str = "gate_grad"
    strategies: tuple[str, ...] = ("importance",)
    random_seeds: tuple[int, ...] = (0, 1, 2)
    curve_step: int = 12
    # heads between curve points in the cross setting's target languages (0: curve_step, as the source)
    target_curve_step: int = 0
    score_sentences: int = 300
    eval_sentences: int = 300
    train: dict = field(default_factory=lambda: {"max_train_sentences": 2000, "epochs": 2.0})
    # where the data comes from: {"task" or "task/lang": data reference}; the rest is embedded/registered
    sources: dict = field(default_factory=dict)
    finetuned: bool = False  # model is a fine-tuned token-classification checkpoint (its classifier as is)
    # curves at these shares of all heads (e.g. 0.25, 0.5, 0.75; 0 is always a point) instead of every curve_step
    prune_levels: tuple[float, ...] = ()
    # prune-then-retrain experiments (Ma et al.; Budhraja et al.): a list of objects of REFINETUNE_OPTIONS, e.g.
    # {"strategy": "importance", "levels": [0, 4, 8, 12], "seeds": [13, 14, 15]}; one object is one experiment
    refinetune: tuple = ()
    # GradTS validations run with the plan (GradTS preset names, e.g. "gradts-findings", plan files, or plans as
    # objects of GradTSPlan fields), on the plan's model
    gradts: tuple = ()
    # GradTS plans whose single-task head maps (each unit's fine-tune and scores: the task affinity matrix) are
    # computed with this plan, for its model, without their multi-task validation
    affinity: tuple = ()

    def __post_init__(self):
        check_name(self.name, "plan name")
        where = f"plan {self.name!r}"
        for name in ("tasks", "langs", "source_langs", "settings", "strategies"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not value or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{where}: {name} must be a non-empty list of names, got {value!r}")
        from headprune_core.data.refs import names_task, parse_sources
        refs = parse_sources(self.sources, where=where)
        for task in self.tasks:
            if not names_task(refs, task):
                from headprune_core.data import get_task
                get_task(task)  # no source named: it must be a built-in or registered task
        if not isinstance(self.finetuned, bool):
            raise ValueError(f"{where}: finetuned must be true or false, got {self.finetuned!r}")
        for setting in self.settings:
            _plan_choice(setting, SETTINGS, "setting", where)
        for strategy in self.strategies:
            _plan_choice(strategy, STRATEGIES, "strategy", where)
        _plan_choice(self.method, METHODS, "importance method", where)
        for name in ("curve_step", "score_sentences", "eval_sentences"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{where}: {name} must be a whole number of at least 1, got {value!r}")
        if not isinstance(self.target_curve_step, int) or isinstance(self.target_curve_step, bool) or \
                self.target_curve_step < 0:
            raise ValueError(f"{where}: target_curve_step must be 0 (as curve_step) or more, got "
                             f"{self.target_curve_step!r}")
        if not isinstance(self.random_seeds, tuple) or not self.random_seeds or \
                not all(isinstance(v, int) and not isinstance(v, bool) for v in self.random_seeds):
            raise ValueError(f"{where}: random_seeds must be a non-empty list of integers, got {self.random_seeds!r}")
        check_train_options(self.train, where)
        FinetuneConfig(model=self.model, tasks=self.tasks, train_langs=self.source_langs, **self.train)
        if not isinstance(self.prune_levels, tuple) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1 for v in self.prune_levels):
            raise ValueError(f"{where}: prune_levels must be shares of the heads in (0, 1], got {self.prune_levels!r}")
        experiments = (self.refinetune,) if isinstance(self.refinetune, dict) and self.refinetune \
            else () if self.refinetune in ({}, None) else self.refinetune
        if not isinstance(experiments, (tuple, list)) or not all(isinstance(e, dict) for e in experiments):
            raise ValueError(f"{where}: refinetune must be a list of objects like {{\"max_k\": 12}}, "
                             f"got {self.refinetune!r}")
        object.__setattr__(self, "refinetune", tuple(experiments))
        for field_name in ("gradts", "affinity"):
            value = getattr(self, field_name)
            if not isinstance(value, tuple) or not all(isinstance(v, (str, dict)) for v in value):
                raise ValueError(f"{where}: {field_name} must be a list of GradTS preset names, plan files or "
                                 f"plans, got {value!r}")

        for i, exp in enumerate(self.refinetune):
            self.check_experiment(exp, f"{where}: refinetune[{i}]")

    def gradts_plans(self, where: str = "", *, field_name: str = "gradts") -> list:
        """The GradTS plans named in ``gradts`` (or ``affinity``), checked here, not at construction: the GradTS
        module imports this one."""
        from headprune_core.gradts import GradTSPlan, get_gradts_preset
        where = where or f"plan {self.name!r}"
        out = []
        for name in getattr(self, field_name):
            try:
                if isinstance(name, dict):
                    gplan = GradTSPlan.from_dict(name, where="GradTS plan")
                elif name.endswith(".json") or Path(name).is_file():
                    gplan = GradTSPlan.from_file(name)
                else:
                    gplan = get_gradts_preset(name)
            except ValueError as err:
                raise ValueError(f"{where}: {field_name}: {err}") from None
            if field_name == "affinity":  # maps of these units for this plan's model
                gplan = replace(gplan, model=self.model)
            elif gplan.model != self.model:
                raise ValueError(f"{where}: GradTS plan {name!r} is for model {gplan.model!r}, the plan's model "
                                 f"is {self.model!r}")
            out.append(gplan)
        return out

    def check_experiment(self, exp: dict, where: str) -> None:
        """Raise naming ``where`` if ``exp`` is not a valid re-fine-tuning experiment of this plan."""
        unknown = sorted(set(exp) - set(REFINETUNE_OPTIONS))
        if unknown:
            raise ValueError(f"{where}: unknown refinetune options {unknown}; known: {list(REFINETUNE_OPTIONS)}")
        for name in ("tasks", "settings"):
            value = exp.get(name, ())
            known = self.tasks if name == "tasks" else self.settings
            if not isinstance(value, (list, tuple)) or any(v not in known for v in value):
                raise ValueError(f"{where}: {name} must be a list of the plan's {name} ({', '.join(known)}), "
                                 f"got {value!r}")
        shares = exp.get("shares", ())
        if not isinstance(shares, (list, tuple)) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1 for v in shares):
            raise ValueError(f"{where}: shares must be shares of the heads in (0, 1], got {shares!r}")
        train = exp.get("train", {})
        check_train_options(train, where)
        ft = FinetuneConfig(model=self.model, tasks=self.tasks[:1], train_langs=("xx",), model_fp="-", data_fp="-",
                            **{**self.train, **train})
        self.refinetune_config(ft, ScoreConfig(finetune=ft, task=self.tasks[0], lang="xx"), exp=exp, where=where)

    @classmethod
    def from_dict(cls, data, *, where: str = "plan") -> "StudyPlan":
        """A plan from JSON data: unknown or missing fields and bad values fail naming ``where``."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: a plan is a JSON object of fields, got {type(data).__name__}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"{where}: unknown plan fields {unknown}; known: {sorted(known)}")
        required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
        missing = [name for name in required if name not in data]
        if missing:
            raise ValueError(f"{where}: missing plan field(s) {missing}")
        try:
            plan = cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})
        except (ValueError, TypeError) as err:
            message = str(err)
            raise ValueError(message if message.startswith(where) else f"{where}: {message}") from None
        plan.gradts_plans(where)
        plan.gradts_plans(where, field_name="affinity")
        return plan

    @classmethod
    def from_file(cls, path: str | Path) -> "StudyPlan":
        """A plan from a JSON file (the fields of this class); relative local data files in ``sources`` are
        relative to the plan file's folder."""
        from headprune_core.data.refs import parse_sources
        data = read_json(path, "study plan (JSON)")
        if isinstance(data, dict) and isinstance(data.get("sources"), dict):
            refs = parse_sources(data["sources"], where=str(path), base=Path(path).resolve().parent)
            data = {**data, "sources": {k: v.to_json() for k, v in refs.items()}}
        return cls.from_dict(data, where=str(path))

    def task_langs(self, task: str) -> tuple[str, ...]:
        """The plan's languages that ``task`` has (all of them for a task read from a named source)."""
        from headprune_core.data.refs import names_task
        from headprune_core.data.registry import all_tasks
        info = all_tasks().get(task)
        if info is None or "*" in info.languages or names_task(self.sources, task):
            return self.langs
        return tuple(lang for lang in self.langs if lang in info.languages)

    def study(self, *, store: Store | None = None, device: str = "auto", progress: bool = True) -> "Study":
        """A :class:`Study` of this plan's model reading its data sources."""
        return Study(self.model, store=store, device=device, progress=progress, sources=self.sources,
                     finetuned=self.finetuned)

    def to_dict(self) -> dict:
        return asdict(self)

    def step_for(self, lang: str, *, setting: str, train_langs: tuple[str, ...]) -> int:
        """Heads between the curve points of ``lang``: a cross-lingual target's ``target_curve_step`` when set,
        else ``curve_step``."""
        if setting == "cross" and lang not in train_langs and self.target_curve_step:
            return self.target_curve_step
        return self.curve_step

    def curve_steps(self, shape: tuple[int, int]) -> tuple[int, ...]:
        """Heads pruned at each curve point: the prune levels' shares of all heads (with 0), or () for every
        ``curve_step`` heads."""
        total = shape[0] * shape[1]
        return tuple(sorted({0, *(int(round(v * total)) for v in self.prune_levels)})) if self.prune_levels else ()

    def refinetune_config(self, ft: FinetuneConfig, ranking: ScoreConfig | None, langs: tuple[str, ...] = (), *,
                          exp: dict, shape: tuple[int, int] | None = None, where: str = "") -> RefinetuneConfig:
        """The re-fine-tuning run of experiment ``exp`` (one of ``refinetune``) on ``ft`` (the unpruned
        fine-tune trained like the pruned ones)."""
        opts = {**REFINETUNE_OPTIONS, "max_sentences": self.eval_sentences, **exp}
        levels = set(opts.pop("levels"))
        shares = opts.pop("shares")
        if shares and shape:
            levels |= {int(round(v * shape[0] * shape[1])) for v in shares}
        for name in ("tasks", "settings", "train"):
            opts.pop(name)
        if opts["strategy"] not in ("importance", "reverse"):
            ranking = None
        try:
            return RefinetuneConfig(finetune=ft, ranking=ranking, eval_langs=tuple(langs), levels=tuple(sorted(levels)),
                                    seeds=tuple(opts.pop("seeds")), **opts)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{where or f'plan {self.name!r}: refinetune'}: {err}") from None

    def restricted(self, *, langs: tuple[str, ...] | None = None, tasks: tuple[str, ...] | None = None,
                   sentences: int | None = None) -> "StudyPlan":
        """The same plan on fewer languages / tasks / sentences (for tests and quick looks). Restricted to
        some languages or tasks, it leaves out the ``affinity`` maps (other tasks' single-task runs)."""
        plan = self
        if langs or tasks:
            plan = replace(plan, affinity=())
        if langs:
            plan = replace(plan, langs=tuple(langs))
        if tasks:
            plan = replace(plan, tasks=tuple(tasks))
        if sentences:
            plan = replace(plan, score_sentences=min(plan.score_sentences, sentences),
                           eval_sentences=min(plan.eval_sentences, sentences),
                           train={**plan.train, "max_train_sentences": sentences})
        return plan


REFINETUNE_OPTIONS = {"strategy": "importance", "max_k": 12, "levels": (), "shares": (), "seeds": (),
                      "random_seed": 0, "max_sentences": None, "normalize": "layer_sum", "tasks": (),
                      "settings": (), "train": {}}
"""A re-fine-tuning experiment's options and their defaults: ``strategy`` (importance, reverse, random,
layers); the levels are ``levels`` (numbers of heads) and ``shares`` (of all heads), or 0..``max_k`` when both
are empty; ``seeds`` are training seeds (empty: the plan's); ``tasks`` and ``settings`` restrict it (empty: all
of the plan's); ``train`` overrides the plan's fine-tuning options for these runs (the unpruned model they are
compared with, and ranked by, is trained the same way); ``max_sentences`` None: the plan's eval_sentences."""

PRESETS: dict[str, StudyPlan] = {
    "demo": StudyPlan(
        name="demo",
        description="me5-small, POS and NAME (proper-name spans, a proxy for NER) in 8 languages, fine-tuned "
                    "on English (cross-lingual), gate-gradient importance for every (task, language), "
                    "importance-order curves everywhere; random, reverse and layer-third pruning for English.",
        strategies=("importance",),
        # 300 sentences x 2 epochs at a raised rate: about 70 s a task on 2 cores (all 801 at lr 5e-5 took about
        # 185 s); the classifiers at 5e-3: at 1e-3 NAME reached English F1 32 in these 76 steps, at 5e-3 93
        train={"max_train_sentences": 300, "epochs": 2.0, "batch_size": 8, "lr": 2e-4, "head_lr": 5e-3},
        score_sentences=200,
        eval_sentences=200,
        # curves every 12 heads in English, every 72 in the 7 target languages, random order 1 draw, plus the
        # task affinity maps of the GradTS demo's 8 units (maps only): 72 jobs. start.sh runs the 50 that are not
        # curves before the dashboard (414 s on 2 cores, 557 s from a fresh clone) and the 22 curves behind it
        # (257 s); the Prune page adds points and draws
        curve_step=12,
        target_curve_step=72,
        random_seeds=(0,),
        affinity=("gradts-demo",),
    ),
}


FINDINGS_RETRAIN = {"max_train_sentences": 200, "epochs": 2.0, "batch_size": 8, "lr": 2e-4, "head_lr": 5e-3}
"""How the Findings preset's prune-then-retrain runs train (200 English POS sentences, 2 epochs: about 45 s a
run on 2 cores; the rate is raised so 50 steps learn). The unpruned model they are compared with, and whose
English dev ranking picks the heads, is trained the same way."""

PRESETS["findings"] = replace(
    PRESETS["demo"], name="findings",
    description="Everything the Findings page needs: the demo study, then on English POS (cross-lingual, "
                "tested in all 8 languages) prune-then-retrain runs as the papers did them, subsampled "
                "(200 training sentences, 2 epochs, 200 test sentences): Ma et al.'s lowest-ranked heads at "
                "k = 0, 6, 12 with 3 training seeds, the same k of top-ranked and of random heads, Budhraja et "
                "al. 2021's bottom / middle / top layer thirds, and Budhraja et al. 2020's importance vs random "
                "pruning of 25, 50 and 75% of the heads; and a small GradTS check (5 task units, primary name/es).",
    refinetune=(
        {"tasks": ["pos"], "strategy": "importance", "levels": [6, 12], "seeds": [13, 14, 15],
         "train": FINDINGS_RETRAIN},
        {"tasks": ["pos"], "strategy": "reverse", "levels": [6, 12], "train": FINDINGS_RETRAIN},
        {"tasks": ["pos"], "strategy": "random", "levels": [6, 12], "train": FINDINGS_RETRAIN},
        {"tasks": ["pos"], "strategy": "layers", "train": FINDINGS_RETRAIN},
        {"tasks": ["pos"], "strategy": "importance", "shares": [0.25, 0.5, 0.75], "train": FINDINGS_RETRAIN},
        {"tasks": ["pos"], "strategy": "random", "shares": [0.25, 0.5, 0.75], "train": FINDINGS_RETRAIN},
    ),
    gradts=("gradts-findings",),
    # the curves the Findings preset was measured with (README): target languages every 36 heads, 2 random draws
    target_curve_step=36,
    random_seeds=(0, 1),
)


def get_preset(name: str) -> StudyPlan:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return PRESETS[name]


@dataclass(frozen=True)
class Job:
    """One cached computation of a plan."""

    what: str
    cfg: RunConfig
    run: Callable[[], Any]
    experiment: dict | None = None  # a re-fine-tuning job's experiment (one of the plan's ``refinetune``)


def plan_jobs(study: Study, plan: StudyPlan) -> list[Job]:
    """Expand ``plan`` into jobs, in dependency order (fine-tune, then score, evaluate, curves)."""
    jobs: list[Job] = []
    for setting in plan.settings:
        for task in plan.tasks:
            langs = list(plan.task_langs(task))
            train_langs = plan.source_langs if setting == "cross" else tuple(langs)
            ft = study.finetune_config(task, train_langs, setting=setting, **plan.train)
            jobs.append(Job(f"fine-tune {task} ({setting}, {'+'.join(ft.train_langs)})", ft,
                            lambda ft=ft: study.finetuned(ft)))
            for lang in langs:
                sc = study.score_config(ft, task, lang, method=plan.method, max_sentences=plan.score_sentences)
                jobs.append(Job(f"score heads {task}/{lang}", sc, lambda sc=sc: study.scores(sc)))
                ec = study.eval_config(ft, task, lang, max_sentences=plan.eval_sentences)
                jobs.append(Job(f"evaluate {task}/{lang}", ec, lambda ec=ec: study.evaluation(ec)))
            for lang in langs:
                extra = ("random", "reverse", "layers") if lang in train_langs[:1] else ()
                strategies = plan.strategies + tuple(x for x in extra if x not in plan.strategies)
                for strategy in strategies:
                    # cross-lingual: a target is pruned by the source's ranking (zero-shot has no target labels)
                    cc = study.curve_config(ft, task, lang, strategy=strategy, method=plan.method,
                                            ranking_lang=train_langs[0] if setting == "cross" else None,
                                            score_sentences=plan.score_sentences,
                                            step=plan.step_for(lang, setting=setting, train_langs=train_langs),
                                            steps=plan.curve_steps(study.head_shape),
                                            max_sentences=plan.eval_sentences,
                                            seeds=plan.random_seeds if strategy == "random" else (0,))
                    jobs.append(Job(f"curve {strategy} {task}/{lang}", cc, lambda cc=cc: study.curve(cc)))
            for exp in plan.refinetune:
                if exp.get("tasks") and task not in exp["tasks"] or exp.get("settings") and setting not in exp["settings"]:
                    continue
                ft_rt = study.finetune_config(task, train_langs, setting=setting, **{**plan.train, **exp.get("train", {})})
                ranking = study.score_config(ft_rt, task, train_langs[0], method=plan.method,
                                             max_sentences=plan.score_sentences)
                rc = plan.refinetune_config(ft_rt, ranking, tuple(langs), exp=exp, shape=study.head_shape)
                total = study.head_shape[0] * study.head_shape[1]
                if max(k for _, k in rc.points() if isinstance(k, int)) > total:
                    raise ValueError(f"plan {plan.name!r}: refinetune prunes up to "
                                     f"{max(k for _, k in rc.points() if isinstance(k, int))} heads; the model has "
                                     f"{total}")
                levels = ", ".join(lab for lab, _ in rc.points())
                seeds = f", seeds {', '.join(map(str, rc.train_seeds()))}" if len(rc.train_seeds()) > 1 else ""
                jobs.append(Job(f"prune {rc.strategy} ({levels}) then re-fine-tune {task} ({setting}{seeds})", rc,
                                lambda rc=rc: study.refinetune(rc), experiment=exp))
    if plan.affinity:
        from headprune_core.gradts import GradTS
        seen = {j.cfg.key() for j in jobs}
        for gplan in plan.gradts_plans(field_name="affinity"):
            gts = GradTS(study, gplan)
            for unit in gts.units:
                sc = gts.score_config(unit)
                for what, cfg, run in ((f"fine-tune {unit} alone (GradTS {gplan.name})", sc.finetune,
                                        lambda ft=sc.finetune: study.finetuned(ft)),
                                       (f"head map {unit} ({sc.method}, GradTS {gplan.name})", sc,
                                        lambda sc=sc: study.scores(sc))):
                    if cfg.key() not in seen:
                        seen.add(cfg.key())
                        jobs.append(Job(what, cfg, run))
    if plan.gradts:
        from headprune_core.gradts import GradTS
        for gplan in plan.gradts_plans():
            gts = GradTS(study, gplan)
            jobs.append(Job(f"GradTS {gplan.name}: maps, task affinity, selections checked by multi-task training",
                            gts.config(), gts.run))
    return jobs


def run_plan(study: Study, plan: StudyPlan, *, on_job: Callable[[int, int, str, bool], None] | None = None,
             ) -> dict:
    """Run every job of ``plan`` (cached ones are skipped); returns counts and wall time.

    ``on_job(index, total, what, cached)`` is called before each job. Ctrl-C stops between steps: finished
    entries stay valid and a rerun resumes from them.
    """
    start = time.perf_counter()
    jobs = plan_jobs(study, plan)
    computed = 0
    for i, job in enumerate(jobs):
        cached = study.store.has(job.cfg)
        if on_job is not None:
            on_job(i, len(jobs), job.what, cached)
        if not cached:
            log.info("computing: %s", job.what)
            job.run()
            computed += 1
    return {"jobs": len(jobs), "computed": computed, "seconds": time.perf_counter() - start}
