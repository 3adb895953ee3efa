"""What the user chose in the frame (study plan, model, task, languages, method ...) and the run
configurations that choice means. Plain Python, no Streamlit: the frame builds a :class:`Selection`, pages turn
it into cache keys with the functions here, so a page finds exactly what ``run_plan`` computed.

Study plans are the core's presets plus plan files (JSON, the fields of ``StudyPlan``, as ``headprune study FILE``
reads them) found in ``<cache>/plans/`` (:func:`headprune_core.plans.presets.available_plans`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from headprune_core.base.files import check_name, write_file_atomic
from headprune_core.plans.plan import StudyPlan
from headprune_core.plans.presets import plans_dir
from headprune_core.runs.config import CurveConfig, EvalConfig, FinetuneConfig, ScoreConfig
from headprune_core.runs.study import Study

STRATEGY_LABELS = {
    "importance": "least important first",
    "reverse": "most important first (reverse)",
    "random": "random order",
    "layers": "whole layers (bottom / middle / top third)",
    "learned": "learned (L0 gates, He & Choi)",
    "custom": "custom (click heads)",
}
TASK_LABELS = {"name": "name: proper-name spans (a PROXY for NER)", "pos": "pos: part-of-speech tags"}
LANGUAGE_NAMES = {"en": "English", "de": "German", "es": "Spanish", "fr": "French", "it": "Italian",
                  "nl": "Dutch", "pt": "Portuguese", "tr": "Turkish"}


DEFAULT_NORMALIZE = "layer_sum"
DEFAULT_MINMAX = True
"""The sidebar's normalisation and min-max scaling when a link does not set them."""


def default_source(plan: StudyPlan, langs_ok) -> str:
    """The fine-tuning language a view starts on: the plan's first source language, or the first language this
    task has if that one is not among them."""
    source = plan.source_langs[0]
    return source if not langs_ok or source in langs_ok else langs_ok[0]


def default_langs(plan: StudyPlan, langs_ok) -> list[str]:
    """The languages a view starts with: the plan's, among those this task has (else this task's first 8)."""
    return [lang for lang in plan.langs if lang in langs_ok] or list(langs_ok)[:8]


def method_choices(plan: StudyPlan, methods) -> list[str]:
    """The importance methods offered, the plan's own first."""
    return list(dict.fromkeys([plan.method, *methods]))


def save_plan_file(plan: StudyPlan) -> Path:
    """Write ``plan`` to ``<cache>/plans/<name>.json`` (so the frame offers it next time)."""
    path = plans_dir() / f"{check_name(plan.name, 'plan name')}.json"
    return write_file_atomic(path, json.dumps(plan.to_dict(), indent=2, ensure_ascii=False))


def task_label(task: str) -> str:
    return TASK_LABELS.get(task, task)


def lang_label(lang: str) -> str:
    return f"{lang} ({LANGUAGE_NAMES[lang]})" if lang in LANGUAGE_NAMES else lang


def language_notes(task: str, langs) -> list[str]:
    """Caveats to print wherever these languages' results are shown."""
    notes = []
    if "de" in langs:
        notes.append("German (de) has only 250 sentences in the embedded corpus (25 validation, 25 test): "
                     "its scores are noisy.")
    if task == "name":
        notes.append("Task 'name' = proper-name spans derived from gold proper-noun tags: a proxy for NER, "
                     "not real named-entity recognition.")
    return notes


@dataclass(frozen=True)
class Selection:
    """The frame's choices, shared by every page."""

    plan: StudyPlan
    model: str
    task: str
    setting: str
    source: str  # training language (cross-lingual setting)
    langs: tuple[str, ...]  # languages shown / compared
    lang: str  # the focus language
    method: str
    normalize: str
    minmax: bool = True
    finetuned: bool = False  # the model is a fine-tuned token-classification checkpoint (its classifier as is)

    def study_plan(self) -> StudyPlan:
        """The plan restricted to this selection (what the home page's button computes).

        In the multilingual setting the model is trained on all the plan's languages, so they all stay.
        """
        langs = self.plan.langs if self.setting == "multi" else tuple(self.langs)
        return replace(self.plan, model=self.model, tasks=(self.task,), settings=(self.setting,),
                       source_langs=(self.source,), langs=langs, method=self.method,
                       finetuned=self.finetuned or self.plan.finetuned)

    def train_langs(self) -> tuple[str, ...]:
        """What the model was fine-tuned on: the source language (cross) or every plan language (multi)."""
        if self.setting == "cross":
            return (self.source,)
        return self.plan.task_langs(self.task)


def finetune_config(study: Study, sel: Selection) -> FinetuneConfig:
    return study.finetune_config(sel.task, sel.train_langs(), setting=sel.setting, **sel.plan.train)


def score_config(study: Study, sel: Selection, lang: str, *, method: str | None = None) -> ScoreConfig:
    return study.score_config(finetune_config(study, sel), sel.task, lang, method=method or sel.method,
                              max_sentences=sel.plan.score_sentences)


def eval_config(study: Study, sel: Selection, lang: str, mask=None) -> EvalConfig:
    """Evaluation under ``mask``; no mask (or all ones) is the plan's own unpruned evaluation."""
    if mask is not None and bool((np.asarray(mask) != 0).all()):
        mask = None
    return study.eval_config(finetune_config(study, sel), sel.task, lang, mask,
                             max_sentences=sel.plan.eval_sentences)


def curve_config(study: Study, sel: Selection, lang: str, strategy: str, *,
                 ranking_lang: str | None = None) -> CurveConfig:
    """The curve of ``strategy`` as ``run_plan`` builds it; ranked strategies use the frame's normalisation."""
    kw = {}
    if strategy in ("importance", "reverse"):
        kw["normalize"] = sel.normalize
    return study.curve_config(finetune_config(study, sel), sel.task, lang, strategy=strategy,
                              ranking_lang=ranking_lang, method=sel.method,
                              score_sentences=sel.plan.score_sentences,
                              step=sel.plan.step_for(lang, setting=sel.setting, train_langs=sel.train_langs()),
                              steps=sel.plan.curve_steps(study.head_shape), max_sentences=sel.plan.eval_sentences,
                              seeds=sel.plan.random_seeds if strategy == "random" else (0,), **kw)


def importance_curve_name(sel: Selection, ranking_lang: str) -> str:
    """The prune page's name of the least-important-first curve by ``ranking_lang``'s ranking."""
    if sel.setting == "cross" and ranking_lang == sel.source:
        return f"least important first (source: {ranking_lang} ranking)"
    if ranking_lang == sel.lang:
        return "least important first (own ranking)"
    return f"least important first ({ranking_lang} ranking)"


def curve_candidates(study: Study, sel: Selection, lang: str) -> list[tuple[str, CurveConfig]]:
    """Every curve the prune page can draw for ``lang``: each strategy, and importance by each language's
    ranking (shown when cached). Cross-lingual, the source's ranking comes first (the default: zero-shot has no
    target labels); the target's own ranking is the comparison."""
    rankers = list(dict.fromkeys(([sel.source] if sel.setting == "cross" else []) + [lang, *sel.langs]))
    out = [(importance_curve_name(sel, other), curve_config(study, sel, lang, "importance", ranking_lang=other))
           for other in rankers[:1]]
    out += [("most important first", curve_config(study, sel, lang, "reverse", ranking_lang=rankers[0])),
            ("random order", curve_config(study, sel, lang, "random")),
            ("whole layers", curve_config(study, sel, lang, "layers"))]
    out += [(importance_curve_name(sel, other), curve_config(study, sel, lang, "importance", ranking_lang=other))
            for other in rankers[1:]]
    return out
