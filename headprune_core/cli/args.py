"""The command line's parser: every command, its options and their argparse types, checked before any work.
Nothing here imports torch or data libraries, so ``--help`` and a bad option answer at once."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from headprune_core.base.choices import (
    FORMATS,
    GRADTS_METHODS,
    METHODS,
    NORMALIZATIONS,
    RETRAIN_STRATEGIES,
    SETTINGS,
    STRATEGIES,
    check_choice,
)
from headprune_core.base.defaults import DEFAULT_MODEL, DEMO_TRAIN, MAX_LENGTH, TRAIN_SEED

CACHE = argparse.ArgumentParser(add_help=False)
CACHE.add_argument("--cache", default=None,
                   help="cache folder (default: cache/ or $HEADPRUNE_CACHE; on a cluster, the same path on every node)")
"""The one ``--cache`` option, given to every command that reads or writes the cache through ``parents=``."""


def count_arg(text: str) -> int:
    """A whole number of at least 1 (sentences, epochs of data, batch sizes)."""
    return _int_at_least(text, 1)


def natural_arg(text: str) -> int:
    """A whole number of at least 0 (heads to prune, steps)."""
    return _int_at_least(text, 0)


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
    return value


def positive_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def names_arg(text: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return names


def ints_arg(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in names_arg(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None


def one_of(known: tuple[str, ...], what: str):
    """An argparse type accepting one of ``known`` (the error is
    :func:`~headprune_core.base.choices.check_choice`'s)."""
    def parse(text: str) -> str:
        try:
            return check_choice(text, known, what)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    parse.__name__ = what
    return parse


def data_args(p: argparse.ArgumentParser, *, keyed: bool = False) -> None:
    """--data (where the data comes from), --data-lang, --columns, --format: see headprune_core.data.refs."""
    p.add_argument("--data", action="append", default=None, metavar="[TASK[/LANG]=]SOURCE",
                   help="where the data comes from: 'embedded' (default; also corpora added with 'data add'), "
                        "'hub' (the task's Hub data set), 'hub:NAME[:CONFIG]' (e.g. hub:wikiann:sw, a Hub id or a "
                        "local copy of a Hub repository), or local files: FILE (split 80/10/10) or "
                        "TRAIN,VALIDATION,TEST (CoNLL, CoNLL-U, JSONL, CSV, parquet). "
                        + ("Repeat it as TASK=SOURCE for several tasks." if keyed else
                           "TASK=SOURCE / TASK/LANG=SOURCE name another task or language; repeatable."))
    if not keyed:
        p.add_argument("--data-lang", type=names_arg, default=None,
                       help="the language(s) --data holds (default: every language the command reads)")
    p.add_argument("--columns", type=names_arg, default=None,
                   help="columns of a table or Hub data set: WORDS,TAGS or TEXT,LABEL or TEXT,PAIR,LABEL")
    p.add_argument("--format", default=None, type=one_of(FORMATS, "file format"),
                   help="file format when the suffix does not say")


def common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=DEFAULT_MODEL, help=f"embedded name, local folder or Hub id ({DEFAULT_MODEL})")
    p.add_argument("--finetuned", default=None, metavar="PATH",
                   help="a fine-tuned token-classification checkpoint (folder or Hub id): score, evaluate and "
                        "prune it with its own classifier, no fine-tuning (replaces --model)")
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu, cuda, mps")


def run_args(p: argparse.ArgumentParser, *, lang: bool = True) -> None:
    common_args(p)
    p.add_argument("--task", default="pos", help="task name (see 'python -m headprune_core tasks'); any name "
                                                 "with --data")
    if lang:
        p.add_argument("--lang", default="en", help="language to score / evaluate on")
    p.add_argument("--train-langs", type=names_arg, default=None,
                   help="comma-separated fine-tuning languages (cross setting; default en, or the language of "
                        "the task's data when it has no English)")
    data_args(p)
    p.add_argument("--setting", default="cross", type=one_of(SETTINGS, "setting"))
    p.add_argument("--epochs", type=positive_arg, default=DEMO_TRAIN["epochs"])
    p.add_argument("--max-train", type=count_arg, default=DEMO_TRAIN["max_train_sentences"],
                   help="training sentences per language (at most what the corpus holds; the demo's 300 by default)")
    p.add_argument("--max-length", type=count_arg, default=MAX_LENGTH, help="tokens per sentence (longer ones are cut)")
    p.add_argument("--lr", type=positive_arg, default=DEMO_TRAIN["lr"], help="encoder learning rate (the demo's)")
    p.add_argument("--head-lr", type=positive_arg, default=DEMO_TRAIN["head_lr"],
                   help="classifier learning rate (the demo's)")
    p.add_argument("--batch-size", type=count_arg, default=DEMO_TRAIN["batch_size"],
                   help="8: small corpora need the updates")
    p.add_argument("--seed", type=int, default=TRAIN_SEED)


