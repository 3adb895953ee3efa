"""The dashboard's prose: page introductions, the "what the papers found / what you see here" captions, and the
longer chart and table captions, in one place so that pages fit on a screen and the wording is read and edited
together. Constants for fixed texts; small functions taking the numbers for the formatted ones. Plain Python,
no Streamlit: pages pass these strings to ``st.markdown`` / ``st.caption``.

>>> from headprune_app import captions
>>> captions.jaccard_caption(0.31, 2, 12, 0.09)
'|A ∩ B| / |A ∪ B| of two top sets, clustered. Off-diagonal mean 0.31 (two random sets of 2 of 12: about 0.09).'

"""

from __future__ import annotations

from collections.abc import Mapping

# --- Overview ---------------------------------------------------------------------------------------------------

OVERVIEW = (
    "Which attention heads of a multilingual encoder does a task need, and are they the same in every "
    "language? headprune fine-tunes the encoder on a task in one language, **scores every head's importance** "
    "in each language, **prunes** heads (least important first, or by another language's ranking, at random, "
    "by whole layers, or by hand) and **evaluates** what is left.\n\n"
    "- **Head importance**: layer × head maps per language, how similar the languages' rankings are, where in "
    "the stack importance sits.\n"
    "- **Prune & evaluate**: choose k heads to remove and see the metric, the per-tag report, the curves of all "
    "strategies, and the size and speed of the physically pruned model.\n"
    "- **Prune & retrain**: remove heads, then fine-tune again (Ma et al.; Budhraja et al.), tested in every "
    "language against the unpruned model, with intervals.\n"
    "- **Head inspector**: tag your own sentence with and without the mask; look at one head's attention.\n"
    "- **Findings**: the papers' claims checked on this model, each with numbers, intervals and a verdict.\n"
    "- **Runs**: what is in the cache; delete entries; launch a whole study.")
COMPUTE_TIME = "Fine-tuning me5-small takes a few minutes on a CPU; scoring and evaluation seconds per language."


def overview_status(plan_name: str, task: str, setting: str, train_langs, langs, method: str) -> str:
    """What the Overview's status table is about (``task`` as its label)."""
    return (f"Study plan **{plan_name}**, task {task}, {setting}-lingual setting, fine-tuned on "
            f"{'+'.join(train_langs)}, languages {', '.join(langs)}, method {method}. Nothing is computed until "
            "you press the button.")


# --- Head importance ----------------------------------------------------------------------------------------------

IMPORTANCE = (
    "**What the papers found.** Ma et al. 2021: gradient importance ranks heads alike across languages "
    "(mBERT POS Spearman 0.67-0.87, XLM-R 0.94-0.97), and raw importance sits in the lower layers. **What "
    "you see here.** This model's maps per language, ranked on each language's dev sentences with the "
    "source-language model, and their Spearman correlations against the chance band of random rankings.")


def spearman_caption(n_heads: int, band: float) -> str:
    """Below the languages' Spearman matrix: what it is, and the chance band of ``n_heads`` random rankings."""
    return (f"Spearman correlation of the languages' rankings of all {n_heads} heads, ordered by "
            "average-linkage clustering (similar languages side by side). Chance band: two random "
            f"rankings of {n_heads} heads give a rho within ±{band:.2f} 95% of the time; values "
            "in parentheses are inside it. Ma et al. 2021 found 0.67-0.87 for mBERT POS and 0.94-0.97 "
            "for XLM-R.")


LAYER_PROFILE = ("Share of each language's raw (unnormalised) importance per layer: per-layer normalisation would "
                 "hide it.")


# --- Prune & evaluate ---------------------------------------------------------------------------------------------

PRUNE = (
    "**What the papers found.** Michel et al. 2019: many heads can be switched off at test time with "
    "little loss, least important first; Ma et al. 2021: the same ranking transfers across languages "
    "(prune a target by the source's ranking). **What you see here.** Heads switched off without "
    "retraining (for pruning then retraining see Prune & retrain), on this language's test sentences; "
    "curves carry 95% bootstrap intervals over sentences.")
RANK_LANG_HELP = (
    "Prune by this language's head ranking. Cross-lingual: the source's by default (zero-shot has no target "
    "labels, as in Ma et al.); the target's own ranking is the comparison.")
