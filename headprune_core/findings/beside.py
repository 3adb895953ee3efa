"""A paper's numbers beside ours: each number a paper reports (``paper_numbers.csv``) that a computed paper plan
(plans/papers.py) answers, with our estimate over training runs and test sentences, its 95% interval, the
difference, and whether the paper's number lies inside our interval.

Ours is an estimate with an interval where the paper's number is a score, a change or a mean of changes (the
unit is the training run: a mean over pairs pools, per training seed, every grid point's fine-tune of that seed,
:func:`~headprune_core.findings.evidence.pooled_change`), and a plain number where it is a count of pairs or the
largest or smallest change over them: those are read from each pair's mean over training runs, with no interval.

A row is ``computed``, ``missing`` (the plan answers it once the named job is computed: a half-computed plan shows
what it has and names the rest), ``undefined`` (computed, but a correlation of values that do not vary), ``not in
this plan`` (a language, model or setting the plan, as run, lacks) or ``no reader yet`` (a kind of number no reader
below computes; it is listed, not dropped). Ours is on the plan's
data: where the plan names a substitute (WikiANN for Ma et al.'s NER sets) the row says so, and a number then
differs for that reason too.

>>> # rows = beside_rows("ma2021-table5-ner", Store()); print(beside_markdown(rows))
"""

from __future__ import annotations

from dataclasses import dataclass

from headprune_core.base.text import md_cell
from headprune_core.findings.calibration import DRAWS
from headprune_core.findings.cards import Findings
from headprune_core.findings.evidence import Retrain, pooled_change, shared_seeds
from headprune_core.findings.paper_numbers import PaperNumber, select
from headprune_core.methods.inference import Estimate
from headprune_core.methods.similarity import spearman_matrix
from headprune_core.methods.uncertainty import metric_of, run_estimate
from headprune_core.plans.papers import PAPER_PLANS, PaperPlan
from headprune_core.plans.plan import StudyPlan
from headprune_core.plans.sweep import SweepSpec
from headprune_core.runs.planning import PlannedStudy
from headprune_core.runs.store import Store

SETTINGS = {"cross-lingual": "cross", "multilingual": "multi"}
STRATEGY = {"Max-Pruning": "reverse", "Rand-Pruning": "random"}
MONO_IN_COUNT = ("SF",)
"""Tasks whose counts of pairs include each model's monolingual source result (Ma et al. Sec 4.3: 34 = 8 targets x
2 settings x 2 models + the 2 EN-monolingual checks of Table 4)."""
FAMILIES = {"IE": ("en", "de", "nl", "fa", "ur"), "Germanic": ("en", "de", "nl"), "Semitic": ("ar", "he")}
"""Sec 4.1's language families among Ma et al.'s nine POS/NER languages (Indo-European, its Germanic branch,
Semitic)."""
TABLE5_TARGETS = ("zh", "ar", "de", "nl", "fa", "he", "ja", "ur")
"""Ma et al.'s Table 5 targets (EN source)."""


@dataclass
class BesideRow:
    """One reported number and ours (see the module)."""

    number: PaperNumber
    status: str
    ours: Estimate | None = None
    note: str = ""
    plain: float | None = None  # ours where it has no interval: a count of pairs, an extreme over them

    @property
    def value(self) -> float | None:
        """Our number: the estimate's mean, or the plain number."""
        return self.ours.diff if self.ours is not None else self.plain

    @property
    def diff(self) -> float | None:
        return None if self.value is None else self.value - self.number.value

    @property
    def interval(self) -> tuple[float, float] | None:
        return None if self.ours is None or self.ours.n_runs < 2 else self.ours.interval()

    @property
    def inside(self) -> bool | None:
        """Whether the paper's number lies in our 95% interval (None: no interval)."""
        iv = self.interval
        return None if iv is None else iv[0] <= self.number.value <= iv[1]

    def cells(self) -> dict[str, str]:
        n = self.number
        iv = self.interval
        return {"where": n.where, "model": n.model or "-", "setting": n.setting or "-",
                "row": n.row or "-", "column": n.column or "-", "paper": f"{n.written} {n.unit}",
                "ours": self._ours_text(iv),
                "difference": "-" if self.diff is None else f"{self.diff:+.2f}",
                "paper inside ours": {None: "-", True: "yes", False: "no"}[self.inside],
                "status": self.status + (f"; {self.note}" if self.note else "")}

    def _ours_text(self, iv) -> str:
        if self.ours is None:
            return "-" if self.plain is None else (f"{self.plain:.0f}" if self.number.unit == "count"
                                                   else f"{self.plain:.2f}") + " (no interval)"
        return f"{self.ours.diff:.2f}" + (f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else " (one run: no interval)")


