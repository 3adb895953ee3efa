"""A paper plan's results as every view shows them (``headprune findings --plan-name``, the Findings page, the
report): the paper's numbers beside ours (:mod:`headprune_core.findings.beside`) and, per claim, the verdict of
each Findings card the plan answers on each of its grid points and tasks.

The verdicts are as many tests as (grid point, task, card), so the headline of each is controlled across all of
them by the Findings page's procedure (:func:`~headprune_core.findings.page.page_control`: Holm over the one-sided
tests, 2.5% per statement), never read one by one.

Nothing here computes. On a cache where no fine-tune of the plan's models and tasks exists (the embedded default)
:func:`started` says so cheaply, and the views name the sweep that would answer, with its dry run for the cost;
where the plan's model or data cannot be read (no Hub), its jobs are planned from the shipped tables
(runs/planning.py) and every cell names the job it needs.

>>> # res = paper_results("ma2021-table5-ner", Store()); print(paper_markdown(res))
"""

from __future__ import annotations

from dataclasses import dataclass, field

from headprune_core.base.text import md_cell
from headprune_core.data.hub import HubUnavailable
from headprune_core.encoders.models import ModelLoadError
from headprune_core.findings.beside import BesideRow, Reader, beside_markdown
from headprune_core.findings.calibration import DRAWS
from headprune_core.findings.card import Card
from headprune_core.findings.page import page_control, tested
from headprune_core.plans.papers import PAPER_PLANS, PaperPlan
from headprune_core.plans.sweep import SweepSpec
from headprune_core.plans.sweep_record import list_sweeps
from headprune_core.runs.store import Store


@dataclass
class PlanVerdict:
    """One card on one grid point and task of a paper plan."""

    point: str  # the grid point, as the sweep labels it
    task: str
    card: Card

    def cells(self) -> dict[str, str]:
        c = self.card
        return {"grid point": self.point, "task": self.task, "card": c.key, "claim": c.title,
                "verdict": c.shown, "card alone": c.verdict,
                "ours": c.estimate_text() if c.estimates else ("needs: " + "; ".join(c.missing) if c.missing
                                                                else c.reason or "-")}


@dataclass
class PaperResults:
    """What one paper plan gives on a cache: its beside rows, its cards' verdicts and why nothing could be read."""

    paper: PaperPlan
    rows: list[BesideRow]
    verdicts: list[PlanVerdict] = field(default_factory=list)
    unread: str = ""  # why the model or data could not be read ("" when they could)
    read_as: str = ""  # which spec was read: as a recorded sweep ran it, or as the plan's own file plans it
    page: dict = field(default_factory=dict)  # page_control's summary over the verdicts


def answered_by() -> dict[str, list[str]]:
    """Card id -> the paper plans (sweep files) that answer it at the paper's size."""
    out: dict[str, list[str]] = {}
    for plan in PAPER_PLANS.values():
        for card in plan.cards:
            out.setdefault(card, []).append(f"sweeps/{plan.name}.json")
    return out


def started(name: str, store: Store) -> bool:
    """Whether ``store`` holds any fine-tune of paper plan ``name``'s models on its tasks (cheap: the entries'
    configurations only). False means no cell of it can be computed here."""
    spec = PAPER_PLANS[name].spec
    models, tasks = set(spec["models"]), set(spec["tasks"])
    return any(e.config.get("model") in models and set(e.config.get("tasks") or ()) & tasks
               for e in store.entries("finetune"))


def spec_as_run(name: str, store: Store) -> tuple[SweepSpec, str]:
    """The sweep of paper plan ``name`` as this cache ran it, and where that was read: the newest sweep record
    (cache/sweeps) named ``name`` or ``name-<variant>`` (a smaller or changed run of it), else the plan's own."""
    own = SweepSpec.from_dict(PAPER_PLANS[name].sweep())
    for rec in list_sweeps(store.root.parent):
        ran = str(rec.get("name", ""))
        if ran == name or (ran.startswith(f"{name}-") and ran not in PAPER_PLANS):
            try:
                return SweepSpec.from_dict(rec["spec"]), f"as sweep {ran} ran it (cache/sweeps/{ran})"
            except (KeyError, TypeError, ValueError) as err:
                return own, (f"as sweeps/{name}.json plans it: the record cache/sweeps/{ran}/progress.json holds no "
                             f"readable spec ({err})")
    return own, f"as sweeps/{name}.json plans it (no sweep of it recorded in this cache)"


