"""App-side bridge for the Prune & retrain page: cached re-fine-tunings of a model, their tables, and a new
experiment (configured, estimated, computed on a click)."""

from __future__ import annotations

import pandas as pd

from headprune_app import cached
from headprune_core.findings.cards import FAMILIES
from headprune_core.methods.uncertainty import ci_text, diff_text
from headprune_core.plans import selection as S
from headprune_core.plans.presets import FINDINGS_RETRAIN
from headprune_core.runs.config import RefinetuneConfig, config_from_dict
from headprune_core.runs.study import Study

STRATEGY_TEXT = {"importance": "lowest-ranked heads (Ma et al.)", "reverse": "top-ranked heads (control)",
                 "random": "random heads (control; Budhraja et al. 2020)",
                 "layers": "a third of the layers (Budhraja et al. 2021)",
                 "layer_pairs": "two adjacent or two separated layers (Budhraja et al. 2020)"}


def describe(rc: RefinetuneConfig) -> str:
    levels = ", ".join(lab for lab, _ in rc.points() if lab != "0")
    seeds = f", {len(rc.train_seeds())} seeds" if len(rc.train_seeds()) > 1 else ""
    return (f"{'+'.join(rc.finetune.tasks)} ({rc.finetune.setting}, {'+'.join(rc.finetune.train_langs)}): "
            f"{rc.strategy} {levels}{seeds}; {rc.finetune.max_train_sentences} sentences x "
            f"{rc.finetune.epochs:g} epochs")


def results(study: Study, task: str) -> list[tuple[str, RefinetuneConfig, dict]]:
    """Every cached re-fine-tuning of ``study``'s model on ``task`` (newest first): (description, config, result);
    a model whose fingerprint cannot be computed (not prepared) has none."""
    out = []
    for e in study.store.entries("refinetune"):
        if e.stale:
            continue
        try:
            rc = config_from_dict("refinetune", e.config)
        except (ValueError, TypeError):
            continue
        if rc.finetune.model_fp != study.model_fp or rc.finetune.tasks[0] != task:
            continue
        found = cached.read(study, rc)
        if found is not None:
            out.append((describe(rc), rc, found["result"]))
    return out


def picked_text(res: dict) -> str:
    """How a re-fine-tuning pruned, and the level dev picked for each training seed."""
    return (f"Pruned by **{STRATEGY_TEXT[res['strategy']]}**; dev-picked level per seed: "
            + ", ".join(f"seed {s}: {lab}" for s, lab in res["best"].items()))


def table(res: dict, langs) -> pd.DataFrame:
    """Per test language: unpruned -> pruned (each seed's dev-picked level), change with its paired interval."""
    rows = []
    for lang in langs:
        t = res["test"][lang]
        rows.append({"language": lang + (" (source)" if lang == res["dev_lang"] else ""),
                     "family": FAMILIES.get(lang, ""), "unpruned": ci_text(t["unpruned"]),
                     "pruned (best k on dev)": ci_text(t["pruned"]), "change": diff_text(t["change"]),
                     "distinguishable from 0": "yes" if t["change"]["distinguishable"] else "no"})
    return pd.DataFrame(rows)


def levels_table(res: dict, langs) -> pd.DataFrame:
    """Every level against unpruned, per language (paired differences)."""
    rows = []
    for lab, k in zip(res["levels"][1:], res["k"][1:]):
        row = {"level": lab, "heads pruned": k, "dev": ci_text(res["dev"][lab])}
        for lang in langs:
            row[lang] = diff_text(res["test"][lang]["changes"][lab])
        rows.append(row)
    return pd.DataFrame(rows)


def thirds_rows(res: dict, langs) -> list[dict]:
    """Relative changes per language and third (for ``headprune_core.figures.curves.thirds_chart``)."""
    rows = []
    for lang in langs:
        t = res["test"][lang]
        base = t["unpruned"]["score"]
        if not base:
            continue
        for third in ("bottom", "middle", "top"):
            ch = t["changes"][third]
            rows.append({"lang": lang, "family": FAMILIES.get(lang, "other"), "third": third,
                         "rel": 100 * ch["diff"] / base, "low": 100 * ch["low"] / base,
                         "high": 100 * ch["high"] / base})
    return rows


def new_experiment(study: Study, sel: S.Selection, *, strategy: str, levels: tuple[int, ...], seeds: tuple[int, ...],
                   train: dict, sentences: int) -> RefinetuneConfig:
    """A re-fine-tuning of the sidebar's task and setting: trained like ``train``, ranked (importance, reverse) on
    the first training language's dev set by the unpruned model trained the same way (Ma et al.), tested in the
    selected languages."""
    ft = study.finetune_config(sel.task, sel.train_langs(), setting=sel.setting, **{**sel.plan.train, **train})
    ranking = None
    if strategy in ("importance", "reverse"):
        ranking = study.score_config(ft, sel.task, ft.train_langs[0], method=sel.method,
                                   max_sentences=sel.plan.score_sentences)
    return RefinetuneConfig(finetune=ft, ranking=ranking, strategy=strategy, levels=levels, seeds=seeds,
                            eval_langs=tuple(sel.langs), max_sentences=sentences)


def int_list(text: str) -> tuple[int, ...]:
    """Whole numbers typed as a comma-separated list (``"6, 12"`` -> ``(6, 12)``; empty items are skipped).
    Raises ValueError naming what is not a whole number.

    >>> int_list("1, 2,,12 ")
    (1, 2, 12)
    """
    out = []
    for item in (v.strip() for v in text.split(",")):
        if not item:
            continue
        try:
            out.append(int(item))
        except ValueError:
            raise ValueError(f"'{item}' is not a whole number; write numbers separated by commas, e.g. 6, 12") \
                from None
    return tuple(out)


def default_train() -> dict:
    return dict(FINDINGS_RETRAIN)
