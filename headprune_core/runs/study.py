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
from headprune_core.base.progress import named, report
from headprune_core.base.specs import canonical_json
from headprune_core.data.align import shuffled_labels
from headprune_core.encoders.classifier import HeadedEncoder, TaskHead
from headprune_core.encoders.device import device_of
from headprune_core.encoders.heads import head_shape, prune_heads
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
    data_task,
    l0_options,
    nested_configs,
    split_unit,
    train_unit_names,
    train_units,
)
from headprune_core.runs.reading import StudyData, capped, scored_rows, subset_indices
from headprune_core.runs.retrain import assemble, refinetune_parts

log = logging.getLogger(__name__)


class Study(StudyData):
    """Computes and caches every result for one model. Expensive resources load lazily (what it reads, and the
    fingerprints of it, are :class:`~headprune_core.runs.reading.StudyData`'s).

    Its ``*_config`` builders are the only way to make run configurations with honest keys: they fill in the
    fingerprints (of the model and of the exact examples a run reads) and the effective values (a sentence cap
    above what a split holds becomes the split's size; options a strategy or method does not read get fixed
    values), so two requests that compute the same thing share one cache entry.
    """

    def __init__(self, *args, **kwargs):
        """Arguments as :class:`~headprune_core.runs.reading.StudyData`'s."""
        super().__init__(*args, **kwargs)
        self._models: dict[str, HeadedEncoder] = {}  # the 2 newest fine-tuned models (:meth:`finetuned`)

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
        cap = capped(largest, ft.max_train_sentences)
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
        cap = capped(self.split_size(data_task(task), lang, split), max_sentences)
        return {"split": split, "max_sentences": cap, "max_length": max_length or ft.max_length,
                "data_fp": self.read_fp(data_task(task), lang, split, cap)}

    def score_config(self, ft: FinetuneConfig, task: str, lang: str, *, method: str = "gate_grad",
                     split: str = "validation", max_sentences: int | None = 300, max_length: int | None = None,
                     seed: int = 0, half: int = 0, resample: int | None = None) -> ScoreConfig:
        """A scoring config; ``half`` 1 or 2 scores every other one of the sentences read (first or second
        half, for split-half reliability); a ``resample`` seed draws them again (:func:`resampled_rows`: random
        halves, each a draw with replacement)."""
        read = self._read(ft, task, lang, split, max_sentences, max_length)
        if half or resample is not None:
            rows = subset_indices(self.split_size(data_task(task), lang, split), read["max_sentences"])
            read["data_fp"] = self.read_fp(data_task(task), lang, split, None,
                                           rows=tuple(scored_rows(rows, half, resample)))
        return ScoreConfig(finetune=ft, task=task, lang=lang, method=method,
                           seed=seed if method == "random" else 0, half=half, resample=resample, **read)

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
        cap = capped(size, max_sentences)
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
            result = self._cached(ft, lambda: self._train(ft))  # a learned pruning's fine-tune first
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
        model = HeadedEncoder(encoder, heads).to(device_of(encoder))
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
                                gate_lr=opts["gate_lr"], init=opts["init"], seed=ft.seed, device=device_of(model))
            epochs, what = opts["epochs"], "learning which heads to prune"
        what = f"{what} {'+'.join(ft.tasks)} on {'+'.join(ft.train_langs)}"
        self._report(what, 0, None)
        train_log = finetune(model, train, pad_id=self.pad_id, epochs=epochs,
                             lr=ft.lr, head_lr=ft.head_lr, batch_size=ft.batch_size, sampling=ft.sampling, seed=ft.seed,
                             freeze_embeddings=ft.freeze_embeddings,
                             on_progress=named(self._report, what), gates=gates)
        log = {**train_log.to_dict(), "data": stats, "device": str(device_of(model))}
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
            parts[unit].append(shuffled_labels(ds, seed=ft.seed) if ft.shuffle_labels else ds)
            stats[f"{task}/{lang}"] = {**st, "train_sentences": len(ds)}
        train = {unit: concatenate_datasets(p) if len(p) > 1 else p[0] for unit, p in parts.items() if len(p[0])}
        if not train:
            raise ValueError(f"nothing to train {'+'.join(ft.tasks)} on: every unit has 0 training rows")
        return train, stats

    def learned(self, ft: FinetuneConfig):
        """The heads a learned-pruning fine-tune (``ft.l0``) kept: a
        :class:`~headprune_core.methods.learned.LearnedHeads`."""
        if not ft.l0:
            raise ValueError("this fine-tune has no learned pruning (FinetuneConfig.l0 is empty)")
        log = self.store.get_part(ft, "log")  # cached: the log alone, without loading the weights
        if log is None:
            self.finetuned(ft)
            log = self.store.get_part(ft, "log") or self.store.get(ft)["log"]
        return LearnedHeads.from_log(log["learned"])

    def _cached(self, cfg: RunConfig, compute: Callable[[], dict], *, inputs_first: bool = True,
                parts_first: Callable[[], None] | None = None) -> dict:
        """``cfg``'s entry, computed by ``compute`` and stored on a miss: the one way a Study's computations meet
        its store. On a miss, first what it reads (``inputs_first``: :meth:`_inputs_first`), then its parts that
        are entries of their own (``parts_first``), so each entry's recorded seconds are its own work (the
        sweep's estimates read them)."""
        if not self.store.has(cfg):
            if inputs_first:
                self._inputs_first(cfg)
            if parts_first is not None:
                parts_first()
        return self.store.get_or_compute(cfg, compute)

    def _inputs_first(self, cfg: RunConfig) -> None:
        """Compute what ``cfg`` reads (its fine-tune, its ranking's scores) before ``cfg`` itself."""
        for inner in nested_configs(cfg):
            if inner.kind == "finetune":
                self.finetuned(inner)
            elif inner.kind == "score":
                self.scores(inner)

    def scores(self, sc: ScoreConfig) -> dict:
        """Raw importance map ``scores["raw"]`` (layers, heads) and its metadata ``scores["meta"]``."""
        def compute():
            model = self.finetuned(sc.finetune)
            data = self.eval_batches(data_task(sc.task), sc.lang, sc.split, sc.max_sentences,
                                     max_length=sc.max_length, batch_size=16, half=sc.half,
                                     resample=sc.resample)
            self._report(f"scoring heads: {sc.task}/{sc.lang}", 0, len(data))
            imp = score_heads(model, _with_task(data, sc.task, model), method=sc.method, seed=sc.seed,
                              on_progress=named(self._report, f"scoring heads: {sc.task}/{sc.lang}"))
            return {"raw": imp.raw, "meta": imp.to_meta()}
        return self._cached(sc, compute)

    def importance(self, sc: ScoreConfig, *, normalize: str = "layer_sum", minmax: bool = True) -> np.ndarray:
        return normalise(self.scores(sc)["raw"], normalize=normalize, minmax=minmax)

    def evaluation(self, ec: EvalConfig) -> dict:
        """Metric and report under ``ec.mask`` (empty = no heads off)."""
        def compute():
            model = self.finetuned(ec.finetune)
            mask = torch.tensor(ec.mask, dtype=torch.float32) if ec.mask else None
            data = self.eval_batches(data_task(ec.task), ec.lang, ec.split, ec.max_sentences,
                                     max_length=ec.max_length)
            d = self.data(data_task(ec.task), ec.lang)
            what = f"evaluating {ec.task}/{ec.lang}"
            return {"result": evaluate(model, _with_task(data, ec.task, model), d.labels, kind=d.kind, mask=mask,
                                       on_progress=named(self._report, what))}
        return self._cached(ec, compute)["result"]

    def curve(self, cc: CurveConfig) -> dict:
        """Metric vs heads pruned for one strategy (see :func:`headprune_core.methods.evaluate.curve`)."""
        def compute():
            model = self.finetuned(cc.finetune)
            ranking = None
            if cc.ranking is not None:
                ranking = normalise(self.scores(cc.ranking)["raw"], normalize=cc.normalize)
            data = self.eval_batches(data_task(cc.task), cc.lang, cc.split, cc.max_sentences,
                                     max_length=cc.max_length)
            d = self.data(data_task(cc.task), cc.lang)
            what = f"curve {cc.strategy}: {cc.task}/{cc.lang}"
            self._report(what, 0, None)
            res = curve(model, _with_task(data, cc.task, model), d.labels, kind=d.kind, strategy=cc.strategy,
                        steps=list(cc.steps) or default_steps(head_shape(model), step=cc.step or None),
                        ranking=ranking, seeds=cc.seeds,
                        on_progress=named(self._report, what))
            return {"curve": res}
        return self._cached(cc, compute)["curve"]

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
        def parts_first():  # each part its own entry, with its own time
            parts = refinetune_parts(self, rc)
            for i, part in enumerate(parts):
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
        return self._cached(rc, compute, parts_first=parts_first)["result"]

    def instances(self, ic: InstanceConfig) -> dict:
        """``{"maps": (examples, layers, heads) raw per-example kv_grad maps, "rows": train-split row of each}``."""
        def compute():
            model = self.finetuned(ic.finetune)
            task, lang = data_task(ic.task), ic.lang
            picked = subset_indices(self.split_size(task, lang, ic.split), ic.max_sentences, seed=ic.seed)
            ds, _ = self.tokenized(task, lang, ic.split, ic.max_length, rows=picked)
            # by length (less padding); batches() sorts by length too, stably, so map i is row rows[i]
            order = sorted(range(len(picked)), key=lambda j: len(ds[j]["input_ids"]))
            rows = [picked[j] for j in order]
            data = batches(ds.select(order), batch_size=16, pad_id=self.pad_id)
            what = f"per-example head maps: {ic.task}"
            self._report(what, 0, len(data))
            start = time.perf_counter()
            maps = instance_kv_maps(model, _with_task(data, ic.task, model),
                                    on_progress=named(self._report, what))
            return {"maps": maps.astype(np.float32), "rows": np.asarray(rows, dtype=np.int64),
                    "meta": {"seconds": round(time.perf_counter() - start, 2), "examples": len(rows)}}
        return self._cached(ic, compute)

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
            res = bandit_search(model, train, dev, primary=bc.primary, pad_id=self.pad_id,
                                rounds=bc.rounds, round_steps=bc.round_steps, batch_size=ft.batch_size, lr=ft.lr,
                                head_lr=ft.head_lr, decay=bc.decay, keep=bc.keep, seed=ft.seed,
                                freeze_embeddings=ft.freeze_embeddings,
                                on_progress=named(self._report, what))
            return {"result": res}
        # from the pretrained encoder: its fine-tune config only names the units (never trained for this)
        return self._cached(bc, compute, inputs_first=False)["result"]

    def compute(self, cfg: RunConfig) -> Any:
        """The result of any run configuration this Study makes (computed and stored on a miss): a fine-tuned
        model, scores, an evaluation, a curve or a re-fine-tuning table."""
        methods = {"finetune": self.finetuned, "score": self.scores, "eval": self.evaluation, "curve": self.curve,
                   "refinetune": self.refinetune, "instances": self.instances, "bandit": self.bandit}
        if cfg.kind not in methods:
            raise ValueError(f"a Study cannot compute {cfg.kind!r} runs; it computes: {', '.join(methods)}")
        return methods[cfg.kind](cfg)

    def _report(self, what: str, done: int, total: int | None) -> None:
        report(self.on_progress, what, done, total)


def _with_task(data: list[dict], task: str, model: HeadedEncoder) -> list[dict]:
    """Tag batches with their task (classifier name) when the model has several."""
    if len(model.tasks) == 1:
        return data
    if task not in model.tasks:
        raise ValueError(f"the model has no classifier for {task!r}; it has: {', '.join(model.tasks)}")
    return [{**b, "task": task} for b in data]
