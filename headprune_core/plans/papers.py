"""The papers' own experiments as sweeps: their models, Hub data, languages, settings and training protocol, one
spec each (``sweeps/<name>.json``, written from :data:`PAPER_PLANS` and checked against it by a test).

``headprune sweep sweeps/ma2021-ner.json --dry-run`` says what one costs (offline too: runs/planning.py), and the
same command without ``--dry-run`` runs it on this machine's GPUs or a Ray cluster (``--address``). Where a paper's
data is not on the Hub, the plan names the open set that stands in for it (:attr:`PaperPlan.substitutes`), and every
view of its results says so. Every plan trains 3 runs (seeds 13, 14, 15) where the paper trained one: a training run
is the unit of replication, and one run cannot tell a pruning effect from the spread between runs.

>>> sorted(PAPER_PLANS)[:2]
['budhraja2020-glue', 'budhraja2021-glue']
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

SEEDS = [13, 14, 15]
"""Training seeds of every paper plan's prune-then-retrain runs (the papers: one run each, Ma et al. seed 42)."""

MA_LANGS = ["en", "zh", "ar", "he", "ja", "fa", "de", "nl", "ur"]
"""Ma et al. 2021's POS and NER languages (Table 1); the sources are EN, ZH and AR."""
MA_SF_LANGS = ["en", "es", "pt", "de", "fr", "zh", "ja", "hi", "tr"]
"""Ma et al. 2021's slot-filling languages (MultiATIS++'s nine, Sec 4.3): EN the source, the eight others targets."""
MA_TRAIN = {"epochs": 3.0, "lr": 5e-5, "head_lr": 5e-5, "max_train_sentences": None, "freeze_embeddings": False,
            "seed": 13}
"""Ma et al. 2021, Sec 4: "3 epochs with a learning rate of 5e-5 in all the experiments", every weight trained,
every training sentence. Batch size and sequence length are not given: headprune's defaults."""
BUDHRAJA_TRAIN = {"epochs": 3.0, "lr": 2e-5, "head_lr": 2e-5, "batch_size": 32, "max_length": 128,
                  "max_train_sentences": None, "freeze_embeddings": False, "seed": 13}
"""Budhraja et al. 2020's repository (run_bert.sh): lr 2e-5, 3 epochs, batch 32, 128 tokens; the heads are masked
before fine-tuning. Their 2021 paper gives no protocol of its own in what we could read: the 2020 one is used."""
ALL = 1_000_000
"""A sentence cap above every split: scoring and evaluation read every sentence (capped to the split)."""
GLUE4 = ["mnli", "qqp", "qnli", "sst2"]
"""Budhraja et al. 2020's GLUE tasks (MNLI-m, QQP, QNLI, SST-2); their 2021 abstract says "four GLUE tasks"."""
XNLI = ["ar", "bg", "de", "el", "en", "es", "fr", "hi", "ru", "sw", "th", "tr", "ur", "vi", "zh"]
GLUE8 = ["cola", "sst2", "mrpc", "qqp", "mnli", "qnli", "rte", "wnli"]
"""GradTS's 8 GLUE classification tasks (its repository's candidate set: cola, mrpc, sst, wnli, mnli, qnli, rte,
qqp)."""
GRADTS_TRAIN = {"epochs": 3.0, "lr": 5e-5, "head_lr": 5e-5, "batch_size": 32, "max_length": 512,
                "max_train_sentences": None, "freeze_embeddings": False}
"""GradTS's repository (train_with_corr.py): lr 5e-5, batch 8 with 4 accumulation steps (32), 512 tokens; its
epochs default is 1 beside the comment "default tune 3 epochs": 3 are used."""
HECHOI_TRAIN = {"epochs": 30.0, "lr": 5e-5, "head_lr": 1e-3, "batch_size": 64, "max_length": 512,
                "max_train_sentences": None, "freeze_embeddings": False}
"""He & Choi 2021's repository (stem_cell_hypothesis/en_bert_base, single and joint): 30 epochs, the encoder at
5e-5 and the task decoders at 1e-3, batches of 64 sentences (at most 6,400 tokens, gradients accumulated over 2),
512 tokens, word dropout 0.2, gradient norm 1; 3 runs a task. Kept: epochs, both rates, 64 sentences, 512 tokens."""
KINDS = ["finetune", "score", "eval", "refinetune"]
"""The papers report no pruning curves: the sweeps leave them out (they are the bulk of a plan's evaluations)."""


