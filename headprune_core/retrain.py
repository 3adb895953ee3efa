"""Prune, then retrain: the tables of a re-fine-tuning run (Ma et al. 2021; Budhraja et al. 2020/2021).

A :class:`~headprune_core.config.RefinetuneConfig` fine-tunes the encoder with heads removed at several levels
and seeds (:meth:`Study.refinetune_parts`); :func:`assemble` turns its evaluations into what the papers report:
the per-level dev and test scores, the level picked on dev (Ma et al.: best k on the source language's dev set,
fewer heads on a tie), and per test language the unpruned model against the pruned one, each with a 95%
bootstrap interval over sentences, averaged over the training seeds, and the change with a paired bootstrap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from headprune_core.uncertainty import bootstrap_ci, paired_bootstrap

if TYPE_CHECKING:
    from headprune_core.config import RefinetuneConfig


def assemble(rc: "RefinetuneConfig", results: list) -> dict:
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
