"""What the Findings cards read from the cache: a plan's jobs, and its results arranged by training run.

:class:`Evidence` never computes. A piece that is not cached is ``None`` and its card says which job it needs.
Results are arranged so a card can build one dict per training run (name -> ``(test set, per-sentence units)``)
for :func:`~headprune_core.methods.uncertainty.run_estimate`.
"""

from __future__ import annotations

import numpy as np

from headprune_core.findings.card import mean_of
from headprune_core.methods.importance import normalise
from headprune_core.methods.inference import Estimate
from headprune_core.methods.uncertainty import n_sentences, run_estimate
from headprune_core.multitask.affinity import gradts_map
from headprune_core.multitask.gradts import GradTS
from headprune_core.plans.plan import StudyPlan, plan_jobs
from headprune_core.plans.presets import find_plan
from headprune_core.runs.config import RefinetuneConfig, nested_configs
from headprune_core.runs.estimate import estimate_jobs
from headprune_core.runs.jobs import Job
from headprune_core.runs.retrain import refinetune_parts
from headprune_core.runs.study import Study


class Retrain:
    """One re-fine-tuning experiment of the plan, read from the cache: ``result`` (the assembled tables) and the
    per-sentence units of every (level, seed, language) test."""

    def __init__(self, evidence: Evidence, job: Job, result: dict):
        self.job, self.result = job, result
        self.evidence = evidence  # the grid point's Evidence it was read from (its rankings' maps too)
        self.cfg: RefinetuneConfig = job.cfg
        self.task = self.cfg.finetune.tasks[0]
        self.seeds: list[int] = list(result["seeds"])
        self.levels: list[str] = list(result["levels"])
        self.source: str = result["dev_lang"]
        self.langs: list[str] = evidence.ordered_langs(result["test"])
        self._units: dict[tuple[str, int], dict[str, dict]] = {}
        self._study = evidence.study
        self._tests: dict[str, object] = {}  # per language, one of its test evaluations (what it reads)
        for part in refinetune_parts(evidence.study, self.cfg):
            tests = {}
            for lang, ec in part.tests.items():
                self._tests.setdefault(lang, ec)
                found = evidence.study.store.get(ec)
                if found is not None:
                    tests[lang] = found["result"]["units"]
            self._units[(part.label, part.seed)] = tests

    @property
    def targets(self) -> list[str]:
        return [lang for lang in self.langs if lang != self.source]

    def units(self, label: str, seed: int, lang: str) -> dict:
        return self._units[(label, seed)][lang]

    def chance(self, lang: str) -> float:
        """The floor of ``lang``'s test metric: the most frequent label's share of the sentences its tests read."""
        ec = self._tests[lang]
        return self._study.majority_share(ec.task, lang, ec.split, ec.max_sentences)

    def n_test(self, lang: str) -> int:
        """How many test sentences ``lang`` has (the unpruned model's first seed's evaluation)."""
        return n_sentences(self.units("0", self.seeds[0], lang))

    def test_set(self, lang: str) -> str:
        return f"{self.task}/{lang}"

    def run(self, seed: int, cells: dict[str, tuple[str, str]]) -> dict:
        """One training run's results for an estimate: name -> (test set, units) for ``cells`` name -> (level,
        language)."""
        return {name: (self.test_set(lang), self.units(label, seed, lang)) for name, (label, lang) in cells.items()}

    def change(self, langs: list[str], level_of) -> Estimate:
        """Per run, the mean over ``langs`` of (pruned at ``level_of(seed)``) - (unpruned), in points, estimated
        over training runs and test sentences (:func:`~headprune_core.methods.uncertainty.run_estimate`)."""
        return pooled_change([(self, langs, level_of)])

    def heads(self, label: str) -> int:
        """How many heads level ``label`` prunes."""
        return int(dict(zip(self.levels, self.result["k"]))[label])

    def best(self, seed: int) -> str:
        """The level dev picked for ``seed`` among every level, 0 (unpruned) included."""
        return self.result["best"][str(seed)]

    def best_pruned(self, seed: int) -> str:
        """The level dev picked for ``seed`` among the pruned levels only, as Ma et al. pick k among 1..12 on
        the source language's dev set (a tie goes to fewer heads pruned)."""
        i = self.seeds.index(seed)
        pruned = [(lab, k) for lab, k in zip(self.levels, self.result["k"]) if lab != "0"]
        return max(pruned, key=lambda lk: (self.result["dev"][lk[0]]["per_seed"][i], -lk[1]))[0]