class _Point:
    """One grid point of the plan as the cards read it: its plan, model, sources and Findings (per task)."""

    def __init__(self, plan: StudyPlan, store: Store, *, planning: bool = False, draws: int = DRAWS):
        self.plan, self.draws = plan, draws
        self.study = (PlannedStudy(plan.model, store=store, progress=False, sources=plan.sources) if planning
                      else plan.study(store=store, progress=False))
        self._findings: dict[str, Findings] = {}
        self.evidence = self.findings(plan.tasks[0])

    def findings(self, task: str) -> Findings:
        """The cards of this point on ``task`` (their Evidence: what the beside rows read too)."""
        if task not in self._findings:
            self._findings[task] = Findings(self.study, self.plan, task=task, draws=self.draws)
        return self._findings[task]

    def retrain(self, strategy: str, setting: str) -> tuple[Retrain | None, str]:
        ex = self.evidence.retrain(strategy, setting=setting)
        return ex, ("" if ex is not None else self.evidence.retrain_what(strategy, setting=setting))


def _level_estimate(ex: Retrain, lang: str, row: str) -> Estimate:
    """Per run, the test score of ``lang`` of the ``unpruned`` model or of the dev-picked ``pruned`` one (points)."""
    level_of = (lambda s: "0") if row == "unpruned" else ex.best_pruned
    return run_estimate([ex.run(s, {"x": (level_of(s), lang)}) for s in ex.seeds], lambda m: m["x"])


def _pair(column: str) -> tuple[str, str] | None:
    """("en", "zh") from "EN->ZH"."""
    if "->" not in column:
        return None
    a, b = column.split("->")
    return a.strip().lower(), b.strip().lower()


