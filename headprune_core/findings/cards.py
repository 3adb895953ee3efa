"""The findings of the papers behind headprune, checked on this model and data: one card per claim.

Each :class:`Card` holds the claim and the paper's number, what the cached results of the ``findings`` preset
give (with 95% bootstrap intervals over sentences, paired for differences), a verdict, the rule the verdict
follows, and how the protocol differs from the paper's. Cards only read the cache: a missing piece leaves its
card "not computed yet" with the jobs it needs (:meth:`Findings.missing`), which the page offers with a time
estimate and computes on a click.

Verdicts: ``reproduced`` (the result points the paper's way, distinguishably where the claim is a difference),
``not reproduced`` (it distinguishably points the other way), ``inconclusive at this data size`` (the
intervals cannot tell).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from headprune_core.methods.importance import normalise
from headprune_core.methods.similarity import spearman_chance_band, spearman_matrix
from headprune_core.methods.uncertainty import (
    bootstrap_ci,
    ci_text,
    curve_mean_ci,
    diff_text,
    metric_of,
    paired_bootstrap,
    paired_curves,
)
from headprune_core.multitask.affinity import gradts_map, shared_heads
from headprune_core.multitask.gradts import GradTS, aux_sets
from headprune_core.multitask.stemcells import StemCells
from headprune_core.plans.plan import StudyPlan, plan_jobs
from headprune_core.plans.presets import find_plan
from headprune_core.runs.estimate import estimate_jobs
from headprune_core.runs.jobs import Job
from headprune_core.runs.retrain import refinetune_parts
from headprune_core.runs.study import Study

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, MISSING = ("reproduced", "not reproduced",
                                                     "inconclusive at this data size", "not computed yet")
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, MISSING)
FAMILIES = {"en": "Germanic", "de": "Germanic", "nl": "Germanic", "es": "Romance", "fr": "Romance",
            "it": "Romance", "pt": "Romance", "tr": "Turkic"}
"""Language families as Budhraja et al. 2021 group them (Germanic, Romance; Turkish is agglutinative)."""
SHARED_TOP_PERCENT = 10.0


@dataclass
class Card:
    """One finding: the paper's claim, what this model and data give, and the verdict."""

    key: str
    title: str
    claim: str
    paper: str
    page: str  # the page with the evidence
    rule: str  # how the verdict is decided
    protocol: str  # how this check differs from the paper's
    verdict: str = MISSING
    measured: str = ""
    rows: list[dict] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _sign(d: dict) -> int:
    """+1 / -1 when the difference is distinguishable from 0, else 0."""
    return 0 if not d["distinguishable"] else (1 if d["diff"] > 0 else -1)


