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
        # curves before the dashboard and the 22 curves behind it (their times: bench/RESULTS.md, "Cold start from a
        # fresh clone"); the Prune page adds points and draws
        curve_step=12,
        target_curve_step=72,
        random_seeds=(0,),
        affinity=("gradts-demo",),
    ),
}


FINDINGS_RETRAIN = {"max_train_sentences": 150, "epochs": 2.0, "batch_size": 8, "lr": 2e-4, "head_lr": 5e-3}
"""How the Findings preset's prune-then-retrain runs train (150 English POS sentences, 2 epochs; the rate is
raised so 38 steps learn). The unpruned model they are compared with, and whose English dev ranking picks the
heads, is trained the same way."""

SEEDS = [13, 14, 15]
"""Training seeds of every Findings experiment: training runs are the unit of replication, three at least."""


def findings_experiments(seeds: list[int], train: dict, *, target_sentences: int | None, full: bool = False
                         ) -> tuple[dict, ...]:
    """The re-fine-tuning experiments the Findings cards read, on English POS: Ma et al.'s lowest-ranked heads
    (k = 6, 12) with their controls at k = 12 (top-ranked, random), cross-lingual and multilingual (k = 12; 6
    and 12 when ``full``); Budhraja et al.'s layer thirds (2021; tested where card d and e2 read them unless
    ``full``), importance against random pruning of half the heads (25, 50 and 75% when ``full``) and adjacent
    against separated layer pairs (2020). Languages the model never trained on are tested on their held-out
    sentences (every sentence outside their dev split, at most ``target_sentences``; None: all)."""
    cross = {"tasks": ["pos"], "settings": ["cross"], "seeds": seeds, "train": train, "target_split": "heldout",
             "target_sentences": target_sentences}
    shares = [0.25, 0.5, 0.75] if full else [0.5]
    thirds = {} if full else {"langs": ["en", "es", "fr", "it", "pt", "tr"]}  # English, SVO targets, Turkish
    return (
        {**cross, "strategy": "importance", "levels": [6, 12]},
        {**cross, "strategy": "reverse", "levels": [12]},
        {**cross, "strategy": "random", "levels": [12]},
        {**cross, "strategy": "layers", **thirds},
        {**cross, "strategy": "importance", "shares": shares, "langs": ["en"]},  # Budhraja 2020: English
        {**cross, "strategy": "random", "shares": shares},
        {**cross, "strategy": "layer_pairs", "langs": ["en"]},
        # Ma et al.'s multilingual setting: trained on every language (50 sentences each: 400 in all)
        {"tasks": ["pos"], "settings": ["multi"], "seeds": seeds, "strategy": "importance",
         "levels": [6, 12] if full else [12],
         "train": {**train, "max_train_sentences": 50 if train.get("max_train_sentences") else None}},
    )


PRESETS["findings"] = replace(
    PRESETS["demo"], name="findings",
    description="Everything the Findings page needs: the demo study, then on English POS prune-then-retrain runs "
                "as the papers did them, subsampled (150 training sentences, 2 epochs) and each with 3 training "
                "seeds: Ma et al.'s lowest-ranked heads at k = 6, 12 (and k = 12 multilingual), top-ranked and "
                "random heads at k = 12, Budhraja et al.'s layer thirds, importance vs random pruning of half the "
                "heads, and adjacent vs separated layer pairs; target languages tested on up to 200 held-out "
                "sentences; two more training seeds and split halves of the rankings (drawn again per run); a "
                "small GradTS check (5 task units, primary name/es, 3 training seeds); and 6 tasks' maps under 3 "
                "seeds, each beside its model trained on shuffled labels (card g).",
    refinetune=findings_experiments(SEEDS, FINDINGS_RETRAIN, target_sentences=200),
    gradts=("gradts-findings",),
    # card g's maps: 6 distinct tasks under 3 training seeds ("most tasks" a majority of at least 5)
    affinity=(*PRESETS["demo"].affinity, "gradts-stems"),
    # the target languages' curves are the demo's (every 72 heads; no card reads them), 3 random draws
    random_seeds=(0, 1, 2),
    ranking_seeds=(14, 15),
)

PRESETS["findings-full"] = replace(
    PRESETS["findings"], name="findings-full",
    description="The findings preset at full size, for a GPU or a Ray cluster: every training sentence, 3 epochs "
                "at the papers' rate, 5 training seeds, every held-out sentence of the target languages, both "
                "settings, 5 random draws, and the GradTS check at full size.",
    train={"max_train_sentences": None, "epochs": 3.0},
    score_sentences=1000, eval_sentences=1000, curve_step=6, target_curve_step=12,
    refinetune=findings_experiments([13, 14, 15, 16, 17], {"max_train_sentences": None, "epochs": 3.0},
                                    target_sentences=None, full=True),
    gradts=("gradts-findings-full",),
    affinity=("gradts-stems-full",),
    random_seeds=(0, 1, 2, 3, 4),
    ranking_seeds=(14, 15, 16, 17),
    settings=("cross", "multi"),
)


def plans_dir(cache: Path | None = None) -> Path:
    """Where the dashboard saves plans and looks for plan files: ``<cache>/plans`` (of ``cache``, default the
    cache in use)."""
    return (cache if cache is not None else cache_root()) / "plans"


def find_plan(ref: str | dict) -> StudyPlan:
    """The study plan ``ref`` names: a preset, a JSON plan file, a plan saved in ``<cache>/plans`` by its name,
    or an object of :class:`StudyPlan` fields. An unknown name fails listing the known ones."""
    return find_spec(ref, presets=PRESETS, folder=plans_dir(), read_file=StudyPlan.from_file,
                     from_dict=lambda d: StudyPlan.from_dict(d, where="study plan"), what="study plan")


def available_plans() -> tuple[dict[str, StudyPlan], list[str]]:
    """Every plan a user can pick (presets, then the files in ``<cache>/plans``) and one line per unreadable
    file."""
    return spec_catalog(presets=PRESETS, folder=plans_dir(), read_file=StudyPlan.from_file)