LEARNED_HELP = (
    "A learned-pruning run continues this fine-tune for one epoch with a hard-concrete gate on every head and an "
    "L0 term until it removes this share (Louizos et al. 2018; Voita et al. 2019; He & Choi 2021).")
K_HELP = "Starts at 0 (the cached unpruned evaluation); each new k is evaluated once, then cached."
CHANGE_HELP = (
    "The change with its 95% paired-bootstrap interval over the test sentences; grey when the interval includes "
    "0 (not distinguishable from no change).")
GRID = "Click a square to toggle that head (the strategy becomes custom)."
MEASURE = "Removes the pruned heads for real (a copy; the shared model is untouched) and times both models."
PRUNED_ZIP_HELP = ("Built when you click (a few seconds). Load it with "
                   "headprune_core.encoders.pruned.load_pruned().")


def learned_k_help(removed: int) -> str:
    return f"Starts at the learned set ({removed} heads removed); other k prune by the learned gates."


def curves_caption(n_random_seeds: int) -> str:
    """Below the prune page's curves of every strategy."""
    return ("Bands: 95% bootstrap intervals over the test sentences (random: of the mean over "
            f"{n_random_seeds} draws). The y-axis spans the values, not 0-100, so a drop of a "
            "point or two looks steep: read the axis.")


def learned_model_note(kept: int, score: str, change: str) -> str:
    """The learned-pruning model's own result (``score`` and ``change`` as text) beside the switched-off heads."""
    return (f"The learned-pruning model itself (fine-tuned on with its gates, {kept} heads kept): {score}, "
            f"{change} vs the unpruned model. Above, the same heads are switched off in the model fine-tuned "
            "without gates.")


def speed_caption(batch_shape, device: str, limit: float) -> str:
    """Below the size and latency metrics of the physically pruned model."""
    return (f"One forward pass of a batch of shape {batch_shape} on {device}, measured now on this machine. FLOP "
            f"limit for this mask at {batch_shape[1]} tokens: {limit:.2f}x (removing heads removes their "
            "projections and attention scores only; embeddings and FFN stay, and embeddings hold most of a "
            "multilingual model's parameters).")


ABOVE_FLOP_LIMIT = (
    "Measured above the FLOP limit: the heads' reshapes, softmax and memory traffic take a larger share of the "
    "time than of the FLOPs at this size (see bench/RESULTS.md, 'Physical pruning').")

# --- Prune & retrain ----------------------------------------------------------------------------------------------

RETRAIN = (
    "**What the papers found.** Ma et al. 2021 removed the k lowest-ranked heads (k = 1..12, ranked on the "
    "source language's dev set), fine-tuned again, picked k on dev, and improved cross-lingual NER and POS in most "
    "language pairs; removing top-ranked heads hurt. Budhraja et al. 2020/2021 found random pruning about as good "
    "as importance pruning after fine-tuning, and that which layer third matters depends on the language. "
    "**What you see here.** The same protocol on this model and data: each level is a new fine-tuning of the "
    "pruned encoder, tested in every language; intervals are 95% bootstrap over test sentences (the mean of the "
    "training seeds where there are several). Prune & evaluate, by contrast, switches heads off without "
    "retraining.")
THIRDS = ("Change relative to the unpruned model, grouped by family (Germanic en/de/nl, Romance es/fr/it/pt, "
          "Turkic tr); error bars: paired 95% intervals.")
LEVELS = "Paired differences in points [95% interval]; * = distinguishable from 0."
NO_RETRAIN = ("No prune-then-retrain run of this model and task is cached yet. The Findings page computes the "
              "papers' set in one click; or start one below.")
LEVELS_HELP = ("Numbers of heads, e.g. 1,2,...,12 (Ma et al.) or 36,72,108 (25/50/75%); 0 (unpruned) is always "
               "included.")


def retrain_caption(dev_lang: str) -> str:
    """Below the test metric per language after pruning and fine-tuning again."""
    return ("Test metric per language after pruning and fine-tuning again (error bars: 95% intervals); dashed: "
            f"{dev_lang} dev, which picks k. The y-axis spans the values, not 0-100: a drop of a point "
            "looks large; read the intervals.")


# --- Head inspector -----------------------------------------------------------------------------------------------

