"""The findings of the papers behind headprune, checked on this model and data: one card per hypothesis.

Each :class:`Card` pairs a :class:`~headprune_core.findings.hypotheses.Hypothesis` (the claim quoted with its
number, the statistic, the control, the rule; all stated before the data) with what the cached results of the
plan give: the statistic as an :class:`~headprune_core.methods.inference.Estimate` over training runs (per-run
values, paired by run, with the test sentences' part of the uncertainty), its minimum detectable effect, the
verdict of the rule, the rule's error rates measured at these sizes (:mod:`headprune_core.findings.calibration`)
and a table of the evidence. Cards only read the cache: a missing piece leaves its card "not computed yet" with
the jobs it needs (:meth:`Findings.missing`), which the page offers with a time estimate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from headprune_core.encoders.models import EMBEDDED
from headprune_core.findings.calibration import DRAWS, calibrate, card_p_value, combine
from headprune_core.findings.evidence import Evidence, Retrain
from headprune_core.findings.hypotheses import BY_ID, HYPOTHESES, Hypothesis
from headprune_core.methods.inference import (
    INCONCLUSIVE,
    MISSING,
    ONE_RUN,
    OTHER_WAY,
    REPRODUCED,
    SMALLER,
    VERDICTS,
    Estimate,
)
from headprune_core.methods.similarity import spearman_matrix
from headprune_core.methods.uncertainty import bootstrap_ci, ci_text, metric_of, run_estimate
from headprune_core.runs.retrain import relative

__all__ = ["Card", "Findings", "FAMILIES", "VERDICTS", "REPRODUCED", "SMALLER", "OTHER_WAY", "INCONCLUSIVE",
           "ONE_RUN", "MISSING", "model_label"]

FAMILIES = {"en": "Germanic", "de": "Germanic", "nl": "Germanic", "es": "Romance", "fr": "Romance",
            "it": "Romance", "pt": "Romance", "tr": "Turkic"}
"""Language families as Budhraja et al. 2021 group them (Germanic, Romance; Turkish is agglutinative)."""
SVO = ("es", "fr", "it", "pt")  # SVO and English-like (Budhraja et al. 2021); en is the source
AGGLUTINATIVE = ("tr",)
SMALL_TEST = 50  # fewer test sentences than this: shown, but too small for a per-language reading
SHARED_TOP_PERCENT = 10.0
THIRDS = ("bottom", "middle", "top")


@dataclass
class Card:
    """One hypothesis and what this model and data give."""

    hypothesis: Hypothesis
    verdict: str = MISSING
    estimates: dict[str, Estimate] = field(default_factory=dict)  # per part ("" when the claim is one part)
    measured: str = ""
    rows: list[dict] = field(default_factory=list)
    protocol: str = ""
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    numbers: dict = field(default_factory=dict)
    calibration: dict | None = None
    draws: int = DRAWS  # simulated draws that measure the rule's error rates
    model: str = ""  # the model the results are for, in words (the study's own)
    data: str = ""  # the task and data, in words
    reason: str = ""  # why the verdict is what it is, in a line

    key = property(lambda self: self.hypothesis.id)
    title = property(lambda self: self.hypothesis.title)
    claim = property(lambda self: self.hypothesis.claim)
    paper = property(lambda self: self.hypothesis.paper)
    page = property(lambda self: self.hypothesis.page)
    rule = property(lambda self: self.hypothesis.rule.text())

    @property
    def mde(self) -> float | None:
        """The largest minimum detectable effect of the card's parts (None before the results); information
        only, computed from the same runs: it never gates the verdict."""
        if not self.estimates:
            return None
        return max(e.mde(self.hypothesis.rule.kind) for e in self.estimates.values())

    @property
    def p(self) -> float | None:
        """The one-sided p-value the card's *reproduced* rests on (None before the results)."""
        return card_p_value(self.hypothesis, list(self.estimates.values())) if self.estimates else None

    def decide(self, estimates: dict[str, Estimate], *, draws: int | None = None) -> None:
        """Set the estimates, the verdict of the rule from the intervals alone (every part must hold), its
        reason, and its error rates, measured on ``draws`` simulated draws around these sizes."""
        self.estimates = estimates
        rule = self.hypothesis.rule
        self.verdict = str(combine([np.array([rule.decide(e)], dtype=object) for e in estimates.values()])[0])
        self.reason = "; ".join((f"{name}: " if name else "") + rule.reason(e) for name, e in estimates.items())
        self.calibration = calibrate(self.hypothesis, list(estimates.values()), draws=draws or self.draws)

    def verdict_text(self) -> str:
        """The verdict in words that name this model and data beside the paper's: a *not reproduced* reads as
        "smaller on this model and data", never as a refutation of the paper."""
        h = self.hypothesis
        here = " and ".join(x for x in (self.model, self.data) if x) or "this model and data"
        if self.verdict == SMALLER:
            return f"Not reproduced: smaller on {here} than the paper's {h.paper_effect}."
        if self.verdict == OTHER_WAY:
            way = "a difference larger than the margin" if h.rule.kind == "equivalence" else "the opposite sign"
            return (f"The other way on {here}: {way}, where the paper reports {h.paper_effect}. A result about this "
                    "model and data, not a refutation of the paper.")
        if self.verdict == REPRODUCED:
            return f"Reproduced on {here} (the paper: {h.paper_effect})."
        if self.verdict == MISSING:
            return "Not computed yet."
        return f"Inconclusive on {here}: {self.reason}."

    def estimate_text(self) -> str:
        """``"+0.42 [-0.31, +1.15] (3 runs; MDE 1.9 points vs the paper's 0.91)"`` per part."""
        h = self.hypothesis
        parts = []
        for name, e in self.estimates.items():
            low, high = e.interval()
            parts.append(f"{name + ': ' if name else ''}{e.diff:+.2f} [{low:+.2f}, {high:+.2f}] {h.rule.unit} "
                         f"({e.n_runs} run{'s' if e.n_runs != 1 else ''}, {e.df:.0f} df; MDE {e.mde(h.rule.kind):.2f}, "
                         "information only)")
        target = "the paper's effect" if h.rule.kind == "superiority" else "the margin"
        return "; ".join(parts) + f"; {target} {h.rule.target:g} {h.rule.unit}"

    def to_dict(self) -> dict:
        """The card as ``headprune findings --format json`` writes it."""
        h = self.hypothesis
        return {"id": h.id, "title": h.title, "claim": h.claim, "paper": h.paper, "hypothesis": h.hypothesis,
                "statistic": h.statistic, "control": h.control, "rule": h.rule.text(), "kind": h.rule.kind,
                "margin": h.rule.margin, "effect": h.rule.effect, "unit": h.rule.unit,
                "paper_effect": h.paper_effect, "mde": self.mde, "verdict": self.verdict,
                "verdict_text": self.verdict_text(), "reason": self.reason, "p": self.p, "model": self.model,
                "data": self.data,
                "numbers": {"estimates": {name or "all": e.to_dict() for name, e in self.estimates.items()},
                            **self.numbers},
                "calibration": None if self.calibration is None else {
                    k: self.calibration[k] for k in ("false_reproduced", "false_not_reproduced",
                                                     "false_reproduced_given_gate", "false_not_reproduced_given_gate",
                                                     "power", "draws", "goals_missed", "rates", "sizes")},
                "measured": self.measured, "protocol": self.protocol, "missing": self.missing, "notes": self.notes,
                "rows": self.rows, "page": h.page}