@dataclass(frozen=True)
class PaperPlan:
    """One experiment of a paper as a sweep spec (:attr:`spec`), with what stands in for the paper's data and where
    our protocol differs from theirs, and which of the paper's reported numbers (rows of
    ``findings/paper_numbers.csv``, as filters) and Findings cards its results answer."""

    name: str
    paper: str  # the paper's id in paper_numbers.csv
    title: str
    spec: dict
    substitutes: dict[str, str] = field(default_factory=dict)  # task -> what stands in for the paper's data
    differences: tuple[str, ...] = ()
    cells: tuple[dict, ...] = ()  # paper_numbers.select filters of the reported numbers it answers
    cards: tuple[str, ...] = ()
    card_langs: tuple[str, ...] = ()  # target languages its cards read at any size (kept by :meth:`smallest`)

    @property
    def notes(self) -> list[str]:
        """What stands in for the paper's data (``task: ...``), then where our protocol differs."""
        return [f"{t}: {s}" for t, s in self.substitutes.items()] + list(self.differences)

    def sweep(self) -> dict:
        """The sweep spec file's content: name and description first, then the spec's fields."""
        notes = self.notes
        description = f"{self.title}." + (f" Substitutes and differences: {' '.join(notes)}" if notes else "")
        return {"name": self.name, "description": description, **self.spec}

    def path(self, root: Path) -> Path:
        return root / "sweeps" / f"{self.name}.json"

    def smallest(self, *, targets: int = 2, points: int = 2) -> dict:
        """This plan's sweep at the smallest size, for the end-to-end tests: every model, task, setting and
        strategy kept; 6 sentences, 1 epoch, k in 1..2 (or the first two shares of the heads), two training
        seeds, two random draws of the heads (Budhraja et al.: three), one ranking seed; the first ``points``
        source-language points, their languages, the languages its cards read (:attr:`card_langs`) and
        ``targets`` more. A GradTS check keeps every unit, its first two primaries, two trials, two training seeds
        and random sets, and a bandit of two rounds."""
        spec = json.loads(json.dumps(self.sweep()))
        spec["name"] = f"{self.name}-smallest"
        spec["train"] = {**spec["train"], "max_train_sentences": 6, "epochs": 1.0, "batch_size": 4}
        spec["score_sentences"] = spec["eval_sentences"] = 6
        experiments = spec.get("refinetune", [])
        for exp in experiments:
            if exp.get("shares"):  # an experiment by shares of the heads stays one (cards e1 and h read those)
                exp["shares"] = exp["shares"][:2]
            elif exp["strategy"] in ("importance", "reverse", "random"):
                exp.pop("max_k", None)
                exp["levels"], exp["shares"] = [1, 2], []
            exp["seeds"] = exp["seeds"][:2]
        draws = [exp for exp in experiments if exp["strategy"] == "random" and exp.get("shares")]
        if "refinetune" in spec:
            spec["refinetune"] = [exp for exp in experiments if not any(exp is d for d in draws[2:])]
        for check in spec.get("gradts", []):  # GradTS: every unit, the first two primaries, two trials
            check.update(primaries=check["primaries"][:2], max_trial=2, score_sentences=6, eval_sentences=6,
                         train_seeds=check["train_seeds"][:2], random_seeds=check["random_seeds"][:2],
                         bandit={"rounds": 2, "round_steps": 1, "dev_sentences": 6},
                         train={**check["train"], "max_train_sentences": 6, "epochs": 1.0, "batch_size": 4})
        if spec.get("ranking_seeds"):
            spec["ranking_seeds"] = spec["ranking_seeds"][:1]
        spec["source_grid"] = spec["source_grid"][:points]
        sources = list(dict.fromkeys(x for g in spec["source_grid"] for x in g))
        keep = [x for x in self.card_langs if x not in sources]
        spec["langs"] = sources + keep + [x for x in spec["langs"] if x not in sources + keep][:targets]
        return spec


WIKIANN_FOR_MA = ("WikiANN (unimelb-nlp/wikiann, PER/ORG/LOC) stands in for the paper's NER sets (CoNLL-2002/03, "
                  "People's Daily, iob2corpus, AQMAR, ArmanPersoNER, MK-PUCIT, a news NER set), most of which are not "
                  "on the Hub; the paper merged extra types into MISC.")