INSPECTOR = (
    "**What the papers found.** Pruned heads matter little to the metric overall (Michel et al. 2019), "
    "but single heads can still track syntax or positions (Voita et al. 2019). **What you see here.** One "
    "sentence tagged with and without the current mask, and one head's attention pattern over its "
    "sub-word pieces, special tokens (`<s>`, `</s>`) included.")
NO_MASK = ("No heads are pruned yet for this model and task: choose a mask on *Prune & evaluate*; until then "
           "only the full model's tags are shown.")
ATTENTION = "Rows: the token attending; columns: the token attended to (sub-word pieces, with special tokens)."


def pruned_head_note(layer: int, head: int) -> str:
    return (f":orange[Layer {layer}, head {head} is pruned in the current mask: its output is switched off, "
            "but its pattern is still shown.]")


# --- Findings -----------------------------------------------------------------------------------------------------

FINDINGS = (
    "What the papers behind headprune found, checked on the model you run here. Each card states, before the "
    "data, the paper's claim with its number and baseline, the hypothesis tested here, the statistic, the "
    "control that could fail it and the rule; then what this model and data give over **training runs** (the "
    "unit of replication), and the **verdict**: controlled across the whole page (Holm's procedure over every "
    "card's one-sided tests, 2.5% per statement), with each card's own verdict from its 95% interval beside it. "
    "A verdict is about this model, these languages and this much data: *not reproduced* means *smaller here "
    "than the paper's*, not a refutation of the paper; *the other way* means the interval lies wholly opposite "
    "the claim; *inconclusive* says why the data cannot tell.")
CALIBRATION = (
    "**How often each rule is wrong.** Each card's rule, run on 1,000 simulated data sets drawn per test sentence "
    "around the card's own sizes (its training runs, test sentences, and run, sentence and run-by-sentence "
    "spreads, each drawn 0.5x to 3x the measured one, with heavy tails), with a planted truth: the claim false at "
    "its boundary, the paper's effect, the opposite. Each rate is a one-sided error of the card's own verdict "
    "(goal 2.5%; 3.5% over the staged design's looks). `headprune findings --format json` gives the same "
    "numbers.")
CARD_FIGURE = ("The card's estimate (per part) with its interval, each training run as a grey ring, 0 and the "
               "paper's effect (dashed) or the equivalence margin (band).")
CARD_NUMBERS = ("Numbers: metric [95% bootstrap interval over test sentences]; the statistic's interval takes the "
                "training runs as the unit (a crossed ANOVA of runs and test sentences, each part counted once; "
                "Student's t with Satterthwaite's degrees of freedom, never more than the runs give when the run "
                "part is estimated at 0).")


def mde_caption(mde: float, target: float, unit: str, kind: str, paper_effect: str) -> str:
    """The minimum detectable effect next to the paper's effect (or the margin): information, never a gate."""
    what = "the paper's effect" if kind == "superiority" else "the margin"
    size = "larger" if mde > target else "smaller"
    return (f"Minimum detectable effect (80% power, 5% level) at these runs and sentences: **{mde:.2f} {unit}**, "
            f"{size} than {what} ({target:g} {unit}; {paper_effect}). Information only: it comes from the same "
            "runs, so it does not gate the verdict.")


def calibration_text(cal: dict) -> str:
    """How often the rule is wrong around this card's sizes, from the simulation."""
    missed = ("It misses: " + ", ".join(cal["goals_missed"]) + ".") if cal["goals_missed"] else \
        "Every goal is met."
    return (f"**How often this rule is wrong** around this card's sizes ({cal['draws']:,} simulated draws per "
            f"truth), each a one-sided error with the goal {cal['goal']:.1%} (within 3 Monte Carlo standard "
            f"errors): says *reproduced* when the claim is false {cal['false_reproduced']:.1%} of the time, *not "
            f"reproduced* or *the other way* when the paper's effect is true {cal['false_not_reproduced']:.1%}, "
            f"*the other way* when the true difference is 0 {cal['false_other_way']:.1%}; power at the paper's "
            f"effect {cal['power']:.0%}. {missed}")


def findings_unprepared(model: str, task: str) -> str:
    return (f"The model {model} or the corpora of task '{task}' are not prepared in this cache: the findings need "
            "both.")


# --- Task affinity (GradTS) ---------------------------------------------------------------------------------------

