"""The Findings cards' hypotheses, stated before the data: one small declarative object per card, which the
Findings page, ``headprune findings`` and the tests all read.

Each :class:`Hypothesis` quotes the paper's claim with its number and baseline (``docs/papers.md`` says where each
number comes from), says what is tested here, the statistic, the control that could fail it, and the
:class:`~headprune_core.methods.inference.Rule` that decides: superiority against the paper's effect, or
equivalence within a margin. Where a paper gives no number, the effect is a stated *smallest effect of interest*
and the card says so. Every statistic is oriented so that the claim says it is positive (or, for an
equivalence, small).
"""

from __future__ import annotations

from dataclasses import dataclass

from headprune_core.methods.inference import Rule

POINTS = "points"
RELATIVE = "% of unpruned"


@dataclass(frozen=True)
class Hypothesis:
    """One card's claim and test. ``paper_effect`` is the paper's number in words (what the minimum detectable
    effect is set against); ``parts`` > 1 means the claim is several differences that must all hold (an
    intersection-union test: each part decided by ``rule``, reproduced only when every part is), or with
    ``scales``, one difference on several scales: decided only where every scale gives the same verdict."""

    id: str
    title: str
    paper: str
    claim: str
    hypothesis: str
    statistic: str
    control: str
    rule: Rule
    paper_effect: str
    page: str
    parts: tuple[str, ...] = ()
    scales: bool = False

    def split(self, n: int) -> int:
        """By how much a part's *not reproduced* divides alpha (:func:`~headprune_core.methods.inference.decide`):
        the parts of a claim that fails when any part does share it; scales of one claim must all agree, so
        each keeps the whole."""
        return 1 if self.scales else max(1, n)

    def to_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "paper": self.paper, "claim": self.claim,
                "hypothesis": self.hypothesis, "statistic": self.statistic, "control": self.control,
                "rule": self.rule.to_dict(), "paper_effect": self.paper_effect, "page": self.page,
                "parts": list(self.parts), "scales": self.scales}


_NO_NUMBER = "no number in what we could read of the paper; this is the smallest effect of interest"

