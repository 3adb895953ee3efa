"""GradTS on top of :class:`~headprune_core.study.Study`: task affinity from head maps, auxiliary-task
selection, and multi-task runs that check the selection instead of trusting it.

A *unit* is ``task/lang`` (``"pos/en"``, ``"polarity-nl/nl"``). For every unit: fine-tune alone, score the
heads (``kv_grad`` as GradTS, or ``gate_grad``), normalise as GradTS (per-layer sum, global min-max). Each
unit's fine-tune and map are separate cache entries, so adding a candidate computes only that unit's map.
For a primary unit, the others are ranked by Kendall's tau; GradTS-thres keeps those above a threshold,
GradTS-trial adds them in tau order (one multi-task run each) and keeps the set best on the primary's dev
split. Both are compared on the primary's test split with: the primary alone, all units together, and random
sets of the same size (several seeds). Multi-task runs list their units sorted, so one set of units is one
run whichever way it was chosen (a thres set equal to a trial prefix is trained once).

>>> # gts = GradTS(Study("me5-small"), GRADTS_PRESETS["gradts-demo"]); result = gts.run()
"""

from __future__ import annotations

import hashlib
import time
import zlib
from dataclasses import MISSING, asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Literal, get_args

import numpy as np

from headprune_core.affinity import correlation_matrix, gradts_map, rank_auxiliary, select_threshold, select_trial
from headprune_core.config import EvalConfig, FinetuneConfig, GradTSConfig, ScoreConfig, check_train_options
from headprune_core.study import Study, split_unit

GradTSMethod = Literal["kv_grad", "gate_grad"]
GRADTS_METHODS: tuple[str, ...] = get_args(GradTSMethod)
ROWS = ("single", "thres", "trial", "all", "random")
ROW_LABELS = {"single": "primary alone", "thres": "+ GradTS-thres", "trial": "+ GradTS-trial",
              "all": "+ all tasks", "random": "+ random tasks"}
OnJob = Callable[[str, bool], None]
"""on_job(what, cached): called before each cached computation (for progress bars)."""


def normalize_unit(unit: str, sources: dict | None = None) -> str:
    """``"pos/en"`` stays; a bare task with one language gets it (``"polarity-en"`` -> ``"polarity-en/en"``).

    The task must be built-in or registered, unless ``sources`` (a plan's data sources) names it."""
    from headprune_core.data import get_task
    from headprune_core.data.refs import ref_for
    task, lang = split_unit(unit)
    if lang is not None and ref_for(sources or {}, task, lang) is None:
        get_task(task)
    if lang is None:
        info = get_task(task)
        if len(info.languages) != 1 or info.languages[0] == "*":
            raise ValueError(f"say which language of {task!r} to use, e.g. '{task}/{info.languages[0]}'; "
                             f"it has: {', '.join(info.languages)}")
        lang = info.languages[0]
    return f"{task}/{lang}"


