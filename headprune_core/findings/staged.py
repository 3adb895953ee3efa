"""Compute where a card is open: the staged Findings design and its projection from the design file.

**The staged design.** The findings preset trains every experiment with 3 seeds. A card the page leaves open
after them (its headline, controlled across the cards, inconclusive) gets more training runs, and only it: the
experiments it reads are trained with 5 seeds (look 2), then 8 (look 3), as long as ``--budget`` allows. Each
look judges the card on its first runs, at the look's own alpha (:data:`LOOKS`: 5% at the preset's 3 runs, then
1% and 1%). The card alone keeps the first look that decides it (a card decided alone at look 1 keeps that
verdict whatever runs are added), and the extra looks are paid for by alpha spending: per side 2.5% + 0.5% +
0.5% = 3.5% at most by the union bound, the rates each card shows simulated for the whole design
(:func:`~headprune_core.findings.calibration.calibrate` with ``looks``). On the page, a card seen at several
looks takes each statement's smallest p over them, each times 3.5% / that look's one-sided alpha
(:func:`~headprune_core.findings.page.build_tests`): valid whichever looks were computed, so more runs can decide
on the page a card its own 3 runs decided alone. Everything is a function of the cache: a rerun resumes where
the last one stopped, and the page, the CLI and the report read the same looks.

Which open cards get more runs is read from each card's own look-1 estimate (:mod:`headprune_core.findings.power`:
projected power at the last look at least :data:`MIN_POWER`), and where its test-sentence part is at least half of
its variance, a later look also tests the target languages on up to :data:`MORE_SENTENCES` held-out sentences
(every one of es, fr, it, de, nl): evaluation is cheap next to training. Those choices read the runs the later
looks judge, so the calibration makes them on each simulated draw from the draw's own look 1.

**The projection** (``headprune findings --plan``): per open card, from the design file's variance parts (a
committed record of the findings preset's runs, for cards not computed yet; a computed card's own parts where it
has them), the power at each look and the runs and sentences a decision at the paper's effect needs, with the
minutes each look costs here.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from headprune_core.base.progress import Progress
from headprune_core.findings.calibration import calibrate
from headprune_core.findings.cards import INCONCLUSIVE, MISSING, Card, Findings
from headprune_core.findings.hypotheses import BY_ID
from headprune_core.findings.page import ALPHA_PAGE, page_control, tested
from headprune_core.findings.power import (
    LOOKS,
    MIN_POWER,
    MORE_SENTENCES,
    power,
    runs_needed,
    sentence_binds,
    worth_more_runs,
)
from headprune_core.methods.inference import DECIDED
from headprune_core.multitask.plan import find_gradts_plan
from headprune_core.plans.plan import StudyPlan, plan_jobs
from headprune_core.runs.estimate import estimate_jobs
from headprune_core.runs.jobs import Job, JobFailed, run_jobs

DESIGN = Path(__file__).with_name("design.json")
"""The design file: per card, the variance parts of its estimate(s) as an earlier computation measured them."""

REFINETUNE = "refinetune"
RANKING, GRADTS, MAPS = "ranking", "gradts", "maps"
READS: dict[str, tuple] = {
    "a1": ((REFINETUNE, "importance", False, "cross"),),
    "a2": ((REFINETUNE, "importance", False, "multi"),),
    "b1": (RANKING,),
    "b2": ((REFINETUNE, "importance", False, "cross"), (REFINETUNE, "reverse", False, "cross")),
    "b3": ((REFINETUNE, "importance", False, "cross"), (REFINETUNE, "random", False, "cross")),
    "c": (RANKING,),
    "d": ((REFINETUNE, "layers", False, "cross"),),
    "e1": ((REFINETUNE, "importance", True, "cross"), (REFINETUNE, "random", True, "cross")),
    "e2": ((REFINETUNE, "layers", False, "cross"),),
    "f1": (GRADTS,), "f2": (GRADTS,), "f3": (GRADTS,), "f4": (GRADTS,), "j": (GRADTS,),
    "g": (MAPS,),
    "h": ((REFINETUNE, "random", False, "cross"),),
    "i": ((REFINETUNE, "layer_pairs", False, "cross"),),
}
"""What each card's training runs come from: the re-fine-tuning experiments (strategy, by shares, setting), the
ranking's seeds, the GradTS check's training seeds, or the task maps' seeds. A later look adds seeds to these."""


