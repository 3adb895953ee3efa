"""GradTS on top of :class:`~headprune_core.runs.study.Study`: task affinity from head maps, auxiliary-task
selection, and multi-task runs that check the selection instead of trusting it.

A *unit* is ``task/lang`` (``"pos/en"``, ``"polarity-nl/nl"``). For every unit: fine-tune alone, score the
heads (``kv_grad`` as GradTS, or ``gate_grad``), normalise as GradTS (per-layer sum, global min-max). Each
unit's fine-tune and map are separate cache entries, so adding a candidate computes only that unit's map.
For a primary unit, the others are ranked by Kendall's tau; GradTS-thres keeps those above a threshold,
GradTS-trial adds them in tau order (one multi-task run each) and keeps the set best on the primary's dev
split. Both are compared on the primary's test split with: the primary alone, all units together, and random
sets of the same size (several seeds). Multi-task runs list their units sorted, so one set of units is one
run whichever way it was chosen (a thres set equal to a trial prefix is trained once). Every part the check
computes runs on :data:`THREADS` torch CPU threads, in a sweep worker as in ``headprune study``, so a rerun of one
configuration gives the same entries bit for bit (a plan's map jobs use the same count).

>>> # gts = GradTS(Study("me5-small"), find_gradts_plan("gradts-demo")); result = gts.run()
"""

from __future__ import annotations

import hashlib
import time
import zlib

import numpy as np

from headprune_core.base.progress import Progress, cached_label, report
from headprune_core.encoders.device import torch_threads
from headprune_core.methods.similarity import correlation_matrix
from headprune_core.methods.uncertainty import bootstrap_ci, ci_text, diff_text, paired_bootstrap
from headprune_core.multitask.affinity import (
    gradts_map,
    rank_auxiliary,
    select_instances,
    select_threshold,
    select_trial,
)
from headprune_core.multitask.plan import GradTSPlan, normalize_unit
from headprune_core.runs.config import (
    BANDIT_OPTIONS,
    EvalConfig,
    FinetuneConfig,
    GradTSConfig,
    ScoreConfig,
    data_task,
    split_unit,
)
from headprune_core.runs.study import Study

ROWS = ("single", "thres", "trial", "fg", "bandit", "all", "random")
ROW_LABELS = {"single": "primary alone", "thres": "+ GradTS-thres", "trial": "+ GradTS-trial",
              "fg": "+ GradTS-fg examples", "bandit": "+ bandit (AUTOSEM)", "all": "+ all tasks",
              "random": "+ random tasks"}
THREADS = 1
"""Torch CPU threads of every part of a GradTS check (a sweep job's default). Float results depend on the thread
count, and the check turns last-bit differences into other choices: the bandit rewards a round when the dev loss
went down by any amount, and GradTS-thres, fg and the bandit keep what lies above a threshold. On 1 and on 2
threads the gradts-findings bandit for name/es (seed 13) chose pos/es and nothing (issue 33, item 8). The count
is not in the cache keys (a runtime setting, like the device); fixing it makes the entries a function of them."""


def random_sets(candidates: list[str], k: int, seeds: tuple[int, ...], *, primary: str) -> list[list[str]]:
    """For each seed, ``k`` units drawn without replacement from ``candidates``; stable per (seed, primary).

    Seeds give different sets while there are enough combinations left, so their spread means something.
    """
    pool = sorted(candidates)
    k = max(0, min(k, len(pool)))
    out: list[list[str]] = []
    for seed in seeds:
        rng = np.random.default_rng([int(seed), zlib.crc32(primary.encode())])
        for _ in range(100):
            draw = sorted(pool[i] for i in rng.choice(len(pool), size=k, replace=False))
            if draw not in out:
                break
        out.append(draw)
    return out


def random_size(thres: list[str], trial: list[str]) -> int:
    """How many random auxiliary tasks to compare with: as many as GradTS-trial chose, else as many as
    GradTS-thres chose, else one (a random set of none would just be the primary alone)."""
    return len(trial) or len(thres) or 1