@dataclass(frozen=True)
class GradTSPlan:
    """What a GradTS validation computes (a preset, or a JSON file of these fields).

    ``train`` holds fine-tuning overrides (``max_train_sentences``, ``epochs``, ``lr``, ``sampling`` ...),
    the same for single- and multi-task runs. ``sources`` maps a task (or ``task/lang``) to a data reference
    (:mod:`headprune_core.data.refs`) for data that is not embedded, e.g. ``{"sst2": "hub"}``, a local copy
    laid out like the Hub (``{"rte": "hub:/data/glue-copy:rte"}``) or files (``{"pos/sw": "sw.conllu"}``).
    ``note`` says how the plan was cut down; it is shown with the results.
    """

    name: str
    description: str
    units: tuple[str, ...]
    primaries: tuple[str, ...]
    model: str = "me5-small"
    method: str = "kv_grad"
    threshold: float = 0.6
    max_trial: int | None = 3
    random_seeds: tuple[int, ...] = (0, 1)
    score_sentences: int | None = 200
    eval_sentences: int | None = 200
    train: dict = field(default_factory=lambda: {"max_train_sentences": 300, "epochs": 1.0})
    sources: dict = field(default_factory=dict)
    note: str = ""

    def __post_init__(self):
        if self.method not in GRADTS_METHODS:
            raise ValueError(f"unknown GradTS method {self.method!r}; known: {', '.join(GRADTS_METHODS)}")
        check_train_options(self.train, f"plan {self.name!r}")
        from headprune_core.data.refs import parse_sources
        parse_sources(self.sources, where=f"plan {self.name!r}")

    @classmethod
    def from_dict(cls, data: dict, *, where: str = "GradTS plan") -> "GradTSPlan":
        if not isinstance(data, dict):
            raise ValueError(f"{where}: a GradTS plan is a JSON object of fields, got {type(data).__name__}")
        known = set(cls.__dataclass_fields__)
        if set(data) - known:
            raise ValueError(f"{where}: unknown GradTS plan fields {sorted(set(data) - known)}; known: "
                             f"{sorted(known)}")
        missing = [n for n, f in cls.__dataclass_fields__.items()
                   if f.default is MISSING and f.default_factory is MISSING and n not in data]
        if missing:
            raise ValueError(f"{where}: missing GradTS plan field(s) {missing}")
        try:
            return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})
        except (ValueError, TypeError) as err:
            raise ValueError(f"{where}: {err}") from None

    @classmethod
    def from_file(cls, path) -> "GradTSPlan":
        """A plan from JSON; relative local data files are relative to the plan file's folder."""
        from headprune_core.data.refs import parse_sources
        from headprune_core.files import read_json
        data = read_json(path, "GradTS plan (JSON)")
        if isinstance(data, dict) and isinstance(data.get("sources"), dict):
            refs = parse_sources(data["sources"], where=str(path), base=Path(path).resolve().parent)
            data = {**data, "sources": {k: v.to_json() for k, v in refs.items()}}
        return cls.from_dict(data, where=str(path))

    def to_dict(self) -> dict:
        return asdict(self)

    def restricted(self, *, units: tuple[str, ...] | None = None, primaries: tuple[str, ...] | None = None,
                   sentences: int | None = None, method: str | None = None) -> "GradTSPlan":
        """The same plan on other units / primaries / fewer sentences / another method (quick looks)."""
        plan = self
        if units:
            plan = replace(plan, units=tuple(units),
                           primaries=tuple(p for p in (primaries or plan.primaries) if p in units) or (units[0],))
        if primaries:
            plan = replace(plan, primaries=tuple(primaries))
        if sentences:
            plan = replace(plan, score_sentences=sentences, eval_sentences=sentences,
                           train={**plan.train, "max_train_sentences": sentences},
                           note=(plan.note + " " if plan.note else "") + f"Capped at {sentences} sentences.")
        if method:
            plan = replace(plan, method=method)
        return plan


DEMO_NOTE = ("Subsampled to fit 30 minutes on a 2-core CPU: 200 training sentences per unit, 1 epoch, batch 8, "
             "150 sentences for scoring, at most 200 for dev and test (name/es has 100 of each); GradTS-trial "
             "tries at most 3 auxiliary tasks. To learn anything in 25 steps the encoder trains at lr 2e-4 and the "
             "classifiers at 5e-3 (at the defaults, 5e-5 / 1e-3 and batch 16, name/es stayed at F1 0). "
             "Differences of a few points are within noise at this size.")
_DEMO_TRAIN = {"max_train_sentences": 200, "epochs": 1.0, "batch_size": 8, "lr": 2e-4, "head_lr": 5e-3}

