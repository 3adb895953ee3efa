"""The cards whose evidence is prune-then-retrain runs (Ma et al. 2021; Budhraja et al. 2020, 2021): heads or
layers removed, the encoder fine-tuned again with the same training seeds as the unpruned model, every arm
tested on the same sentences. Each statistic is formed within a training run (arms paired by seed) and its
interval comes from :func:`~headprune_core.methods.uncertainty.run_estimate`."""

from __future__ import annotations

import numpy as np

from headprune_core.findings.card import Card, mean_of, relative_cost
from headprune_core.findings.evidence import Retrain
from headprune_core.methods.uncertainty import ci_text, metric_of, run_estimate
from headprune_core.runs.retrain import relative

FAMILIES = {"en": "Germanic", "de": "Germanic", "nl": "Germanic", "es": "Romance", "fr": "Romance",
            "it": "Romance", "pt": "Romance", "tr": "Turkic"}
"""Language families as Budhraja et al. 2021 group them (Germanic, Romance; Turkish is agglutinative)."""
SVO = ("es", "fr", "it", "pt")  # SVO and English-like (Budhraja et al. 2021); en is the source
AGGLUTINATIVE = ("tr",)
SMALL_TEST = 50  # fewer test sentences than this: shown, but too small for a per-language reading
THIRDS = ("bottom", "middle", "top")


def _unpaired(control: str, its: list[int], wanted: list[int]) -> str:
    return (f"the {control} re-fine-tuning trained with the importance run's seeds ({', '.join(map(str, wanted))}) "
            f"to pair them; it has {', '.join(map(str, its))}")