class Reader:
    """Reads one paper plan's grid points from a store: the rows of its reported numbers (:meth:`rows`), and the
    Findings of each point (findings/paper_plans.py reads its cards)."""

    def __init__(self, paper: PaperPlan, store: Store, spec: SweepSpec, *, planning: bool = False,
                 draws: int = DRAWS):
        self.paper = paper
        plans = spec.plans()
        self.points = [_Point(p, store, planning=planning, draws=draws) for p in plans]
        self.settings = tuple(plans[0].settings) if plans else ()

    def rows(self) -> list[BesideRow]:
        """Every reported number the plan answers, beside ours."""
        numbers = [n for cell in self.paper.cells for n in select(paper=self.paper.paper, role="result", **cell)]
        return [self.row(n) for n in dict.fromkeys(numbers)]

    def point(self, model: str, sources: tuple[str, ...] | None) -> _Point | None:
        for p in self.points:
            if (not model or p.plan.model == model) and (sources is None or set(p.plan.source_langs) == set(sources)):
                return p
        return None

    def row(self, n: PaperNumber) -> BesideRow:
        q = n.quantity
        if n.where == "Table 5" and n.row in STRATEGY and _pair(n.column):
            return self._table5(n)
        if n.where == "Table 5" and n.row in STRATEGY and q.startswith("mean over the row's 8 target"):
            return self._table5_mean(n, STRATEGY[n.row])
        if q.startswith("mean F1 gain from pruning low-ranked heads over Table 5's 8"):
            return self._table5_mean(n, "importance")
        if n.where == "Table 6" and n.row in ("unpruned", "pruned"):
            return self._table6(n)
        if n.row in ("unpruned", "pruned") and _pair(n.column):
            return self._single_pair(n)
        if n.row in ("unpruned", "pruned") and n.setting == "monolingual" and n.column:
            return self._monolingual(n)
        if q.startswith("average F1 gain of the best pruned model"):
            return self._over_pairs(n, lambda parts: (pooled_change([(ex, [t], ex.best_pruned) for ex, t in parts]),
                                                      None, f"{len(parts)} pairs"))
        if n.unit == "count" and q.startswith("pairs where"):
            return self._over_pairs(n, self._count, every=True)
        if q.startswith(("most negative single-pair", "largest single-pair")):
            return self._over_pairs(n, lambda parts: self._extreme(parts, q.startswith("largest")), every=True)
        if n.where == "Footnote 6":
            return self._over_pairs(n, self._heads, settings_of_row=False)
        if q.startswith("average F1 gain from pruning, over the family") and n.column in FAMILIES:
            return self._over_pairs(n, lambda parts: (
                pooled_change([(ex, [t], ex.best_pruned) for ex, t in parts]), None,
                f"{len(parts)} pairs of every source and both settings whose target is {n.column}"),
                targets=FAMILIES[n.column])
        if q.startswith("Spearman correlation of the F1 gains") and n.row == "ranking similarity":
            return self._over_pairs(n, self._gain_vs_similarity)
        if n.where == "Figure 1" and n.unit == "rho":
            return self._figure1(n)
        if n.paper == "gradts2021" and q.startswith(("improvement of MT-DNN", "time saved")):
            return self._gradts(n)
        return BesideRow(n, "no reader yet", note=q)

    # --- numbers over the pairs of a Ma et al. table: every single-source grid point, its targets -------------
    def _over_pairs(self, n: PaperNumber, fill, *, every: bool = False, settings_of_row: bool = True,
                    targets: tuple[str, ...] | None = None) -> BesideRow:
        """A row read from every (source, target) pair of the row's model and setting (``every``: of the whole
        plan; ``targets``: only pairs with one of these targets), the importance re-fine-tuning of each
        single-language source point; ``fill(parts)`` gives ``(estimate, plain, note)`` from the list of (retrain,
        target)."""
        models = [n.model] if n.model and not every else list(dict.fromkeys(p.plan.model for p in self.points))
        settings = ([SETTINGS[n.setting]] if settings_of_row and n.setting in SETTINGS and not every
                    else list(self.settings))
        parts = []
        for model in models:
            points = [p for p in self.points if p.plan.model == model and len(p.plan.source_langs) == 1]
            if not points:
                return BesideRow(n, "not in this plan", note=f"no single-source grid point of {model}")
            for p in points:
                for setting in settings:
                    ex, what = p.retrain("importance", setting)
                    if ex is None:
                        return BesideRow(n, f"missing: {what}")
                    parts += [(ex, t) for t in ex.targets if targets is None or t in targets]
                    if every and n.task in MONO_IN_COUNT and setting == "cross":
                        parts.append((ex, ex.source))  # the source's own test: its monolingual result
        if not parts:
            return BesideRow(n, "not in this plan", note=f"none of {', '.join(targets or ())} among its targets")
        est, plain, note = fill(parts)
        if est is None and plain is None:
            return BesideRow(n, f"missing: {note}")
        if plain is not None and plain != plain:  # NaN: a correlation of values that do not vary
            return BesideRow(n, "undefined", note=note)
        return BesideRow(n, "computed", est, note="; ".join(x for x in (note, self._substitute()) if x), plain=plain)

    @staticmethod
    def _pair_changes(parts) -> list[tuple[float, str]]:
        """Each pair's change (dev-picked pruned minus unpruned, points), its mean over training runs."""
        return [(float(sum(metric_of(ex.units(ex.best_pruned(s), s, t)) - metric_of(ex.units("0", s, t))
                           for s in ex.seeds) / len(ex.seeds)),
                 f"{ex.cfg.finetune.setting} {ex.source.upper()}->{t.upper()}") for ex, t in parts]

    def _gain_vs_similarity(self, parts) -> tuple[None, float | None, str]:
        """Spearman, over the pairs, of each pair's gain (its mean over runs) with how alike the source's and the
        target's head rankings are (the Spearman of their maps from the source's model, mean over training
        seeds)."""
        from scipy.stats import spearmanr
        similarity = []
        for ex, t in parts:
            jobs_a, a = ex.evidence.resampled_maps(ex.task, ex.source)
            jobs_b, b = ex.evidence.resampled_maps(ex.task, t)
            seeds = sorted(set(a) & set(b))
            if jobs_a or jobs_b or not seeds:
                return None, None, "the ranking maps of " + ", ".join(j.what for j in (jobs_a + jobs_b)[:2]) \
                    if jobs_a or jobs_b else f"no training seed with maps of both {ex.source} and {t}"
            similarity.append(sum(spearmanr(a[s][0].ravel(), b[s][0].ravel())[0] for s in seeds) / len(seeds))
        gains = [c for c, _ in self._pair_changes(parts)]
        if len(parts) < 3:
            return None, None, f"three or more pairs (the plan has {len(parts)})"
        if len(set(gains)) < 2 or len(set(similarity)) < 2:
            return None, float("nan"), (f"no correlation: the {len(parts)} pairs' "
                                        f"{'gains' if len(set(gains)) < 2 else 'ranking similarities'} are all equal")
        rho = float(spearmanr(gains, similarity)[0])
        return None, rho, (f"over {len(parts)} pairs of every source and both settings, each gain its mean over runs; "
                           "rankings of both languages from the source's model")

    def _count(self, parts) -> tuple[None, float, str]:
        changes = [c for c, _ in self._pair_changes(parts)]
        return None, float(sum(c > 0 for c in changes)), f"of {len(changes)} pairs, each its mean over training runs"

    def _extreme(self, parts, largest: bool) -> tuple[None, float, str]:
        value, where = (max if largest else min)(self._pair_changes(parts))
        return None, value, f"at {where}, over {len(parts)} pairs of every model and setting, each its mean over runs"

    @staticmethod
    def _heads(parts) -> tuple[Estimate, None, str]:
        """Per training seed, the mean over pairs of how many heads the dev-picked pruned level prunes (ours
        picks k per source point and setting on the source's dev set; the paper per pair on its test scores)."""
        runs = [sum(ex.heads(ex.best_pruned(s)) for ex, _ in parts) / len(parts)
                for s in shared_seeds([ex for ex, _ in parts])]
        return Estimate(tuple(runs)), None, f"{len(parts)} pairs; k picked per source point on its dev set"

    def _retrain_row(self, n: PaperNumber, sources, strategy: str, setting: str, langs: list[str], fill) -> BesideRow:
        point = self.point(n.model, sources)
        if point is None:
            return BesideRow(n, "not in this plan", note=f"no grid point of {n.model or 'its model'} trained on "
                                                          f"{'+'.join(sources or ()) or 'those languages'}")
        ex, what = point.retrain(strategy, setting)
        if ex is None:
            return BesideRow(n, f"missing: {what}")
        absent = [g for g in langs if g not in ex.langs]
        if absent:
            return BesideRow(n, "not in this plan", note=f"{', '.join(absent)} not among its languages")
        return BesideRow(n, "computed", fill(ex), note=self._substitute())

    def _table5(self, n: PaperNumber) -> BesideRow:
        source, target = _pair(n.column)
        return self._retrain_row(n, (source,), STRATEGY[n.row], SETTINGS[n.setting], [target],
                                 lambda ex: ex.change([target], ex.best_pruned))

    def _table5_mean(self, n: PaperNumber, strategy: str) -> BesideRow:
        targets = list(TABLE5_TARGETS)
        return self._retrain_row(n, ("en",), strategy, SETTINGS[n.setting], targets,
                                 lambda ex: ex.change(targets, ex.best_pruned))

    def _table6(self, n: PaperNumber) -> BesideRow:
        held = n.column.lower()
        others = tuple(x for x in ("en", "de", "ar", "he", "zh") if x != held)
        return self._retrain_row(n, others, "importance", "cross", [held],
                                 lambda ex: _level_estimate(ex, held, n.row))

    def _single_pair(self, n: PaperNumber) -> BesideRow:
        source, target = _pair(n.column)
        return self._retrain_row(n, (source,), "importance", SETTINGS.get(n.setting, "cross"), [target],
                                 lambda ex: _level_estimate(ex, target, n.row))

    def _monolingual(self, n: PaperNumber) -> BesideRow:
        """Trained and tested on one language: the source's own test set of its cross-lingual run."""
        lang = n.column.strip().lower()
        return self._retrain_row(n, (lang,), "importance", "cross", [lang],
                                 lambda ex: _level_estimate(ex, lang, n.row))

    def _figure1(self, n: PaperNumber) -> BesideRow:
        """Figure 1's lowest or highest Spearman between two languages' head rankings (of every pair, or of the
        pairs with the row's language), per training seed of the EN point's fine-tunes: each language's map from
        its dev sentences (the pooled halves card c reads). The paper ranks each language with a model fine-tuned
        on it; ours ranks every language with the source's model, as card c does."""
        point = self.point(n.model, ("en",))
        if point is None:
            return BesideRow(n, "not in this plan", note=f"no grid point of {n.model} trained on en")
        task, langs = point.plan.tasks[0], list(point.plan.langs)
        maps, missing = {}, []
        for lang in langs:
            jobs, maps[lang] = point.evidence.resampled_maps(task, lang)
            missing += [j.what for j in jobs]
        if missing:
            return BesideRow(n, f"missing: {'; '.join(missing[:3])}" + (" ..." if len(missing) > 3 else ""))
        row = n.row.lower()
        if row and row not in langs:
            return BesideRow(n, "not in this plan", note=f"{row} not among its languages")
        seeds = sorted(set.intersection(*(set(m) for m in maps.values()))) if maps else []
        lowest = "lowest" in n.quantity
        runs, where = [], {}
        for s in seeds:
            names, rho = spearman_matrix({lang: maps[lang][s][0] for lang in langs})
            pairs = {f"{a.upper()}-{b.upper()}": float(rho[i, j]) for i, a in enumerate(names)
                     for j, b in enumerate(names) if i < j and (not row or row in (a, b))}
            pick = (min if lowest else max)(pairs, key=pairs.get)
            runs.append(pairs[pick])
            where[pick] = where.get(pick, 0) + 1
        if len(runs) < 2:
            return BesideRow(n, "missing: maps of two or more training seeds of the EN fine-tune")
        note = (f"{'lowest' if lowest else 'highest'} pair per training seed: "
                + ", ".join(f"{p} ({c} of {len(runs)})" for p, c in sorted(where.items(), key=lambda x: -x[1]))
                + "; every language ranked with the EN model (the paper: a model fine-tuned on each language)")
        return BesideRow(n, "computed", Estimate(tuple(runs)), note="; ".join(x for x in (note, self._substitute())
                                                                                if x))

    def _gradts(self, n: PaperNumber) -> BesideRow:
        """GradTS's abstract, per primary: GradTS-trial's test metric against the bandit's (AUTOSEM's first stage),
        relative, each primary its mean over training runs, then the smallest or largest over the primaries; or
        the time saved, each primary's (choosing + training) against the bandit's, averaged over the primaries.
        Plain numbers, as the paper's extremes and average over tasks are."""
        if not self.points:
            return BesideRow(n, "not in this plan", note="no grid point")
        job, res, _ = self.points[0].evidence.gradts()
        if res is None:
            return BesideRow(n, f"missing: {job.what}" if job else "not in this plan",
                             note="" if job else "the plan has no GradTS check")
        if n.quantity.startswith("time saved"):
            saved = [100 * (1 - v["costs"]["trial"]["total"] / v["costs"]["bandit"]["total"])
                     for v in res["validation"] if {"trial", "bandit"} <= set(v["costs"])
                     and v["costs"]["bandit"]["total"]]
            if not saved:
                return BesideRow(n, "missing: the wall times of GradTS-trial and the bandit")
            return BesideRow(n, "computed", plain=sum(saved) / len(saved),
                             note=f"mean over {len(saved)} primaries of 1 - (trial's choosing + training) / the "
                                  "bandit's, in wall seconds (the paper does not say what it timed)")
        per = {}
        for v in res["validation"]:
            test = {(r["row"], r["seed"]): r["test"] for r in v["rows"] if r["row"] in ("trial", "bandit")}
            seeds = [s for row, s in test if row == "trial" and ("bandit", s) in test]
            if seeds:
                per[v["primary"]] = sum(100 * (test[("trial", s)] - test[("bandit", s)])
                                        / max(test[("bandit", s)], 1e-9) for s in seeds) / len(seeds)
        if not per:
            return BesideRow(n, "missing: GradTS-trial's and the bandit's runs of one training seed")
        pick = (min if "smallest" in n.quantity else max)(per, key=per.get)
        return BesideRow(n, "computed", plain=per[pick],
                         note=f"at {pick}, over {len(per)} primaries, each its mean over training runs; "
                              "GradTS-trial against the bandit, relative")

    def _substitute(self) -> str:
        return "; ".join(f"{t}: {s.split(' stands in')[0]} stands in" for t, s in self.paper.substitutes.items())


