"""The preset study plans, and the one lookup of a plan by name or file that the CLI, sweeps and the app share.

>>> find_plan("demo").name
'demo'
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from headprune_core.base.cache import cache_root
from headprune_core.base.defaults import DEMO_TRAIN
from headprune_core.base.specs import find_spec, spec_catalog
from headprune_core.plans.plan import StudyPlan

PRESETS: dict[str, StudyPlan] = {
    "demo": StudyPlan(
        name="demo",
        description="me5-small, POS and NAME (proper-name spans, a proxy for NER) in 8 languages, fine-tuned "
                    "on English (cross-lingual), gate-gradient importance for every (task, language), "
                    "importance-order curves everywhere; random, reverse and layer-third pruning for English.",
        strategies=("importance",),
        # 300 sentences x 2 epochs at a raised rate (see DEMO_TRAIN)
        train=dict(DEMO_TRAIN),
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


def plans_dir() -> Path:
    """Where the dashboard saves plans and looks for plan files: ``<cache>/plans``."""
    return cache_root() / "plans"


def find_plan(ref: str | dict) -> StudyPlan:
    """The study plan ``ref`` names: a preset, a JSON plan file, a plan saved in ``<cache>/plans`` by its name,
    or an object of :class:`StudyPlan` fields. An unknown name fails listing the known ones."""
    return find_spec(ref, presets=PRESETS, folder=plans_dir(), read_file=StudyPlan.from_file,
                     from_dict=lambda d: StudyPlan.from_dict(d, where="study plan"), what="study plan")


def available_plans() -> tuple[dict[str, StudyPlan], list[str]]:
    """Every plan a user can pick (presets, then the files in ``<cache>/plans``) and one line per unreadable
    file."""
    return spec_catalog(presets=PRESETS, folder=plans_dir(), read_file=StudyPlan.from_file)