def paper_results(name: str, store: Store, *, spec: SweepSpec | None = None, draws: int = DRAWS) -> PaperResults:
    """Paper plan ``name`` read from ``store`` (``spec``: the sweep as run, default :func:`spec_as_run`): the
    beside rows and each card it answers on each grid point and task, headlines controlled across them. Falls
    back to planning when the plan's model or data cannot be read."""
    if name not in PAPER_PLANS:
        raise ValueError(f"no paper plan {name!r}; known: {', '.join(PAPER_PLANS)}")
    paper = PAPER_PLANS[name]
    read_as = "as given"
    if spec is None:
        spec, read_as = spec_as_run(name, store)
    unread = ""
    try:
        reader = Reader(paper, store, spec, draws=draws)
    except (HubUnavailable, ModelLoadError) as err:  # nothing of it can have been computed in this cache
        reader = Reader(paper, store, spec, draws=draws, planning=True)
        unread = f"Its model or data cannot be read here ({' '.join(str(err).split())[:200]}...): no cell can be read."
    res = PaperResults(paper, reader.rows(), unread=unread, read_as=read_as)
    for i, point in enumerate(reader.points):
        for task in point.plan.tasks:
            found = point.findings(task)
            res.verdicts += [PlanVerdict(spec.label(i), task, found.card(key)) for key in paper.cards]
    res.page = page_control([v.card for v in res.verdicts], draws=draws)
    return res


VERDICT_COLUMNS = ["grid point", "task", "card", "claim", "verdict", "card alone", "ours"]


def verdicts_markdown(verdicts: list[PlanVerdict]) -> str:
    """The verdicts as a markdown table, and how many were tested."""
    lines = ["| " + " | ".join(VERDICT_COLUMNS) + " |", "|" + "---|" * len(VERDICT_COLUMNS)]
    lines += ["| " + " | ".join(md_cell(v.cells()[c]) for c in VERDICT_COLUMNS) + " |" for v in verdicts]
    lines.append("\n" + verdicts_summary(verdicts))
    return "\n".join(lines)


def verdicts_summary(verdicts: list[PlanVerdict]) -> str:
    n_tested = len(tested([v.card for v in verdicts]))
    return (f"{n_tested} of {len(verdicts)} card readings tested; the verdicts are controlled across those "
            "(Holm, 2.5% per statement).")


def paper_markdown(res: PaperResults, *, heading: str = "###") -> str:
    """One paper plan in markdown: what it is, its substitutes and differences, the numbers beside ours and the
    cards' verdicts."""
    p = res.paper
    out = [f"{heading} {p.title}", "", f"Sweep: `sweeps/{p.name}.json`, read {res.read_as}; cards it answers: "
           f"{', '.join(p.cards) or 'none'}."]
    if res.unread:
        out.append(res.unread)
    out += [f"- {note}" for note in p.notes]
    out += ["", beside_markdown(res.rows)]
    if res.verdicts:
        out += ["", verdicts_markdown(res.verdicts)]
    return "\n".join(out)


def not_started_text(name: str) -> str:
    """What a view says of a paper plan this cache holds nothing of."""
    return (f"Nothing of `sweeps/{name}.json` is computed in this cache: `headprune sweep sweeps/{name}.json` "
            f"computes it on a GPU box or a Ray cluster (`--dry-run` first says its jobs, disk and time; "
            "docs/papers-reproduce.md).")


@dataclass
class PapersSection:
    """The papers' experiments as a report or page shows them beside the cards of a cache: per paper plan, its
    results where the cache holds any of it (:func:`started`), else None (the view names its sweep)."""

    plans: list[tuple[PaperPlan, PaperResults | None]]

    @property
    def answered(self) -> dict[str, list[str]]:
        return answered_by()


def papers_section(store: Store, *, draws: int = DRAWS) -> PapersSection:
    """Every paper plan on ``store``: read in full only where the cache holds some of it."""
    return PapersSection([(p, paper_results(name, store, draws=draws) if started(name, store) else None)
                          for name, p in PAPER_PLANS.items()])


PAPERS_INTRO = ("The cards above run on this cache's model and data. The papers made their claims on their own "
                "models and data: each sweep below is one experiment of a paper at its own size (its models, Hub "
                "data, languages and training), with every number the paper reports beside ours once it is "
                "computed.")


def section_markdown(section: PapersSection) -> str:
    """The report's Markdown section: which sweep answers each card, then each paper plan."""
    lines = ["## The papers' own experiments", "", PAPERS_INTRO, "", "| card | answered at the paper's size by |",
             "|---|---|"]
    lines += [f"| {card} | {', '.join(f'`{s}`' for s in sweeps)} |" for card, sweeps in
              sorted(section.answered.items())]
    for paper, res in section.plans:
        lines += ["", paper_markdown(res) if res is not None else
                  f"### {paper.title}\n\n{not_started_text(paper.name)}"]
    return "\n".join(lines)