class GradTS:
    """GradTS for one plan on one :class:`Study` (the study's store caches every part)."""

    def __init__(self, study: Study, plan: GradTSPlan, *, on_progress: Progress | None = None):
        # the plan's data sources go to a Study of its own: the caller's Study (shared by the app) is untouched
        self.study = study.with_sources(plan.sources) if plan.sources else study
        self.plan = plan
        self.on_progress = on_progress  # each cached part as it starts: (what, parts before it, expected)
        self.parts, self.expected = 0, None  # parts announced; how many the caller expects (None: not known)
        self.units = tuple(normalize_unit(u, plan.sources) for u in plan.units)
        self.primaries = tuple(normalize_unit(u, plan.sources) for u in plan.primaries)
        missing = [p for p in self.primaries if p not in self.units]
        if missing:
            raise ValueError(f"primary units must be among the plan's units; not found: {', '.join(missing)}")

    # --- configurations ------------------------------------------------------------------------------------
    def finetune_config(self, units: tuple[str, ...] | list[str], *, keep=()) -> FinetuneConfig:
        """One fine-tuning run on ``units`` (sorted: a set of units is one run, whatever chose it); ``keep``:
        (unit, train rows) pairs of units trained on those rows only."""
        units = tuple(sorted(set(units)))
        langs = tuple(sorted({split_unit(u)[1] for u in units}))
        return self.study.finetune_config(units, langs, **self.plan.train, **({"keep": keep} if keep else {}))

    def single_config(self, unit: str) -> FinetuneConfig:
        return self.finetune_config((unit,))

    def multi_config(self, primary: str, aux: list[str] | tuple[str, ...], *, seed: int | None = None,
                     keep: dict[str, list[int]] | None = None) -> FinetuneConfig:
        """The primary trained with ``aux`` (training ``seed``: None = the plan's first; ``keep``: only these
        train rows of some auxiliary units, GradTS-fg)."""
        ft = self.finetune_config((primary, *aux), keep=tuple(sorted((u, tuple(int(i) for i in rows))
                                                                    for u, rows in (keep or {}).items())))
        seed = self.plan.train_seeds[0] if seed is None else seed
        return self.study.reseeded(ft, seed)

    def score_config(self, unit: str, *, method: str | None = None, seed: int | None = None) -> ScoreConfig:
        """``unit``'s head map from its own single-task model (trained with ``seed``; None: the plan's first)."""
        ft = self.single_config(unit)
        return self.study.score_config(ft if seed is None else self.study.reseeded(ft, seed), unit,
                                       split_unit(unit)[1], method=method or self.plan.method,
                                       max_sentences=self.plan.score_sentences)

    def control_config(self, unit: str, *, seed: int | None = None) -> ScoreConfig:
        """``unit``'s control map: the same single-task fine-tune (training ``seed``) on its labels shuffled
        (``FinetuneConfig.shuffle_labels``), scored as :meth:`score_config` scores the real one."""
        sc = self.score_config(unit, seed=seed)
        ft = sc.finetune.replace(shuffle_labels=True)
        return self.study.score_config(ft, unit, split_unit(unit)[1], method=sc.method,
                                       max_sentences=self.plan.score_sentences)

    def task_units(self) -> tuple[str, ...]:
        """One unit per task, its first in the plan (a task in two languages counted once)."""
        first: dict[str, str] = {}
        for unit in self.units:
            first.setdefault(data_task(unit), unit)
        return tuple(first.values())

    def map_seeds(self) -> tuple[int, ...]:
        """The training seeds of each task's maps: that of the maps GradTS ranks with, then the plan's
        ``map_seeds``."""
        first = self.single_config(self.units[0]).seed
        return (first, *(s for s in self.plan.map_seeds if s != first))

    def eval_config(self, primary: str, aux, *, split: str, seed: int | None = None, keep=None) -> EvalConfig:
        return self.study.eval_config(self.multi_config(primary, aux, seed=seed, keep=keep), primary,
                                      split_unit(primary)[1], split=split, max_sentences=self.plan.eval_sentences)

    def instance_config(self, unit: str):
        """Per-example maps of ``unit``'s training rows (those a multi-task run trains on) from its own model."""
        ft = self.single_config(unit)
        return self.study.instance_config(ft, unit, max_sentences=ft.max_train_sentences, seed=ft.seed)

    def bandit_config(self, primary: str, seed: int):
        """AUTOSEM's search for ``primary`` over every unit of the plan, with training seed ``seed``."""
        opts = {**BANDIT_OPTIONS, **self.plan.bandit}
        ft = self.study.reseeded(self.finetune_config(self.units), seed)
        return self.study.bandit_config(ft, primary, dev_sentences=opts.pop("dev_sentences"), **opts)

    def config(self) -> GradTSConfig:
        """The cache key of the whole validation (fingerprints of the model and of every unit's data)."""
        fps = [self.single_config(u).data_fp for u in self.units]
        p = self.plan
        return GradTSConfig(**{**p.options(), "units": self.units, "primaries": self.primaries},
                            model=p.model, train=tuple(sorted(p.train.items())),
                            bandit=tuple(sorted({**BANDIT_OPTIONS, **p.bandit}.items())),
                            model_fp=self.study.model_fp,
                            data_fp=hashlib.sha256("|".join(fps).encode()).hexdigest()[:16])

    # --- cached steps (each reports itself to on_progress) --------------------------------------------------
    def _job(self, what: str, cfg, fn):
        """``fn()`` on :data:`THREADS` threads, announced to ``on_progress`` as ``(what, parts so far,
        expected)``, ``what`` saying ``cached: ...`` when ``cfg`` is already cached."""
        report(self.on_progress, cached_label(what, self.study.store.has(cfg)), self.parts, self.expected)
        self.parts += 1
        with torch_threads(THREADS):
            return fn()

    def unit_raw(self, unit: str, *, method: str | None = None) -> np.ndarray:
        """The raw ``(layers, heads)`` map of ``unit`` from its single-task model (fine-tuned if needed)."""
        sc = self.score_config(unit, method=method)
        if not self.study.store.has(sc):
            self._job(f"fine-tune {unit} alone", sc.finetune, lambda: self.study.finetuned(sc.finetune))
        res = self._job(f"score heads {unit} ({sc.method})", sc, lambda: self.study.scores(sc))
        return np.asarray(res["raw"], dtype=np.float64)

    def maps(self, units: tuple[str, ...] | None = None, *, method: str | None = None) -> dict[str, np.ndarray]:
        """GradTS-normalised maps (per-layer sum, global min-max) of ``units`` (default: the plan's)."""
        return {u: gradts_map(self.unit_raw(u, method=method)) for u in (units or self.units)}

    def affinity(self, units: tuple[str, ...] | None = None, *, method: str | None = None) -> dict:
        """``{"names", "tau", "spearman"}``: unit x unit Kendall tau and Spearman rho of the maps."""
        maps = self.maps(units, method=method)
        names, tau = correlation_matrix(maps, kind="kendall")
        _, rho = correlation_matrix(maps, kind="spearman")
        return {"names": names, "tau": tau, "spearman": rho}

    def evaluate(self, primary: str, aux, *, split: str, seed: int | None = None, keep=None) -> dict:
        """The primary's metric after training it with ``aux`` (``[]``: alone) on ``split``."""
        ft = self.multi_config(primary, aux, seed=seed, keep=keep)
        ec = self.eval_config(primary, aux, split=split, seed=seed, keep=keep)
        if not self.study.store.has(ec) and not self.study.store.has(ft):
            what = f"fine-tune {'+'.join(ft.tasks)}" if len(ft.tasks) > 1 else f"fine-tune {primary} alone"
            what += f" (seed {ft.seed})" + (" on the fg examples" if keep else "")
            self._job(what, ft, lambda: self.study.finetuned(ft))
        res = self._job(f"evaluate {primary} ({split}) with {len(aux)} auxiliary", ec,
                        lambda: self.study.evaluation(ec))
        return res

    def train_seconds(self, primary: str, aux, *, seed: int | None = None, keep=None) -> float | None:
        """Training wall time of that run as stored in its log (None if it is not cached)."""
        log = self.study.store.get_part(self.multi_config(primary, aux, seed=seed, keep=keep), "log")
        return None if log is None else float(log["seconds"])

    def train_steps(self, cfg) -> int | None:
        """Optimizer steps of the fine-tune ``cfg`` as stored in its log (None if it is not cached). The result
        keeps them, so a bundle without the fine-tunes' entries still has them (card f4)."""
        log = self.study.store.get_part(cfg, "log")
        return None if log is None else int(log["steps"])

    def fg(self, primary: str) -> dict:
        """GradTS-fg for ``primary``: each other unit's per-example maps against the primary's map; the
        training rows above ``fg_threshold`` are kept. ``{"units": {unit: {"tau", "rows", "kept"}}, "keep":
        {unit: kept rows} (units with none left out), "seconds": of the per-example maps}``."""
        primary_raw = self.unit_raw(primary)
        out, keep, seconds = {}, {}, 0.0
        for unit in self.units:
            if unit == primary:
                continue
            self.unit_raw(unit)  # its model, fine-tuned alone, gives the per-example maps
            ic = self.instance_config(unit)
            found = self._job(f"per-example maps {unit}", ic, lambda ic=ic: self.study.instances(ic))
            seconds += float(found["meta"].get("seconds", 0.0))
            sel = select_instances(found["maps"], primary_raw, self.plan.fg_threshold)
            rows = [int(r) for r in np.asarray(found["rows"])]
            kept = sorted(rows[i] for i in sel["kept"])
            out[unit] = {"tau": [round(t, 4) for t in sel["tau"]], "rows": rows, "kept": kept}
            if kept:
                keep[unit] = kept
        return {"units": out, "keep": keep, "seconds": round(seconds, 2)}

    def bandit(self, primary: str, seed: int) -> dict:
        """AUTOSEM's first stage for ``primary`` with training seed ``seed`` (cached)."""
        bc = self.bandit_config(primary, seed)
        res = self._job(f"bandit search for {primary} (seed {seed})", bc, lambda: self.study.bandit(bc))
        return {**res, "seconds": self.study.store.seconds(bc) or res["seconds"]}

    # --- the study ------------------------------------------------------------------------------------------
    def select(self, primary: str, tau_names: list[str], tau: np.ndarray) -> dict:
        """Ranking, GradTS-thres and GradTS-trial (dev metric of the primary, one multi-task run per trial)."""
        ranking = rank_auxiliary(tau_names, tau, primary)
        thres = select_threshold(ranking, self.plan.threshold)
        trial = select_trial(ranking, lambda aux: self.evaluate(primary, aux, split="validation")["score"],
                             max_tasks=self.plan.max_trial)
        return {"ranking": ranking, "thres": thres, "trial": trial}

    def validate(self, primary: str, tau_names: list[str], tau: np.ndarray) -> dict:
        """Test metric of the primary, per training seed: alone, + thres, + trial, + fg examples, + the
        bandit's choice, + all, + random sets (one per random seed, paired with the training seeds in turn);
        each method's cost (selection and training seconds) and its interval over seeds and sentences."""
        sel = self.select(primary, tau_names, tau)
        for t in sel["trial"]["trials"]:
            t["train_seconds"] = self.train_seconds(primary, t["aux"])
            t["dev_seconds"] = self.study.store.seconds(self.eval_config(primary, t["aux"], split="validation"))
            t["train_steps"] = self.train_steps(self.multi_config(primary, t["aux"]))
        fg = self.fg(primary)
        bandits = {seed: self.bandit(primary, seed) for seed in self.plan.train_seeds}
        others = [u for u in self.units if u != primary]
        k = random_size(sel["thres"], sel["trial"]["selected"])
        sets = {"single": [], "thres": sel["thres"], "trial": sel["trial"]["selected"], "fg": sorted(fg["keep"]),
                "bandit": None, "all": others}
        rows = []
        for row, aux in sets.items():
            for seed in self.plan.train_seeds:
                if row == "bandit":
                    rows.append(self._row(primary, row, bandits[seed]["selected"], seed))
                else:
                    rows.append(self._row(primary, row, aux, seed, keep=fg["keep"] if row == "fg" else None))
        draws = random_sets(others, k, self.plan.random_seeds, primary=primary)
        for i, (rseed, aux) in enumerate(zip(self.plan.random_seeds, draws)):
            seed = self.plan.train_seeds[i % len(self.plan.train_seeds)]
            rows.append({**self._row(primary, "random", aux, seed), "draw": int(rseed)})
        maps = sum(sum(v.values()) for v in (self.map_seconds(u) for u in self.units))
        trial_runs = sum((t["train_seconds"] or 0.0) + (t["dev_seconds"] or 0.0) for t in sel["trial"]["trials"])
        selection = {"single": 0.0, "thres": maps, "trial": maps + trial_runs, "fg": maps + fg["seconds"],
                     "bandit": float(np.mean([b["seconds"] for b in bandits.values()])), "all": 0.0,
                     "random": 0.0}
        fg_summary = {u: {"examples": len(v["rows"]), "kept": len(v["kept"]),
                          "tau_median": float(np.median(v["tau"])) if v["tau"] else None}
                      for u, v in fg["units"].items()}
        return {"primary": primary, "ranking": [[n, t] for n, t in sel["ranking"]], "thres": sel["thres"],
                "trial": sel["trial"], "random_k": k, "rows": rows, "summary": summarise(rows),
                "fg": {"threshold": self.plan.fg_threshold, "units": fg["units"], "summary": fg_summary},
                "bandit": {str(seed): {k2: b[k2] for k2 in ("selected", "means", "chosen", "seconds", "steps")}
                           for seed, b in bandits.items()},
                "costs": costs(rows, selection), "intervals": intervals(rows)}

    def _row(self, primary: str, row: str, aux, seed: int, *, keep=None) -> dict:
        keep = {u: r for u, r in (keep or {}).items() if u in aux} or None
        test = self.evaluate(primary, aux, split="test", seed=seed, keep=keep)
        dev = self.evaluate(primary, aux, split="validation", seed=seed, keep=keep)
        ft = self.multi_config(primary, aux, seed=seed, keep=keep)
        return {"row": row, "aux": list(aux), "units": list(ft.tasks), "metric": test["metric"], "seed": int(seed),
                "test": float(test["score"]), "dev": float(dev["score"]), "n_test": test.get("n"),
                "test_units": test["units"], "train_seconds": self.train_seconds(primary, aux, seed=seed, keep=keep),
                "train_steps": self.train_steps(ft), "finetune_key": ft.key(),
                "examples": {u: len(r) for u, r in (keep or {}).items()}}

    def run(self) -> dict:
        """Every part through the cache, then the assembled result (itself cached under :meth:`config`)."""
        cfg = self.config()

        def compute() -> dict:
            start, cpu = time.perf_counter(), time.process_time()
            aff = self.affinity()
            maps_done = time.perf_counter()
            results = [self.validate(p, aff["names"], aff["tau"]) for p in self.primaries]
            return {"result": {
                "plan": self.plan.to_dict(), "units": list(self.units), "primaries": list(self.primaries),
                "method": self.plan.method, "names": aff["names"], "note": self.plan.note,
                "validation": results,
                "map_steps": {u: self.train_steps(self.single_config(u)) for u in self.units},
                "seconds": {**self._seconds(results, start, maps_done),
                            "cpu": round(time.process_time() - cpu, 1)}},
                "tau": aff["tau"], "spearman": aff["spearman"]}
        with torch_threads(THREADS):  # its parts' threads, and the count its entry records
            return self.study.store.get_or_compute(cfg, compute)

    def _seconds(self, results: list[dict], start: float, maps_done: float) -> dict:
        """Wall times: of this invocation, and the stored training/scoring time of every part (also of parts
        cached by an earlier, interrupted invocation)."""
        maps = {u: self.map_seconds(u) for u in self.units}
        runs: dict[str, float] = {}
        for v in results:
            for t in v["trial"]["trials"]:
                runs[f"{'+'.join(sorted([v['primary'], *t['aux']]))} (trial)"] = t["train_seconds"] or 0.0
            for r in v["rows"]:
                runs[f"{'+'.join(r['units'])} seed {r['seed']}{' fg' if r['examples'] else ''}"] = \
                    r["train_seconds"] or 0.0
        return {"wall": round(time.perf_counter() - start, 1), "wall_maps": round(maps_done - start, 1),
                "wall_multitask": round(time.perf_counter() - maps_done, 1),
                "maps": maps, "maps_total": round(sum(sum(v.values()) for v in maps.values()), 1),
                "multitask_runs": runs, "multitask_total": round(sum(runs.values()), 1)}

    def map_seconds(self, unit: str) -> dict:
        """Stored seconds of ``unit``'s map: its single-task fine-tune and its scoring (0 for what is not cached)."""
        sc = self.score_config(unit)
        log = self.study.store.get_part(sc.finetune, "log")  # the run's log, without loading its weights
        meta = self.study.store.get_part(sc, "meta")
        return {"finetune": float(log["seconds"]) if log else 0.0,
                "score": float(meta.get("seconds", 0.0)) if meta else 0.0}

    def cached_result(self) -> dict | None:
        """The assembled result if it is cached (never computes)."""
        return self.study.store.get(self.config())

    def expected_jobs(self) -> int:
        """An upper bound on the number of cached computations :meth:`run` goes through (for progress bars)."""
        n, p = len(self.units), len(self.primaries)
        trial = min(self.plan.max_trial or n - 1, n - 1)
        seeds, draws = len(self.plan.train_seeds), len(self.plan.random_seeds)
        # trial runs + dev evals; (n - 1) per-example maps; a bandit per seed; 6 rows x seeds + draws, each a
        # fine-tune and two evaluations
        per_primary = 2 * (trial + 1) + (n - 1) + seeds + 3 * (6 * seeds + draws)
        return 2 * n + p * per_primary