HYPOTHESES: tuple[Hypothesis, ...] = (
    Hypothesis(
        "a1", "Pruning the lowest-ranked heads, then retraining, helps across languages",
        paper="Ma et al. 2021",
        claim="Ma et al. 2021 (Table 2): pruning up to 12 of the lowest-ranked heads (gradient ranking on the "
              "source language; the best of k = 1..12) and fine-tuning again improved POS in 88 of 96 language "
              "pairs; average F1 gain in the cross-lingual setting +0.91 (mBERT) and +1.78 (XLM-R) over the "
              "unpruned model.",
        hypothesis="Fine-tuned on English without its k lowest-ranked heads (k picked on English dev among the "
                   "pruned levels, as Ma et al. pick among 1..12), the model scores higher in the target "
                   "languages than the unpruned model trained the same way.",
        statistic="Per training seed, the mean over target languages of (pruned at the dev-picked k) - "
                  "(unpruned), in points; its mean over seeds. The change at each fixed k is shown beside it.",
        control="The unpruned model fine-tuned with the same seed and data, on the same test sentences.",
        rule=Rule("superiority", effect=0.91),
        paper_effect="+0.91 F1 (mBERT POS, cross-lingual mean)", page="retrain"),
    Hypothesis(
        "a2", "... and in the multilingual setting",
        paper="Ma et al. 2021",
        claim="Ma et al. 2021 (Table 2): in the multilingual setting (trained on every language) the same "
              "pruning gave an average POS F1 gain of +0.15 (mBERT) and +0.17 (XLM-R) over the unpruned model.",
        hypothesis="Fine-tuned on all languages without its k lowest-ranked heads (k picked on English dev among "
                   "the pruned levels), the model scores higher on average over the languages than the unpruned "
                   "model trained the same way (the paper's number is that average; whether every language gains "
                   "is not tested here).",
        statistic="Per training seed, the mean over languages of (pruned at the dev-picked k) - (unpruned), in "
                  "points; its mean over seeds.",
        control="The unpruned model fine-tuned on the same multilingual data with the same seed.",
        rule=Rule("superiority", effect=0.15),
        paper_effect="+0.15 F1 (mBERT POS, multilingual mean)", page="retrain"),
    Hypothesis(
        "b1", "Masking the least important 40% of heads keeps the metric (no retraining)",
        paper="Michel et al. 2019",
        claim="Michel et al. 2019 (section 4.2): heads removed at test time in order of importance (|gradient| "
              "of a head gate), with no retraining: \"prune up to 20% and 40% of heads from WMT and BERT "
              "(respectively), without incurring any noticeable negative impact\".",
        hypothesis="With its least important heads masked up to 40% of all heads, in importance order and "
                   "without retraining, the fine-tuned model scores within 1 point of itself unmasked on the "
                   "source language.",
        statistic="Per fine-tuning seed: (masked at the curve point nearest 40% of the heads) - (unmasked), "
                  "source-language test, in points.",
        control="The same model unmasked on the same sentences; random-order masks at the same k are shown "
                "beside it as a check that the order matters.",
        rule=Rule("equivalence", margin=1.0),
        paper_effect="no noticeable change (margin: 1 point)", page="prune"),
    Hypothesis(
        "b2", "After retraining, pruning the top-ranked heads hurts more than the lowest-ranked",
        paper="Ma et al. 2021",
        claim="Ma et al. 2021 (Table 5, mBERT, English source): pruning the highest-ranked heads instead of the "
              "lowest-ranked harmed POS in 15 of 16 experiments (cross-lingual median -0.70 F1, mean -3.44) and "
              "NER in 14 of 16, where the lowest-ranked heads gave +0.55 (POS).",
        hypothesis="At the same k, the model retrained without its lowest-ranked heads scores higher in the "
                   "target languages than the one retrained without its top-ranked heads.",
        statistic="Per training seed, the mean over k and target languages of (lowest-ranked pruned) - "
                  "(top-ranked pruned), in points.",
        control="Pruning the top-ranked heads, same k, seed and data.",
        rule=Rule("superiority", effect=1.2),
        paper_effect="+1.2 F1 (+0.55 vs the median -0.70, mBERT POS cross-lingual)", page="retrain"),
    Hypothesis(
        "b3", "After retraining, pruning the lowest-ranked heads beats pruning random ones",
        paper="Ma et al. 2021",
        claim="Ma et al. 2021 (Table 5, mBERT, English source): \"pruning random attention heads also has mainly "
              "negative effects\": POS cross-lingual mean -0.64 F1 (one random draw, seed 42), where the "
              "lowest-ranked heads gave +0.55.",
        hypothesis="At the same k, the model retrained without its lowest-ranked heads scores higher in the "
                   "target languages than the one retrained without random heads.",
        statistic="Per training seed (each with its own random heads), the mean over k and target languages of "
                  "(lowest-ranked pruned) - (random pruned), in points.",
        control="Pruning as many random heads, a different draw per seed.",
        rule=Rule("superiority", effect=1.19),
        paper_effect="+1.19 F1 (+0.55 vs -0.64, mBERT POS cross-lingual)", page="retrain"),
    Hypothesis(
        "c", "Languages rank the heads alike",
        paper="Ma et al. 2021",
        claim="Ma et al. 2021 (Figure 1): Spearman's rho between the head rankings of different languages, POS: "
              "mBERT 0.67-0.87, XLM-R 0.94-0.97 (NER mBERT 0.38-0.87).",
        hypothesis="For one task and one fine-tuned model, two languages rank the heads at least as alike as the "
                   "least alike language pair Ma et al. report for mBERT POS (rho 0.67), once each ranking's own "
                   "noise is taken out: the pairs' Spearman corrected for the two languages' split-half "
                   "reliabilities is above 0.67.",
        statistic="Per fine-tuning seed: the mean over language pairs (and tasks) of rho(language 1, language 2) / "
                  "sqrt(reliability 1 x reliability 2) - 0.67, each reliability the Spearman-Brown corrected rho of "
                  "the maps from two halves of that language's dev sentences, same model and seed; each run draws "
                  "its dev sentences and halves again (random halves, each drawn with replacement) and its map is "
                  "the halves pooled (the raw rho is shown beside it).",
        control="The same model's own reliability: each language's two dev halves (a language with itself), which "
                "rules out reading noisy rankings as languages that differ. Two tasks in one language are shown "
                "for scale only (different models per task).",
        rule=Rule("superiority", effect=0.1, unit="rho above 0.67"),
        paper_effect="rho 0.67-0.87 for mBERT POS: the middle of that range, 0.77, is +0.10 above its low end",
        page="importance"),
    Hypothesis(
        "d", "The top layers matter for English-like languages, the bottom for Turkish",
        paper="Budhraja et al. 2021",
        claim="Budhraja et al. 2021 (abstract; mBERT, XNLI): \"the top layers ... encode important information for "
              "languages similar to English (SVO) while the bottom layers ... are particularly important for "
              "agglutinative and low-resource languages.\"",
        hypothesis="Removing the top third of the layers, rather than the bottom third, costs the SVO target "
                   "languages (es, fr, it, pt) more than it costs Turkish, on two scales that must agree: points, "
                   "and the share of each language's gap between the unpruned model and chance (Turkish sits near "
                   "its floor, so a drop in points alone can mislead).",
        statistic="Per training seed: (drop from removing the top third - drop from removing the bottom third) "
                  "averaged over es, fr, it, pt, minus the same for Turkish; drops from unpruned, in points; and "
                  "the same with each language's drops divided by its gap between the unpruned model and chance "
                  "(the share of its test words the most frequent tag takes), in % of that gap.",
        control="The same two layer cuts in Turkish (the interaction), unpruned model with the same seed; "
                "decided only where both scales give the same verdict, else inconclusive, saying so.",
        rule=Rule("superiority", effect=2.0, unit="points or % of the gap to chance"),
        paper_effect=f"2 points, or 2% of the gap to chance ({_NO_NUMBER})", page="retrain",
        parts=("points", "% of the gap to chance"), scales=True),
    Hypothesis(
        "e1", "After retraining, random pruning is about as good as importance pruning",
        paper="Budhraja et al. 2020",
        claim="Budhraja et al. 2020 (abstract; BERT on GLUE, pruned then fine-tuned): \"a large fraction of the "
              "attention heads can be randomly pruned with limited effect on accuracy\"; no advantage in pruning "
              "by importance.",
        hypothesis="Retrained without half of the heads (25, 50 and 75% in findings-full), random heads and "
                   "least-important heads give scores within 1 point of each other.",
        statistic="Per training seed (each with its own random heads): the mean over shares and languages of "
                  "(least-important pruned) - (random pruned), in points.",
        control="Importance pruning of the same share, same seed and data.",
        rule=Rule("equivalence", margin=1.0),
        paper_effect="no advantage (margin: 1 point)", page="retrain"),
    Hypothesis(
        "e2", "Middle layers matter most",
        paper="Budhraja et al. 2020",
        claim="Budhraja et al. 2020 (abstract; BERT on GLUE): \"strategies that avoid pruning middle layers and "
              "consecutive layers perform better\".",
        hypothesis="Removing the middle third of the layers, then retraining, costs the source language more than "
                   "removing the bottom third and more than removing the top third.",
        statistic="Per training seed: cost(middle) - cost(bottom) and cost(middle) - cost(top), source "
                  "language; cost = relative drop from unpruned, in %.",
        control="Removing the bottom or top third instead, same seed and data.",
        rule=Rule("superiority", effect=2.0, unit=RELATIVE),
        paper_effect=f"2% of unpruned ({_NO_NUMBER})", page="retrain",
        parts=("middle - bottom", "middle - top")),
    Hypothesis(
        "f1", "GradTS-trial picks better auxiliary tasks than AUTOSEM",
        paper="GradTS (Ma et al. 2021)",
        claim="GradTS (abstract): \"Compared to AUTOSEM, a strong baseline method, GradTS improves the "
              "performance of MT-DNN ... from 0.33% to 17.93% on 8 NLU tasks in the GLUE benchmarks\" (trial is "
              "compared with AUTOSEM's first phase, task selection).",
        hypothesis="The primary task trained with GradTS-trial's auxiliaries scores higher than with the "
                   "auxiliaries the bandit (AUTOSEM stage 1) chose.",
        statistic="Per training seed: (with trial's auxiliaries) - (with the bandit's), primary test, as % of "
                  "the bandit's score.",
        control="AUTOSEM's stage 1 (Thompson-sampling bandit) on the same units, seeds and training.",
        rule=Rule("superiority", effect=0.33, unit="% of AUTOSEM"),
        paper_effect="+0.33% to +17.93% over AUTOSEM (the low end)", page="task_affinity"),
    Hypothesis(
        "f2", "GradTS-thres picks better auxiliary tasks than AUTOSEM",
        paper="GradTS (Ma et al. 2021)",
        claim="GradTS (abstract): +0.33% to +17.93% over AUTOSEM on 8 GLUE tasks; GradTS-thres keeps the tasks "
              "whose tau with the primary is above a threshold (0.6 for base models).",
        hypothesis="The primary task trained with GradTS-thres's auxiliaries scores higher than with the bandit's.",
        statistic="Per training seed: (with thres's auxiliaries) - (with the bandit's), primary test, as % of the "
                  "bandit's score.",
        control="AUTOSEM's stage 1 (Thompson-sampling bandit) on the same units, seeds and training.",
        rule=Rule("superiority", effect=0.33, unit="% of AUTOSEM"),
        paper_effect="+0.33% to +17.93% over AUTOSEM (the low end)", page="task_affinity"),
    Hypothesis(
        "f3", "GradTS-fg's filtered examples beat AUTOSEM",
        paper="GradTS (Ma et al. 2021)",
        claim="GradTS (abstract): +0.33% to +17.93% over AUTOSEM on 8 GLUE tasks; GradTS-fg keeps the auxiliary "
              "examples whose head map correlates with the primary's (compared with full AUTOSEM).",
        hypothesis="The primary task trained with GradTS-fg's examples scores higher than with the bandit's "
                   "auxiliaries.",
        statistic="Per training seed: (with fg's examples) - (with the bandit's auxiliaries), primary test, as % "
                  "of the bandit's score.",
        control="AUTOSEM's stage 1 (Thompson-sampling bandit) on the same units, seeds and training.",
        rule=Rule("superiority", effect=0.33, unit="% of AUTOSEM"),
        paper_effect="+0.33% to +17.93% over AUTOSEM (the low end)", page="task_affinity"),
    Hypothesis(
        "f4", "GradTS takes less compute than AUTOSEM's first stage",
        paper="GradTS (Ma et al. 2021)",
        claim="GradTS (abstract): \"GradTS costs on average 21.32% less time than AUTOSEM with comparable GPU "
              "consumption\" (8 GLUE tasks).",
        hypothesis="Choosing the auxiliaries with GradTS-trial and training the final model takes fewer optimizer "
                   "steps than AUTOSEM's first stage (the bandit's search, at the GradTS plan's budget of rounds: "
                   "30 in the findings preset, where AutoSeM runs about 200) and its final model; its second stage "
                   "(mixing ratios) is not run. Wall time at one thread, the paper's measure, is shown beside.",
        statistic="Per training seed: (bandit's steps - trial's steps) / bandit's steps, in % (choose + train, "
                  "optimizer steps from the runs' logs: wall time on shared cores moves by about 31% from run to "
                  "run).",
        control="AUTOSEM's stage 1 search (at the plan's bandit budget) and final training, same units and seeds.",
        rule=Rule("superiority", effect=21.32, unit="% of AUTOSEM's steps"),
        paper_effect="21.32% less time than AUTOSEM", page="task_affinity"),
    Hypothesis(
        "g", "A few heads are claimed by most tasks",
        paper="He & Choi 2021",
        claim="He & Choi 2021 (abstract; BERT, OntoNotes POS, NER, DEP, CON, SRL): forcing each task to use as "
              "few heads as possible, \"a certain set of attention heads get claimed by most tasks\" (3 runs per "
              "task in their code).",
        hypothesis="More heads are among the most important of a majority of at least 5 distinct tasks than by "
                   "chance, when each task keeps its own number of heads with its own layer profile, and than in "
                   "the same tasks' models trained on shuffled labels (so not only the encoder's shape).",
        statistic="Per run (each task's gradient map from its own single-task model, the tasks of a run spread "
                  "over the training seeds; a task in two languages counted once): heads in the top 10% of a "
                  "majority of the tasks, minus the mean of that count under the null, and minus that count in the "
                  "same tasks' shuffled-label models of the same seeds, in heads.",
        control="Two, both to be beaten: a null, each task's top heads permuted within their layers (its count and "
                "layer profile kept); and a control map from the same encoder, each task's model trained the same "
                "way on its labels shuffled (what every task's map inherits from the encoder and the training, "
                "without the task). Ceiling: the same count when one task retrained under as many seeds stands in "
                "for the tasks, and one task's overlap with itself from run to run. He & Choi's interference "
                "(card j) beside it.",
        rule=Rule("superiority", effect=1.0, unit="heads"),
        parts=("beyond the layer null", "beyond the shuffled-label control"),
        paper_effect=f"1 head beyond chance ({_NO_NUMBER})", page="shared_heads"),
    Hypothesis(
        "h", "Pruning hurts cross-lingual transfer more than the source language",
        paper="Budhraja et al. 2021",
        claim="Budhraja et al. 2021 (abstract; mBERT): \"For the crosslingual task XNLI, we report higher drops in "
              "accuracy with pruning indicating lower robustness in crosslingual transfer.\"",
        hypothesis="Retrained on English without half of the heads at random (25-75% in findings-full), the "
                   "target languages lose more, relative to unpruned, than English does.",
        statistic="Per training seed: (mean drop over target languages) - (drop in English), drops from "
                  "unpruned in points, averaged over the shares (a relative drop would be larger for a target "
                  "with a lower baseline from the scale alone).",
        control="The source language, same pruned models.",
        rule=Rule("superiority", effect=1.0),
        paper_effect=f"1 point ({_NO_NUMBER})", page="retrain"),
    Hypothesis(
        "i", "Consecutive layers cannot be pruned together",
        paper="Budhraja et al. 2020",
        claim="Budhraja et al. 2020 (abstract; BERT on GLUE): \"strategies that avoid pruning middle layers and "
              "consecutive layers perform better\".",
        hypothesis="Removing two adjacent layers, then retraining, costs more than removing two layers apart; "
                   "the same layers are used in both arms, so their position cancels.",
        statistic="Per training seed: mean cost of the adjacent pairs - mean cost of the apart pairs (same "
                  "layers), source language; cost = relative drop from unpruned, in %.",
        control="The same layers removed in pairs that are not adjacent, same seed and data.",
        rule=Rule("superiority", effect=1.0, unit=RELATIVE),
        paper_effect=f"1% of unpruned ({_NO_NUMBER})", page="retrain"),
    Hypothesis(
        "j", "Training with all the tasks scores below training alone",
        paper="He & Choi 2021",
        claim="He & Choi 2021 (abstract): multi-task learning of POS, NER, DEP, CON and SRL on OntoNotes shows a "
              "\"deficiency over single-task learning\".",
        hypothesis="The primary task trained together with every other task unit scores lower than trained alone.",
        statistic="Per training seed: (alone) - (with all the tasks), primary test, in points.",
        control="The primary trained alone with the same seed and data.",
        rule=Rule("superiority", effect=1.0),
        paper_effect=f"1 point ({_NO_NUMBER})", page="task_affinity"),
)

BY_ID = {h.id: h for h in HYPOTHESES}


def hypothesis(card_id: str) -> Hypothesis:
    """The hypothesis of card ``card_id``; an unknown id fails listing the known ones."""
    if card_id not in BY_ID:
        raise KeyError(f"unknown findings card {card_id!r}; known: {', '.join(BY_ID)}")
    return BY_ID[card_id]