MASSIVE_FOR_MA = ("MASSIVE (AmazonScience/massive, 55 slot types, one locale a language: en-US, es-ES, pt-PT, de-DE, "
                  "fr-FR, zh-CN, ja-JP, hi-IN, tr-TR) stands in for MultiATIS++ (LDC, not open); both are "
                  "virtual-assistant requests with slots, but MASSIVE's domains, slot types and sizes differ, and "
                  "Japanese and Chinese are read a character a word.")
K_ON_DEV = ("The paper keeps the best of 1..12 pruned heads on its reported scores; here k is picked on the dev "
            "split and reported on test (the paper's way would favour pruning).")


def _ma(task: str, source: str, *, models=("bert-base-multilingual-cased", "xlm-roberta-base"),
        grid=(("en",), ("zh",), ("ar",)), langs=MA_LANGS, experiments=None, settings=("cross", "multi")) -> dict:
    return {"models": list(models), "tasks": [task], "langs": list(langs), "settings": list(settings),
            "source_grid": [list(g) for g in grid], "data": [{task: source}], "train": dict(MA_TRAIN),
            "method": "gate_grad", "strategies": ["importance"], "random_seeds": [42],
            "score_sentences": ALL, "eval_sentences": ALL, "ranking_seeds": [14, 15],
            "refinetune": experiments or [{"strategy": "importance", "max_k": 12, "seeds": SEEDS}],
            "kinds": KINDS}


def _table6(task: str, source: str) -> dict:
    langs = ["en", "de", "ar", "he", "zh"]
    grid = [tuple(x for x in langs if x != left) for left in langs]  # train on four, test the fifth
    return _ma(task, source, models=("bert-base-multilingual-cased",), grid=grid, langs=langs, settings=("cross",),
               experiments=[{"strategy": "importance", "max_k": 12, "seeds": SEEDS}])


def _table5(task: str, source: str) -> dict:
    return _ma(task, source, models=("bert-base-multilingual-cased",), grid=(("en",),), experiments=[
        {"strategy": "reverse", "max_k": 12, "seeds": SEEDS},  # Max-Pruning: the top-ranked heads
        {"strategy": "random", "max_k": 12, "random_seed": 42, "seeds": SEEDS},  # Rand-Pruning, the paper's seed
        {"strategy": "importance", "max_k": 12, "seeds": SEEDS}])  # the same rows' low-ranked pruning, for contrast


def _budhraja(tasks: list[str], langs: list[str], models: list[str], *, pairs: bool) -> dict:
    shares = [0.25, 0.5, 0.75]
    experiments = [{"strategy": "random", "shares": shares, "random_seed": draw, "seeds": SEEDS}
                   for draw in (0, 1, 2)]  # three random draws of the heads
    experiments += [{"strategy": "importance", "shares": shares, "seeds": SEEDS},
                    {"strategy": "layers", "seeds": SEEDS}]
    if pairs:
        experiments.append({"strategy": "layer_pairs", "seeds": SEEDS})
    return {"models": models, "tasks": tasks, "langs": langs, "settings": ["cross"], "source_grid": [["en"]],
            "data": [{t: "hub" for t in tasks}], "train": dict(BUDHRAJA_TRAIN), "method": "gate_grad",
            "strategies": ["importance"], "random_seeds": [0], "score_sentences": ALL, "eval_sentences": ALL,
            "refinetune": experiments, "kinds": KINDS}


def _gradts() -> dict:
    """GradTS at the paper's size: bert-base-cased, the 8 GLUE tasks in full, each a primary, its thresholds
    (task tau 0.47, train_with_corr.py's default; examples 0.62, its README), every candidate tried; the sweep
    computes the one GradTS job and what it reads."""
    units = [f"{t}/en" for t in GLUE8]
    check = {"name": "gradts2021-glue", "model": "bert-base-cased", "units": units, "primaries": units,
             "description": "GradTS (Ma et al. 2021) at the paper's size: bert-base-cased, the 8 GLUE tasks from "
                            "the Hub, each the primary in turn; thres, trial (every candidate), fg, AUTOSEM's "
                            "bandit, all and random sets; 3 training seeds.",
             "threshold": 0.47, "fg_threshold": 0.62, "max_trial": None, "score_sentences": None,
             "eval_sentences": None, "train_seeds": SEEDS, "random_seeds": [0, 1, 2],
             "sources": {t: "hub" for t in GLUE8}, "train": dict(GRADTS_TRAIN),
             "note": "The paper's size: every training sentence, 3 epochs."}
    return {"models": ["bert-base-cased"], "tasks": ["rte"], "langs": ["en"], "settings": ["cross"],
            "source_grid": [["en"]], "data": [{t: "hub" for t in GLUE8}], "train": dict(GRADTS_TRAIN, seed=13),
            "method": "gate_grad", "strategies": ["importance"], "random_seeds": [0], "score_sentences": ALL,
            "eval_sentences": ALL, "gradts": [check], "kinds": ["gradts"]}