def design(path: Path = DESIGN) -> dict[str, list[dict]]:
    """The design file's variance parts per card (``{card: [size per part]}``, as
    :meth:`~headprune_core.methods.inference.Estimate.size`); a clear error when it is missing or malformed."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        cards = data["cards"]
        for card, sizes in cards.items():
            if card not in BY_ID or not isinstance(sizes, list) or not all(
                    {"n_runs", "n_sentences", "run", "sentences", "residual"} <= set(s) for s in sizes):
                raise ValueError(f"card {card!r}: a list of sizes with n_runs, n_sentences, run, sentences, residual")
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"the findings design file {path} cannot be read: {err}") from None
    return cards


def _more(seeds, runs: int) -> list[int]:
    """``seeds`` continued with the next integers to ``runs`` seeds (its first ones kept, in order)."""
    out = list(seeds)[:runs]
    while len(out) < runs:
        out.append(max(out) + 1)
    return out


def extend(plan: StudyPlan, card_ids, runs: int, *, sizes: dict | None = None) -> StudyPlan:
    """``plan`` with the experiments ``card_ids`` read trained with ``runs`` seeds (their first seeds kept), and
    their target languages tested on up to :data:`MORE_SENTENCES` sentences where the sentence part binds
    (``sizes``: the design file's)."""
    sources = {s for c in card_ids for s in READS.get(c, ())}
    more_sentences = {s for c in card_ids if sizes and sentence_binds(c, sizes) for s in READS.get(c, ())}
    experiments = []
    for exp in plan.refinetune:
        key = (REFINETUNE, exp.get("strategy", "importance"), bool(exp.get("shares")),
               (exp.get("settings") or ["cross"])[0])
        if key in sources:
            exp = {**exp, "seeds": _more(exp.get("seeds") or [int(plan.train.get("seed", 13))], runs)}
            if key in more_sentences and exp.get("target_sentences"):
                exp["target_sentences"] = max(int(exp["target_sentences"]), MORE_SENTENCES)
        experiments.append(exp)
    out = replace(plan, refinetune=tuple(experiments))
    if RANKING in sources:
        first = int(plan.train.get("seed", 13))
        out = replace(out, ranking_seeds=tuple(_more([first, *plan.ranking_seeds], runs)[1:]))
    if GRADTS in sources:
        out = replace(out, gradts=tuple(_grown(g, runs, "train_seeds") for g in plan.gradts))
    if MAPS in sources:  # card g reads the affinity plan with the most tasks (Evidence.task_tops)
        out = replace(out, affinity=tuple(_grown(g, runs, "map_seeds") for g in plan.affinity))
    return out


def _grown(ref, runs: int, field_name: str):
    """A GradTS plan reference with ``field_name`` (train_seeds, or map_seeds: the seeds beyond the first) grown
    to ``runs`` training runs; a plan without map seeds is left as it is."""
    gplan = find_gradts_plan(ref)
    if field_name == "train_seeds":
        seeds = tuple(_more(gplan.train_seeds, runs))
        if seeds == tuple(gplan.train_seeds):
            return ref
        return replace(gplan, name=f"{gplan.name}-{runs}runs", train_seeds=seeds).to_dict()
    if not gplan.map_seeds:
        return ref
    first = int(gplan.train.get("seed", 13))
    seeds = tuple(_more([first, *gplan.map_seeds], runs)[1:])
    if seeds == tuple(gplan.map_seeds):
        return ref
    return replace(gplan, name=f"{gplan.name}-{runs}maps", map_seeds=seeds).to_dict()


def page_open(card: Card) -> bool:
    """Open on the page: its headline (controlled across the cards) inconclusive, with runs a later look can add
    to; a card decided alone but not on the page is open here (more runs can decide it on the page)."""
    return card.shown == INCONCLUSIVE and card.key in READS


def is_open(card: Card) -> bool:
    """Open alone, and more training runs could decide it: the card's own verdict inconclusive (three runs or
    more) with runs that a later look can add to."""
    return card.verdict == INCONCLUSIVE and card.key in READS


@dataclass
class Staged:
    """The staged design read from the cache: each card at the look that decided it (or its last look), the
    plan of the next look and its jobs not yet computed."""

    cards: list[Card]
    looks: list[dict] = field(default_factory=list)  # per look reached: {"look", "runs", "alpha", "open", "decided"}
    next_plan: StudyPlan | None = None  # the plan whose missing jobs the next look needs (None: nothing more)
    next_jobs: list[Job] = field(default_factory=list)
    next_look: int | None = None

    @property
    def open(self) -> list[str]:
        """The cards the page leaves open (headline inconclusive) that more runs could decide."""
        return [c.key for c in self.cards if page_open(c)]

    def to_dict(self) -> dict:
        return {"looks": self.looks, "open": self.open, "next_look": self.next_look,
                "next_jobs": len(self.next_jobs), "design": [list(x) for x in LOOKS], "min_power": MIN_POWER}


def read_staged(study, plan: StudyPlan, *, draws: int, sizes: dict | None = None,
                first: Findings | None = None) -> Staged:
    """Every card at the look that decides it, from what the cache holds (never computes). Look 1 is ``plan``
    itself (``first``: its Findings, when the caller has them); look ``i`` is ``plan`` extended to that look's
    runs for the cards open at look ``i - 1`` that more runs could decide. A look whose results are not all
    cached stops the reading there: its jobs are ``next_jobs``. Once a later look is read, the cards it could
    have judged show the staged design's error rates (every look counted), their verdicts still the first
    deciding look's; with no later look computed, every card is exactly the plain page's. Every card's headline is
    set, controlled across the page (:func:`~headprune_core.findings.page.page_control`). Which open cards get
    more runs reads each card's own look-1 estimate (``sizes``, per card its parts' sizes, overrides it: then
    the choice reads no data, and the calibration simulates none)."""
    first = first or Findings(study, plan, draws=draws)
    cards = {c.key: c for c in first.cards()}
    missing = first.missing()
    looks = [{"look": 1, "runs": LOOKS[0][0], "alpha": LOOKS[0][1], "cards": list(cards),
              "decided": [k for k, c in cards.items() if c.verdict in DECIDED]}]
    if missing:
        state = Staged(list(cards.values()), looks, plan, missing, 0)
        page_control(state.cards, draws=draws)
        return state
    chooser = {k: [e.size() for e in c.estimates.values()] for k, c in cards.items() if c.estimates} \
        if sizes is None else sizes
    judged = [k for k, c in cards.items() if k in READS and c.estimates]  # in the staged design, whatever it adds
    page_control(list(cards.values()), draws=draws)  # look 1's headlines: which cards the page leaves open
    open_ = [k for k in judged if page_open(cards[k]) and worth_more_runs(k, chooser)]
    seen = {k: [(0, cards[k].estimates)] for k in judged}
    state = Staged(list(cards.values()), looks)
    for i in range(1, len(LOOKS)):
        if not open_:
            break
        runs, alpha = LOOKS[i]
        look_plan = extend(plan, open_, runs, sizes=chooser)
        todo = [j for j in plan_jobs(study, look_plan) if not study.store.has(j.cfg)]
        if todo:
            state.next_plan, state.next_jobs, state.next_look = look_plan, todo, i
            break
        found = Findings(study, look_plan, draws=draws, look=i, looks=LOOKS)
        for key in open_:
            later = found.card(key)
            seen[key].append((i, later.estimates))
            if is_open(cards[key]):  # the card alone keeps the first look that decides it
                cards[key] = later
        for key in judged:  # every look counts on the page, each paid for by its weight
            cards[key].looks, cards[key].seen = LOOKS, tuple(seen[key])
        page_control(list(cards.values()), draws=draws)
        looks.append({"look": i + 1, "runs": runs, "alpha": alpha, "cards": list(open_),
                      "decided": [k for k in open_ if not page_open(cards[k])]})
        open_ = [k for k in open_ if page_open(cards[k])]
    if len(looks) > 1:  # a staged design was run: the rates of the cards it could judge again count every look
        for key in judged:
            card = cards[key]
            if card.look == 0:
                card.calibration = calibrate(card.hypothesis, list(card.estimates.values()), draws=draws,
                                             looks=LOOKS, select=sizes is None)
    state.cards = list(cards.values())
    page_control(state.cards, draws=draws)  # the headlines, controlled across the page
    return state


class BudgetSpent(Exception):
    """The staged run's time budget is spent (raised between jobs: what finished is cached)."""


def run_staged(study, plan: StudyPlan, *, budget_s: float, draws: int = 200, on_progress: Progress | None = None,
               log=print, sizes: dict | None = None) -> Staged:
    """Compute the staged design's looks, one after another, within ``budget_s`` seconds: look 1 (``plan``'s
    missing jobs), then more training runs only for the cards still open. A look whose estimated time does not
    fit what is left of the budget is not started; a look that runs over it stops between jobs. Resumes from
    the cache. Returns the design as read afterwards."""
    start = time.monotonic()
    while True:
        state = read_staged(study, plan, draws=draws, sizes=sizes)
        if state.next_plan is None:
            log(f"staged: nothing left to compute ({len(state.open)} card(s) open after the last look)")
            return state
        left = budget_s - (time.monotonic() - start)
        est = estimate_jobs(study.store, [j.cfg for j in state.next_jobs])
        look = state.next_look + 1
        log(f"staged: look {look} ({LOOKS[state.next_look][0]} runs) needs {len(state.next_jobs)} jobs, about "
            f"{est['seconds'] / 60:.0f} min; {max(0.0, left) / 60:.0f} min of the budget left")
        if state.next_look > 0 and est["seconds"] > left:
            log(f"staged: look {look} does not fit the budget; stopping here")
            return state

        try:
            run_jobs([_within_budget(j, start, budget_s) for j in state.next_jobs], study.store,
                     on_progress=on_progress)
        except JobFailed as err:
            if not isinstance(err.__cause__, BudgetSpent):
                raise
            log(f"staged: {err.__cause__}; what finished is cached, a rerun resumes")
            return read_staged(study, plan, draws=draws, sizes=sizes)


def _within_budget(job: Job, start: float, budget_s: float) -> Job:
    """``job``, checking the budget before it computes (a cached job is never run, so it is never stopped)."""
    def run():
        if time.monotonic() - start > budget_s:
            raise BudgetSpent(f"the budget of {budget_s / 60:.0f} min is spent (before: {job.what})")
        return job.run()
    return replace(job, run=run)


def page_alpha(cards: list[Card]) -> float:
    """The two-sided alpha at which a card is decided on the page whatever the others do: Holm's first step,
    one-sided 2.5% over the cards tested (at least the 17 of the preset, so that a page with results missing
    does not promise less)."""
    return 2 * ALPHA_PAGE / max(len(tested(cards)), len(BY_ID))


def projection(study, plan: StudyPlan, cards: list[Card], *, sizes: dict | None = None) -> list[dict]:
    """Per open card (inconclusive alone or on the page, or not computed yet), from its own estimate's variance
    parts where it has one, else the design file's (``sizes`` overrides both): the sentence share,
    the power at each look, the runs a decision at the paper's effect needs (at the sentences it has, and at up to
    :data:`MORE_SENTENCES` where the sentence part binds), the runs it needs to be decided on the page (at Holm's
    first step over the cards tested: :func:`page_alpha`), and the minutes of each later look on this machine
    (from the job times measured in the cache)."""
    recorded = design() if sizes is None else sizes
    own = {c.key: [e.size() for e in c.estimates.values()] for c in cards if c.estimates}
    sizes = recorded if sizes is not None else {**recorded, **own}
    page_level = page_alpha(cards)
    rows = []
    for card in cards:
        if (card.verdict not in (INCONCLUSIVE, MISSING) and card.shown != INCONCLUSIVE) or card.key not in sizes:
            continue
        parts = sizes[card.key]
        total = sum(s["run"] + s["sentences"] + s["residual"] for s in parts) or 1.0
        share = sum(s["sentences"] for s in parts) / total
        n_now = min((s["n_sentences"] for s in parts if s.get("n_sentences")), default=None)
        more = MORE_SENTENCES if sentence_binds(card.key, sizes) and n_now < MORE_SENTENCES else None
        minutes = {}
        for runs, _ in LOOKS[1:]:
            look_plan = extend(plan, [card.key], runs, sizes=sizes)
            todo = [j.cfg for j in plan_jobs(study, look_plan) if not study.store.has(j.cfg)]
            minutes[runs] = estimate_jobs(study.store, todo)["seconds"] / 60
        rows.append({"card": card.key, "verdict": card.verdict, "sentence_share": share, "sentences": n_now,
                     "power": {runs: power(card.key, parts, runs, alpha=alpha) for runs, alpha in LOOKS},
                     "runs_needed": runs_needed(card.key, parts),
                     "page_alpha": page_level, "runs_needed_page": runs_needed(card.key, parts, alpha=page_level),
                     "more_sentences": more,
                     "runs_needed_more_sentences": runs_needed(card.key, parts, sentences=more) if more else None,
                     "more_runs": worth_more_runs(card.key, sizes), "minutes": minutes})
    return rows