GRADTS_PRESETS: dict[str, GradTSPlan] = {
    "gradts-demo": GradTSPlan(
        name="gradts-demo",
        description="me5-small (4-bit quantised), 9 task units: POS and NAME (proper-name spans, a PROXY for NER) "
                    "in English and Spanish, English sentence polarity, movie-review polarity and uncertainty, "
                    "Dutch book-review polarity, Portuguese emotion. Primaries: name/es (token) and "
                    "polarity-nl/nl (sentence). GradTS kv_grad maps, Kendall tau, thres 0.6, trial (up to 3), "
                    "all, random (2 seeds).",
        units=("pos/en", "name/en", "pos/es", "name/es", "polarity-en/en", "reviews-en/en", "uncertainty-en/en",
               "polarity-nl/nl", "emotion-pt/pt"),
        primaries=("name/es", "polarity-nl/nl"),
        train=_DEMO_TRAIN, score_sentences=150, eval_sentences=200, max_trial=3,
        note=DEMO_NOTE,
    ),
    "gradts-findings": GradTSPlan(
        name="gradts-findings",
        description="The Findings page's GradTS check, cut to fit its time budget: 5 task units (POS and NAME, a "
                    "PROXY for NER, in English and Spanish; English sentence polarity), primary name/es, "
                    "kv_grad maps, Kendall tau, thres 0.6, trial (up to 2), all, random (2 seeds).",
        units=("pos/en", "name/en", "pos/es", "name/es", "polarity-en/en"),
        primaries=("name/es",),
        train=_DEMO_TRAIN, score_sentences=150, eval_sentences=200, max_trial=2,
        note=DEMO_NOTE.replace("Subsampled to fit 30 minutes", "Subsampled to fit the Findings preset's 45 "
                               "minutes").replace("tries at most 3", "tries at most 2"),
    ),
    "gradts-glue": GradTSPlan(
        name="gradts-glue",
        description="GradTS's own setting: the 8 GLUE tasks from the Hugging Face Hub (needs network; the Hub "
                    "loader reads whole splits, QQP and MNLI are large), primaries RTE and MRPC. Subsampled "
                    "like gradts-demo.",
        units=("cola/en", "sst2/en", "mrpc/en", "qqp/en", "mnli/en", "qnli/en", "rte/en", "wnli/en"),
        primaries=("rte/en", "mrpc/en"),
        sources={t: "hub" for t in ("cola", "sst2", "mrpc", "qqp", "mnli", "qnli", "rte", "wnli")},
        train=_DEMO_TRAIN, score_sentences=150, eval_sentences=200, max_trial=3,
        note=DEMO_NOTE,
    ),
}