def shared_seeds(experiments: list[Retrain]) -> list[int]:
    """The training seeds every one of ``experiments`` has, in the first one's order."""
    return [s for s in experiments[0].seeds if all(s in ex.seeds for ex in experiments)]


def pooled_change(parts: list[tuple[Retrain, list[str], object]]) -> Estimate:
    """The mean change over every (experiment, language) of ``parts`` (each ``(retrain, langs, level_of)``: the
    languages it is read on and the level it prunes per seed), pruned minus unpruned in points.

    The unit is the training seed: run ``s`` pools every experiment's fine-tune of seed ``s`` (the seeds all of
    them have), so the interval comes from the spread of the per-seed means over experiments that were trained
    apart (different source languages, settings or models) and from the test sentences they share."""
    seeds = shared_seeds([ex for ex, _, _ in parts])
    if not seeds:
        raise ValueError("the experiments pooled share no training seed: " + "; ".join(
            f"{ex.job.what}: {ex.seeds}" for ex, _, _ in parts))
    names = [(i, g) for i, (_, langs, _) in enumerate(parts) for g in langs]
    runs = []
    for s in seeds:
        run = {}
        for i, (ex, langs, level_of) in enumerate(parts):
            run.update({f"{i}:0:{g}": (ex.test_set(g), ex.units("0", s, g)) for g in langs})
            run.update({f"{i}:k:{g}": (ex.test_set(g), ex.units(level_of(s), s, g)) for g in langs})
        runs.append(run)
    return run_estimate(runs, lambda m: mean_of([m[f"{i}:k:{g}"] - m[f"{i}:0:{g}"] for i, g in names]))


