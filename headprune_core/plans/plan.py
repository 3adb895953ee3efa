"""Study plans: what to compute for one model (tasks x languages x settings x strategies, curves, re-fine-tuning
experiments, GradTS checks), and the jobs a plan expands into.

A :class:`StudyPlan` is a preset (:mod:`headprune_core.plans.presets`) or a JSON file of its fields;
:func:`plan_jobs` expands it into :class:`~headprune_core.runs.jobs.Job` s on a :class:`~headprune_core.runs.
study.Study`, in dependency order, and :func:`run_plan` runs those that are not cached.

>>> # plan = find_plan("demo"); run_plan(plan.study(), plan)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from headprune_core.base.choices import METHODS, SETTINGS, STRATEGIES, check_choice
from headprune_core.base.defaults import DEFAULT_MODEL
from headprune_core.base.files import check_name
from headprune_core.base.progress import Progress
from headprune_core.base.specs import spec_from_dict
from headprune_core.data.refs import names_task, parse_sources, read_plan_file
from headprune_core.data.registry import all_tasks, get_task
from headprune_core.encoders.device import torch_threads
from headprune_core.multitask.gradts import THREADS as GRADTS_THREADS
from headprune_core.multitask.gradts import GradTS
from headprune_core.multitask.plan import find_gradts_plan
from headprune_core.runs.config import FinetuneConfig, RefinetuneConfig, ScoreConfig, check_train_options
from headprune_core.runs.jobs import Job, run_jobs
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study


@dataclass(frozen=True)
class StudyPlan:
    """What to compute for one model: tasks x languages x settings, the head scores, evaluations and pruning
    curves of each, prune-then-retrain experiments and GradTS checks (a preset, or a JSON file of these fields;
    every job goes through the cache)."""

    name: str
    description: str
    model: str = DEFAULT_MODEL
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
    # more training seeds of each task's fine-tune (the cross setting's) whose head scores are computed in every
    # language, and the source language's importance curve: how alike one language's rankings are from run to
    # run and from one half of its dev sentences to the other (Findings card c), and masking replicated over
    # training runs (card b1)
    ranking_seeds: tuple[int, ...] = ()

    def __post_init__(self):
        check_name(self.name, "plan name")
        where = f"plan {self.name!r}"
        for name in ("tasks", "langs", "source_langs", "settings", "strategies"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not value or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{where}: {name} must be a non-empty list of names, got {value!r}")
        refs = parse_sources(self.sources, where=where)
        for task in self.tasks:
            if not names_task(refs, task):
                get_task(task)  # no source named: it must be a built-in or registered task
        if not isinstance(self.finetuned, bool):
            raise ValueError(f"{where}: finetuned must be true or false, got {self.finetuned!r}")
        for setting in self.settings:
            check_choice(setting, SETTINGS, "setting", where=where)
        for strategy in self.strategies:
            check_choice(strategy, STRATEGIES, "strategy", where=where)
        check_choice(self.method, METHODS, "importance method", where=where)
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
        if not isinstance(self.ranking_seeds, tuple) or len(set(self.ranking_seeds)) != len(self.ranking_seeds) or \
                not all(isinstance(v, int) and not isinstance(v, bool) for v in self.ranking_seeds):
            raise ValueError(f"{where}: ranking_seeds must be a list of distinct integers, got {self.ranking_seeds!r}")
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
        self.gradts_plans(where)
        self.gradts_plans(where, field_name="affinity")

    def gradts_plans(self, where: str = "", *, field_name: str = "gradts") -> list:
        """The GradTS plans named in ``gradts`` (or ``affinity``): presets, plan files or plans as objects."""
        where = where or f"plan {self.name!r}"
        out = []
        for name in getattr(self, field_name):
            try:
                gplan = find_gradts_plan(name)
            except ValueError as err:
                raise ValueError(f"{where}: {field_name}: {err}") from None
            if field_name == "affinity":  # maps of these units for this plan's model
                gplan = replace(gplan, model=self.model)
            elif gplan.model != self.model:
                raise ValueError(f"{where}: GradTS plan {name!r} is for model {gplan.model!r}, the plan's model "
                                 f"is {self.model!r}")
            out.append(gplan)
        return out

    def experiment_settings(self) -> tuple[str, ...]:
        """Settings only re-fine-tuning experiments run in (not one of the plan's ``settings``)."""
        named = [s for exp in self.refinetune for s in exp.get("settings", ())]
        return tuple(s for s in SETTINGS if s in named and s not in self.settings)

    def check_experiment(self, exp: dict, where: str) -> None:
        """Raise naming ``where`` if ``exp`` is not a valid re-fine-tuning experiment of this plan."""
        unknown = sorted(set(exp) - set(REFINETUNE_OPTIONS))
        if unknown:
            raise ValueError(f"{where}: unknown refinetune options {unknown}; known: {list(REFINETUNE_OPTIONS)}")
        for name in ("tasks", "settings", "langs"):
            value = exp.get(name, ())
            known = {"tasks": self.tasks, "settings": SETTINGS, "langs": self.langs}[name]
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
    def from_dict(cls, data, *, where: str = "plan") -> StudyPlan:
        """A plan from JSON data: unknown or missing fields and bad values fail naming ``where``."""
        return spec_from_dict(cls, data, where=where, what="plan")

    @classmethod
    def from_file(cls, path: str | Path) -> StudyPlan:
        """A plan from a JSON file (the fields of this class); relative local data files in ``sources`` are
        relative to the plan file's folder."""
        return cls.from_dict(read_plan_file(path, "study plan"), where=str(path))

    def task_langs(self, task: str) -> tuple[str, ...]:
        """The plan's languages that ``task`` has (all of them for a task read from a named source)."""
        info = all_tasks().get(task)
        if info is None or "*" in info.languages or names_task(self.sources, task):
            return self.langs
        return tuple(lang for lang in self.langs if lang in info.languages)

    def study(self, *, store: Store | None = None, device: str = "auto", progress: bool = True) -> Study:
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
        only = opts.pop("langs")
        langs = tuple(lang for lang in langs if lang in only) if only else langs
        if opts["strategy"] not in ("importance", "reverse"):
            ranking = None
        try:
            return RefinetuneConfig(finetune=ft, ranking=ranking, eval_langs=tuple(langs), levels=tuple(sorted(levels)),
                                    seeds=tuple(opts.pop("seeds")), **opts)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{where or f'plan {self.name!r}: refinetune'}: {err}") from None

    def restricted(self, *, langs: tuple[str, ...] | None = None, tasks: tuple[str, ...] | None = None,
                   sentences: int | None = None) -> StudyPlan:
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
                      "settings": (), "langs": (), "target_split": "test", "target_sentences": None, "train": {}}