def summarise(rows: list[dict]) -> dict:
    """Per row kind: test mean, min, max and standard deviation (spread over random seeds; 0 elsewhere)."""
    out = {}
    for kind in ROWS:
        values = [r["test"] for r in rows if r["row"] == kind]
        if values:
            out[kind] = {"mean": float(np.mean(values)), "min": float(min(values)), "max": float(max(values)),
                         "std": float(np.std(values)), "n": len(values)}
    return out


def intervals(rows: list[dict]) -> dict:
    """Per row kind: the test metric's interval from a two-level bootstrap (training seeds drawn with
    replacement, then test sentences), and the difference from the primary alone (the same sentence resamples
    and the same draws of training seeds for both: rows list their runs in training-seed order). An interval
    over sentences only would miss the variation between training runs, which on 100 test sentences is as large
    as the effects compared."""
    runs = {kind: [r["test_units"] for r in rows if r["row"] == kind] for kind in ROWS}
    out = {}
    for kind, units in runs.items():
        if units:
            out[kind] = {"ci": bootstrap_ci(units, resample_seeds=True),
                         "vs_alone": paired_bootstrap(runs["single"], units, resample_seeds=True)
                         if kind != "single" and runs["single"] else None}
    return out


def costs(rows: list[dict], selection: dict[str, float]) -> dict:
    """Per row kind, wall seconds: choosing the auxiliaries (``selection``: GradTS's maps = every unit's
    single-task fine-tune and scoring; trial's multi-task runs and dev evaluations; fg's per-example maps; the
    bandit's search), training the final model (mean, min and max over its seeds) and their sum."""
    out = {}
    for kind in ROWS:
        secs = [r["train_seconds"] for r in rows if r["row"] == kind and r["train_seconds"] is not None]
        if not secs:
            continue
        train = float(np.mean(secs))
        out[kind] = {"selection": round(selection.get(kind, 0.0), 1), "train": round(train, 1),
                     "train_min": round(min(secs), 1), "train_max": round(max(secs), 1),
                     "total": round(selection.get(kind, 0.0) + train, 1)}
    return out