def _hechoi() -> dict:
    """He & Choi 2021 at the paper's size: bert-base-cased on OntoNotes' five tasks (English v4), each trained
    alone and all five together, 3 training seeds, each task's maps under 3 seeds with their shuffled-label
    controls (card g); run as a GradTS check, the machinery that trains tasks alone and together."""
    from headprune_core.data.ontonotes import TASKS
    units = [f"{t}/en" for t in TASKS]
    check = {"name": "hechoi2021-ontonotes", "model": "bert-base-cased", "units": units, "primaries": units,
             "description": "He & Choi 2021 at the paper's size: bert-base-cased, OntoNotes 5 (CoNLL-2012, English "
                            "v4) POS, NER, DEP, CON and SRL, each alone (STL) and all five together (MTL-5), each "
                            "the primary in turn; 3 training seeds, each task's head maps under 3 seeds and on "
                            "its labels shuffled.",
             "max_trial": 1, "score_sentences": None, "eval_sentences": None, "train_seeds": SEEDS,
             "random_seeds": [0], "map_seeds": SEEDS[1:], "sources": {t: "hub" for t in TASKS},
             "train": dict(HECHOI_TRAIN),
             "note": "The paper's size: every training sentence, 30 epochs; GradTS's selections kept to one trial "
                     "and one random set (He & Choi compare STL with MTL-5 only)."}
    return {"models": ["bert-base-cased"], "tasks": [TASKS[0]], "langs": ["en"], "settings": ["cross"],
            "source_grid": [["en"]], "data": [{t: "hub" for t in TASKS}], "train": dict(HECHOI_TRAIN, seed=13),
            "method": "gate_grad", "strategies": ["importance"], "random_seeds": [0], "score_sentences": ALL,
            "eval_sentences": ALL, "gradts": [check], "kinds": ["finetune", "score", "gradts"]}  # card g's maps


HECHOI_DIFFERENCES = (
    "OntoNotes 5.0 is the LDC's (LDC2013T19); the Hub's copy (ontonotes/conll2012_ontonotesv5, its card: CC BY-NC-ND "
    "4.0) asks its users to take it on their own responsibility.",
    "Their decoders are each task's own (a tagger for POS, biaffine NER, biaffine DEP on Stanford dependencies, a "
    "CRF constituency parser, span-ranking SRL that also finds the predicates); here every task is a token "
    "tagger: DEP is each word's head offset from the trees by Collins's head rules (unlabelled: accuracy is UAS), "
    "CON a relative encoding scored as tag accuracy, SRL one example a predicate, given and marked.",
    "MTL-5 is headprune's multi-task training (one shared encoder, a head per task: GradTS's 'all' run); word "
    "dropout 0.2, gradient accumulation over 2 batches and the 6,400-token cap are not applied.",
    "Card g reads gradient head maps, with a layer null and shuffled-label controls; He & Choi's learned (L0 gate) "
    "pruning is on the Shared heads page, not in this sweep. The sweep runs as a GradTS check, so GradTS's "
    "selections (thres, one trial, fg, the bandit, one random set) come with it, at the cost the dry run shows.",
    "The paper's task scores and stem-cell counts are not in what we could read (docs/papers.md); its repository's "
    "numbers are per-label accuracies of parameter-free probes, which headprune does not compute: they are listed "
    "beside ours without a reader. The plan answers cards g and j.")