AFFINITY = (
    "GradTS (Ma et al. 2021) fine-tunes the encoder on each task alone, maps how much each head matters to it "
    "(|gradient| of the head's key and value weights, per-layer normalised), and calls two tasks similar when "
    "their maps rank the heads alike (**Kendall's tau**). For a primary task it keeps the auxiliary tasks above "
    "a threshold (**GradTS-thres**) or adds them in tau order while the primary's dev score improves "
    "(**GradTS-trial**). Below, its choices are checked by real multi-task training.")
AFFINITY_PAPER = (
    "**What the paper found.** GradTS's selections beat training with all tasks and with random ones on "
    "8 GLUE tasks (+0.33% to +17.93%), at a fraction of AUTOSEM's search time. **What you see here.** The "
    "same procedure on this model's task units, subsampled (the plan's note says how); differences of a "
    "few points are within noise at this size: the Findings page states the verdict with intervals.")
UNITS = ("Units are task/language. 'name' = proper-name spans derived from gold proper-noun tags: a proxy for "
         "NER, not real named-entity recognition.")
VALIDATION_TABLE = ("vs alone: bootstrap difference from the primary trained alone (the same resamples of test "
                    "sentences and of training seeds for both), * = distinguishable from 0. Costs in wall "
                    "seconds, measured when computed.")
BANDIT = ("Posterior mean of each arm (the probability that training it lowers the primary's dev loss) per "
          "training seed, and how many rounds chose it; units above the keep level are selected.")


def affinity_caption(kind: str, method: str, off: Mapping[str, float]) -> str:
    """Below the units' correlation heatmap; ``off``: min, mean and max of its off-diagonal entries."""
    return (f"{kind} between the units' head maps ({method}), clustered (average linkage). Off-diagonal: "
            f"min {off['min']:.2f}, mean {off['mean']:.2f}, max {off['max']:.2f}. The primary's row is outlined; "
            "red labels and circles mark the auxiliary tasks above the threshold.")


def selection_text(threshold: float, chosen, n_ranked: int, trial=None) -> str:
    """What GradTS-thres selects at ``threshold`` (and what GradTS-trial chose, when it was validated)."""
    text = (f"**GradTS-thres at {threshold:.2f}** selects {len(chosen)} of {n_ranked}: "
            f"{', '.join(chosen) or 'none (the primary is trained alone)'}")
    if trial is not None:
        text += f"  \n**GradTS-trial** chose: {', '.join(trial) or 'none (alone was best on dev)'}"
    return text


def validation_caption(plan) -> str:
    """Below the quality-against-cost chart of a GradTS plan's validation."""
    trial_note = "every candidate" if plan.max_trial is None else f"up to {plan.max_trial} candidates"
    return ("Each primary trained alone, with the GradTS-thres selection (tau > "
            f"{plan.threshold}), the GradTS-trial selection (best on dev, adding {trial_note} in tau order), "
            f"the GradTS-fg examples (auxiliary training examples whose own head map has tau > "
            f"{plan.fg_threshold} with the primary's), the bandit's choice (AUTOSEM stage 1: Thompson sampling "
            "rewarded by the primary's dev loss), all other units, and random sets of as many units as "
            f"GradTS-trial chose. Each final model is trained with {len(plan.train_seeds)} seed(s); the point is "
            "their mean, the whisker its 95% bootstrap interval (training seeds and test sentences both "
            "resampled). x = wall time on this machine to choose the auxiliaries (GradTS: every unit's "
            "single-task fine-tune and head map, plus trial's runs or fg's per-example maps; the bandit: its "
            "search) plus training the final model. Hover for the auxiliary units and the change vs alone."
            + (f" {plan.note}" if plan.note else ""))


def trial_line(v: dict) -> str:
    """One primary's GradTS-trial: every trial's dev score and what it chose."""
    return (f"**{v['primary']}**: " + "; ".join(f"{' + '.join(t['aux']) or 'alone'}: {t['dev']:.2f}"
                                                for t in v["trial"]["trials"])
            + f" → {', '.join(v['trial']['selected']) or 'alone'}")