def gradts_args(p: argparse.ArgumentParser, *, plan: bool = True) -> None:
    if plan:
        p.add_argument("--plan", default="gradts-demo", help="GradTS preset or JSON plan file (units, settings)")
    p.add_argument("--units", type=names_arg, default=None, help="comma-separated task/lang units (replace the plan's)")
    p.add_argument("--primaries", type=names_arg, default=None,
                   help="comma-separated primary units (replace the plan's)")
    p.add_argument("--method", type=one_of(GRADTS_METHODS, "GradTS method"), default=None,
                   help="head maps (default: the plan's)")
    p.add_argument("--sentences", type=count_arg, default=None, help="cap sentences per split (quick look)")
    p.add_argument("--model", default=None, help="model (default: the plan's)")
    p.add_argument("--device", default="auto")
    data_args(p, keyed=True)


def program_name() -> str:
    """``headprune`` when run by its console command, else ``python -m headprune_core``."""
    return "headprune" if Path(sys.argv[0]).name == "headprune" else "python -m headprune_core"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=program_name(),
                                     description="Score, prune and compare the attention heads of encoders.")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("prepare", parents=[CACHE],
                       help="fetch and convert the embedded default model and corpora into cache/")
    p.add_argument("--force", action="store_true", help="redo even what is already prepared")
    p.add_argument("--only", choices=["models", "corpora"], default=None)

    p = sub.add_parser("tasks", parents=[CACHE], help="list tasks and languages (built-in and your registered corpora)")

    p = sub.add_parser("data", help="register your own corpus under the cache (add), list (ls), preview (show), "
                                    "delete (rm)")
    dsub = p.add_subparsers(dest="data_command", required=True)
    q = dsub.add_parser("add", parents=[CACHE], help="validate and convert FILES (or one Hub source) into a task NAME")
    q.add_argument("name", help="the task name it gets (letters, digits, - _ .)")
    q.add_argument("files", nargs="+", help="1 file (split 80/10/10) or 3 (train validation test), or one "
                                            "Hub source hub:NAME[:CONFIG]")
    q.add_argument("--lang", required=True, help="language code of the data (e.g. sw, de, pt-BR)")
    q.add_argument("--columns", type=names_arg, default=None, help="WORDS,TAGS or TEXT,LABEL of a table")
    q.add_argument("--format", default=None, type=one_of(FORMATS, "file format"))
    q.add_argument("--tagset", default=None, help="map native POS tags to the 12 universal tags (penn, stts, "
                                                  "parole, wotan, upos ...)")
    q.add_argument("--model", default=None, help="also report how this model's tokenizer cuts the sentences")
    q.add_argument("--force", action="store_true", help="replace a registered corpus of the same name and language")
    q = dsub.add_parser("ls", parents=[CACHE], help="list registered corpora")
    q = dsub.add_parser("show", parents=[CACHE],
                        help="preview a corpus (registered, embedded or --data) with label counts")
    q.add_argument("name")
    q.add_argument("--lang", required=True)
    q.add_argument("--model", default=None, help="report tokenizer alignment for this model")
    q.add_argument("-n", type=count_arg, default=5, help="sentences to show")
    q = dsub.add_parser("rm", parents=[CACHE], help="delete a registered corpus")
    q.add_argument("name")
    q.add_argument("--lang", default=None, help="only this language (default: all)")

    p = sub.add_parser("study", parents=[CACHE], help="run a preset (e.g. demo) or a plan file through the cache")
    p.add_argument("preset", nargs="?", default="demo", help="preset name or a JSON plan file")
    p.add_argument("--langs", type=names_arg, default=None, help="restrict to these languages (comma-separated)")
    p.add_argument("--tasks", type=names_arg, default=None, help="restrict to these tasks (comma-separated)")
    p.add_argument("--sentences", type=count_arg, default=None, help="cap sentences per split (quick look)")
    p.add_argument("--model", default=None, help="model (default: the plan's)")
    p.add_argument("--device", default="auto")
    data_args(p, keyed=True)

    p = sub.add_parser("findings", parents=[CACHE],
                       help="the Findings cards of the current cache: each paper's claim, the test "
                            "stated before the data, the verdict and how often its rule is wrong")
    p.add_argument("plan", nargs="?", default="demo",
                   help="the plan whose findings to read (default: demo, whose findings are the findings preset)")
    p.add_argument("--format", default="text", type=one_of(("text", "json"), "format"), help="text (default) or json")
    p.add_argument("--card", action="append", default=[], help="only this card (e.g. a1; repeat for several)")
    p.add_argument("--draws", type=count_arg, default=1000,
                   help="simulated draws that measure each rule's error rates (default 1000)")
    p.add_argument("--plan", dest="projection", action="store_true",
                   help="print, per open card, the runs and held-out sentences a decision at the paper's effect "
                        "needs (projected from the design file) and the minutes each later look takes here; "
                        "computes nothing")
    p.add_argument("--staged", action="store_true",
                   help="also print the staged design's looks (more training runs only for open cards, each extra "
                        "look paid for by alpha spending; the cards are always read at the look that decided them); "
                        "computes nothing unless --budget is given")
    p.add_argument("--budget", type=float, default=None, metavar="MINUTES",
                   help="with --staged (implied): compute the preset, then more training runs (3, 5, 8) only for "
                        "the experiments of cards still open, within this many minutes; resumes from the cache")
    p.add_argument("--docs", nargs="*", default=None, metavar="FILE",
                   help="write the cards' tables from findings/hypotheses.py into the marked blocks of these files "
                        "(default: README.md and docs/findings.md here); reads no cache, takes no other option")
    p.add_argument("--model", default=None, help="model (default: the plan's)")
    p.add_argument("--device", default="auto")
    p.add_argument("--plan-name", default=None, metavar="PAPER_PLAN",
                   help="a paper plan (sweeps/PAPER_PLAN.json, e.g. ma2021-ner): each number the paper reports beside "
                        "ours from this cache, with our interval over training runs and test sentences, and whether "
                        "the paper's number lies inside it; cells not computed yet name their job")

    p = sub.add_parser("report", parents=[CACHE],
                       help="write a report to hand out: every Findings card with its numbers, "
                            "intervals, verdict, rule and protocol (HTML with interactive charts, or "
                            "Markdown), or a lesson's handout (each step's notes and figure, HTML); never computes")
    p.add_argument("what", type=one_of(("findings", "lesson"), "report"),
                   help="what to report: findings, or lesson NAME (a lesson's handout)")
    p.add_argument("plan", nargs="?", default=None,
                   help="findings: the plan whose findings to report (default: demo, whose findings are the "
                        "findings preset); lesson: the lesson's name (the Lessons page lists them)")
    p.add_argument("--out", default=None,
                   help="the file to write (default: findings.html or findings.md, or NAME.html, here)")
    p.add_argument("--format", default="html", type=one_of(("html", "md"), "format"),
                   help="html (default: one self-contained file, opens offline) or md")
    p.add_argument("--draws", type=count_arg, default=1000,
                   help="simulated draws that measure each rule's error rates (default 1000)")
    p.add_argument("--model", default=None, help="model (default: the plan's)")
    p.add_argument("--device", default="auto")

    p = sub.add_parser("sweep", parents=[CACHE],
                       help="run a grid of studies (models x data x tasks x languages x settings x seeds "
                            "...) on Ray, one task per cached job, into one shared cache")
    p.add_argument("spec", help="sweep spec (JSON): study-plan fields plus models, data, seeds, resources "
                                "(README: Sweeps)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the jobs, what is cached, each job's memory and an estimated time from measured job "
                        "times on this machine, or with --address on that cluster's nodes; run nothing")
    p.add_argument("--gpu-type", default=None, choices=["A100", "H100", "L4"],
                   help="with --dry-run: the GPU the GPU-time line estimates for, from FLOPs unless jobs in this "
                        "cache were measured on a GPU (default A100)")
    p.add_argument("--plan-only", action="store_true",
                   help="with --dry-run: size Hub models and data sets from the recorded tables, downloading "
                        "nothing (a dry run without the Hub does this by itself); whether jobs are cached is then "
                        "unknown, so every job counts as to do")
    p.add_argument("--running", action="store_true",
                   help="run nothing: exit 0 if a sweep of this name runs on this cache now (its progress and log "
                        "are in cache/sweeps/NAME/), 1 if none does")
    p.add_argument("--address", default=None,
                   help="an existing Ray cluster (e.g. HOST:6379 from 'ray start --head'); default: a local cluster "
                        "started for this run. If its head stops answering, the sweep exits 75: rerun the same "
                        "command once the cluster is back, and it resumes from the cache")
    p.add_argument("--cpus", type=count_arg, default=None,
                   help="CPUs of the local cluster (default: all); with --dry-run, the CPUs to estimate for")
    p.add_argument("--gpus", type=natural_arg, default=None, help="GPUs of the local cluster (default: all found)")
    p.add_argument("--device", default="auto")

    p = sub.add_parser("affinity", parents=[CACHE],
                       help="GradTS task affinity: per-unit head maps, Kendall tau, auxiliary ranking")
    gradts_args(p)
    p.add_argument("--primary", default=None, help="rank auxiliary units for this unit (default: the plan's)")
    p.add_argument("--threshold", type=float, default=None, help="GradTS-thres tau threshold (default: plan's)")
    p.add_argument("--correlation", choices=["kendall", "spearman"], default="kendall")

    p = sub.add_parser("gradts", parents=[CACHE],
                       help="GradTS validation: thres/trial/fg selections and the AUTOSEM bandit checked "
                            "by multi-task training against alone/all/random, with costs and intervals "
                            "(preset gradts-demo or a JSON plan file)")
    p.add_argument("preset", nargs="?", default="gradts-demo", help="GradTS preset name or a JSON plan file")
    gradts_args(p, plan=False)
    p.add_argument("--max-trial", type=int, default=None,
                   help="cap GradTS-trial at this many auxiliary units (0: every candidate, the paper's procedure)")
    p.add_argument("--train-seeds", type=ints_arg, default=None,
                   help="comma-separated training seeds of the final models")
    p.add_argument("--fg-threshold", type=float, default=None, help="GradTS-fg tau threshold (default: plan's)")

    p = sub.add_parser("stemcells", parents=[CACHE],
                       help="learned head pruning (hard-concrete L0 gates) of every unit of a GradTS "
                            "plan alone and of all together: the heads most tasks keep (He & Choi)")
    p.add_argument("preset", nargs="?", default="gradts-demo", help="GradTS preset name or a JSON plan file")
    gradts_args(p, plan=False)
    p.add_argument("--target", type=float, default=0.5, help="share of heads each run removes (default 0.5)")
    p.add_argument("--penalty", type=float, default=None,
                   help="instead of a target: the weight of the L0 term (as few heads as the task allows)")
    p.add_argument("--l0-epochs", type=float, default=1.0, help="epochs of training with the gates (default 1)")

    p = sub.add_parser("finetune", parents=[CACHE], help="fine-tune a model on a task")
    run_args(p, lang=False)

    p = sub.add_parser("score", parents=[CACHE], help="score every head's importance")
    run_args(p)
    p.add_argument("--method", default="gate_grad", type=one_of(METHODS, "importance method"))
    p.add_argument("--normalize", default="layer_sum", type=one_of(NORMALIZATIONS, "normalisation"))
    p.add_argument("--sentences", type=count_arg, default=300)

    p = sub.add_parser("curve", parents=[CACHE], help="metric vs heads pruned for a strategy")
    run_args(p)
    p.add_argument("--strategy", default="importance", type=one_of(STRATEGIES[:-1], "strategy"))
    p.add_argument("--ranking-lang", default=None, help="prune by another language's ranking")
    p.add_argument("--method", default="gate_grad", type=one_of(METHODS, "importance method"))
    p.add_argument("--step", type=natural_arg, default=0, help="heads per step (default one layer's worth)")
    p.add_argument("--seeds", type=ints_arg, default=(0, 1, 2), help="seeds for the random strategy")
    p.add_argument("--sentences", type=count_arg, default=500)

    p = sub.add_parser("evaluate", parents=[CACHE],
                       help="evaluate under a head mask (JSON file of a (layers, heads) 0/1 array)")
    run_args(p)
    p.add_argument("--mask", default=None, help="JSON file: [[1,0,...],...] (1 keep, 0 pruned)")
    p.add_argument("--sentences", type=count_arg, default=500)

    p = sub.add_parser("refinetune", parents=[CACHE],
                       help="prune, then re-fine-tune (Ma et al.: k = 0..K lowest-ranked heads, best "
                            "k on dev; controls and Budhraja et al.'s layer thirds by --strategy)")
    run_args(p)
    p.add_argument("--strategy", default="importance", type=one_of(RETRAIN_STRATEGIES, "strategy"),
                   help="importance (lowest-ranked first), reverse (top-ranked), random, layers (bottom/middle/top "
                        "third)")
    p.add_argument("--max-k", type=natural_arg, default=12, help="levels k = 0..K (unless --levels)")
    p.add_argument("--levels", type=ints_arg, default=(), help="numbers of heads to prune, e.g. 0,36,72,108")
    p.add_argument("--train-seeds", type=ints_arg, default=(), help="training seeds (default: --seed)")
    p.add_argument("--random-seed", type=int, default=0, help="which heads the random strategy removes")
    p.add_argument("--eval-langs", type=names_arg, default=None)
    p.add_argument("--sentences", type=count_arg, default=500)

    p = sub.add_parser("prune", parents=[CACHE], help="write a physically pruned model folder")
    run_args(p)
    p.add_argument("--k", type=natural_arg, default=None, help="prune the k least important heads")
    p.add_argument("--mask", default=None, help="or a JSON mask file")
    p.add_argument("--out", required=True, help="a new or empty folder")
    p.add_argument("--force", action="store_true", help="replace an earlier headprune output in --out (never "
                                                        "anything else)")

    p = sub.add_parser("serve", parents=[CACHE],
                       help="start the dashboard; --class: for a class (students read, the teacher unlocks with "
                            "the key in HEADPRUNE_TEACHER_KEY)")
    p.add_argument("--class", dest="class_mode", action="store_true",
                   help="class mode: student sessions cannot delete, compute missing results, train, upload or "
                        "load other models; the teacher unlocks with the key")
    p.add_argument("--port", type=count_arg, default=8501)
    p.add_argument("--address", default=None,
                   help="the address to listen on (default: the project's .streamlit/config.toml, localhost: only "
                        "this machine); 0.0.0.0 for students on the lab network, who then open "
                        "http://<this machine's address>:PORT/")
    p.add_argument("--student-cap", type=count_arg, default=None, metavar="SECONDS",
                   help="how long one student computation may run (default 60)")
    p.add_argument("--uploads", type=count_arg, default=None, metavar="MB",
                   help="with --class: the largest upload the server takes (default 1 MB: students have no "
                        "uploader; raise it only to upload data as the teacher)")
    p.add_argument("streamlit_args", nargs="*", help="Streamlit's own options, after --")

    cache_commands(sub)
    return parser