"""A re-fine-tuning experiment's options and their defaults: ``strategy`` (importance, reverse, random,
layers, layer_pairs); the levels are ``levels`` (numbers of heads) and ``shares`` (of all heads), or 0..``max_k``
when both are empty; ``seeds`` are training seeds (empty: the plan's; random heads are drawn anew per seed);
``tasks`` and ``settings`` restrict it, ``langs`` its test languages (empty: all of the plan's);
``target_split`` ``heldout`` tests the languages it did not train on with every sentence outside their dev split (at
most ``target_sentences``; None: ``max_sentences``); ``train`` overrides the plan's fine-tuning options for these runs
(the unpruned model they are compared with, and ranked by, is trained the same way); ``max_sentences`` None: the plan's
eval_sentences."""


def plan_jobs(study: Study, plan: StudyPlan) -> list[Job]:
    """Expand ``plan`` into jobs, in dependency order (fine-tune, then score, evaluate, curves, re-fine-tunings;
    then the GradTS maps and checks)."""
    jobs: list[Job] = []
    for setting in plan.settings:
        for task in plan.tasks:
            jobs += _task_jobs(study, plan, task, setting)
    for setting in plan.experiment_settings():
        for task in plan.tasks:
            jobs += _experiment_jobs(study, plan, task, setting)
    return jobs + _gradts_jobs(study, plan, seen={j.cfg.key() for j in jobs})


def _half_jobs(study: Study, plan: StudyPlan, ft, task: str, langs: list[str], *, seed: int | None = None
               ) -> list[Job]:
    """Each language's map from each half of its dev sentences, drawn again for fine-tune ``ft``'s training run
    (random halves, each a draw with replacement, seeded by the training seed): Findings card c's per-run map (the
    halves pooled) and the split-half reliability of its ranking, each run on its own sample and split."""
    jobs = []
    for lang in langs:
        for half in (1, 2):
            sc = study.score_config(ft, task, lang, method=plan.method, max_sentences=plan.score_sentences, half=half,
                                    resample=ft.seed)
            what = f"score heads {task}/{lang} (dev half {half} resampled" + (f", seed {seed})" if seed is not None
                                                                              else ")")
            jobs.append(Job(what, sc, lambda sc=sc: study.scores(sc)))
    return jobs