def model_label(model_id: str) -> str:
    """The study's model in words: ``"me5-small (4-bit, dequantised to fp32)"`` for an embedded quantised model,
    else its id."""
    entry = EMBEDDED.get(model_id)
    return f"{model_id} ({entry.quantised})" if entry and entry.quantised else model_id


def _mean(values):
    """The mean of numbers or of equally shaped arrays (a statistic works on both)."""
    return np.mean(np.stack([np.asarray(v, dtype=float) for v in values]), axis=0)


def _cost(unpruned, pruned):
    """Relative cost of pruning, in % of the unpruned score (numbers or arrays)."""
    return 100 * (unpruned - pruned) / np.maximum(unpruned, 1e-9)


class Findings(Evidence):
    """The cards of ``plan`` (default: the ``findings`` preset) on ``study``'s cache; each rule's error rates are
    measured on ``draws`` simulated draws."""

    def __init__(self, study, plan=None, *, task: str = "pos", draws: int = DRAWS):
        super().__init__(study, plan, task=task)
        self.draws = draws

    def _card(self, card_id: str) -> Card:
        return Card(BY_ID[card_id], draws=self.draws, model=model_label(self.study.model_id),
                    data=f"{self.task.upper()}, {self.source} source")

    def cards(self) -> list[Card]:
        return [getattr(self, f"card_{h.id}")() for h in HYPOTHESES]

    def card(self, card_id: str) -> Card:
        if card_id not in BY_ID:
            raise KeyError(f"unknown findings card {card_id!r}; known: {', '.join(BY_ID)}")
        return getattr(self, f"card_{card_id}")()

    def _retrain_protocol(self, ex: Retrain) -> str:
        rc = ex.cfg
        return (f"{ex.task.upper()}, {rc.finetune.setting}-lingual, trained on {rc.finetune.max_train_sentences} "
                f"sentences x {rc.finetune.epochs:g} epochs per run, {len(ex.seeds)} training seeds "
                f"({', '.join(map(str, ex.seeds))}), test sentences per language "
                f"{', '.join(f'{lang} {ex.n_test(lang)}' for lang in ex.langs)}; {model_label(self.study.model_id)}.")

    def _small_tests(self, ex: Retrain) -> list[str]:
        small = [f"{lang} ({ex.n_test(lang)})" for lang in ex.langs if ex.n_test(lang) < SMALL_TEST]
        return [f"Test sets too small for any per-language reading: {', '.join(small)} sentences; they count in "
                "the mean over languages, where their noise is in the interval."] if small else []

    # --- (a) Ma et al.: prune the lowest-ranked heads, retrain ------------------------------------------------
    def _card_a(self, card_id: str, setting: str) -> Card:
        card = self._card(card_id)
        ex = self.retrain("importance", setting=setting)
        if ex is None:
            card.missing = [self.retrain_what("importance", setting=setting)]
            return card
        langs = ex.targets if setting == "cross" else ex.langs

        def cells(seed):
            return {**{f"0:{lang}": ("0", lang) for lang in langs}, **{f"k:{lang}": (ex.best(seed), lang) for lang in langs}}

        est = run_estimate([ex.run(s, cells(s)) for s in ex.seeds],
                           lambda m: _mean([m[f"k:{lang}"] - m[f"0:{lang}"] for lang in langs]))
        card.decide({"": est})
        for lang in ex.langs:
            t = ex.result["test"][lang]
            card.rows.append({"language": lang + (" (source)" if lang == ex.source else ""),
                              "unpruned": ci_text(t["unpruned"]), "pruned, dev-picked k": ci_text(t["pruned"]),
                              "change (points)": f"{t['change']['diff']:+.2f}",
                              "per seed": ", ".join(f"{metric_of(ex.units(ex.best(s), s, lang)) - metric_of(ex.units('0', s, lang)):+.2f}"
                                                    for s in ex.seeds)})
        best = ", ".join(f"seed {s}: k = {ex.best(s)}" for s in ex.seeds)
        card.numbers = {"best_k": {str(s): ex.best(s) for s in ex.seeds}, "languages": langs}
        card.measured = (f"Dev-picked k: {best}. Mean change over {len(langs)} {'target ' if setting == 'cross' else ''}"
                         f"languages, per seed: {', '.join(f'{v:+.2f}' for v in est.runs)}; {card.estimate_text()}.")
        card.protocol = self._retrain_protocol(ex) + f" k in {{{', '.join(l for l in ex.levels if l != '0')}}} " \
            "(Ma et al.: 1..12, one run each, k picked on the reported scores)."
        card.notes += self._small_tests(ex)
        if all(ex.best(s) == "0" for s in ex.seeds):
            card.notes.append(self._never_pruned(ex, langs))
        return card

    @staticmethod
    def _never_pruned(ex, langs: list[str]) -> str:
        """What a card says when the dev split kept the unpruned model in every run (a change of exactly 0 with
        no spread, which no rule can decide), with the fixed-k changes the dev split turned down."""
        fixed = []
        for level in (lab for lab in ex.levels if lab != "0"):
            est = run_estimate([ex.run(s, {**{f"0:{g}": ("0", g) for g in langs}, **{f"k:{g}": (level, g) for g in langs}})
                                for s in ex.seeds], lambda m: _mean([m[f"k:{g}"] - m[f"0:{g}"] for g in langs]))
            low, high = est.interval()
            fixed.append(f"k = {level}: {est.diff:+.2f} [{low:+.2f}, {high:+.2f}]")
        return ("The dev split picked k = 0 (no pruning) in every run, so the 'pruned' model is the unpruned one: the "
                "change is exactly 0 with no spread, and the verdict is inconclusive, not 'not reproduced'. Pruning "
                "did not beat the unpruned model on dev in any run. The changes at each fixed k on the test "
                "languages (points, 95% interval over runs and sentences): " + "; ".join(fixed) + ".")

    def card_a1(self) -> Card:
        return self._card_a("a1", "cross")

    def card_a2(self) -> Card:
        return self._card_a("a2", "multi")

    # --- (b) the ranking's controls ---------------------------------------------------------------------------
    def card_b1(self) -> Card:
        card = self._card("b1")
        jobs, curves = self.curves(self.task, self.source, "importance")
        _, rnd = self.curve(self.task, self.source, "random")
        if jobs or not curves:
            card.missing = [j.what for j in jobs] or [f"the plan has no importance curve of {self.task}/{self.source}"]
            return card
        total = self.study.head_shape[0] * self.study.head_shape[1]
        first = next(iter(curves.values()))
        k40 = min((k for k in first["k"] if k > 0), key=lambda k: abs(k - 0.4 * total))
        test = f"{self.task}/{self.source}"
        runs = []
        for seed, curve in curves.items():
            at = dict(zip(curve["k"], curve["units"]))
            runs.append({"0": (test, at[0][0]), "k": (test, at[k40][0])})
            card.rows.append({"fine-tuning seed": seed, "heads masked": f"{k40} of {total} ({k40 / total:.0%})",
                              "unmasked": ci_text(bootstrap_ci(at[0])), "importance order": ci_text(bootstrap_ci(at[k40]))})
        if rnd is not None and k40 in rnd["k"]:
            r_at = dict(zip(rnd["k"], rnd["units"]))
            card.rows[0]["random order"] = ci_text(bootstrap_ci(r_at[k40])) + f" ({len(r_at[k40])} draws)"
        est = run_estimate(runs, lambda m: m["k"] - m["0"])
        card.decide({"": est})
        card.measured = (f"Masked at {k40} of {total} heads in importance order, per fine-tuning seed: "
                         f"{', '.join(f'{v:+.2f}' for v in est.runs)}; {card.estimate_text()}.")
        card.protocol = (f"Each fine-tuned {self.task.upper()} model ({self.source}; seeds "
                         f"{', '.join(map(str, curves))}) ranked by its own gate gradients, masks switched on at test "
                         f"time, {self.plan.eval_sentences} {self.source} test sentences (Michel et al.: one model per "
                         "task, BERT on MNLI).")
        return card

    def _vs_control(self, card_id: str, control: str) -> Card:
        card = self._card(card_id)
        ex, other = self.retrain("importance"), self.retrain(control)
        if ex is None or other is None:
            card.missing = [self.retrain_what(s) for s, e in (("importance", ex), (control, other)) if e is None]
            return card
        seeds = [s for s in ex.seeds if s in other.seeds]
        if not seeds:
            card.missing = [_unpaired(control, other.seeds, ex.seeds)]
            return card
        levels = [lab for lab in ex.levels if lab != "0" and lab in other.levels]
        langs = ex.targets
        runs = []
        for s in seeds:
            run = {}
            for lab in levels:
                for lang in langs:
                    run[f"imp:{lab}:{lang}"] = (ex.test_set(lang), ex.units(lab, s, lang))
                    run[f"ctl:{lab}:{lang}"] = (other.test_set(lang), other.units(lab, s, lang))
            runs.append(run)
        est = run_estimate(runs, lambda m: _mean([m[f"imp:{lab}:{lang}"] - m[f"ctl:{lab}:{lang}"]
                                                  for lab in levels for lang in langs]))
        card.decide({"": est})
        for lab in levels:
            card.rows.append({"heads pruned": lab,
                              "lowest-ranked": f"{np.mean([ex.result['test'][lang]['levels'][lab]['score'] for lang in langs]):.1f}",
                              control: f"{np.mean([other.result['test'][lang]['levels'][lab]['score'] for lang in langs]):.1f}",
                              "what": f"mean over {len(langs)} target languages and {len(seeds)} seeds"})
        card.measured = (f"Lowest-ranked minus {control} pruning, mean over k = {', '.join(levels)} and "
                         f"{len(langs)} target languages, per seed: {', '.join(f'{v:+.2f}' for v in est.runs)}; "
                         f"{card.estimate_text()}.")
        card.protocol = self._retrain_protocol(ex) + (f" The {control} heads differ per training seed." if control ==
                                                       "random" else "")
        return card

    def card_b2(self) -> Card:
        return self._vs_control("b2", "reverse")

    def card_b3(self) -> Card:
        return self._vs_control("b3", "random")

    # --- (c) languages rank the heads alike -------------------------------------------------------------------
    def card_c(self) -> Card:
        card = self._card("c")
        maps: dict[tuple[str, str], dict[int, np.ndarray]] = {}
        halves: dict[tuple[str, str], list[dict[int, np.ndarray]]] = {}
        missing = []
        for task in self.plan.tasks:
            for lang in self.plan.task_langs(task):
                jobs, maps[(task, lang)] = self.score_maps(task, lang)
                missing += [j.what for j in jobs]
                for half in (1, 2):
                    jobs, found = self.score_maps(task, lang, half=half)
                    missing += [j.what for j in jobs]
                    halves.setdefault((task, lang), []).append(found)
        if missing:
            card.missing = missing
            return card
        seeds = sorted(set.intersection(*(set(m) for m in maps.values())))
        tasks = [t for t in self.plan.tasks if len(self.plan.task_langs(t)) >= 2]
        langs = [lang for lang in self.plan.langs if sum((t, lang) in maps for t in self.plan.tasks) >= 2]
        if not seeds or not tasks or not langs:
            card.missing = ["the plan needs two tasks and two languages (the cross-task floor)"]
            return card

        def pairs(named: dict) -> list[float]:
            names, rho = spearman_matrix(named)
            return [float(rho[i, j]) for i in range(len(names)) for j in range(i + 1, len(names))]

        runs, cross_all, floor_all = [], [], []
        for s in seeds:
            cross = [np.mean(pairs({lang: maps[(t, lang)][s] for lang in self.plan.task_langs(t)})) for t in tasks]
            floor = [np.mean(pairs({t: maps[(t, lang)][s] for t in self.plan.tasks if (t, lang) in maps}))
                     for lang in langs]
            cross_all.append(float(np.mean(cross)))
            floor_all.append(float(np.mean(floor)))
            runs.append(cross_all[-1] - floor_all[-1])
            card.rows.append({"training seed": s, "across languages (one task)": f"{cross_all[-1]:.2f}",
                              "across tasks (one language): the floor": f"{floor_all[-1]:.2f}",
                              "difference": f"{runs[-1]:+.2f}"})
        ceiling = [np.mean(pairs({str(s): maps[key][s] for s in seeds})) for key in maps] if len(seeds) > 1 else []
        split = []  # one language's two halves of its dev sentences, Spearman-Brown corrected to the full set
        for (first, second) in halves.values():
            for s in set(first) & set(second):
                r = pairs({"1": first[s], "2": second[s]})[0]
                split.append(2 * r / (1 + r) if r > -1 else r)
        est = Estimate(tuple(runs))  # the scoring sentences are fixed: the interval is over training runs
        card.decide({"": est})
        card.numbers = {"cross_language": cross_all, "cross_task": floor_all,
                        "within_language_across_seeds": float(np.mean(ceiling)) if ceiling else None,
                        "within_language_split_half": float(np.mean(split)) if split else None}
        reach = (f"; one language with itself under another training seed (a ceiling) {np.mean(ceiling):.2f}, so "
                 f"the language pairs reach {np.mean(cross_all) / np.mean(ceiling):.0%} of it"
                 if ceiling else "; the seed ceiling needs a second training seed (the plan's ranking_seeds)")
        if split:
            reach += f"; two halves of one language's dev sentences (Spearman-Brown) {np.mean(split):.2f}"
        card.measured = (f"Mean Spearman across languages {np.mean(cross_all):.2f} (Ma et al.: 0.67-0.87, mBERT POS), "
                         f"across tasks in one language {np.mean(floor_all):.2f}{reach}; {card.estimate_text()}.")
        card.protocol = (f"Gate-gradient scores on {self.plan.score_sentences} dev sentences per language, "
                         f"normalised per layer, ranked over all heads, from each task's English fine-tune "
                         f"(training seeds {', '.join(map(str, seeds))}), as Ma et al. rank with the source model. "
                         "The scoring sentences are the same for every seed: the interval is over training runs.")
        return card

    # --- layer thirds ---------------------------------------------------------------------------------------
    def _thirds_cost(self, ex: Retrain, seed: int, langs) -> dict:
        return {f"{lab}:{lang}": (ex.test_set(lang), ex.units(lab, seed, lang)) for lab in ("0", *THIRDS)
                for lang in langs}

    def _thirds_rows(self, card: Card, ex: Retrain) -> None:
        for lang in ex.langs:
            t = ex.result["test"][lang]
            base = t["unpruned"]["score"]
            row = {"language": lang, "family": FAMILIES.get(lang, "?"), "unpruned": ci_text(t["unpruned"])}
            for th in THIRDS:
                row[f"{th} cost %"] = f"{-relative(t['changes'][th], base)['rel']:+.1f}" if base else "-"
            card.rows.append(row)

    def card_d(self) -> Card:
        card = self._card("d")
        ex = self.retrain("layers")
        if ex is None:
            card.missing = [self.retrain_what("layers")]
            return card
        svo = [lang for lang in SVO if lang in ex.targets]
        agg = [lang for lang in AGGLUTINATIVE if lang in ex.targets]
        if not svo or not agg:
            card.missing = [f"the layer-third runs need SVO targets ({', '.join(SVO)}) and Turkish"]
            return card

        def top_minus_bottom(m, lang):
            return _cost(m[f"0:{lang}"], m[f"top:{lang}"]) - _cost(m[f"0:{lang}"], m[f"bottom:{lang}"])

        est = run_estimate([self._thirds_cost(ex, s, svo + agg) for s in ex.seeds],
                           lambda m: _mean([top_minus_bottom(m, lang) for lang in svo])
                           - _mean([top_minus_bottom(m, lang) for lang in agg]))
        card.decide({"": est})
        self._thirds_rows(card, ex)
        card.measured = (f"(top - bottom cost) in {', '.join(svo)} minus in {', '.join(agg)}, per seed: "
                         f"{', '.join(f'{v:+.1f}' for v in est.runs)}; {card.estimate_text()}.")
        card.protocol = self._retrain_protocol(ex) + " All heads of 4 of the 12 layers removed per third."
        return card

    def card_e2(self) -> Card:
        card = self._card("e2")
        ex = self.retrain("layers")
        if ex is None:
            card.missing = [self.retrain_what("layers")]
            return card
        src = ex.source
        runs = [self._thirds_cost(ex, s, [src]) for s in ex.seeds]
        est = {f"middle - {other}": run_estimate(
            runs, lambda m, o=other: _cost(m[f"0:{src}"], m[f"middle:{src}"]) - _cost(m[f"0:{src}"], m[f"{o}:{src}"]))
            for other in ("bottom", "top")}
        card.decide(est)
        self._thirds_rows(card, ex)
        card.measured = f"On {src}: {card.estimate_text()}."
        card.protocol = self._retrain_protocol(ex) + " Both differences must hold (an intersection-union test)."
        return card

    # --- shares of the heads (Budhraja et al. 2020/2021) -----------------------------------------------------
    def card_e1(self) -> Card:
        card = self._card("e1")
        imp, rnd = self.retrain("importance", shares=True), self.retrain("random", shares=True)
        if imp is None or rnd is None:
            card.missing = [self.retrain_what(s, shares=True) for s, e in (("importance", imp), ("random", rnd))
                            if e is None]
            return card
        seeds = [s for s in imp.seeds if s in rnd.seeds]
        if not seeds:
            card.missing = [_unpaired("random", rnd.seeds, imp.seeds)]
            return card
        levels = [lab for lab in imp.levels if lab != "0" and lab in rnd.levels]
        runs = [{f"{arm}:{lab}:{lang}": (ex.test_set(lang), ex.units(lab, s, lang))
                 for arm, ex in (("imp", imp), ("rnd", rnd)) for lab in levels for lang in imp.langs} for s in seeds]
        est = run_estimate(runs, lambda m: _mean([m[f"imp:{lab}:{lang}"] - m[f"rnd:{lab}:{lang}"]
                                                  for lab in levels for lang in imp.langs]))
        card.decide({"": est})
        total = self.study.head_shape[0] * self.study.head_shape[1]
        for lab in levels:
            card.rows.append({"heads pruned": f"{lab} of {total}",
                              "importance": f"{np.mean([imp.result['test'][lang]['levels'][lab]['score'] for lang in imp.langs]):.1f}",
                              "random": f"{np.mean([rnd.result['test'][lang]['levels'][lab]['score'] for lang in imp.langs]):.1f}",
                              "what": f"mean over {len(imp.langs)} languages and {len(seeds)} seeds"})
        card.measured = (f"Importance minus random pruning, mean over {', '.join(levels)} heads and "
                         f"{len(imp.langs)} languages, per seed: {', '.join(f'{v:+.2f}' for v in est.runs)}; "
                         f"{card.estimate_text()}.")
        card.protocol = self._retrain_protocol(imp) + " The random heads differ per training seed."
        return card

    def card_h(self) -> Card:
        card = self._card("h")
        rnd = self.retrain("random", shares=True)
        if rnd is None:
            card.missing = [self.retrain_what("random", shares=True)]
            return card
        levels = [lab for lab in rnd.levels if lab != "0"]
        src, targets = rnd.source, rnd.targets
        runs = [{f"{lab}:{lang}": (rnd.test_set(lang), rnd.units(lab, s, lang)) for lab in ("0", *levels)
                 for lang in rnd.langs} for s in rnd.seeds]

        def gap(m):
            return _mean([_mean([_cost(m[f"0:{t}"], m[f"{lab}:{t}"]) for t in targets])
                          - _cost(m[f"0:{src}"], m[f"{lab}:{src}"]) for lab in levels])

        est = run_estimate(runs, gap)
        card.decide({"": est})
        def cost(lang: str, lab: str) -> float:  # the table's relative drop, from the assembled result
            t = rnd.result["test"][lang]
            return -relative(t["changes"][lab], t["unpruned"]["score"])["rel"]

        for lab in levels:
            card.rows.append({"heads pruned": lab, f"cost in {src} %": f"{cost(src, lab):+.1f}",
                              "mean cost in targets %": f"{np.mean([cost(t, lab) for t in targets]):+.1f}"})
        card.measured = (f"Targets' relative drop minus {src}'s, mean over {', '.join(levels)} heads, per seed: "
                         f"{', '.join(f'{v:+.1f}' for v in est.runs)}; {card.estimate_text()}.")
        card.protocol = self._retrain_protocol(rnd) + " POS stands in for XNLI (no XNLI in the embedded corpora)."
        return card

    def card_i(self) -> Card:
        card = self._card("i")
        ex = self.retrain("layer_pairs")
        if ex is None:
            card.missing = [self.retrain_what("layer_pairs")]
            return card
        src = ex.source
        adjacent = [lab for lab in ex.levels if lab.startswith("adjacent")]
        apart = [lab for lab in ex.levels if lab.startswith("apart")]
        runs = [{f"{lab}:{src}": (ex.test_set(src), ex.units(lab, s, src)) for lab in ex.levels} for s in ex.seeds]
        est = run_estimate(runs, lambda m: _mean([_cost(m[f"0:{src}"], m[f"{lab}:{src}"]) for lab in adjacent])
                           - _mean([_cost(m[f"0:{src}"], m[f"{lab}:{src}"]) for lab in apart]))
        card.decide({"": est})
        card.measured = f"Adjacent minus apart pairs on {src}: {card.estimate_text()}."
        card.protocol = self._retrain_protocol(ex)
        return card

    # --- GradTS and multi-task training ------------------------------------------------------------------------
    def _gradts_runs(self, card: Card, arm: str, control: str, stat) -> tuple[dict | None, Estimate | None]:
        job, res, _ = self.gradts()
        if res is None:
            card.missing = [job.what if job else "the plan has no GradTS check"]
            return None, None
        runs: dict[int, dict] = {}
        for v in res["validation"]:
            rows = {(r["row"], r["seed"]): r for r in v["rows"] if r["row"] in (arm, control)}
            for (row, seed), r in rows.items():
                runs.setdefault(seed, {})[f"{row}:{v['primary']}"] = (f"{v['primary']} test", r["test_units"])
        primaries = [v["primary"] for v in res["validation"]]
        complete = [run for run in runs.values() if len(run) == 2 * len(primaries)]
        if not complete:
            card.missing = [f"GradTS rows '{arm}' and '{control}' for the same training seed"]
            return res, None
        est = run_estimate(complete, lambda m: _mean([stat(m[f"{arm}:{p}"], m[f"{control}:{p}"]) for p in primaries]))
        for v in res["validation"]:
            for row in (arm, control):
                rs = [r for r in v["rows"] if r["row"] == row]
                card.rows.append({"primary": v["primary"], "row": row,
                                  "auxiliaries": "; ".join(", ".join(r["aux"]) or "-" for r in rs[:1]),
                                  "test (mean of seeds)": f"{np.mean([r['test'] for r in rs]):.1f}",
                                  "per seed": ", ".join(f"{r['seed']}: {r['test']:.1f}" for r in rs)})
        return res, est

    def _card_gradts_quality(self, card_id: str, arm: str) -> Card:
        card = self._card(card_id)
        res, est = self._gradts_runs(card, arm, "bandit", lambda a, b: 100 * (a - b) / np.maximum(b, 1e-9))
        if est is None:
            return card
        card.decide({"": est})
        card.measured = f"{arm} vs the bandit, per seed: {', '.join(f'{v:+.1f}%' for v in est.runs)}; {card.estimate_text()}."
        card.protocol = f"{len(res['units'])} task units ({', '.join(res['units'])}); {res['note']}"
        return card

    def card_f1(self) -> Card:
        return self._card_gradts_quality("f1", "trial")

    def card_f2(self) -> Card:
        return self._card_gradts_quality("f2", "thres")

    def card_f3(self) -> Card:
        return self._card_gradts_quality("f3", "fg")

    def card_f4(self) -> Card:
        card = self._card("f4")
        job, res, _ = self.gradts()
        if res is None:
            card.missing = [job.what if job else "the plan has no GradTS check"]
            return card
        savings = []
        for v in res["validation"]:
            maps_and_trials = v["costs"]["trial"]["selection"]
            for seed, b in v["bandit"].items():
                trial_row = next((r for r in v["rows"] if r["row"] == "trial" and str(r["seed"]) == seed), None)
                bandit_row = next((r for r in v["rows"] if r["row"] == "bandit" and str(r["seed"]) == seed), None)
                if trial_row is None or bandit_row is None:
                    continue
                trial = maps_and_trials + (trial_row["train_seconds"] or 0.0)
                bandit = b["seconds"] + (bandit_row["train_seconds"] or 0.0)
                savings.append(100 * (bandit - trial) / bandit)
                card.rows.append({"primary": v["primary"], "seed": seed, "GradTS-trial (s)": f"{trial:.0f}",
                                  "bandit (s)": f"{bandit:.0f}", "saving": f"{savings[-1]:+.1f}%"})
        if not savings:
            card.missing = ["GradTS rows 'trial' and 'bandit' for the same training seed"]
            return card
        card.decide({"": Estimate(tuple(savings))})
        card.measured = f"Time saved by GradTS-trial against the bandit: {card.estimate_text()}."
        card.protocol = ("Wall seconds on this machine: GradTS-trial = every unit's map (its fine-tune and scoring) + "
                         "its trial runs + the final training; the bandit = its search + the final training.")
        return card

    def card_j(self) -> Card:
        card = self._card("j")
        res, est = self._gradts_runs(card, "single", "all", lambda a, b: a - b)
        if est is None:
            return card
        card.decide({"": est})
        card.measured = f"Alone minus with all tasks, per seed: {', '.join(f'{v:+.2f}' for v in est.runs)}; {card.estimate_text()}."
        card.protocol = f"{len(res['units'])} task units ({', '.join(res['units'])}); {res['note']}"
        return card

    # --- (g) stem cells ------------------------------------------------------------------------------------------
    def card_g(self, *, top_percent: float = SHARED_TOP_PERCENT, draws: int = 2000) -> Card:
        card = self._card("g")
        gts, tops, missing = self.task_tops(top_percent)
        if gts is not None and len(gts.task_units()) < 3:
            missing = [f"the plan's GradTS check needs at least 3 distinct tasks (has {', '.join(gts.task_units())})"]
        if missing:
            card.missing = missing
            return card
        units, seeds = list(tops), list(gts.map_seeds())
        most = len(units) // 2 + 1
        k = int(next(iter(tops[units[0]].values())).sum())
        runs = []
        for r in range(len(seeds)):  # run r: task i from seed r + i, so no two tasks of a run share a seed
            pick = {u: seeds[(r + i) % len(seeds)] for i, u in enumerate(units)}
            sets = [tops[u][pick[u]] for u in units]
            observed = int((sum(s.astype(int) for s in sets) >= most).sum())
            null = _layer_null(sets, most, draws, seed=r)
            runs.append(observed - float(null.mean()))
            card.rows.append({"run": r + 1, "seeds": ", ".join(f"{u}: {pick[u]}" for u in units),
                              f"heads in >= {most} of {len(units)} tasks' top {k}": observed,
                              "null: mean [95th percentile]": f"{null.mean():.1f} [{np.percentile(null, 95):.0f}]",
                              "beyond chance": f"{runs[-1]:+.1f}"})
        card.decide({"": Estimate(tuple(runs))})
        ceiling = {u: int((sum(tops[u][s].astype(int) for s in seeds[:len(units)]) >= most).sum()) for u in units} \
            if len(seeds) >= len(units) else {}
        overlap = {u: _pair_overlap([tops[u][s] for s in seeds]) for u in units}
        card.numbers = {"claimed": [row[f"heads in >= {most} of {len(units)} tasks' top {k}"] for row in card.rows],
                        "ceiling": ceiling, "run_to_run_overlap": {u: o[0] for u, o in overlap.items()},
                        "overlap_null": {u: o[1] for u, o in overlap.items()}}
        card.measured = (
            f"Per run ({len(units)} tasks, each from another training seed): heads in the top {top_percent:g}% of at "
            f"least {most} tasks minus the layer-preserving null, {', '.join(f'{v:+.1f}' for v in runs)}; "
            f"{card.estimate_text()}. "
            + (f"Ceiling, one task retrained under {len(units)} seeds in place of {len(units)} tasks: "
               f"{', '.join(f'{u} {c}' for u, c in ceiling.items())} heads in at least {most} runs. " if ceiling else "")
            + f"One task's top {k} from run to run share "
            f"{', '.join(f'{u} {o[0]:.1f} (null {o[1]:.1f})' for u, o in overlap.items())} heads on average.")
        card.notes.append(self._interference())
        card.protocol = (f"Gradient top-{top_percent:g}% heads ({gts.plan.method} maps) of each task's own fine-tuned "
                         f"model, one language per task ({', '.join(units)}), training seeds "
                         f"{', '.join(map(str, seeds))}; not He & Choi's learned pruning (its L0 gates are on the "
                         "Shared heads page).")
        return card

    def _interference(self) -> str:
        """He & Choi's interference, read from card j: the primary trained with every task against alone."""
        j = self.card_j()
        if not j.estimates:
            return "He & Choi's interference (training with every task against alone, card j): not computed yet."
        return (f"He & Choi's interference, training with every task against alone (card j, {j.verdict}): "
                f"{j.estimate_text()}. Heads that most tasks claim are where the tasks would compete.")