class Findings:
    """The cards of ``plan`` (default: the ``findings`` preset) on ``study``'s cache."""

    def __init__(self, study: Study, plan: StudyPlan | None = None, *, task: str = "pos"):
        self.study = study
        self.plan = plan or find_plan("findings")
        self.task = task
        self.jobs: list[Job] = plan_jobs(study, self.plan)
        self.source = self.plan.source_langs[0]
        self._parts: dict[str, list] = {}  # re-fine-tuning parts by key (building them hashes the data read)

    # --- reading the cache ----------------------------------------------------------------------------------
    def missing(self) -> list[Job]:
        """The plan's jobs that are not cached (what a click computes)."""
        return [j for j in self.jobs if not self.study.store.has(j.cfg)]

    def estimate(self, *, cpus: int | None = None) -> dict:
        """Estimated seconds to compute what is missing (see :func:`headprune_core.runs.estimate.estimate_jobs`)."""
        return estimate_jobs(self.study.store, [j.cfg for j in self.missing()], cpus=cpus)

    def _get(self, cfg):
        return self.study.store.get(cfg)

    def _find(self, kind: str, **attrs):
        for j in self.jobs:
            if j.cfg.kind == kind and all(getattr(j.cfg, a) == v for a, v in attrs.items()):
                return j
        return None

    def _curve(self, task: str, lang: str, strategy: str):
        job = self._find("curve", task=task, lang=lang, strategy=strategy)
        found = self._get(job.cfg) if job else None
        return job, (found["curve"] if found else None)

    def refinetune_result(self, strategy: str, *, shares: bool = False):
        """The plan's cross-lingual re-fine-tuning of ``self.task`` by ``strategy``: the experiment given by
        levels (Ma et al.'s k) or, with ``shares``, by shares of all heads (Budhraja et al. 2020)."""
        for j in self.jobs:
            rc = j.cfg
            if rc.kind != "refinetune" or rc.strategy != strategy or rc.finetune.tasks != (self.task,) \
                    or rc.finetune.setting != "cross":
                continue
            if strategy == "layers" or bool((j.experiment or {}).get("shares")) == shares:
                found = self._get(rc)
                return j, (found["result"] if found else None)
        return None, None

    def _part_units(self, rc, label: str, seed: int, lang: str) -> dict | None:
        key = rc.key()
        if key not in self._parts:
            self._parts[key] = refinetune_parts(self.study, rc)
        for part in self._parts[key]:
            if part.label == label and part.seed == seed:
                found = self._get(part.tests[lang])
                return found["result"]["units"] if found else None
        return None

    def _gradts_plan(self, job: Job):
        for gplan in self.plan.gradts_plans():
            if GradTS(self.study, gplan).config().key() == job.cfg.key():
                return gplan
        raise ValueError(f"no GradTS plan of {self.plan.name!r} gives {job.what!r}")

    def _langs(self, res: dict) -> list[str]:
        """The test languages of a re-fine-tuning result in the plan's order (stored results sort keys)."""
        return [lang for lang in self.plan.langs if lang in res["test"]] + \
            [lang for lang in res["test"] if lang not in self.plan.langs]

    def _gradts(self):
        job = next((j for j in self.jobs if j.cfg.kind == "gradts"), None)
        found = self._get(job.cfg) if job else None
        return job, found

    # --- the cards ------------------------------------------------------------------------------------------
    def cards(self) -> list[Card]:
        return [self.card_a(), self.card_b(), self.card_c(), self.card_d(), self.card_e(), self.card_f(),
                self.card_g()]

    def card_a(self) -> Card:
        card = Card(
            "a", "Pruning low-ranked heads, then retraining, keeps or improves the metric",
            claim="Ma et al. 2021: ranking heads by gradient on the source language's dev set, pruning the k "
                  "lowest (k = 1..12, best k on dev) and fine-tuning again improved cross-lingual NER and POS in "
                  "most language pairs (mBERT and XLM-R, 9 languages).",
            paper="Ma et al. 2021", page="retrain",
            rule="Reproduced when no target language drops distinguishably and most do not drop; not reproduced "
                 "when most targets drop distinguishably, or when dev picks no pruning (k = 0) for every seed; "
                 "otherwise inconclusive. A change is distinguishable when its 95% paired-bootstrap interval "
                 "excludes 0 (marked *).",
            protocol="")
        job, res = self.refinetune_result("importance")
        if res is None:
            card.missing = [job.what] if job else ["the plan has no importance re-fine-tuning"]
            return card
        rc = job.cfg
        card.protocol = (f"{self.task.upper()} only, trained on {rc.finetune.max_train_sentences} English "
                         f"sentences x {rc.finetune.epochs:g} epochs per run, k in "
                         f"{{{', '.join(l for l in res['levels'] if l != '0')}}} (Ma et al.: 1..12), "
                         f"{len(res['seeds'])} training seeds, at most {rc.max_sentences} test sentences per "
                         "language; me5-small, 4-bit quantised, not mBERT/XLM-R; POS tags mapped to 13 coarse "
                         "tags.")
        targets = [lang for lang in self._langs(res) if lang != res["dev_lang"]]
        for lang in self._langs(res):
            t = res["test"][lang]
            card.rows.append({"language": lang + (" (source)" if lang == res["dev_lang"] else ""),
                              "unpruned": ci_text(t["unpruned"]), "pruned, best k": ci_text(t["pruned"]),
                              "change": diff_text(t["change"])})
        signs = [_sign(res["test"][lang]["change"]) for lang in targets]
        ups = sum(res["test"][lang]["change"]["diff"] >= 0 for lang in targets)
        best = ", ".join(f"seed {s}: k = {lab}" for s, lab in res["best"].items())
        no_pruning = all(lab == "0" for lab in res["best"].values())
        card.measured = (f"Best k on {res['dev_lang']} dev: {best}. Across {len(targets)} target languages the "
                         f"pruned model is at or above the unpruned one in {ups}, distinguishably better in "
                         f"{signs.count(1)} and distinguishably worse in {signs.count(-1)} (mean of "
                         f"{len(res['seeds'])} seeds).")
        if no_pruning:
            card.verdict = NOT_REPRODUCED
            card.measured += " Dev picked no pruning for every seed: pruning did not help on the source dev set."
        elif signs.count(-1) == 0 and ups > len(targets) / 2:
            card.verdict = REPRODUCED
        elif signs.count(-1) > len(targets) / 2:
            card.verdict = NOT_REPRODUCED
        else:
            card.verdict = INCONCLUSIVE
        return card

    def card_b(self) -> Card:
        card = Card(
            "b", "Importance order beats random, random beats most-important-first",
            claim="Michel et al. 2019 and Ma et al. 2021: removing the least important heads first keeps the "
                  "metric longest; random order falls faster; removing the most important first falls fastest "
                  "(Ma: pruning top-ranked heads hurts, random mostly hurts).",
            paper="Michel et al. 2019; Ma et al. 2021", page="prune",
            rule="Curves (heads switched off, no retraining) on the source language: the mean metric over the "
                 "points between 0 and all heads, compared pairwise with a paired bootstrap. Reproduced when "
                 "importance > random > reverse distinguishably for every task; not reproduced when an order "
                 "is distinguishably reversed; otherwise inconclusive.",
            protocol="")
        shape = self.study.head_shape
        total = shape[0] * shape[1]
        signs, parts, missing = [], [], []
        for task in self.plan.tasks:
            jobs_curves = {s: self._curve(task, self.source, s) for s in ("importance", "random", "reverse")}
            missing += [j.what for j, c in jobs_curves.values() if c is None and j is not None]
            if any(c is None for _, c in jobs_curves.values()):
                continue
            imp, rnd, rev = (jobs_curves[s][1] for s in ("importance", "random", "reverse"))
            ks = [k for k in imp["k"] if 0 < k < total and k in rnd["k"] and k in rev["k"]]
            means = {s: curve_mean_ci(jobs_curves[s][1], ks) for s in jobs_curves}
            d1, d2 = paired_curves(rnd, imp, ks), paired_curves(rev, rnd, ks)
            signs += [_sign(d1), _sign(d2)]
            card.rows.append({"task": task, "importance": ci_text(means["importance"]),
                              "random": ci_text(means["random"]) + f" ({rnd['n_seeds']} draws)",
                              "reverse": ci_text(means["reverse"]), "importance - random": diff_text(d1),
                              "random - reverse": diff_text(d2), "what": f"curve mean over k = {ks[0]}..{ks[-1]}"})
            parts.append(f"{task}: importance - random {d1['diff']:+.1f}, random - reverse {d2['diff']:+.1f}")
        # after retraining (Ma's controls): the same k of lowest-, top-ranked and random heads
        retrain = self._retrain_controls()
        card.rows += retrain
        if missing or not signs:
            card.missing = missing or ["the plan has no random / reverse curves"]
            return card
        card.protocol = (f"Curves on {self.source} test ({self.plan.eval_sentences} sentences), a point every "
                         f"{self.plan.curve_step} heads, random order averaged over {len(self.plan.random_seeds)} "
                         "draws; rows 'after retraining' compare Ma et al.'s controls at the same k (one seed).")
        card.measured = ("Mean metric over the curve (points per task): " + "; ".join(parts) + ".")
        card.verdict = REPRODUCED if all(s == 1 for s in signs) else NOT_REPRODUCED if -1 in signs \
            else INCONCLUSIVE
        return card

    def _retrain_controls(self) -> list[dict]:
        """Rows: after retraining, the source language's test metric at each k for lowest-ranked, random and
        top-ranked heads (the first training seed), with paired differences."""
        runs = {s: self.refinetune_result(s) for s in ("importance", "random", "reverse")}
        if any(res is None for _, res in runs.values()):
            return []
        rows = []
        imp_job, imp = runs["importance"]
        seed = imp["seeds"][0]
        for label in imp["levels"][1:]:
            units = {s: self._part_units(job.cfg, label, seed if s == "importance" else res["seeds"][0], self.source)
                     for s, (job, res) in runs.items() if label in res["levels"]}
            if len(units) < 3 or any(u is None for u in units.values()):
                continue
            d1 = paired_bootstrap(units["random"], units["importance"])
            d2 = paired_bootstrap(units["reverse"], units["random"])
            rows.append({"task": self.task, "importance": f"{metric_of(units['importance']):.1f}",
                         "random": f"{metric_of(units['random']):.1f}", "reverse": f"{metric_of(units['reverse']):.1f}",
                         "importance - random": diff_text(d1), "random - reverse": diff_text(d2),
                         "what": f"after retraining, k = {label}, {self.source} test"})
        return rows

    def card_c(self) -> Card:
        card = Card(
            "c", "Languages rank heads alike",
            claim="Ma et al. 2021: the head rankings of different languages correlate strongly (Spearman, mBERT "
                  "POS 0.67-0.87; XLM-R 0.94-0.97).",
            paper="Ma et al. 2021", page="importance",
            rule="Reproduced when at least 90% of language pairs correlate above the chance band of two random "
                 "rankings and the median is at least 0.5; not reproduced when the median is inside the chance "
                 "band; otherwise inconclusive.",
            protocol="")
        signs, missing = [], []
        shape = self.study.head_shape
        n = shape[0] * shape[1]
        band = spearman_chance_band(n)
        for task in self.plan.tasks:
            maps = {}
            for lang in self.plan.task_langs(task):
                job = self._find("score", task=task, lang=lang)
                found = self._get(job.cfg) if job else None
                if found is None:
                    missing.append(job.what if job else f"score heads {task}/{lang}")
                else:
                    maps[lang] = normalise(np.asarray(found["raw"], dtype=np.float64), normalize="layer_sum")
            if len(maps) < 2:
                continue
            names, rho = spearman_matrix(maps)
            vals = np.array([rho[i, j] for i in range(len(names)) for j in range(i + 1, len(names))])
            above = int((vals > band).sum())
            med = float(np.median(vals))
            lo_pair = np.unravel_index(np.argmin(np.where(np.eye(len(names)) == 1, 9, rho)), rho.shape)
            se = 1 / math.sqrt(n - 3)
            card.rows.append({"task": task, "languages": len(names), "pairs": len(vals),
                              "median rho": f"{med:.2f} [{math.tanh(math.atanh(med) - 1.96 * se):.2f}, "
                                            f"{math.tanh(math.atanh(med) + 1.96 * se):.2f}]",
                              "range": f"{vals.min():.2f} ({names[lo_pair[0]]}-{names[lo_pair[1]]}) to {vals.max():.2f}",
                              "pairs above chance band": f"{above} of {len(vals)}"})
            signs.append(REPRODUCED if above >= 0.9 * len(vals) and med >= 0.5 else
                         NOT_REPRODUCED if med <= band else INCONCLUSIVE)
        if missing:
            card.missing = missing
        if not signs:
            return card
        card.protocol = (f"Gate-gradient scores on {self.plan.score_sentences} dev sentences per language, "
                         f"normalised per layer, ranked over all {n} heads; one fine-tuned model (English), as Ma "
                         f"et al. rank with the source model. Chance band ±{band:.2f}; the median's interval is "
                         "Fisher's z over the heads.")
        card.measured = "; ".join(f"{r['task']}: median rho {r['median rho']}, range {r['range']}, "
                                  f"{r['pairs above chance band']} pairs above chance" for r in card.rows) + \
            ". Ma et al.: 0.67-0.87 (mBERT POS)."
        card.verdict = REPRODUCED if all(s == REPRODUCED for s in signs) else \
            NOT_REPRODUCED if NOT_REPRODUCED in signs else INCONCLUSIVE
        return card

    def _thirds(self) -> tuple:
        """Per test language of the layer-third re-fine-tuning: the relative change of each third and which
        third hurts most, and whether it hurts distinguishably more than the next."""
        job, res = self.refinetune_result("layers")
        if res is None:
            return job, None, {}
        out = {}
        for lang in self._langs(res):
            t = res["test"][lang]
            base = t["unpruned"]["score"]
            rel = {th: 100 * t["changes"][th]["diff"] / base if base else 0.0 for th in ("bottom", "middle", "top")}
            order = sorted(rel, key=rel.get)  # most negative first
            worst, second = order[0], order[1]
            runs = {th: [self._part_units(job.cfg, th, s, lang) for s in res["seeds"]] for th in (worst, second)}
            readable = all(u is not None for us in runs.values() for u in us)
            gap = paired_bootstrap(runs[second], runs[worst]) if readable else None
            out[lang] = {"rel": rel, "changes": t["changes"], "base": base, "worst": worst, "second": second,
                         "gap": gap}
        return job, res, out

    def card_d(self) -> Card:
        card = Card(
            "d", "Which layers matter depends on the language",
            claim="Budhraja et al. 2021: pruning the bottom, middle or top third of the layers and fine-tuning "
                  "again hurts languages differently; the layers that matter most depend on the language "
                  "(and group by language family).",
            paper="Budhraja et al. 2021", page="retrain",
            rule="Per language, the third whose removal hurts most, and whether it hurts distinguishably more "
                 "than the next (paired bootstrap). Reproduced when at least two languages have different worst "
                 "thirds, each distinguishable; not reproduced when every language has the same worst third and "
                 "most of them distinguishably; otherwise inconclusive.",
            protocol="")
        job, res, per = self._thirds()
        if res is None:
            card.missing = [job.what] if job else ["the plan has no layer-third re-fine-tuning"]
            return card
        rc = job.cfg
        card.protocol = (f"{self.task.upper()}, trained on {rc.finetune.max_train_sentences} English sentences x "
                         f"{rc.finetune.epochs:g} epochs after removing all heads of 4 of 12 layers, "
                         f"{len(res['seeds'])} seed(s), at most {rc.max_sentences} test sentences per language. "
                         "Relative change = (pruned - unpruned) / unpruned.")
        for lang, p in per.items():
            row = {"language": lang, "family": FAMILIES.get(lang, "?")}
            for th in ("bottom", "middle", "top"):
                ch = p["changes"][th]
                row[th] = (f"{p['rel'][th]:+.1f}% [{100 * ch['low'] / p['base']:+.1f}, "
                           f"{100 * ch['high'] / p['base']:+.1f}]") if p["base"] else "-"
            gap = p["gap"]
            row["hurts most"] = p["worst"] + (" *" if gap and gap["distinguishable"] else "")
            card.rows.append(row)
        fams = {}
        for lang, p in per.items():
            fams.setdefault(FAMILIES.get(lang, "?"), []).append(p["rel"])
        for fam, rels in fams.items():
            card.rows.append({"language": f"mean of {len(rels)}", "family": fam,
                              **{th: f"{np.mean([r[th] for r in rels]):+.1f}%" for th in ("bottom", "middle", "top")},
                              "hurts most": min(("bottom", "middle", "top"),
                                                key=lambda th: np.mean([r[th] for r in rels]))})
        sure = {lang: p["worst"] for lang, p in per.items() if p["gap"] and p["gap"]["distinguishable"]}
        worst_all = {p["worst"] for p in per.values()}
        card.measured = ("Worst third per language: " + ", ".join(f"{lang} {p['worst']}" for lang, p in per.items())
                         + f"; distinguishable from the next in {len(sure)} of {len(per)}.")
        if len(set(sure.values())) >= 2:
            card.verdict = REPRODUCED
        elif len(worst_all) == 1 and len(sure) > len(per) / 2:
            card.verdict = NOT_REPRODUCED
        else:
            card.verdict = INCONCLUSIVE
        return card

    def card_e(self) -> Card:
        card = Card(
            "e", "Importance and prunability are weakly linked; middle layers matter most",
            claim="Budhraja et al. 2020: after fine-tuning again, pruning heads at random is about as good as "
                  "pruning the least important ones (at 25-75% of heads), and pruning the middle layers hurts "
                  "most.",
            paper="Budhraja et al. 2020", page="retrain",
            rule="Two parts. Weak link: reproduced when at most a third of (level, language) pairs show importance "
                 "pruning distinguishably better than random after retraining, not reproduced when most do. "
                 "Middle layers: reproduced when the middle third hurts the source language most, "
                 "distinguishably; not reproduced when another third does, distinguishably. The card is "
                 "reproduced when both parts are, not reproduced when either is.",
            protocol="")
        (ij, imp), (rj, rnd) = self.refinetune_result("importance", shares=True), self.refinetune_result("random", shares=True)
        _, lres, per = self._thirds()
        missing = [j.what for j, r in ((ij, imp), (rj, rnd)) if r is None and j is not None]
        if lres is None:
            missing.append("prune layers then re-fine-tune")
        if missing:
            card.missing = missing
            return card
        cells, better, worse = 0, 0, 0
        for label in imp["levels"][1:]:
            diffs, row = [], {"heads pruned": f"{label} of {self.study.head_shape[0] * self.study.head_shape[1]}"}
            for lang in self._langs(imp):
                a = self._part_units(rj.cfg, label, rnd["seeds"][0], lang)
                b = self._part_units(ij.cfg, label, imp["seeds"][0], lang)
                if a is None or b is None:
                    continue
                d = paired_bootstrap(a, b)
                diffs.append(d)
                cells += 1
                better += _sign(d) == 1
                worse += _sign(d) == -1
                if lang == self.source:
                    row[f"importance - random ({lang})"] = diff_text(d)
            row["importance"] = f"{np.mean([imp['test'][l]['levels'][label]['score'] for l in imp['test']]):.1f}"
            row["random"] = f"{np.mean([rnd['test'][l]['levels'][label]['score'] for l in rnd['test']]):.1f}"
            row["languages where importance is better *"] = f"{sum(_sign(d) == 1 for d in diffs)} of {len(diffs)}"
            row["where random is better *"] = f"{sum(_sign(d) == -1 for d in diffs)} of {len(diffs)}"
            card.rows.append(row)
        weak = REPRODUCED if better <= cells / 3 else NOT_REPRODUCED if better > cells / 2 else INCONCLUSIVE
        src = per.get(self.source)
        if src is None:
            middle = INCONCLUSIVE
        else:
            sure = src["gap"] is not None and src["gap"]["distinguishable"]
            middle = (REPRODUCED if src["worst"] == "middle" and sure else NOT_REPRODUCED if sure else INCONCLUSIVE)
        card.rows.append({"heads pruned": "layer thirds", "importance": "", "random": "",
                          f"importance - random ({self.source})":
                              f"hurts most on {self.source}: {src['worst'] if src else '?'}"})
        card.protocol = (f"{self.task.upper()}, the retraining runs of card (a) at "
                         f"{', '.join(imp['levels'][1:])} heads (one seed), mean over the {len(imp['test'])} test "
                         "languages; the middle-layer part uses card (d)'s runs. Budhraja et al. used BERT on GLUE.")
        card.measured = (f"Importance pruning was distinguishably better than random in {better} of {cells} "
                         f"(level, language) pairs and worse in {worse} (weak link: {weak}); on {self.source} the "
                         f"{src['worst'] if src else '?'} third hurts most (middle layers: {middle}).")
        card.verdict = REPRODUCED if weak == middle == REPRODUCED else \
            NOT_REPRODUCED if NOT_REPRODUCED in (weak, middle) else INCONCLUSIVE
        return card

    def card_f(self) -> Card:
        card = Card(
            "f", "GradTS's tau ranking picks helpful auxiliary tasks",
            claim="Ma et al. 2021 (GradTS): auxiliary tasks chosen by the Kendall tau of head-gradient maps "
                  "(GradTS-trial / -thres) beat training with all tasks and with random ones: +0.33% to +17.93% "
                  "on 8 GLUE tasks over the baselines.",
            paper="GradTS (Ma et al. 2021)", page="task_affinity",
            rule="The primary's test metric with the GradTS-trial selection against alone, all tasks, random "
                 "sets of the same size and the bandit's (AUTOSEM stage 1) choice (bootstrap over training seeds "
                 "and random sets, then test sentences, as on the Task affinity page). Reproduced when trial is "
                 "at least as good as all, random and the bandit and distinguishably better than one of them; "
                 "not reproduced when it is distinguishably worse than any; otherwise inconclusive. Costs are "
                 "wall seconds on this machine.",
            protocol="")
        job, found = self._gradts()
        if found is None:
            card.missing = [job.what] if job else ["the plan has no GradTS check"]
            return card
        gplan = self._gradts_plan(job)
        res = found["result"]
        signs = []
        names = {"single": "alone", "all": "all tasks", "random": "random sets", "bandit": "bandit (AUTOSEM)"}
        for v in res["validation"]:
            primary = v["primary"]
            units = {}
            for row in v["rows"]:
                units.setdefault(row["row"], []).append(row["test_units"])
            trial = units["trial"]
            costs = v["costs"]
            for other in ("single", "all", "random", "bandit"):
                d = paired_bootstrap(units[other], trial, resample_seeds=True)
                if other != "single":
                    signs.append(_sign(d))
                sets = aux_sets(v["rows"], other)
                card.rows.append({"primary": primary, "compared with": names[other],
                                  "its auxiliaries": "; ".join(", ".join(a) or "-" for a in sets),
                                  "it scores": ci_text(bootstrap_ci(units[other], resample_seeds=True)),
                                  "its cost (s)": f"{costs[other]['total']:.0f}",
                                  "GradTS-trial": f"{ci_text(bootstrap_ci(trial, resample_seeds=True))} with "
                                                  f"{', '.join(v['trial']['selected']) or 'none'}, "
                                                  f"{costs['trial']['total']:.0f} s",
                                  "trial - it": diff_text(d)})
            card.measured = (f"{primary}: tau ranking " + ", ".join(f"{n} {t:.2f}" for n, t in v["ranking"]) +
                             f"; trial picked {', '.join(v['trial']['selected']) or 'no auxiliary'}, thres "
                             f"{', '.join(v['thres']) or 'none'}.")
        card.protocol = (f"{len(res['units'])} task units ({', '.join(res['units'])}), primary "
                         f"{', '.join(res['primaries'])}; {gplan.note}")
        card.verdict = NOT_REPRODUCED if -1 in signs else REPRODUCED if 1 in signs else INCONCLUSIVE
        return card

    def card_g(self, *, top_percent: float = SHARED_TOP_PERCENT, draws: int = 10000) -> Card:
        card = Card(
            "g", "A few heads are claimed by most tasks",
            claim="He & Choi 2021: forcing each task to keep as few heads as possible, a few heads are kept by "
                  "most tasks ('stem cells').",
            paper="He & Choi 2021", page="shared_heads",
            rule="Heads kept by at least a majority of the tasks under learned pruning (or, until that is "
                 "computed, in the top 10% of their GradTS maps), against the same count for random sets of the "
                 "same size (10,000 draws). Reproduced when more heads are shared than in 95% of random draws; "
                 "not reproduced when no more than the random median; otherwise inconclusive.",
            protocol="")
        job, found = self._gradts()
        if found is None:
            card.missing = [job.what] if job else ["the plan has no GradTS check"]
            return card
        gts = GradTS(self.study, self._gradts_plan(job))
        maps = {}
        for unit in gts.units:
            sc = self._get(gts.score_config(unit))
            if sc is None:
                card.missing = [f"score heads {unit}"]
                return card
            maps[unit] = gradts_map(np.asarray(sc["raw"], dtype=np.float64))
        shared = shared_heads(maps, top_percent=top_percent)
        n_tasks = len(maps)
        most = n_tasks // 2 + 1
        size = shared["count"].size
        k = max(1, int(round(size * top_percent / 100)))
        measured = {"gradient": (shared["count"], k, f"top {top_percent:g}% ({k} heads each)")}
        cells = StemCells(gts)  # learned pruning (He & Choi's protocol), when the Shared heads page computed it
        if not cells.missing():
            res = cells.summary()
            kept = int(round(res["share_kept"] * size))
            measured["learned"] = (np.asarray(res["count"]), kept,
                                   f"learned pruning keeps {kept} ({res['share_kept']:.0%})")
        verdicts = {}
        for how, (count, k_how, share_text) in measured.items():
            observed = int((np.asarray(count) >= most).sum())
            null = _null_claimed(n_tasks, size, k_how, most, draws)
            p = float((np.sum(null >= observed) + 1) / (draws + 1))
            heads = [f"L{l}H{h} ({int(count[l, h])} tasks)" for l, h in zip(*np.nonzero(np.asarray(count) >= most))]
            card.rows.append({"heads by": how, "tasks": n_tasks, "set per task": share_text,
                              "claimed by at least": f"{most} tasks", "heads": observed,
                              "random sets: median [95th percentile]":
                                  f"{np.median(null):.0f} [{np.percentile(null, 95):.0f}]",
                              "p": f"{p:.4f}", "which": ", ".join(heads[:8]) + (" ..." if len(heads) > 8 else "")})
            verdicts[how] = REPRODUCED if observed > np.percentile(null, 95) else \
                NOT_REPRODUCED if observed <= np.median(null) else INCONCLUSIVE
        card.measured = "; ".join(f"{r['heads by']}: {r['heads']} heads in the sets of at least {most} of {n_tasks} "
                                  f"tasks, random sets {r['random sets: median [95th percentile]']}, p = {r['p']}"
                                  for r in card.rows) + "."
        how = "learned" if "learned" in verdicts else "gradient"
        card.protocol = (("Decided by learned pruning (hard-concrete gates with an L0 term, each task's own "
                          "fine-tune continued for one epoch until it keeps half of the heads; He & Choi penalise "
                          "the number of heads instead of fixing it); the gradient top-10% sets are shown beside "
                          "it. " if how == "learned" else
                          "Gradient top-10% heads of each task's own fine-tuned model, not He & Choi's learned "
                          "pruning: the Shared heads page computes learned pruning on one click, and then this "
                          "card is decided by it. ") + f"Tasks: {', '.join(maps)} (POS and NAME in two languages "
                         "are related tasks).")
        card.verdict = verdicts[how]
        return card


def _null_claimed(n_tasks: int, size: int, k: int, most: int, draws: int) -> np.ndarray:
    """Per draw, how many of ``size`` heads are in at least ``most`` of ``n_tasks`` random ``k``-sets."""
    rng = np.random.default_rng(0)
    counts = np.zeros((draws, size), dtype=np.int16)
    for _ in range(n_tasks):  # each task's random k-set: the k smallest of random keys per draw
        counts += (np.argsort(rng.random((draws, size)), axis=1) < k).astype(np.int16)
    return (counts >= most).sum(axis=1)