def seconds_caption(result: dict) -> str:
    """How long the parts of a GradTS validation took (stored with the result)."""
    s = result["seconds"]
    return (f"Stored time of the parts: training + scoring of the maps {s['maps_total']:.0f} s; multi-task "
            f"training {s['multitask_total']:.0f} s over {len(s['multitask_runs'])} runs. This result was "
            f"assembled in {s['wall'] / 60:.1f} min of wall time ({s['wall_maps'] / 60:.1f} min for the "
            f"{len(result['units'])} head maps, {s['wall_multitask'] / 60:.1f} min for everything after; parts "
            f"cached by earlier runs take no time here), CPU time {s.get('cpu', 0) / 60:.1f} min.")


# --- Shared heads -------------------------------------------------------------------------------------------------

SHARED = ("Take each map's top **p%** heads. A head in many top sets is one that many tasks (or languages) "
          "rely on at once; the Jaccard overlap says how alike two top sets are.")
SHARED_PAPER = (
    "**What the paper found.** He & Choi 2021: forcing each task to keep as few heads as possible "
    "(learned pruning), a few heads are kept by most tasks ('stem cells'); multi-task training on all "
    "tasks scored below single-task training. **What you see here.** First each task's top p% heads by "
    "gradient importance (a related but different quantity); below, for the tasks of a GradTS plan, the "
    "heads that learned pruning (hard-concrete gates with an L0 term) keeps, side by side with gradient "
    "top sets of the same size, against random sets.")
GROUP_HELP = ("Tasks: the GradTS plan's units, each fine-tuned alone. Languages: the sidebar's task, model and "
              "importance method, one map per selected language.")
GRADTS_MAPS = ("Maps: GradTS normalisation (each layer divided by its sum, then min-max). 'name' = proper-name "
               "spans, a proxy for NER.")
STEM_CELLS = (
    "Each unit's own fine-tune continues for one epoch with a **hard-concrete gate** on every head and a "
    "penalty on the expected number of open gates (Louizos et al. 2018; Voita et al. 2019) until it keeps "
    "the share asked for; the multi-task run on all units does the same with one set of gates. A head kept "
    "by most tasks is a **stem cell**.")
STEM_TABLE = (
    "Per task: heads kept; how many of them are also among its gradient top heads of the same size "
    "(chance: the kept share); the test metric fine-tuned alone (all heads), after learned pruning alone, "
    "and after learned pruning under multi-task training on all units, with 95% bootstrap intervals; the "
    "paired change from multi-task to single-task learned pruning (* = distinguishable from 0). Learned "
    "pruning trains its gates for more epochs after the fine-tune (the L0 run continues it), so 'alone, "
    "learned pruning' has more training than 'alone, all heads': a gain there is not a gain from pruning.")
STEM_JACCARD = "Jaccard overlap of the tasks' learned kept sets, clustered."


def count_caption(what: str, top_p: int, k: int, n_maps: int, n_heads: int) -> str:
    """Below the count heatmap: how often a head would be claimed if the top sets were random."""
    return (f"Count of {what} with the head in their top {top_p}% ({k} heads each). If the top sets were "
            f"independent and random, a head would be claimed {n_maps * k / n_heads:.2f} times on average and by "
            f"all {n_maps} with probability {(k / n_heads) ** n_maps:.1e}.")


def jaccard_caption(mean: float, k: int, n_heads: int, chance: float) -> str:
    return (f"|A ∩ B| / |A ∪ B| of two top sets, clustered. Off-diagonal mean {mean:.2f} "
            f"(two random sets of {k} of {n_heads}: about {chance:.2f}).")


def stem_count_caption(n_units: int, share: float, kept_k: int, chance: float, majority: int) -> str:
    """Below the learned / gradient count heatmaps of the stem-cell analysis."""
    return (f"How many of the {n_units} tasks keep each head: left, under learned pruning ({1 - share:.0%} of "
            f"the heads removed per task); right, in each task's {kept_k} heads of highest GradTS importance (the "
            f"same size). If every task kept a random {share:.0%}, {chance:.1f} heads would be kept by at least "
            f"{majority} tasks on average.")


def multi_kept_caption(n_kept: int, n_heads: int) -> str:
    return (f"Heads kept under multi-task learned pruning ({n_kept} of {n_heads}); Jaccard with each task's own "
            "set is in the table.")


# --- Add data -----------------------------------------------------------------------------------------------------