def _pair_overlap(sets: list[np.ndarray]) -> tuple[float, float]:
    """The mean number of heads two of ``sets`` share over every pair, and its mean when each set's heads are
    permuted within their layers (sum over layers of a_l * b_l / heads per layer)."""
    pairs = [(a, b) for i, a in enumerate(sets) for b in sets[i + 1:]]
    if not pairs:
        return float("nan"), float("nan")
    heads = sets[0].shape[1]
    shared = np.mean([(a & b).sum() for a, b in pairs])
    null = np.mean([(a.sum(axis=1) * b.sum(axis=1)).sum() / heads for a, b in pairs])
    return float(shared), float(null)


def _unpaired(control: str, its: list[int], wanted: list[int]) -> str:
    return (f"the {control} re-fine-tuning trained with the importance run's seeds ({', '.join(map(str, wanted))}) "
            f"to pair them; it has {', '.join(map(str, its))}")


def _layer_null(sets: list[np.ndarray], most: int, draws: int, seed: int = 0) -> np.ndarray:
    """Per draw, how many heads are in at least ``most`` of ``sets`` when each set's heads are permuted within
    their layers (each task keeps its count per layer)."""
    rng = np.random.default_rng(seed)
    layers, heads = sets[0].shape
    counts = np.zeros((draws, layers, heads), dtype=np.int16)
    for s in sets:
        keys = rng.random((draws, layers, heads))
        ranks = np.argsort(np.argsort(keys, axis=2), axis=2)  # a random order of the heads in each layer
        counts += (ranks < s.sum(axis=1)[None, :, None]).astype(np.int16)
    return (counts >= most).sum(axis=(1, 2))