def _task_jobs(study: Study, plan: StudyPlan, task: str, setting: str) -> list[Job]:
    """One task in one setting: its fine-tune, per language its scores, evaluation and curves, and the plan's
    re-fine-tuning experiments of it."""
    langs = list(plan.task_langs(task))
    train_langs = plan.source_langs if setting == "cross" else tuple(langs)
    ft = study.finetune_config(task, train_langs, setting=setting, **plan.train)
    jobs = [Job(f"fine-tune {task} ({setting}, {'+'.join(ft.train_langs)})", ft, lambda: study.finetuned(ft))]
    for lang in langs:
        sc = study.score_config(ft, task, lang, method=plan.method, max_sentences=plan.score_sentences)
        jobs.append(Job(f"score heads {task}/{lang}", sc, lambda sc=sc: study.scores(sc)))
        ec = study.eval_config(ft, task, lang, max_sentences=plan.eval_sentences)
        jobs.append(Job(f"evaluate {task}/{lang}", ec, lambda ec=ec: study.evaluation(ec)))
    jobs += _half_jobs(study, plan, ft, task, langs) if plan.ranking_seeds and setting == "cross" else []
    for seed in plan.ranking_seeds if setting == "cross" else ():
        ft_s = study.reseeded(ft, seed)
        if ft_s == ft:
            continue
        jobs.append(Job(f"fine-tune {task} ({setting}, {'+'.join(ft.train_langs)}, seed {seed})", ft_s,
                        lambda ft_s=ft_s: study.finetuned(ft_s)))
        for lang in langs:
            sc = study.score_config(ft_s, task, lang, method=plan.method, max_sentences=plan.score_sentences)
            jobs.append(Job(f"score heads {task}/{lang} (seed {seed})", sc, lambda sc=sc: study.scores(sc)))
        jobs += _half_jobs(study, plan, ft_s, task, langs, seed=seed)
        # the source language's importance curve of this run too (masking without retraining, Findings card b1)
        cc = study.curve_config(ft_s, task, train_langs[0], strategy="importance", method=plan.method,
                                ranking_lang=train_langs[0], score_sentences=plan.score_sentences,
                                step=plan.step_for(train_langs[0], setting=setting, train_langs=train_langs),
                                steps=plan.curve_steps(study.head_shape), max_sentences=plan.eval_sentences)
        jobs.append(Job(f"curve importance {task}/{train_langs[0]} (seed {seed})", cc, lambda cc=cc: study.curve(cc)))
    for lang in langs:
        extra = ("random", "reverse", "layers") if lang in train_langs[:1] else ()
        strategies = plan.strategies + tuple(x for x in extra if x not in plan.strategies)
        for strategy in strategies:
            # cross-lingual: a target is pruned by the source's ranking (zero-shot has no target labels)
            cc = study.curve_config(ft, task, lang, strategy=strategy, method=plan.method,
                                    ranking_lang=train_langs[0] if setting == "cross" else None,
                                    score_sentences=plan.score_sentences,
                                    step=plan.step_for(lang, setting=setting, train_langs=train_langs),
                                    steps=plan.curve_steps(study.head_shape), max_sentences=plan.eval_sentences,
                                    seeds=plan.random_seeds if strategy == "random" else (0,))
            jobs.append(Job(f"curve {strategy} {task}/{lang}", cc, lambda cc=cc: study.curve(cc)))
    return jobs + _experiment_jobs(study, plan, task, setting)