ADD_DATA = (
    "Bring your own corpus: tagged words (CoNLL `word<TAB>tag`, CoNLL-U, JSONL, parquet) or labelled "
    "sentences (CSV `label,text`, JSONL). **One file** is split 80/10/10 with a fixed seed; **three files** "
    "are train, validation and test. Every line is checked, the data is converted once into the cache, "
    "and from then on it is a task like the embedded ones: pick it in the sidebar on every page. A bad "
    "file is refused with the line that is wrong; nothing already registered is touched.")
HUB = ("Name a data set on the Hugging Face Hub (needs network): `wikiann:sw`, `universal_dependencies:"
       "sw_kiswahili`, `glue:rte`, `xnli:fr`, `paws-x:de`, or any data set with word/tag or text/label "
       "columns, e.g. `someone/my-tagged-data`. It is downloaded and converted once, then works offline.")
COLUMNS_HELP = ("WORDS,TAGS or TEXT,LABEL of a parquet / JSONL / CSV table whose columns are not tokens/tags or "
                "text/label")


def alignment_caption(model: str, al: dict) -> str:
    """What the model's tokenizer does to the corpus (``corpus_report(...)["alignment"]``)."""
    return (f"Tokenizer of `{model}`: {al['truncated']} of {al['sentences']} sentences truncated at "
            f"{al['max_length']} tokens, {al['words_lost']} of {al['words']} words lost, "
            f"{al['pieces_per_word']:.2f} pieces per word.")


def registered_text(name: str, lang: str, meta: dict) -> str:
    c = meta["counts"]
    return (f"Registered {name}/{lang}: {c['train']} / {c['validation']} / {c['test']} sentences, fingerprint "
            f"{meta['fingerprint']}. Pick '{name}' as the task in the sidebar to use it on every page.")


def own_map_caption(task: str, lang: str, train: dict, method: str, score_sentences: int) -> str:
    """Below the head-importance map of a newly registered corpus."""
    return (f"Fine-tuned on {task}/{lang} train with the plan's settings ({train}), scored ({method}) on at most "
            f"{score_sentences} validation sentences: the same result the Head importance page shows when you "
            "pick this task.")


# --- Runs ---------------------------------------------------------------------------------------------------------

SWEEPS = ("Grids of studies run on Ray (`python -m headprune_core sweep SPEC.json`, README: Sweeps); each "
          "finished job is in the cache above and on the other pages at once.")


def sweep_stopped(name: str) -> str:
    return (f"Sweep '{name}' stopped before it finished (its driver process is gone): run the same command again "
            "to go on from what is cached.")


def cache_space(total: int, free: int) -> str:
    """The Runs page's caption over the cache's space table."""
    return (f"{total / 1e6:.1f} MB in all (results, the embedded model and corpora, registered data). "
            + (f"{free / 1e6:.1f} MB can go: stale results (an older headprune wrote them; never read), corrupt ones, "
               "temp folders of processes that died and uploads older than a day ('headprune cache gc' does the "
               "same)." if free else "Nothing to free: no stale or corrupt results, no leftovers."))


def staged_looks(looks: list[dict]) -> str:
    """The staged design's looks in a line (Findings page)."""
    parts = [f"look {x['look']}: {x['runs']} runs at alpha {x['alpha']:g}, judged {len(x['cards'])} card(s), "
             f"decided {', '.join(x['decided']) or 'none'}" for x in looks]
    return ("Staged design: more training runs only for open cards that more runs could decide; each card keeps "
            "the verdict of the first look that decides it, and its error rates count every look (alpha "
            "spending). " + "; ".join(parts) + ".")


TWO_SCREENS = (
    "**Presenting with two screens.** Open a step with `presenter=true` on your own screen "
    "(`?lesson=NAME&step=1&presenter=true`): the step's notes, the next step's title, Back / Next and the "
    "projector's link. Open that link on the projector: it shows the step in presentation mode and follows your "
    "Back and Next, so the room sees the figure while you read the notes. **Students follow**: in class mode, "
    "the class link with `?follow=true` (or **Follow the teacher** in the step's line or the sidebar) moves each "
    "student to your step a few seconds after you press Next (each page looks every second); a student keeps "
    "what they change inside a step until you move on, and their own Back or Next leaves follow mode (Follow "
    "rejoins). Students cannot move the class.")