def cache_commands(sub) -> None:
    """ls, show, rm, export and ``cache ls | du | gc``."""
    p = sub.add_parser("ls", parents=[CACHE], help="list cache entries (stale and corrupt ones named as such)")
    p.add_argument("--kind", default=None)
    for name, text in (("show", "show one cache entry"), ("rm", "delete cache entries (corrupt ones too)")):
        p = sub.add_parser(name, parents=[CACHE], help=text)
        p.add_argument("key", nargs="+" if name == "rm" else None, help="key (or unique prefix)")
    p = sub.add_parser("export", parents=[CACHE], help="export an entry's importance map / curve / mask as CSV or JSON")
    p.add_argument("key")
    p.add_argument("--format", choices=["csv", "json"], default="csv")
    p.add_argument("--out", default="-", help="a new file (default: standard output)")
    p.add_argument("--force", action="store_true", help="replace an earlier headprune export in --out")
    p = sub.add_parser("cache", help="what the cache folder holds and takes (ls, du) and freeing it (gc)")
    what = p.add_subparsers(dest="cache_command", required=True)
    q = what.add_parser("ls", parents=[CACHE],
                        help="every item: result entries (ok, stale, corrupt), temp folders, uploads")
    q.add_argument("--stale", action="store_true", help="only what 'cache gc' would remove")
    q = what.add_parser("du", parents=[CACHE], help="space taken, by area and state, largest first")
    q = what.add_parser("gc", parents=[CACHE],
                        help="remove stale and corrupt entries, temp folders of dead processes and "
                             "uploads older than a day (never outside the cache, never through a link)")
    q.add_argument("--dry-run", action="store_true", help="say what would go and how much space it frees")

    p = sub.add_parser("bundle", help="a plan's results packed on one machine and checked into another cache "
                                      "(model weights left out unless asked for)")
    what = p.add_subparsers(dest="bundle_command", required=True)
    q = what.add_parser("export", parents=[CACHE],
                        help="pack a plan's cached results and a manifest (keys, sizes, SHA-256)")
    q.add_argument("plan", help="a preset (demo, findings ...), a saved plan or a plan file")
    q.add_argument("--out", required=True, help="the bundle file to write (e.g. findings.bundle.tar.gz); an "
                                                "earlier bundle there is replaced")
    q.add_argument("--force", action="store_true", help="replace --out even if it is not a headprune bundle")
    q.add_argument("--with-weights", action="store_true",
                   help="also pack fine-tuned weights (the inspector, new masks and physical pruning need them)")
    q.add_argument("--model", default=None, help="model (default: the plan's)")
    q.add_argument("--device", default="auto")
    q = what.add_parser("import", parents=[CACHE],
                        help="check every entry of a bundle, then add them to the cache (a valid entry "
                             "already there is kept)")
    q.add_argument("file", help="the bundle file")