def beside_rows(name: str, store: Store, *, spec: SweepSpec | None = None, planning: bool = False
                ) -> list[BesideRow]:
    """Every reported number paper plan ``name`` answers, beside ours from ``store`` (``spec``: the sweep as run,
    default the plan's own). ``planning``: where the plan's model or data cannot be read (no Hub), its jobs are
    planned from the recorded tables (runs/planning.py): nothing is read, and every cell names the job it needs."""
    if name not in PAPER_PLANS:
        raise ValueError(f"no paper plan {name!r}; known: {', '.join(PAPER_PLANS)}")
    paper = PAPER_PLANS[name]
    return Reader(paper, store, spec or SweepSpec.from_dict(paper.sweep()), planning=planning).rows()


BESIDE_COLUMNS = ["where", "model", "setting", "row", "column", "paper", "ours", "difference", "paper inside ours",
                  "status"]


def beside_markdown(rows: list[BesideRow]) -> str:
    """The rows as a markdown table, computed ones first, then a count of the rest by status."""
    done = [r for r in rows if r.status == "computed"]
    lines = ["| " + " | ".join(BESIDE_COLUMNS) + " |", "|" + "---|" * len(BESIDE_COLUMNS)]
    lines += ["| " + " | ".join(md_cell(r.cells()[c]) for c in BESIDE_COLUMNS) + " |" for r in done + [
        r for r in rows if r.status != "computed"]]
    lines.append("\n" + beside_summary(rows))
    return "\n".join(lines)


def beside_summary(rows: list[BesideRow]) -> str:
    """How many reported numbers are computed, and in how many the paper's number lies inside our interval."""
    done = [r for r in rows if r.status == "computed"]
    inside = sum(bool(r.inside) for r in done)
    return (f"{len(done)} of {len(rows)} reported numbers computed; the paper's number lies inside our 95% "
            f"interval in {inside} of {sum(r.inside is not None for r in done)} that have one.")