def get_gradts_preset(name: str) -> GradTSPlan:
    if name not in GRADTS_PRESETS:
        raise ValueError(f"unknown GradTS preset {name!r}; known: {', '.join(GRADTS_PRESETS)}")
    return GRADTS_PRESETS[name]


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

    def __init__(self, study: Study, plan: GradTSPlan, *, on_job: OnJob | None = None):
        # the plan's data sources go to a Study of its own: the caller's Study (shared by the app) is untouched
        self.study = study.with_sources(plan.sources) if plan.sources else study
        self.plan = plan
        self.on_job = on_job
        self.units = tuple(normalize_unit(u, plan.sources) for u in plan.units)
        self.primaries = tuple(normalize_unit(u, plan.sources) for u in plan.primaries)
        missing = [p for p in self.primaries if p not in self.units]
        if missing:
            raise ValueError(f"primary units must be among the plan's units; not found: {', '.join(missing)}")

    # --- configurations ------------------------------------------------------------------------------------
    def finetune_config(self, units: tuple[str, ...] | list[str]) -> FinetuneConfig:
        """One fine-tuning run on ``units`` (sorted: a set of units is one run, whatever chose it)."""
        units = tuple(sorted(set(units)))
        langs = tuple(sorted({split_unit(u)[1] for u in units}))
        return self.study.finetune_config(units, langs, **self.plan.train)

    def single_config(self, unit: str) -> FinetuneConfig:
        return self.finetune_config((unit,))

    def multi_config(self, primary: str, aux: list[str] | tuple[str, ...]) -> FinetuneConfig:
        return self.finetune_config((primary, *aux))

    def score_config(self, unit: str, *, method: str | None = None) -> ScoreConfig:
        return self.study.score_config(self.single_config(unit), unit, split_unit(unit)[1],
                                       method=method or self.plan.method, max_sentences=self.plan.score_sentences)

    def eval_config(self, primary: str, aux, *, split: str) -> EvalConfig:
        return self.study.eval_config(self.multi_config(primary, aux), primary, split_unit(primary)[1],
                                      split=split, max_sentences=self.plan.eval_sentences)

    def config(self) -> GradTSConfig:
        """The cache key of the whole validation (fingerprints of the model and of every unit's data)."""
        fps = [self.single_config(u).data_fp for u in self.units]
        p = self.plan
        return GradTSConfig(model=p.model, units=self.units, primaries=self.primaries, method=p.method,
                            threshold=float(p.threshold), max_trial=p.max_trial,
                            random_seeds=tuple(p.random_seeds), score_sentences=p.score_sentences,
                            eval_sentences=p.eval_sentences, train=tuple(sorted(p.train.items())),
                            model_fp=self.study.model_fp,
                            data_fp=hashlib.sha256("|".join(fps).encode()).hexdigest()[:16])

    # --- cached steps (each reports itself to on_job) -------------------------------------------------------
    def _job(self, what: str, cfg, fn):
        """``fn()``, announced to ``on_job`` with whether ``cfg`` is already cached."""
        if self.on_job is not None:
            self.on_job(what, self.study.store.has(cfg))
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

    def evaluate(self, primary: str, aux, *, split: str) -> dict:
        """The primary's metric after training it with ``aux`` (``[]``: alone) on ``split``."""
        ft = self.multi_config(primary, aux)
        ec = self.eval_config(primary, aux, split=split)
        if not self.study.store.has(ec) and not self.study.store.has(ft):
            what = f"fine-tune {'+'.join(ft.tasks)}" if len(ft.tasks) > 1 else f"fine-tune {primary} alone"
            self._job(what, ft, lambda: self.study.finetuned(ft))
        res = self._job(f"evaluate {primary} ({split}) with {len(aux)} auxiliary", ec,
                              lambda: self.study.evaluation(ec))
        return res

    def train_seconds(self, primary: str, aux) -> float | None:
        """Training wall time of that run as stored in its log (None if it is not cached)."""
        found = self.study.store.get(self.multi_config(primary, aux))
        return None if found is None else float(found["log"]["seconds"])

    # --- the study ------------------------------------------------------------------------------------------
    def select(self, primary: str, tau_names: list[str], tau: np.ndarray) -> dict:
        """Ranking, GradTS-thres and GradTS-trial (dev metric of the primary, one multi-task run per trial)."""
        ranking = rank_auxiliary(tau_names, tau, primary)
        thres = select_threshold(ranking, self.plan.threshold)
        trial = select_trial(ranking, lambda aux: self.evaluate(primary, aux, split="validation")["score"],
                             max_tasks=self.plan.max_trial)
        return {"ranking": ranking, "thres": thres, "trial": trial}

    def validate(self, primary: str, tau_names: list[str], tau: np.ndarray) -> dict:
        """Test metric of the primary: alone, + thres, + trial, + all, + random sets (one per seed)."""
        sel = self.select(primary, tau_names, tau)
        for t in sel["trial"]["trials"]:
            t["train_seconds"] = self.train_seconds(primary, t["aux"])
        others = [u for u in self.units if u != primary]
        k = random_size(sel["thres"], sel["trial"]["selected"])
        sets = {"single": [], "thres": sel["thres"], "trial": sel["trial"]["selected"], "all": others}
        rows = []
        for row, aux in sets.items():
            rows.append(self._row(primary, row, aux))
        for seed, aux in zip(self.plan.random_seeds, random_sets(others, k, self.plan.random_seeds,
                                                                 primary=primary)):
            rows.append({**self._row(primary, "random", aux), "seed": int(seed)})
        return {"primary": primary, "ranking": [[n, t] for n, t in sel["ranking"]], "thres": sel["thres"],
                "trial": sel["trial"], "random_k": k, "rows": rows, "summary": summarise(rows)}

    def _row(self, primary: str, row: str, aux) -> dict:
        test = self.evaluate(primary, aux, split="test")
        dev = self.evaluate(primary, aux, split="validation")
        ft = self.multi_config(primary, aux)
        return {"row": row, "aux": list(aux), "units": list(ft.tasks), "metric": test["metric"],
                "test": float(test["score"]), "dev": float(dev["score"]), "n_test": test.get("n"),
                "train_seconds": self.train_seconds(primary, aux), "finetune_key": ft.key()}

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
                "seconds": {**self._seconds(results, start, maps_done),
                            "cpu": round(time.process_time() - cpu, 1)}},
                "tau": aff["tau"], "spearman": aff["spearman"]}
        return self.study.store.get_or_compute(cfg, compute)

    def _seconds(self, results: list[dict], start: float, maps_done: float) -> dict:
        """Wall times: of this invocation, and the stored training/scoring time of every part (also of parts
        cached by an earlier, interrupted invocation)."""
        maps = {u: self._map_seconds(u) for u in self.units}
        runs: dict[str, float] = {}
        for v in results:
            sets = [t["aux"] for t in v["trial"]["trials"]] + [r["aux"] for r in v["rows"]]
            for aux in sets:
                if aux:
                    ft = self.multi_config(v["primary"], aux)
                    runs["+".join(ft.tasks)] = self.train_seconds(v["primary"], aux) or 0.0
        return {"wall": round(time.perf_counter() - start, 1), "wall_maps": round(maps_done - start, 1),
                "wall_multitask": round(time.perf_counter() - maps_done, 1),
                "maps": maps, "maps_total": round(sum(sum(v.values()) for v in maps.values()), 1),
                "multitask_runs": runs, "multitask_total": round(sum(runs.values()), 1)}

    def _map_seconds(self, unit: str) -> dict:
        sc = self.score_config(unit)
        ft = self.study.store.get(sc.finetune)
        score = self.study.store.get(sc)
        return {"finetune": float(ft["log"]["seconds"]) if ft else 0.0,
                "score": float(score["meta"].get("seconds", 0.0)) if score else 0.0}

    def cached_result(self) -> dict | None:
        """The assembled result if it is cached (never computes)."""
        return self.study.store.get(self.config())

    def expected_jobs(self) -> int:
        """An upper bound on the number of cached computations :meth:`run` goes through (for progress bars)."""
        n, p = len(self.units), len(self.primaries)
        trial = min(self.plan.max_trial or n - 1, n - 1)
        seeds = len(self.plan.random_seeds)
        per_primary = 2 * (trial + 1) + 3 * (1 + 1 + seeds) + 2 * 2  # trial runs + evals, all/random, tests
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