_PLANS = (
    PaperPlan("ma2021-pos", "ma2021", "Ma et al. 2021, Table 2: POS on UD v2.7 (17 tags) in 9 languages, mBERT and "
              "XLM-R, cross-lingual from EN, ZH and AR and multilingual; the k lowest-ranked heads pruned, then "
              "fine-tuned", _ma("upos", "hub"), {}, (K_ON_DEV,),
              ({"where": ("Table 2", "Sec 4.1", "Figure 1", "Footnote 6"), "task": "POS"},), ("a1", "a2", "c")),
    PaperPlan("ma2021-ner", "ma2021", "Ma et al. 2021, Table 3: NER in 9 languages, mBERT and XLM-R, cross-lingual "
              "from EN, ZH and AR and multilingual", _ma("ner", "hub"), {"ner": WIKIANN_FOR_MA}, (K_ON_DEV,),
              ({"where": ("Table 3", "Sec 4.2", "Figure 1", "Footnote 6"), "task": "NER"},), ("a1", "a2", "c")),
    PaperPlan("ma2021-sf", "ma2021", "Ma et al. 2021, Table 4: slot filling in 9 languages, mBERT and XLM-R, "
              "cross-lingual from EN and multilingual", _ma("slots", "hub", grid=(("en",),), langs=MA_SF_LANGS),
              {"slots": MASSIVE_FOR_MA}, (K_ON_DEV,),
              ({"where": ("Table 4", "Sec 4.3", "Figure 1", "Footnote 6", ""), "task": "SF"},), ("a1", "a2", "c")),
    PaperPlan("ma2021-table5-pos", "ma2021", "Ma et al. 2021, Table 5 (POS): pruning the top-ranked and random heads "
              "of mBERT, EN source, both settings", _table5("upos", "hub"), {}, (K_ON_DEV,),
              ({"where": ("Table 5", "Sec 5.1"), "task": "POS"},), ("b2",)),
    PaperPlan("ma2021-table5-ner", "ma2021", "Ma et al. 2021, Table 5 (NER): pruning the top-ranked and random heads "
              "of mBERT, EN source, both settings", _table5("ner", "hub"), {"ner": WIKIANN_FOR_MA}, (K_ON_DEV,),
              ({"where": ("Table 5", "Sec 5.1"), "task": "NER"},), ("b2",)),
    PaperPlan("ma2021-table6-pos", "ma2021", "Ma et al. 2021, Table 6 (POS): mBERT trained on four of EN, DE, AR, HE, "
              "ZH and tested on the fifth", _table6("upos", "hub"), {}, (K_ON_DEV,),
              ({"where": "Table 6", "task": "POS"},), ("a1",)),
    PaperPlan("ma2021-table6-ner", "ma2021", "Ma et al. 2021, Table 6 (NER): mBERT trained on four of EN, DE, AR, HE, "
              "ZH and tested on the fifth", _table6("ner", "hub"), {"ner": WIKIANN_FOR_MA}, (K_ON_DEV,),
              ({"where": "Table 6", "task": "NER"},), ("a1",)),
    PaperPlan("budhraja2021-xnli", "budhraja2021", "Budhraja et al. 2021: mBERT on XNLI (15 languages, trained on "
              "English), random and layer-wise pruning of 25/50/75% of the heads, then fine-tuning",
              _budhraja(["xnli"], XNLI, ["bert-base-multilingual-cased"], pairs=False), {},
              ("Budhraja et al. 2021 give no numbers or protocol in what we could read: their 2020 repository's "
               "training is used (3 epochs, 2e-5, batch 32, 128 tokens).",), (), ("d", "e2", "h"),
              ("es", "fr", "tr")),  # card d: SVO targets and Turkish
    PaperPlan("budhraja2021-glue", "budhraja2021", "Budhraja et al. 2021: mBERT beside BERT on four GLUE tasks, random "
              "and layer-wise pruning, then fine-tuning",
              _budhraja(GLUE4, ["en"], ["bert-base-multilingual-cased", "bert-base-cased"], pairs=False), {},
              ("The 2021 abstract names 'four GLUE tasks' but not which: the 2020 paper's four are used.",), (),
              ()),  # English only: no card compares languages on it (card h needs targets)
    PaperPlan("budhraja2020-glue", "budhraja2020", "Budhraja et al. 2020: BERT-base on MNLI-m, QQP, QNLI and SST-2, "
              "random pruning of 25/50/75% of the heads (three draws) against importance pruning, layer thirds "
              "and adjacent layer pairs, then fine-tuning",
              _budhraja(GLUE4, ["en"], ["bert-base-uncased"], pairs=True), {},
              ("The paper's 'BERT-base' is taken as bert-base-uncased (its repository's default).",), (),
              ("e1", "e2", "i")),
    PaperPlan("gradts2021-glue", "gradts2021", "GradTS (Ma et al. 2021): bert-base-cased on the 8 GLUE tasks, "
              "auxiliary tasks chosen from head-gradient maps (thres, trial, fg) against AUTOSEM's bandit, each "
              "task the primary in turn", _gradts(), {},
              ("GLUE's test labels are hidden: the official validation split is our test, and a seeded 10% of "
               "train our dev (GradTS selects and reports on GLUE's dev).",
               "Multi-task training is headprune's (one shared encoder, a head per task), not MT-DNN's.",
               "The abstract does not say which GradTS variant gives its 0.33-17.93% nor whether relative: ours is "
               "GradTS-trial against the bandit, relative."),
              ({"where": "abstract", "task": "GLUE (8 tasks)"},), ("f1", "f2", "f3", "f4", "j")),
    PaperPlan("hechoi2021-ontonotes", "hechoi2021", "He & Choi 2021: bert-base-cased on OntoNotes 5 POS, NER, DEP, "
              "CON and SRL, each task alone against all five trained together (MTL-5), and the heads that most "
              "tasks claim", _hechoi(), {}, HECHOI_DIFFERENCES, ({"where": "repository"},), ("g", "j")),
)
PAPER_PLANS: dict[str, PaperPlan] = {p.name: p for p in _PLANS}