def _experiment_jobs(study: Study, plan: StudyPlan, task: str, setting: str) -> list[Job]:
    """The plan's re-fine-tuning experiments of one task in one setting (a setting of an experiment's own, such
    as Ma et al.'s multilingual one, needs none of the plan's other jobs in it)."""
    langs = list(plan.task_langs(task))
    train_langs = plan.source_langs if setting == "cross" else tuple(langs)
    total = study.head_shape[0] * study.head_shape[1]
    jobs: list[Job] = []
    for exp in plan.refinetune:
        if exp.get("tasks") and task not in exp["tasks"] or exp.get("settings") and setting not in exp["settings"]:
            continue
        ft_rt = study.finetune_config(task, train_langs, setting=setting, **{**plan.train, **exp.get("train", {})})
        ranking = study.score_config(ft_rt, task, train_langs[0], method=plan.method,
                                     max_sentences=plan.score_sentences)
        rc = plan.refinetune_config(ft_rt, ranking, tuple(langs), exp=exp, shape=study.head_shape)
        most = max(k for _, k in rc.points() if isinstance(k, int))
        if most > total:
            raise ValueError(f"plan {plan.name!r}: refinetune prunes up to {most} heads; the model has {total}")
        levels = ", ".join(lab for lab, _ in rc.points())
        seeds = f", seeds {', '.join(map(str, rc.train_seeds()))}" if len(rc.train_seeds()) > 1 else ""
        jobs.append(Job(f"prune {rc.strategy} ({levels}) then re-fine-tune {task} ({setting}{seeds})", rc,
                        lambda rc=rc: study.refinetune(rc), experiment=exp))
    return jobs


def _gradts_jobs(study: Study, plan: StudyPlan, *, seen: set[str]) -> list[Job]:
    """The ``affinity`` plans' single-task fine-tunes and head maps (those not among the plan's own jobs), then
    per ``gradts`` validation its tasks' maps under its ``map_seeds`` and one job for the validation."""
    jobs: list[Job] = []
    for gplan in plan.gradts_plans(field_name="affinity"):
        gts = GradTS(study, gplan)
        for unit in gts.units:
            jobs += _map_jobs(study, gts, unit, None, seen)
        jobs += _seed_map_jobs(study, gts, seen)
    for gplan in plan.gradts_plans():
        gts = GradTS(study, gplan)
        jobs += _seed_map_jobs(study, gts, seen)
        jobs.append(Job(f"GradTS {gplan.name}: maps, task affinity, selections checked by multi-task training",
                        gts.config(), gts.run))
    return jobs


def _seed_map_jobs(study: Study, gts: GradTS, seen: set[str]) -> list[Job]:
    """Each task's map under the plan's ``map_seeds`` beyond the first, then each task's control map (its labels
    shuffled) under every map seed (Findings card g)."""
    jobs = [job for seed in gts.map_seeds()[1:] for unit in gts.task_units()
            for job in _map_jobs(study, gts, unit, seed, seen)]
    if gts.plan.map_seeds:
        jobs += [job for seed in gts.map_seeds() for unit in gts.task_units()
                 for job in _map_jobs(study, gts, unit, seed, seen, control=True)]
    return jobs


def _map_jobs(study: Study, gts: GradTS, unit: str, seed: int | None, seen: set[str], *, control: bool = False
              ) -> list[Job]:
    """``unit``'s single-task fine-tune (training ``seed``; None: GradTS's own) and head map, those not in
    ``seen`` (which they join); ``control``: those of its shuffled-label control."""
    sc = gts.control_config(unit, seed=seed) if control else gts.score_config(unit, seed=seed)
    tag = f"GradTS {gts.plan.name}" + (f", seed {seed}" if seed is not None else "")
    name = f"{unit} on shuffled labels" if control else unit
    jobs = []
    for what, cfg, run in ((f"fine-tune {name} alone ({tag})", sc.finetune, lambda ft=sc.finetune: study.finetuned(ft)),
                           (f"head map {name} ({sc.method}, {tag})", sc, lambda sc=sc: study.scores(sc))):
        if cfg.key() not in seen:
            seen.add(cfg.key())
            jobs.append(Job(what, cfg, lambda run=run: _gradts_threads(run)))
    return jobs


def _gradts_threads(run):
    """``run()`` on the GradTS check's torch threads: these maps are the check's own parts (shared keys), so
    they must come out the same whichever job computes them first."""
    with torch_threads(GRADTS_THREADS):
        return run()


def run_plan(study: Study, plan: StudyPlan, *, on_progress: Progress | None = None) -> dict:
    """Run every job of ``plan`` that is not cached; ``{"jobs", "computed", "seconds"}``.

    ``on_progress(what, index, total)`` is called before each job (:func:`~headprune_core.runs.jobs.run_jobs`).
    Ctrl-C stops between steps: finished entries stay valid and a rerun resumes from them.
    """
    return run_jobs(plan_jobs(study, plan), study.store, on_progress=on_progress)