def aux_sets(rows: list[dict], kind: str) -> list[list[str]]:
    """The distinct auxiliary sets of one row kind, in row order (several for random draws or the bandit's
    choices per seed; one where every seed trained the same set)."""
    out: list[list[str]] = []
    for r in rows:
        if r["row"] == kind and r["aux"] not in out:
            out.append(r["aux"])
    return out


def validation_table(result: dict) -> list[dict]:
    """One line per (primary, method): the test metric (mean over seeds, its 95% interval over sentences, the
    seeds' min-max), the paired change vs alone, dev, the auxiliary sets (one per seed where they differ) and
    the wall time to choose them and to train the final model."""
    lines = []
    for v in result["validation"]:
        for kind in ROWS:
            rows = [r for r in v["rows"] if r["row"] == kind]
            if not rows:
                continue
            s = v["summary"][kind]
            ci = v.get("intervals", {}).get(kind, {})
            cost = v.get("costs", {}).get(kind, {})
            sets = aux_sets(v["rows"], kind)
            lines.append({"primary": v["primary"], "row": kind, "label": ROW_LABELS[kind],
                          "metric": rows[0]["metric"], "test": s["mean"], "min": s["min"], "max": s["max"],
                          "std": s["std"], "values": [r["test"] for r in rows], "seeds": [r["seed"] for r in rows],
                          "low": ci.get("ci", {}).get("low"), "high": ci.get("ci", {}).get("high"),
                          "vs_alone": ci.get("vs_alone"),
                          "dev": float(np.mean([r["dev"] for r in rows])),
                          "aux": sets if len(sets) > 1 or kind in ("random", "bandit") else sets[0],
                          "examples": rows[0].get("examples") or {},
                          "selection_seconds": cost.get("selection"), "train_seconds": cost.get("train"),
                          "train_min": cost.get("train_min"), "train_max": cost.get("train_max"),
                          "total_seconds": cost.get("total")})
    return lines