def write_sweeps(root: Path) -> list[Path]:
    """Write every paper plan's sweep spec under ``root/sweeps`` (``python -m headprune_core.plans.papers``)."""
    out = []
    for plan in PAPER_PLANS.values():
        path = plan.path(root)
        path.write_text(json.dumps(plan.sweep(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        out.append(path)
    return out


def cost_rows(root: Path, store) -> list[list[str]]:
    """Each paper plan's dry run without the Hub (runs/planning.py) as a table row: jobs, what it downloads, what its
    results take on disk, and its time on one A100 (from FLOPs: see runs/gpu_estimate.py). Deterministic: an empty
    ``store`` and the recorded tables only."""
    from headprune_core.plans.sweep import SweepSpec, build_graph
    from headprune_core.plans.sweep_cost import dry_run, hours
    rows, gb = [], 2**30
    for plan in PAPER_PLANS.values():
        graph = build_graph(SweepSpec.from_file(plan.path(root)), store=store, planning=True)
        report = dry_run(graph, cpus=1)
        disk, gpu = report["disk"], report["gpu"]
        models = sum(b for b, _ in disk["models"].values() if b)
        rows.append([f"[{plan.name}](../sweeps/{plan.name}.json)", str(report["plans"]),
                     f"{report['jobs']} + {report['later_jobs']}", f"{models / gb:.1f}",
                     f"{disk['data'] / gb:.2f}" + (f" ({len(disk['data_unknown'])} unknown)"
                                                   if disk["data_unknown"] else ""),
                     f"{disk['results'] / gb:.0f}", hours(gpu["seconds"])
                     + (" at least (sizes recorded in documents)" if "lower bounds" in report["planned"] else "")])
    return rows


COST_HEADER = ["sweep", "grid points", "jobs + re-fine-tuning parts", "models GB", "data GB", "results GB",
               "one A100 (FLOPs estimate)"]


def cost_table(root: Path, store) -> str:
    """:func:`cost_rows` as the markdown table docs/papers-reproduce.md quotes."""
    lines = ["| " + " | ".join(COST_HEADER) + " |", "|" + "---|" * len(COST_HEADER)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cost_rows(root, store)])


def substitutes_table() -> str:
    """Each plan's paper, what stands in for its data and where our protocol differs (docs/papers-reproduce.md)."""
    lines = ["| sweep | the paper | what stands in, and where ours differs |", "|---|---|---|"]
    for p in PAPER_PLANS.values():
        lines.append(f"| {p.name} | {p.title} | {' '.join(p.notes) or '-'} |")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m headprune_core.plans.papers [--doc]: write the sweep files, or print the tables
    import sys
    import tempfile

    here = Path(__file__).resolve().parents[2]
    if "--doc" in sys.argv:
        from headprune_core.runs.store import Store
        print(cost_table(here, Store(Path(tempfile.mkdtemp(prefix="headprune-plan-")))), substitutes_table(),
              sep="\n\n")
    else:
        for written in write_sweeps(here):
            print(written)
