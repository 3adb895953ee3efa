"""Prune, then retrain: the tables of a re-fine-tuning run (Ma et al. 2021; Budhraja et al. 2020/2021).

A :class:`~headprune_core.runs.config.RefinetuneConfig` fine-tunes the encoder with heads removed at several
levels and seeds (:func:`refinetune_parts`: one pruned fine-tune and its evaluations per level and seed, each a
cache entry of its own); :func:`assemble` turns its evaluations into what the papers report:
the per-level dev and test scores, the level picked on dev (Ma et al.: best k on the source language's dev set,
fewer heads on a tie), and per test language the unpruned model against the pruned one, each with a 95%
bootstrap interval over sentences, averaged over the training seeds, and the change with a paired bootstrap.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from headprune_core.methods.evaluate import layer_pairs, layers_mask, strategy_mask
from headprune_core.methods.importance import normalise
from headprune_core.methods.uncertainty import bootstrap_ci, paired_bootstrap
from headprune_core.runs.config import EvalConfig, FinetuneConfig, RefinetuneConfig, RunConfig

if TYPE_CHECKING:  # the Study calls these functions; they only use its public configuration builders
    from headprune_core.runs.study import Study


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


def refinetune_parts(study: Study, rc: RefinetuneConfig) -> list[RefinetunePart]:
    """The cached runs :meth:`Study.refinetune` is made of, once its ranking is scored: per level and training seed
    the pruned fine-tune, its dev evaluation (first training language) and its test evaluations (every
    evaluation language). A sweep runs them as jobs of their own."""
    task = rc.finetune.tasks[0]
    dev_lang = rc.finetune.train_langs[0]
    shape = study.head_shape
    ranking = None
    if rc.ranking is not None and rc.strategy in ("importance", "reverse"):
        ranking = normalise(study.scores(rc.ranking)["raw"], normalize=rc.normalize)
    parts = []
    for label, what in rc.points():
        if isinstance(what, int) and what > shape[0] * shape[1]:
            raise ValueError(f"cannot prune {what} heads before fine-tuning: the model has "
                             f"{shape[0] * shape[1]} ({shape[0]} layers x {shape[1]} heads)")
        for i, seed in enumerate(rc.train_seeds()):
            if what == 0:
                mask = torch.ones(shape)
            elif rc.strategy == "layers":
                mask = strategy_mask(shape, "layers", part=what)
            elif rc.strategy == "layer_pairs":
                mask = layers_mask(shape, layer_pairs(shape[0])[what])
            else:  # random heads: a draw of their own per training seed, so runs replicate the strategy
                mask = strategy_mask(shape, rc.strategy, what, ranking=ranking, seed=rc.random_seed + i)
            pruned = tuple((int(a), int(b)) for a, b in zip(*np.where(mask.numpy() == 0)))
            ft = replace(study.reseeded(rc.finetune, seed), pruned=pruned)
            dev = study.eval_config(ft, task, dev_lang, split="validation", max_sentences=rc.max_sentences)
            tests = {lang: _test_config(study, rc, ft, task, lang) for lang in rc.eval_langs or (dev_lang,)}
            parts.append(RefinetunePart(label, len(pruned), seed, ft, dev, tests))
    return parts


def _test_config(study: Study, rc: RefinetuneConfig, ft: FinetuneConfig, task: str, lang: str) -> EvalConfig:
    """The test of ``lang``: its test split, or for a language the model did not train on, ``rc.target_split``
    (``heldout``: every sentence outside its dev split) capped at ``rc.target_sentences``."""
    if lang in ft.train_langs or rc.target_split == "test":
        return study.eval_config(ft, task, lang, max_sentences=rc.max_sentences)
    return study.eval_config(ft, task, lang, split=rc.target_split,
                             max_sentences=rc.target_sentences or rc.max_sentences)


def assemble(rc: RefinetuneConfig, results: list) -> dict:
    """The result of a re-fine-tuning from ``[(part, dev evaluation, {lang: test evaluation})]``.

    Returns ``levels`` (labels, ``"0"`` = unpruned), ``k`` (heads pruned per level), ``seeds``, ``dev`` and
    ``test[lang]["levels"]`` (per level: score = mean over seeds, 95% interval, per-seed scores), ``best`` (the
    dev-picked level per seed), and per language ``unpruned``, ``pruned`` (each seed's best level) and
    ``change`` (pruned - unpruned, paired bootstrap: ``diff``, ``low``, ``high``, ``distinguishable``) and
    ``changes`` (each level against unpruned).
    """
    labels = [label for label, _ in rc.points()]
    seeds = list(rc.train_seeds())
    by = {(part.label, part.seed): (part, dev, tests) for part, dev, tests in results}
    missing = [(lab, s) for lab in labels for s in seeds if (lab, s) not in by]
    if missing:
        raise ValueError(f"re-fine-tuning results missing for (level, seed) {missing}")
    first = next(iter(by.values()))
    langs = list(first[2])
    metric = first[1]["metric"]
    k = [by[(lab, seeds[0])][0].k for lab in labels]

    def runs(lab, lang=None):
        return [(by[(lab, s)][1] if lang is None else by[(lab, s)][2][lang])["units"] for s in seeds]

    dev = {lab: bootstrap_ci(runs(lab)) for lab in labels}
    best = {}
    for i, s in enumerate(seeds):  # Ma et al.: the best level on dev; a tie goes to fewer heads pruned
        best[str(s)] = max(labels, key=lambda lab: (dev[lab]["per_seed"][i], -k[labels.index(lab)]))
    test = {}
    for lang in langs:
        levels = {lab: bootstrap_ci(runs(lab, lang)) for lab in labels}
        unpruned = runs("0", lang)
        picked = [by[(best[str(s)], s)][2][lang]["units"] for s in seeds]
        test[lang] = {"levels": levels, "unpruned": levels["0"], "pruned": bootstrap_ci(picked),
                      "change": paired_bootstrap(unpruned, picked),
                      "changes": {lab: paired_bootstrap(unpruned, runs(lab, lang)) for lab in labels[1:]}}
    return {"strategy": rc.strategy, "metric": metric, "dev_lang": rc.finetune.train_langs[0],
            "setting": rc.finetune.setting, "levels": labels, "k": k, "seeds": seeds, "dev": dev, "best": best,
            "test": test}


def relative(change: dict, base: float) -> dict:
    """``change`` (a paired difference in points) as percent of ``base`` (the unpruned score)."""
    if base <= 0:
        return {"rel": float("nan"), "low": float("nan"), "high": float("nan")}
    return {"rel": 100 * change["diff"] / base, "low": 100 * change["low"] / base,
            "high": 100 * change["high"] / base}