def validation_table(result: dict) -> list[dict]:
    """One line per (primary, row): the test metric (random: mean, min-max over seeds), dev, aux sets, times."""
    lines = []
    for v in result["validation"]:
        for kind in ROWS:
            rows = [r for r in v["rows"] if r["row"] == kind]
            if not rows:
                continue
            s = v["summary"][kind]
            secs = [r["train_seconds"] for r in rows if r["train_seconds"] is not None]
            lines.append({"primary": v["primary"], "row": kind, "label": ROW_LABELS[kind],
                          "metric": rows[0]["metric"], "test": s["mean"], "min": s["min"], "max": s["max"],
                          "std": s["std"], "values": [r["test"] for r in rows],
                          "dev": float(np.mean([r["dev"] for r in rows])),
                          "aux": [r["aux"] for r in rows] if kind == "random" else rows[0]["aux"],
                          "train_seconds": sum(secs) if secs else None})
    return lines


def format_table(result: dict) -> str:
    """The validation table as text (CLI)."""
    out = [f"{'primary':16} {'setting':16} {'test':>14} {'dev':>6} {'train s':>8}  auxiliary units"]
    for line in validation_table(result):
        test = f"{line['test']:.1f}"
        if line["row"] == "random":
            test += f" ±{(line['max'] - line['min']) / 2:.1f}"
        aux = "; ".join(",".join(a) or "-" for a in line["aux"]) if line["row"] == "random" \
            else ",".join(line["aux"]) or "-"
        secs = f"{line['train_seconds']:.0f}" if line["train_seconds"] is not None else "?"
        out.append(f"{line['primary']:16} {line['label']:16} {test:>14} {line['dev']:6.1f} {secs:>8}  {aux}")
    return "\n".join(out)