def format_table(result: dict) -> str:
    """The validation table as text (CLI)."""
    out = [f"{'primary':16} {'method':22} {'test (95% CI)':>20} {'vs alone':>16} {'dev':>6} {'choose s':>9} "
           f"{'train s':>8}  auxiliary units"]
    for line in validation_table(result):
        test = f"{line['test']:.1f}" if line["low"] is None else \
            ci_text({"score": line["test"], "low": line["low"], "high": line["high"]})
        d = line["vs_alone"]
        vs = "" if d is None else diff_text(d)
        aux = line["aux"]
        aux = "; ".join(",".join(a) or "-" for a in aux) if aux and isinstance(aux[0], list) else \
            ",".join(aux) or "-"
        if line["examples"]:
            aux += " (" + ", ".join(f"{u}: {n} ex." for u, n in line["examples"].items()) + ")"
        sel = "?" if line["selection_seconds"] is None else f"{line['selection_seconds']:.0f}"
        train = "?" if line["train_seconds"] is None else f"{line['train_seconds']:.0f}"
        out.append(f"{line['primary']:16} {line['label']:22} {test:>20} {vs:>16} {line['dev']:6.1f} {sel:>9} "
                   f"{train:>8}  {aux}")
    out.append("* = the paired difference from alone is distinguishable from 0 (95% bootstrap interval)")
    return "\n".join(out)
