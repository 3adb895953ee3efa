"""A paper's numbers beside ours: each number a paper reports (``paper_numbers.csv``) that a computed paper plan
(plans/papers.py) answers, with our estimate over training runs and test sentences, its 95% interval, the
difference, and whether the paper's number lies inside our interval.

A row is ``computed``, ``missing`` (the plan answers it once the named job is computed: a half-computed plan shows
what it has and names the rest), ``not in this plan`` (a language, model or setting the plan, as run, lacks) or
``no reader yet`` (a kind of number no reader below computes; it is listed, not dropped). Ours is on the plan's
data: where the plan names a substitute (WikiANN for Ma et al.'s NER sets) the row says so, and a number then
differs for that reason too.

>>> # rows = beside_rows("ma2021-table5-ner", Store()); print(beside_markdown(rows))
"""

from __future__ import annotations

from dataclasses import dataclass

from headprune_core.findings.evidence import Evidence, Retrain
from headprune_core.findings.paper_numbers import PaperNumber, select
from headprune_core.methods.inference import Estimate
from headprune_core.methods.uncertainty import run_estimate
from headprune_core.plans.papers import PAPER_PLANS, PaperPlan
from headprune_core.plans.plan import StudyPlan
from headprune_core.plans.sweep import SweepSpec
from headprune_core.runs.planning import PlannedStudy
from headprune_core.runs.store import Store

SETTINGS = {"cross-lingual": "cross", "multilingual": "multi"}
STRATEGY = {"Max-Pruning": "reverse", "Rand-Pruning": "random"}
TABLE5_TARGETS = ("zh", "ar", "de", "nl", "fa", "he", "ja", "ur")
"""Ma et al.'s Table 5 targets (EN source)."""


@dataclass
class BesideRow:
    """One reported number and ours (see the module)."""

    number: PaperNumber
    status: str
    ours: Estimate | None = None
    note: str = ""

    @property
    def diff(self) -> float | None:
        return None if self.ours is None else self.ours.diff - self.number.value

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
                "ours": "-" if self.ours is None else f"{self.ours.diff:.2f}" + (
                    f" [{iv[0]:.2f}, {iv[1]:.2f}]" if iv else " (one run: no interval)"),
                "difference": "-" if self.diff is None else f"{self.diff:+.2f}",
                "paper inside ours": {None: "-", True: "yes", False: "no"}[self.inside],
                "status": self.status + (f"; {self.note}" if self.note else "")}


class _Point:
    """One grid point of the plan as the cards read it: its plan, model, sources and Evidence."""

    def __init__(self, plan: StudyPlan, store: Store, *, planning: bool = False):
        self.plan = plan
        study = (PlannedStudy(plan.model, store=store, progress=False, sources=plan.sources) if planning
                 else plan.study(store=store, progress=False))
        self.evidence = Evidence(study, plan, task=plan.tasks[0])

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


class _Reader:
    """Fills the rows of one computed paper plan (its grid points' Evidence)."""

    def __init__(self, paper: PaperPlan, store: Store, spec: SweepSpec, *, planning: bool = False):
        self.paper = paper
        self.points = [_Point(p, store, planning=planning) for p in spec.plans()]

    def point(self, model: str, sources: tuple[str, ...] | None) -> _Point | None:
        for p in self.points:
            if (not model or p.plan.model == model) and (sources is None or set(p.plan.source_langs) == set(sources)):
                return p
        return None

    def row(self, n: PaperNumber) -> BesideRow:
        if n.where == "Table 5" and n.row in STRATEGY and _pair(n.column):
            return self._table5(n)
        if n.where == "Table 5" and n.row in STRATEGY and n.quantity.startswith("mean over the row's 8 target"):
            return self._table5_mean(n)
        if n.where == "Table 6" and n.row in ("unpruned", "pruned"):
            return self._table6(n)
        if n.row in ("unpruned", "pruned") and _pair(n.column):
            return self._single_pair(n)
        return BesideRow(n, "no reader yet", note=n.quantity)

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

    def _table5_mean(self, n: PaperNumber) -> BesideRow:
        targets = list(TABLE5_TARGETS)
        return self._retrain_row(n, ("en",), STRATEGY[n.row], SETTINGS[n.setting], targets,
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
    reader = _Reader(paper, store, spec or SweepSpec.from_dict(paper.sweep()), planning=planning)
    numbers = [n for cell in paper.cells for n in select(paper=paper.paper, role="result", **cell)]
    return [reader.row(n) for n in dict.fromkeys(numbers)]


BESIDE_COLUMNS = ["where", "model", "setting", "row", "column", "paper", "ours", "difference", "paper inside ours",
                  "status"]


def beside_markdown(rows: list[BesideRow]) -> str:
    """The rows as a markdown table, computed ones first, then a count of the rest by status."""
    done = [r for r in rows if r.status == "computed"]
    lines = ["| " + " | ".join(BESIDE_COLUMNS) + " |", "|" + "---|" * len(BESIDE_COLUMNS)]
    lines += ["| " + " | ".join(r.cells()[c] for c in BESIDE_COLUMNS) + " |" for r in done + [
        r for r in rows if r.status != "computed"]]
    inside = sum(bool(r.inside) for r in done)
    lines.append(f"\n{len(done)} of {len(rows)} reported numbers computed; the paper's number lies inside our 95% "
                 f"interval in {inside} of {sum(r.inside is not None for r in done)} that have one.")
    return "\n".join(lines)
