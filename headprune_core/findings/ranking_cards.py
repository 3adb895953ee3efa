"""The cards about the head ranking itself, with no retraining (Michel et al. 2019; Ma et al. 2021): masking in
the ranking's order keeps the metric (b1), and languages rank the heads alike, once each ranking's own noise is
taken out at least as alike as the paper's least alike pair (c)."""

from __future__ import annotations

import numpy as np

from headprune_core.findings.card import Card
from headprune_core.methods.inference import Estimate
from headprune_core.methods.similarity import spearman_matrix
from headprune_core.methods.uncertainty import bootstrap_ci, ci_text, run_estimate

PAPER_LOW_RHO = 0.67  # Ma et al. 2021, Figure 1: the least alike language pair of mBERT's POS rankings
PAPER_HIGH_RHO = 0.87  # and the most alike


def _pairs(named: dict) -> list[float]:
    """Spearman's rho of every pair of ``named`` maps."""
    names, rho = spearman_matrix(named)
    return [float(rho[i, j]) for i in range(len(names)) for j in range(i + 1, len(names))]


def spearman_brown(r: float) -> float:
    """The reliability of a map from all the sentences, from the correlation of two halves' maps."""
    return 2 * r / (1 + r) if r > -1 else r


class RankingCards:
    """Cards b1 and c (mixed into :class:`~headprune_core.findings.cards.Findings`)."""

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
                              "unmasked": ci_text(bootstrap_ci(at[0])),
                              "importance order": ci_text(bootstrap_ci(at[k40]))})
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

    def card_c(self) -> Card:
        """Per training seed, each language pair's Spearman corrected for the two languages' own split-half
        reliabilities (same model and seed, and the run's own draw of dev sentences and split), averaged over pairs
        and tasks, minus the paper's low end."""
        card = self._card("c")
        maps: dict[tuple[str, str], dict[int, tuple[np.ndarray, ...]]] = {}
        missing = []
        tasks = [t for t in self.plan.tasks if len(self.plan.task_langs(t)) >= 2]
        for task in tasks:
            for lang in self.plan.task_langs(task):
                jobs, maps[(task, lang)] = self.resampled_maps(task, lang)
                missing += [j.what for j in jobs]
        if not tasks:
            missing.append("the plan needs a task in two languages")
        if missing:
            card.missing = missing
            return card
        seeds = sorted(set.intersection(*(set(m) for m in maps.values())))
        if not seeds:
            card.missing = ["each language's two resampled dev halves from the same training seed"]
            return card
        runs, cross_all, ceiling_all, corrected_all = [], [], [], []
        for s in seeds:
            rel = {key: spearman_brown(_pairs({"1": m[s][1], "2": m[s][2]})[0]) for key, m in maps.items()}
            cross, ceiling = [], []
            for t in tasks:
                langs = list(self.plan.task_langs(t))
                cross += _pairs({lang: maps[(t, lang)][s][0] for lang in langs})
                ceiling += [np.sqrt(max(0.0, rel[(t, a)] * rel[(t, b)])) for i, a in enumerate(langs)
                            for b in langs[i + 1:]]
            corrected = [r / b for r, b in zip(cross, ceiling) if b > 0]  # a pair with no reliability: no ceiling
            if not corrected:
                card.missing = [f"a language pair whose split halves agree at all (training seed {s})"]
                return card
            cross_all.append(float(np.mean(cross)))
            ceiling_all.append(float(np.mean(ceiling)))
            corrected_all.append(float(np.mean(corrected)))
            runs.append(corrected_all[-1] - PAPER_LOW_RHO)
            card.rows.append({"training seed": s, "across languages (one task)": f"{cross_all[-1]:.2f}",
                              "their reliability ceiling (split halves)": f"{ceiling_all[-1]:.2f}",
                              "corrected for reliability": f"{corrected_all[-1]:.2f}",
                              f"minus {PAPER_LOW_RHO:g}": f"{runs[-1]:+.2f}"})
        est = Estimate(tuple(runs))  # each run its own draw of sentences and split: the interval is over runs
        card.decide({"": est})
        floor = self._cross_task_floor({key: {s: m[s][0] for s in seeds} for key, m in maps.items()}, seeds)
        card.numbers = {"cross_language": cross_all, "reliability_ceiling": ceiling_all,
                        "corrected": corrected_all, "cross_task": floor}
        raw = float(np.mean(cross_all))
        where = "below" if raw < PAPER_LOW_RHO else "above" if raw > PAPER_HIGH_RHO else "inside"
        card.measured = (f"Mean Spearman across languages {raw:.2f} raw ({where} the paper's "
                         f"{PAPER_LOW_RHO:g}-{PAPER_HIGH_RHO:g}, mBERT POS, larger dev sets), "
                         f"{np.mean(corrected_all):.2f} corrected for the languages' own split-half reliabilities "
                         f"(ceiling {np.mean(ceiling_all):.2f}); corrected minus {PAPER_LOW_RHO:g}: "
                         f"{card.estimate_text()}."
                         + (f" For scale (not in the rule: another model per task): two tasks in one language "
                            f"{np.mean(floor):.2f}." if floor else ""))
        card.protocol = (f"Gate-gradient scores of each language's dev sentences (at most {self.plan.score_sentences}),"
                         f" normalised per layer, ranked over all heads, from each task's English fine-tune (training "
                         f"seeds {', '.join(map(str, seeds))}), as Ma et al. rank with the source model; "
                         f"{self.model_text}. Each run draws its sentences again: the dev sentences split into random "
                         "halves and each half drawn with replacement, seeded by the training seed; its map is the "
                         "two halves pooled, its reliability the Spearman-Brown of the halves' rho. So the run-to-run "
                         "spread holds the sentence draw and the split as well as training; what it cannot hold is "
                         "how this dev set as a whole differs from another.")
        return card

    def _cross_task_floor(self, maps: dict, seeds: list[int]) -> list[float]:
        """Per seed, the mean Spearman of two tasks' maps in one language (different models: for scale only)."""
        langs = [lang for lang in self.plan.langs if sum((t, lang) in maps for t in self.plan.tasks) >= 2]
        return [float(np.mean([np.mean(_pairs({t: maps[(t, lang)][s] for t in self.plan.tasks if (t, lang) in maps}))
                               for lang in langs])) for s in seeds] if langs else []