class Evidence:
    """The cache as the cards of ``plan`` (default: the ``findings`` preset) on ``study`` read it."""

    def __init__(self, study: Study, plan: StudyPlan | None = None, *, task: str = "pos"):
        self.study = study
        self.plan = plan or find_plan("findings")
        self.task = task
        self.jobs: list[Job] = plan_jobs(study, self.plan)
        self.source = self.plan.source_langs[0]
        self._retrains: dict[str, Retrain | None] = {}

    def missing(self) -> list[Job]:
        """The plan's jobs that are not cached and are needed (what a click computes). A job the cards never read
        and whose every reader is cached is not needed: the fine-tunes of a bundle imported without their weights
        (their scores, evaluations and curves came with it)."""
        cached = {j.cfg.key(): self.study.store.has(j.cfg) for j in self.jobs}
        readers: dict[str, list[str]] = {}
        for j in self.jobs:
            for cfg in nested_configs(j.cfg):
                readers.setdefault(cfg.key(), []).append(j.cfg.key())
        return [j for j in self.jobs if not cached[j.cfg.key()] and not (
            j.cfg.kind == "finetune" and readers.get(j.cfg.key()) and all(cached[r] for r in readers[j.cfg.key()]))]

    def estimate(self, missing: list[Job] | None = None, *, cpus: int | None = None) -> dict:
        """Estimated seconds to compute ``missing`` (default: :meth:`missing`; see
        :func:`headprune_core.runs.estimate.estimate_jobs`)."""
        todo = self.missing() if missing is None else missing
        return estimate_jobs(self.study.store, [j.cfg for j in todo], cpus=cpus)

    def get(self, cfg):
        return self.study.store.get(cfg)

    def find(self, kind: str, **attrs) -> Job | None:
        for j in self.jobs:
            if j.cfg.kind == kind and all(getattr(j.cfg, a) == v for a, v in attrs.items()):
                return j
        return None

    def ordered_langs(self, langs) -> list[str]:
        """``langs`` in the plan's order (stored results sort their keys)."""
        return [lang for lang in self.plan.langs if lang in langs] + [lang for lang in langs
                                                                        if lang not in self.plan.langs]

    # --- re-fine-tuning -------------------------------------------------------------------------------------
    def retrain_job(self, strategy: str, *, shares: bool = False, setting: str = "cross",
                    pairs: bool = False) -> Job | None:
        """The plan's re-fine-tuning of ``self.task`` by ``strategy`` in ``setting``: the experiment given by
        levels (Ma et al.'s k) or, with ``shares``, by shares of all heads (Budhraja et al. 2020)."""
        for j in self.jobs:
            rc = j.cfg
            if rc.kind != "refinetune" or rc.strategy != strategy or rc.finetune.tasks != (self.task,) \
                    or rc.finetune.setting != setting:
                continue
            if strategy in ("layers", "layer_pairs") or bool((j.experiment or {}).get("shares")) == shares:
                return j
        return None

    def retrain(self, strategy: str, *, shares: bool = False, setting: str = "cross") -> Retrain | None:
        """The experiment's results (None when the plan has none, or it is not cached)."""
        job = self.retrain_job(strategy, shares=shares, setting=setting)
        if job is None:
            return None
        key = job.cfg.key()
        if key not in self._retrains:
            found = self.get(job.cfg)
            self._retrains[key] = Retrain(self, job, found["result"]) if found else None
        return self._retrains[key]

    def retrain_what(self, strategy: str, *, shares: bool = False, setting: str = "cross") -> str:
        """The job a missing experiment needs, in words."""
        job = self.retrain_job(strategy, shares=shares, setting=setting)
        if job is None:
            how = "by shares of the heads" if shares else ""
            return f"the plan has no {strategy} re-fine-tuning {how} in the {setting} setting".replace("  ", " ")
        return job.what

    # --- curves and head maps -------------------------------------------------------------------------------
    def curves(self, task: str, lang: str, strategy: str) -> tuple[list[Job], dict[int, dict]]:
        """The plan's cross-lingual curves of (task, lang, strategy), one per training seed of the fine-tune, and
        the jobs of those not cached."""
        missing, out = [], {}
        for j in self.jobs:
            cfg = j.cfg
            if cfg.kind != "curve" or (cfg.task, cfg.lang, cfg.strategy) != (task, lang, strategy) or \
                    cfg.finetune.setting != "cross":
                continue
            found = self.get(cfg)
            if found is None:
                missing.append(j)
            else:
                out[cfg.finetune.seed] = found["curve"]
        return missing, dict(sorted(out.items()))

    def curve(self, task: str, lang: str, strategy: str) -> tuple[Job | None, dict | None]:
        job = self.find("curve", task=task, lang=lang, strategy=strategy)
        found = self.get(job.cfg) if job else None
        return job, (found["curve"] if found else None)

    def score_maps(self, task: str, lang: str, *, half: int = 0) -> tuple[list[Job], dict[int, np.ndarray]]:
        """The layer-normalised head maps of (task, lang) from the plan's cross-lingual scores, one per training
        seed of the fine-tune (the plan's ``ranking_seeds``), and the jobs of those not cached; ``half`` 1 or 2:
        the maps of one half of the dev sentences."""
        missing, maps = [], {}
        for j in self.jobs:
            cfg = j.cfg
            if cfg.kind != "score" or cfg.task != task or cfg.lang != lang or cfg.finetune.setting != "cross" \
                    or cfg.half != half or cfg.resample is not None:
                continue
            found = self.get(cfg)
            if found is None:
                missing.append(j)
            else:
                maps[cfg.finetune.seed] = normalise(np.asarray(found["raw"], dtype=np.float64), normalize="layer_sum")
        return missing, dict(sorted(maps.items()))

    def resampled_maps(self, task: str, lang: str) -> tuple[list[Job], dict[int, tuple[np.ndarray, ...]]]:
        """Per training seed of the cross-lingual fine-tunes of ``task``, the layer-normalised maps of (task,
        lang) from the run's own draw of dev sentences (the plan's resampled halves): the two halves pooled
        (weighted by their scored tokens, as one scoring of both would be), then each half; and the jobs of the
        halves not cached."""
        missing, raw = [], {}
        for j in self.jobs:
            cfg = j.cfg
            if cfg.kind != "score" or cfg.task != task or cfg.lang != lang or cfg.finetune.setting != "cross" \
                    or cfg.resample is None or not cfg.half:
                continue
            found = self.get(cfg)
            if found is None:
                missing.append(j)
            else:
                raw.setdefault(cfg.finetune.seed, {})[cfg.half] = (np.asarray(found["raw"], dtype=np.float64),
                                                                   max(int(found["meta"].get("n_tokens", 1)), 1))
        maps = {}
        for seed, halves in sorted(raw.items()):
            if len(halves) < 2:
                continue
            (r1, n1), (r2, n2) = halves[1], halves[2]
            maps[seed] = tuple(normalise(r, normalize="layer_sum") for r in ((r1 * n1 + r2 * n2) / (n1 + n2), r1, r2))
        return missing, maps

    # --- GradTS -----------------------------------------------------------------------------------------------
    def task_tops(self, top_percent: float, *, control: bool = False
                  ) -> tuple[GradTS | None, dict[str, dict[int, np.ndarray]], list[str]]:
        """The plan's task maps under several seeds (of its GradTS check or affinity plans with ``map_seeds``: the
        one with the most distinct tasks), each task's top ``top_percent``% heads (layers x heads, bool) from its
        own single-task model per training seed (:meth:`GradTS.map_seeds`; one unit per task), and what is
        missing; ``control``: from the same fine-tunes on shuffled labels (:meth:`GradTS.control_config`)."""
        plans = [p for p in (*self.plan.gradts_plans(), *self.plan.gradts_plans(field_name="affinity"))
                 if p.map_seeds]
        if not plans:
            return None, {}, ["the plan has no task maps under several training seeds (a GradTS plan's map_seeds)"]
        gts = max((GradTS(self.study, p) for p in plans), key=lambda g: len(g.task_units()))  # the most tasks
        tops: dict[str, dict[int, np.ndarray]] = {}
        missing = []
        for unit in gts.task_units():
            for seed in gts.map_seeds():
                cfg = gts.control_config(unit, seed=seed) if control else gts.score_config(unit, seed=seed)
                sc = self.get(cfg)
                if sc is None:  # named as the plan's job is (the first seed's maps: by the GradTS check)
                    name = f"{unit} on shuffled labels" if control else unit
                    which = f", seed {seed})" if control or seed != gts.map_seeds()[0] \
                        else "; the GradTS check computes it)"
                    missing.append(f"head map {name} ({cfg.method}, GradTS {gts.plan.name}{which}")
                    continue
                m = gradts_map(np.asarray(sc["raw"], dtype=np.float64))
                top = np.zeros(m.size, dtype=bool)
                top[np.argsort(-m.ravel(), kind="stable")[:max(1, int(round(m.size * top_percent / 100)))]] = True
                tops.setdefault(unit, {})[seed] = top.reshape(m.shape)
        return gts, tops, missing

    def gradts(self) -> tuple[Job | None, dict | None, GradTS | None]:
        """The plan's GradTS check: its job, its cached result and the GradTS it came from."""
        job = next((j for j in self.jobs if j.cfg.kind == "gradts"), None)
        found = self.get(job.cfg) if job else None
        if found is None:
            return job, None, None
        for gplan in self.plan.gradts_plans():
            gts = GradTS(self.study, gplan)
            if gts.config().key() == job.cfg.key():
                return job, found["result"], gts
        raise ValueError(f"no GradTS plan of {self.plan.name!r} gives {job.what!r}")
