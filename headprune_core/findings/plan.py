"""Which plan the Findings cards read: the ``findings`` preset, or a user's plan with the findings preset's
experiments added (scaled to its model)."""

from __future__ import annotations

from dataclasses import replace

from headprune_core.multitask.plan import find_gradts_plan
from headprune_core.plans.plan import StudyPlan
from headprune_core.plans.presets import find_plan


def findings_plan(plan: StudyPlan, shape: tuple[int, int]) -> StudyPlan:
    """The plan whose results the cards read: ``plan`` itself when it has re-fine-tuning experiments (the
    ``findings`` preset), the ``findings`` preset for the ``demo`` preset (which it extends), else ``plan`` plus
    the findings preset's experiments on its first task, scaled to the model (Ma et al.'s k = half and all of
    one layer's worth of heads), trained like the plan with three training seeds each (in the multilingual
    setting too when the plan has it), two more training seeds of its rankings (cards b1 and c), and a small
    GradTS check of its tasks in its first two
    languages when that gives at least three task units."""
    if plan.refinetune:
        return plan
    if plan.name == "demo" and plan == replace(find_plan("demo"), model=plan.model):
        preset = find_plan("findings")
        if plan.model == preset.model:
            return preset
        gradts = tuple(replace(find_gradts_plan(g), model=plan.model).to_dict() for g in preset.gradts)
        return replace(preset, model=plan.model, gradts=gradts)
    task = plan.tasks[0]
    seed = int(plan.train.get("seed", 13))
    per_layer = shape[1]
    ma = [per_layer // 2, per_layer]
    seeds = [seed, seed + 1, seed + 2]  # training runs are the unit: every experiment has three
    cross = {"tasks": [task], "settings": ["cross"], "seeds": seeds}
    experiments = (
        {**cross, "strategy": "importance", "levels": ma},
        {**cross, "strategy": "reverse", "levels": ma},
        {**cross, "strategy": "random", "levels": ma},
        {**cross, "strategy": "layers"},
        {**cross, "strategy": "importance", "shares": [0.25, 0.5, 0.75]},
        {**cross, "strategy": "random", "shares": [0.25, 0.5, 0.75]},
    )
    if "multi" in plan.settings:  # Ma et al.'s multilingual setting, when the plan trains in it
        experiments += ({"tasks": [task], "settings": ["multi"], "seeds": seeds, "strategy": "importance",
                         "levels": ma},)
    gradts = plan.gradts
    units = [f"{t}/{lang}" for t in plan.tasks for lang in plan.langs[:2] if lang in plan.task_langs(t)]
    if not gradts and len(units) >= 3:
        gradts = ({"name": f"{plan.name}-gradts", "description": f"GradTS check of plan {plan.name}'s tasks",
                   "model": plan.model, "units": units, "primaries": [units[-1]], "max_trial": 2,
                   "random_seeds": [0, 1], "train_seeds": [13], "bandit": {"rounds": 30},
                   "score_sentences": plan.score_sentences,
                   "eval_sentences": plan.eval_sentences, "train": dict(plan.train), "sources": dict(plan.sources),
                   "note": f"Units and training of plan {plan.name!r}.",
                   # each task's map under two more seeds (card g), when there are tasks enough for it
                   "map_seeds": [seed + 1, seed + 2] if len(set(plan.tasks)) >= 3 else []},)
    settings = plan.settings if "cross" in plan.settings else ("cross", *plan.settings)
    return replace(plan, name=f"{plan.name}-findings", settings=settings, refinetune=experiments, gradts=gradts,
                   ranking_seeds=plan.ranking_seeds or (seed + 1, seed + 2))