class RetrainCards:
    """Cards a1, a2, b2, b3, d, e1, e2, h and i (mixed into :class:`~headprune_core.findings.cards.Findings`)."""

    def _retrain_protocol(self, ex: Retrain) -> str:
        rc = ex.cfg
        return (f"{ex.task.upper()}, {rc.finetune.setting}-lingual, trained on {rc.finetune.max_train_sentences} "
                f"sentences x {rc.finetune.epochs:g} epochs per run, {len(ex.seeds)} training seeds "
                f"({', '.join(map(str, ex.seeds))}), test sentences per language "
                f"{', '.join(f'{lang} {ex.n_test(lang)}' for lang in ex.langs)}; {self.model_text}.")

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
        est = ex.change(langs, ex.best_pruned)  # k among the pruned levels, picked on dev per run
        card.decide({"": est})
        fixed = {lab: ex.change(langs, lambda s, lab=lab: lab) for lab in ex.levels if lab != "0"}
        for lang in ex.langs:
            t = ex.result["test"][lang]
            row = {"language": lang + (" (source)" if lang == ex.source else ""), "unpruned": ci_text(t["unpruned"]),
                   "per seed, dev-picked k": ", ".join(
                       f"{metric_of(ex.units(ex.best_pruned(s), s, lang)) - metric_of(ex.units('0', s, lang)):+.2f}"
                       for s in ex.seeds)}
            row.update({f"k = {lab} (points)": f"{t['changes'][lab]['diff']:+.2f}" for lab in fixed})
            card.rows.append(row)
        best = ", ".join(f"seed {s}: k = {ex.best_pruned(s)}" for s in ex.seeds)
        card.numbers = {"best_k": {str(s): ex.best_pruned(s) for s in ex.seeds}, "languages": langs,
                        "fixed_k": {lab: e.to_dict() for lab, e in fixed.items()}}
        what = f"{len(langs)} {'target ' if setting == 'cross' else ''}languages"
        card.measured = (f"Dev-picked k (among the pruned levels): {best}. Mean change over {what}, per seed: "
                         f"{', '.join(f'{v:+.2f}' for v in est.runs)}; {card.estimate_text()}. At each fixed k: "
                         + "; ".join(f"k = {lab}: {e.diff:+.2f} [{lo:+.2f}, {hi:+.2f}]" for lab, e in fixed.items()
                                     for lo, hi in [e.interval(card.hypothesis.rule.level)]) + ".")
        levels = ", ".join(lab for lab in ex.levels if lab != "0")
        card.protocol = self._retrain_protocol(ex) + (
            f" k in {{{levels}}}, picked per run on English dev among the pruned levels (Ma et al.: 1..12, one "
            "run each; findings-full tries every k of 1..12).")
        card.notes += self._small_tests(ex)
        return card

    def card_a1(self) -> Card:
        return self._card_a("a1", "cross")

    def card_a2(self) -> Card:
        return self._card_a("a2", "multi")

    # --- (b2, b3, e1) the lowest-ranked heads against a control at the same k, after retraining -------------
    def _vs_control(self, card_id: str, control: str, *, shares: bool = False) -> Card:
        card = self._card(card_id)
        ex, other = self.retrain("importance", shares=shares), self.retrain(control, shares=shares)
        if ex is None or other is None:
            card.missing = [self.retrain_what(s, shares=shares) for s, e in (("importance", ex), (control, other))
                            if e is None]
            return card
        seeds = [s for s in ex.seeds if s in other.seeds]
        if not seeds:
            card.missing = [_unpaired(control, other.seeds, ex.seeds)]
            return card
        levels = [lab for lab in ex.levels if lab != "0" and lab in other.levels]
        langs = ex.langs if shares else ex.targets  # the shares are tested where they were trained
        runs = [{f"{arm}:{lab}:{lang}": (e.test_set(lang), e.units(lab, s, lang))
                 for arm, e in (("imp", ex), ("ctl", other)) for lab in levels for lang in langs} for s in seeds]
        est = run_estimate(runs, lambda m: mean_of([m[f"imp:{lab}:{lang}"] - m[f"ctl:{lab}:{lang}"]
                                                    for lab in levels for lang in langs]))
        card.decide({"": est})
        total = self.study.head_shape[0] * self.study.head_shape[1]

        def mean_at(result, lab):
            return f"{np.mean([result['test'][g]['levels'][lab]['score'] for g in langs]):.1f}"

        for lab in levels:
            card.rows.append({"heads pruned": f"{lab} of {total}",
                              "lowest-ranked": mean_at(ex.result, lab), control: mean_at(other.result, lab),
                              "what": f"mean over {len(langs)} {'' if shares else 'target '}languages and "
                                      f"{len(seeds)} seeds"})
        card.measured = (f"Lowest-ranked minus {control} pruning, mean over {', '.join(levels)} heads and "
                         f"{len(langs)} languages, per seed: {', '.join(f'{v:+.2f}' for v in est.runs)}; "
                         f"{card.estimate_text()}.")
        card.protocol = self._retrain_protocol(ex) + (f" The {control} heads differ per training seed."
                                                      if control == "random" else "")
        return card

    def card_b2(self) -> Card:
        return self._vs_control("b2", "reverse")

    def card_b3(self) -> Card:
        return self._vs_control("b3", "random")

    def card_e1(self) -> Card:
        return self._vs_control("e1", "random", shares=True)

    # --- layer thirds (Budhraja et al. 2020, 2021) ------------------------------------------------------------
    def _thirds_cost(self, ex: Retrain, seed: int, langs) -> dict:
        return {f"{lab}:{lang}": (ex.test_set(lang), ex.units(lab, seed, lang)) for lab in ("0", *THIRDS)
                for lang in langs}

    def _thirds_rows(self, card: Card, ex: Retrain) -> None:
        for lang in ex.langs:
            t = ex.result["test"][lang]
            base = t["unpruned"]["score"]
            row = {"language": lang, "family": FAMILIES.get(lang, "?"), "unpruned": ci_text(t["unpruned"])}
            for th in THIRDS:
                row[f"{th}: drop (points)"] = f"{-t['changes'][th]['diff']:+.1f}"
                row[f"{th}: cost %"] = f"{-relative(t['changes'][th], base)['rel']:+.1f}" if base else "-"
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

        chance = {lang: ex.chance(lang) for lang in svo + agg}

        def top_minus_bottom(m, lang, share=False):  # drops in points, or in % of the gap to chance
            diff = (m[f"0:{lang}"] - m[f"top:{lang}"]) - (m[f"0:{lang}"] - m[f"bottom:{lang}"])
            return 100 * diff / max(m[f"0:{lang}"] - chance[lang], 1e-9) if share else diff

        runs = [self._thirds_cost(ex, s, svo + agg) for s in ex.seeds]
        est = {scale: run_estimate(runs, lambda m, sh=share: mean_of([top_minus_bottom(m, lang, sh) for lang in svo])
                                   - mean_of([top_minus_bottom(m, lang, sh) for lang in agg]))
               for scale, share in zip(card.hypothesis.parts, (False, True))}
        card.decide(est)
        self._thirds_rows(card, ex)
        floors = ", ".join(f"{lang} {chance[lang]:.0f}%" for lang in svo + agg)
        card.measured = (f"(top - bottom drop) in {', '.join(svo)} minus in {', '.join(agg)}: "
                         f"{card.estimate_text()}. Chance (the most frequent tag's share of the test words): "
                         f"{floors}.")
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
            runs, lambda m, o=other: relative_cost(m[f"0:{src}"], m[f"middle:{src}"])
            - relative_cost(m[f"0:{src}"], m[f"{o}:{src}"])) for other in ("bottom", "top")}
        card.decide(est)
        self._thirds_rows(card, ex)
        card.measured = f"On {src}: {card.estimate_text()}."
        card.protocol = self._retrain_protocol(ex) + " Both differences must hold (an intersection-union test)."
        return card

    # --- (h, i) random shares and layer pairs (Budhraja et al.) ---------------------------------------------
    def card_h(self) -> Card:
        card = self._card("h")
        rnd = self.retrain("random", shares=True)
        if rnd is None:
            card.missing = [self.retrain_what("random", shares=True)]
            return card
        levels = [lab for lab in rnd.levels if lab != "0"]
        src, targets = rnd.source, rnd.targets
        if not targets:
            card.missing = [f"the random re-fine-tuning by shares tests only {src}: the card compares target "
                            "languages' drops with the source's"]
            return card
        runs = [{f"{lab}:{lang}": (rnd.test_set(lang), rnd.units(lab, s, lang)) for lab in ("0", *levels)
                 for lang in rnd.langs} for s in rnd.seeds]

        def gap(m):  # drops in points: a target with a lower baseline would lose a larger share of it
            return mean_of([mean_of([m[f"0:{t}"] - m[f"{lab}:{t}"] for t in targets])
                            - (m[f"0:{src}"] - m[f"{lab}:{src}"]) for lab in levels])

        est = run_estimate(runs, gap)
        card.decide({"": est})
        for lab in levels:
            card.rows.append({"heads pruned": lab,
                              f"drop in {src} (points)": f"{-rnd.result['test'][src]['changes'][lab]['diff']:+.1f}",
                              "mean drop in targets (points)":
                                  f"{-np.mean([rnd.result['test'][t]['changes'][lab]['diff'] for t in targets]):+.1f}"})
        card.measured = (f"Targets' drop minus {src}'s (points), mean over {', '.join(levels)} heads, per seed: "
                         f"{', '.join(f'{v:+.2f}' for v in est.runs)}; {card.estimate_text()}.")
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
        est = run_estimate(runs,
                           lambda m: mean_of([relative_cost(m[f"0:{src}"], m[f"{lab}:{src}"]) for lab in adjacent])
                           - mean_of([relative_cost(m[f"0:{src}"], m[f"{lab}:{src}"]) for lab in apart]))
        card.decide({"": est})
        card.measured = f"Adjacent minus apart pairs on {src}: {card.estimate_text()}."
        card.protocol = self._retrain_protocol(ex)
        return card
