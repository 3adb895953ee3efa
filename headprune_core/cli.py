"""Command line: ``python -m headprune_core <command> ...`` (``--help`` on any command)."""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import os
import sys
from pathlib import Path

import numpy as np

from headprune_core.config import METHODS, NORMALIZATIONS, RETRAIN_STRATEGIES, SETTINGS, STRATEGIES
from headprune_core.data.formats import FORMATS


# --- argument types: checked by argparse, before any work ------------------------------------------------------

def _count(text: str) -> int:
    """A whole number of at least 1 (sentences, epochs of data, batch sizes)."""
    return _int_at_least(text, 1)


def _natural(text: str) -> int:
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


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _names(text: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return names


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in _names(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None


def _one_of(known: tuple[str, ...], what: str):
    def parse(text: str) -> str:
        if text not in known:
            raise argparse.ArgumentTypeError(f"unknown {what} {text!r}; known: {', '.join(known)}")
        return text
    parse.__name__ = what
    return parse


def _data_args(p: argparse.ArgumentParser, *, keyed: bool = False) -> None:
    """--data (where the data comes from), --data-lang, --columns, --format: see headprune_core.data.refs."""
    p.add_argument("--data", action="append", default=None, metavar="[TASK[/LANG]=]SOURCE",
                   help="where the data comes from: 'embedded' (default; also corpora added with 'data add'), "
                        "'hub' (the task's Hub data set), 'hub:NAME[:CONFIG]' (e.g. hub:wikiann:sw, a Hub id or a "
                        "local copy of a Hub repository), or local files: FILE (split 80/10/10) or "
                        "TRAIN,VALIDATION,TEST (CoNLL, CoNLL-U, JSONL, CSV, parquet). "
                        + ("Repeat it as TASK=SOURCE for several tasks." if keyed else
                           "TASK=SOURCE / TASK/LANG=SOURCE name another task or language; repeatable."))
    if not keyed:
        p.add_argument("--data-lang", type=_names, default=None,
                       help="the language(s) --data holds (default: every language the command reads)")
    p.add_argument("--columns", type=_names, default=None,
                   help="columns of a table or Hub data set: WORDS,TAGS or TEXT,LABEL or TEXT,PAIR,LABEL")
    p.add_argument("--format", default=None, type=_one_of(FORMATS, "file format"),
                   help="file format when the suffix does not say")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="me5-small", help="embedded name, local folder or Hub id (me5-small)")
    p.add_argument("--finetuned", default=None, metavar="PATH",
                   help="a fine-tuned token-classification checkpoint (folder or Hub id): score, evaluate and "
                        "prune it with its own classifier, no fine-tuning (replaces --model)")
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu, cuda, mps")
    p.add_argument("--cache", default=None, help="cache folder (default: cache/ or $HEADPRUNE_CACHE)")


def _run_args(p: argparse.ArgumentParser, *, lang: bool = True) -> None:
    _common(p)
    p.add_argument("--task", default="pos", help="task name (see 'python -m headprune_core tasks'); any name "
                                                 "with --data")
    if lang:
        p.add_argument("--lang", default="en", help="language to score / evaluate on")
    p.add_argument("--train-langs", type=_names, default=None,
                   help="comma-separated fine-tuning languages (cross setting; default en, or the language of "
                        "the task's data when it has no English)")
    _data_args(p)
    p.add_argument("--setting", default="cross", type=_one_of(SETTINGS, "setting"))
    p.add_argument("--epochs", type=_positive, default=2.0)
    p.add_argument("--max-train", type=_count, default=300,
                   help="training sentences per language (at most what the corpus holds; the demo's 300 by default)")
    p.add_argument("--max-length", type=_count, default=128, help="tokens per sentence (longer ones are cut)")
    p.add_argument("--lr", type=_positive, default=2e-4, help="encoder learning rate (the demo's)")
    p.add_argument("--head-lr", type=_positive, default=5e-3, help="classifier learning rate (the demo's)")
    p.add_argument("--batch-size", type=_count, default=8, help="8: small corpora need the updates")
    p.add_argument("--seed", type=int, default=13)


def _gradts_args(p: argparse.ArgumentParser, *, plan: bool = True) -> None:
    if plan:
        p.add_argument("--plan", default="gradts-demo", help="GradTS preset or JSON plan file (units, settings)")
    p.add_argument("--units", default=None, help="comma-separated task/lang units (replace the plan's)")
    p.add_argument("--primaries", default=None, help="comma-separated primary units (replace the plan's)")
    p.add_argument("--method", choices=["kv_grad", "gate_grad"], default=None, help="head maps (default: plan's)")
    p.add_argument("--sentences", type=_count, default=None, help="cap sentences per split (quick look)")
    p.add_argument("--model", default=None, help="model (default: the plan's)")
    p.add_argument("--device", default="auto")
    p.add_argument("--cache", default=None)
    _data_args(p, keyed=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m headprune_core",
                                     description="Score, prune and compare the attention heads of encoders.")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("prepare", help="fetch and convert the embedded default model and corpora into cache/")
    p.add_argument("--force", action="store_true", help="redo even what is already prepared")
    p.add_argument("--only", choices=["models", "corpora"], default=None)
    p.add_argument("--cache", default=None)

    p = sub.add_parser("tasks", help="list tasks and languages (built-in and your registered corpora)")
    p.add_argument("--cache", default=None)

    p = sub.add_parser("data", help="register your own corpus under the cache (add), list (ls), preview (show), "
                                    "delete (rm)")
    dsub = p.add_subparsers(dest="data_command", required=True)
    q = dsub.add_parser("add", help="validate and convert FILES (or one Hub source) into a task NAME")
    q.add_argument("name", help="the task name it gets (letters, digits, - _ .)")
    q.add_argument("files", nargs="+", help="1 file (split 80/10/10) or 3 (train validation test), or one "
                                            "Hub source hub:NAME[:CONFIG]")
    q.add_argument("--lang", required=True, help="language code of the data (e.g. sw, de, pt-BR)")
    q.add_argument("--columns", type=_names, default=None, help="WORDS,TAGS or TEXT,LABEL of a table")
    q.add_argument("--format", default=None, type=_one_of(FORMATS, "file format"))
    q.add_argument("--tagset", default=None, help="map native POS tags to the 12 universal tags (penn, stts, "
                                                  "parole, wotan, upos ...)")
    q.add_argument("--model", default=None, help="also report how this model's tokenizer cuts the sentences")
    q.add_argument("--force", action="store_true", help="replace a registered corpus of the same name and language")
    q.add_argument("--cache", default=None)
    q = dsub.add_parser("ls", help="list registered corpora")
    q.add_argument("--cache", default=None)
    q = dsub.add_parser("show", help="preview a corpus (registered, embedded or --data) with label counts")
    q.add_argument("name")
    q.add_argument("--lang", required=True)
    q.add_argument("--model", default=None, help="report tokenizer alignment for this model")
    q.add_argument("-n", type=_count, default=5, help="sentences to show")
    q.add_argument("--cache", default=None)
    q = dsub.add_parser("rm", help="delete a registered corpus")
    q.add_argument("name")
    q.add_argument("--lang", default=None, help="only this language (default: all)")
    q.add_argument("--cache", default=None)

    p = sub.add_parser("study", help="run a preset (e.g. demo) or a plan file through the cache")
    p.add_argument("preset", nargs="?", default="demo", help="preset name or a JSON plan file")
    p.add_argument("--langs", default=None, help="restrict to these languages (comma-separated)")
    p.add_argument("--tasks", default=None, help="restrict to these tasks (comma-separated)")
    p.add_argument("--sentences", type=_count, default=None, help="cap sentences per split (quick look)")
    p.add_argument("--model", default=None, help="model (default: the plan's)")
    p.add_argument("--device", default="auto")
    p.add_argument("--cache", default=None)
    _data_args(p, keyed=True)

    p = sub.add_parser("sweep", help="run a grid of studies (models x data x tasks x languages x settings x seeds "
                                     "...) on Ray, one task per cached job, into one shared cache")
    p.add_argument("spec", help="sweep spec (JSON): study-plan fields plus models, data, seeds, resources "
                                "(README: Sweeps)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the jobs, what is cached and an estimated time from measured job times; run nothing")
    p.add_argument("--running", action="store_true",
                   help="run nothing: exit 0 if a sweep of this name runs on this cache now (its progress and log "
                        "are in cache/sweeps/NAME/), 1 if none does")
    p.add_argument("--address", default=None,
                   help="an existing Ray cluster (e.g. HOST:6379 from 'ray start --head'); default: a local cluster "
                        "started for this run")
    p.add_argument("--cpus", type=_count, default=None,
                   help="CPUs of the local cluster (default: all); with --dry-run, the CPUs to estimate for")
    p.add_argument("--gpus", type=_natural, default=None, help="GPUs of the local cluster (default: all found)")
    p.add_argument("--device", default="auto")
    p.add_argument("--cache", default=None, help="the shared cache folder (the same path on every node)")

    p = sub.add_parser("affinity", help="GradTS task affinity: per-unit head maps, Kendall tau, auxiliary ranking")
    _gradts_args(p)
    p.add_argument("--primary", default=None, help="rank auxiliary units for this unit (default: the plan's)")
    p.add_argument("--threshold", type=float, default=None, help="GradTS-thres tau threshold (default: plan's)")
    p.add_argument("--correlation", choices=["kendall", "spearman"], default="kendall")

    p = sub.add_parser("gradts", help="GradTS validation: thres/trial/fg selections and the AUTOSEM bandit checked "
                                      "by multi-task training against alone/all/random, with costs and intervals "
                                      "(preset gradts-demo or a JSON plan file)")
    p.add_argument("preset", nargs="?", default="gradts-demo", help="GradTS preset name or a JSON plan file")
    _gradts_args(p, plan=False)
    p.add_argument("--max-trial", type=int, default=None,
                   help="cap GradTS-trial at this many auxiliary units (0: every candidate, the paper's procedure)")
    p.add_argument("--train-seeds", default=None, help="comma-separated training seeds of the final models")
    p.add_argument("--fg-threshold", type=float, default=None, help="GradTS-fg tau threshold (default: plan's)")

    p = sub.add_parser("stemcells", help="learned head pruning (hard-concrete L0 gates) of every unit of a GradTS "
                                         "plan alone and of all together: the heads most tasks keep (He & Choi)")
    p.add_argument("preset", nargs="?", default="gradts-demo", help="GradTS preset name or a JSON plan file")
    _gradts_args(p, plan=False)
    p.add_argument("--target", type=float, default=0.5, help="share of heads each run removes (default 0.5)")
    p.add_argument("--penalty", type=float, default=None,
                   help="instead of a target: the weight of the L0 term (as few heads as the task allows)")
    p.add_argument("--l0-epochs", type=float, default=1.0, help="epochs of training with the gates (default 1)")

    p = sub.add_parser("finetune", help="fine-tune a model on a task")
    _run_args(p, lang=False)

    p = sub.add_parser("score", help="score every head's importance")
    _run_args(p)
    p.add_argument("--method", default="gate_grad", type=_one_of(METHODS, "importance method"))
    p.add_argument("--normalize", default="layer_sum", type=_one_of(NORMALIZATIONS, "normalisation"))
    p.add_argument("--sentences", type=_count, default=300)

    p = sub.add_parser("curve", help="metric vs heads pruned for a strategy")
    _run_args(p)
    p.add_argument("--strategy", default="importance", type=_one_of(STRATEGIES[:-1], "strategy"))
    p.add_argument("--ranking-lang", default=None, help="prune by another language's ranking")
    p.add_argument("--method", default="gate_grad", type=_one_of(METHODS, "importance method"))
    p.add_argument("--step", type=_natural, default=0, help="heads per step (default one layer's worth)")
    p.add_argument("--seeds", type=_ints, default=(0, 1, 2), help="seeds for the random strategy")
    p.add_argument("--sentences", type=_count, default=500)

    p = sub.add_parser("evaluate", help="evaluate under a head mask (JSON file of a (layers, heads) 0/1 array)")
    _run_args(p)
    p.add_argument("--mask", default=None, help="JSON file: [[1,0,...],...] (1 keep, 0 pruned)")
    p.add_argument("--sentences", type=_count, default=500)

    p = sub.add_parser("refinetune", help="prune, then re-fine-tune (Ma et al.: k = 0..K lowest-ranked heads, best "
                                          "k on dev; controls and Budhraja et al.'s layer thirds by --strategy)")
    _run_args(p)
    p.add_argument("--strategy", default="importance", type=_one_of(RETRAIN_STRATEGIES, "strategy"),
                   help="importance (lowest-ranked first), reverse (top-ranked), random, layers (bottom/middle/top "
                        "third)")
    p.add_argument("--max-k", type=_natural, default=12, help="levels k = 0..K (unless --levels)")
    p.add_argument("--levels", type=_ints, default=(), help="numbers of heads to prune, e.g. 0,36,72,108")
    p.add_argument("--train-seeds", type=_ints, default=(), help="training seeds (default: --seed)")
    p.add_argument("--random-seed", type=int, default=0, help="which heads the random strategy removes")
    p.add_argument("--eval-langs", type=_names, default=None)
    p.add_argument("--sentences", type=_count, default=500)

    p = sub.add_parser("prune", help="write a physically pruned model folder")
    _run_args(p)
    p.add_argument("--k", type=_natural, default=None, help="prune the k least important heads")
    p.add_argument("--mask", default=None, help="or a JSON mask file")
    p.add_argument("--out", required=True, help="a new or empty folder")
    p.add_argument("--force", action="store_true", help="replace an earlier headprune output in --out (never "
                                                        "anything else)")

    p = sub.add_parser("ls", help="list cache entries")
    p.add_argument("--kind", default=None)
    p.add_argument("--cache", default=None)
    for name, text in (("show", "show one cache entry"), ("rm", "delete cache entries")):
        p = sub.add_parser(name, help=text)
        p.add_argument("key", nargs="+" if name == "rm" else None, help="key (or unique prefix)")
        p.add_argument("--cache", default=None)
    p = sub.add_parser("export", help="export an entry's importance map / curve / mask as CSV or JSON")
    p.add_argument("key")
    p.add_argument("--format", choices=["csv", "json"], default="csv")
    p.add_argument("--out", default="-", help="a new file (default: standard output)")
    p.add_argument("--force", action="store_true", help="replace an earlier headprune export in --out")
    p.add_argument("--cache", default=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    try:
        if getattr(args, "cache", None):
            from headprune_core.store import check_folder
            os.environ["HEADPRUNE_CACHE"] = str(check_folder(Path(args.cache).expanduser().resolve(),
                                                             "cache folder"))
        return COMMANDS[args.command](args) or 0
    except KeyboardInterrupt:
        print("\ninterrupted: finished results stay cached; run the same command again to resume.",
              file=sys.stderr)
        return 130
    except (ValueError, KeyError, OSError, RuntimeError) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"error: {msg}", file=sys.stderr)
        return 2


def data_sources(args, *, task: str | None = None) -> dict:
    """``{"task" or "task/lang": DataRef}`` from --data / --data-lang / --columns / --format.

    A plain SOURCE belongs to ``task`` (restricted to --data-lang when given); TASK=SOURCE and
    TASK/LANG=SOURCE name their own key."""
    from headprune_core.data.refs import check_ref, parse_ref
    out = {}
    for item in getattr(args, "data", None) or ():
        key, sep, text = item.partition("=")
        if not sep:
            key, text = "", item
        ref = parse_ref(text, columns=getattr(args, "columns", None), format=getattr(args, "format", None))
        check_ref(ref)
        if key:
            out[key] = ref
        elif task is None:
            raise ValueError(f"--data {item}: say which task it is for (TASK=SOURCE)")
        elif getattr(args, "data_lang", None):
            out.update({f"{task}/{lang}": ref for lang in args.data_lang})
        else:
            out[task] = ref
    return out


def _has_source(sources: dict, task: str, lang: str) -> bool:
    from headprune_core.data.refs import ref_for
    ref = ref_for(sources, task, lang)
    return ref is not None and not ref.is_embedded


def check_run(args, *, langs: tuple[str, ...] = ()) -> tuple[int, int]:
    """Check a run's task, languages, data and model before any work; return the model's (layers, heads).

    Fills in ``args.train_langs`` (default: en, or the task's first language when it has no English, or
    ``--lang`` for data named by --data), ``args.model`` (from --finetuned) and ``args.sources``. Nothing is
    loaded or trained here: the model's shape comes from its config file.
    """
    from headprune_core.data.registry import UnknownName, all_tasks, check_language
    from headprune_core.models import config_head_shape
    if getattr(args, "finetuned", None):
        args.model = args.finetuned
    args.sources = data_sources(args, task=args.task)
    info = all_tasks().get(args.task)
    if args.train_langs is None:
        lang = getattr(args, "lang", None)
        if info is not None and "*" not in info.languages and not _has_source(args.sources, args.task, lang or ""):
            args.train_langs = ("en",) if "en" in info.languages else info.languages[:1]
        else:
            args.train_langs = (lang or "en",)
    for lang in (*args.train_langs, *langs):
        if _has_source(args.sources, args.task, lang):
            continue
        if info is None:
            raise UnknownName(f"unknown task {args.task!r}; known: {', '.join(all_tasks())} (your own corpus: "
                              "'python -m headprune_core data add NAME --lang xx FILES', or --data FILES)")
        check_language(info, lang)
    return config_head_shape(args.model)


def _heads_total(shape: tuple[int, int]) -> int:
    return shape[0] * shape[1]


# --- commands ------------------------------------------------------------------------------------------------

def cmd_prepare(args) -> int:
    from headprune_core.prepare import prepare_all
    report = prepare_all(force=args.force, only=args.only)
    print(report.summary())
    return 0 if report.ok else 1


def cmd_tasks(args) -> int:
    from headprune_core.data import list_tasks
    tasks = list_tasks()
    for t in tasks:
        if "registered" not in t.sources:
            print(f"{t.name:16} {t.kind:8} {','.join(t.languages):24} {t.description}")
    mine = [t for t in tasks if "registered" in t.sources]
    print("\nyour registered corpora ('data add'):" if mine else
          "\nno registered corpora of your own yet: python -m headprune_core data add NAME --lang xx FILES")
    for t in mine:
        print(f"{t.name:16} {t.kind:8} {','.join(t.languages):24} {len(t.labels)} labels; {t.description}")
    return 0


def cmd_data(args) -> int:
    from headprune_core.data import user
    if args.data_command == "ls":
        found = user.registered()
        if not found:
            print(f"no registered corpora in {user.data_root()}")
        for name, by_lang in found.items():
            for lang, meta in by_lang.items():
                counts = meta.get("counts", {})
                print(f"{name:16} {lang:6} {meta['kind']:8} {len(meta['labels']):3} labels  "
                      + " ".join(f"{s} {counts.get(s, 0)}" for s in ("train", "validation", "test"))
                      + f"  {meta.get('origin')}")
        return 0
    if args.data_command == "rm":
        for folder in user.remove(args.name, args.lang):
            print(f"deleted {folder}")
        return 0
    if args.data_command == "add":
        from headprune_core.data.refs import load_ref, parse_ref
        if len(args.files) == 1 and args.files[0].startswith("hub"):
            data = load_ref(parse_ref(args.files[0], columns=args.columns), args.name, args.lang)
            meta = user.register(args.name, args.lang, data=data, replace=args.force)
        else:
            meta = user.register(args.name, args.lang, args.files, format=args.format, columns=args.columns or (),
                                 tagset=args.tagset, replace=args.force)
        c = meta["counts"]
        print(f"registered {args.name}/{args.lang}: {meta['kind']} task, {len(meta['labels'])} labels "
              f"({', '.join(meta['labels'][:20])}{' ...' if len(meta['labels']) > 20 else ''}); train {c['train']}, "
              f"validation {c['validation']}, test {c['test']}; fingerprint {meta['fingerprint']}")
        print(f"use it: python -m headprune_core score --task {args.name} --lang {args.lang}")
        if args.model:
            _print_report(args.name, args.lang, args.model, 0)
        return 0
    _print_report(args.name, args.lang, args.model, args.n)
    return 0


def _print_report(task: str, lang: str, model: str | None, n: int) -> None:
    from headprune_core.data import load_task
    from headprune_core.data.preview import corpus_report
    data = load_task(task, lang)
    tokenizer = None
    if model:
        from headprune_core.models import load_tokenizer
        tokenizer = load_tokenizer(model)
    rep = corpus_report(data, tokenizer=tokenizer, n=n)
    print(f"{task}/{lang}: {rep['kind']} task; " + ", ".join(f"{s} {k}" for s, k in rep["counts"].items()))
    print("labels (train counts): " + ", ".join(f"{l} {c}" for l, c in rep["label_counts"].items()))
    for ex in rep["examples"]:
        print("  " + ex)
    if "alignment" in rep:
        a = rep["alignment"]
        print(f"tokenizer of {model} (max {a['max_length']} tokens): {a['truncated']} of {a['sentences']} "
              f"sentences truncated, {a['words_lost']} of {a['words']} words lost "
              f"({100 * a['words_lost_share']:.2f}%), {a['pieces_per_word']:.2f} pieces per word")


def _study(args):
    from headprune_core.study import Study
    return Study(args.model, device=args.device, sources=getattr(args, "sources", None),
                 finetuned=bool(getattr(args, "finetuned", None)))


def _ft(study, args):
    return study.finetune_config(args.task, args.train_langs, setting=args.setting, epochs=args.epochs,
                                 max_train_sentences=args.max_train, max_length=args.max_length, lr=args.lr,
                                 head_lr=args.head_lr, batch_size=args.batch_size, seed=args.seed)


def cmd_study(args) -> int:
    from tqdm.auto import tqdm

    from headprune_core.study import Study, StudyPlan, get_preset, run_plan
    if args.preset.endswith(".json") or Path(args.preset).is_file():
        plan = StudyPlan.from_file(args.preset)
    else:
        from headprune_core.gradts import GRADTS_PRESETS
        if args.preset in GRADTS_PRESETS:  # `study gradts-demo` is the same as `gradts gradts-demo`
            for name in ("units", "primaries", "method"):
                setattr(args, name, None)
            return cmd_gradts(args)
        plan = get_preset(args.preset)
    plan = plan.restricted(langs=_names(args.langs) if args.langs else None,
                           tasks=_names(args.tasks) if args.tasks else None, sentences=args.sentences)
    plan = _with_cli_sources(plan, args)
    _check_plan_langs(plan)
    study = plan.study(device=args.device)
    _print_estimate(study, plan)
    bar = tqdm(desc=f"study {plan.name}", unit="job")

    def on_job(i, n, what, cached):
        bar.total = n
        bar.set_postfix_str(("cached: " if cached else "") + what)
        bar.update(1 if i else 0)

    res = run_plan(study, plan, on_job=on_job)
    bar.update(1)
    bar.close()
    print(f"{res['jobs']} jobs, {res['computed']} computed, {res['seconds']:.1f} s")
    _print_summary(study, plan)
    return 0


def _print_estimate(study, plan) -> None:
    """Before a study starts: how many results are missing and about how long they take here."""
    from headprune_core.study import plan_jobs
    from headprune_core.sweep import estimate_jobs
    todo = [j.cfg for j in plan_jobs(study, plan) if not study.store.has(j.cfg)]
    if not todo:
        return
    est = estimate_jobs(study.store, todo)
    unknown = f"; never measured in this cache: {', '.join(est['unknown'])} jobs" if est["unknown"] else ""
    print(f"study {plan.name}: {len(todo)} results to compute, about {est['seconds'] / 60:.0f} min from the job "
          f"times measured in this cache{unknown}", file=sys.stderr)


def _with_cli_sources(plan, args):
    """The plan with --data sources (TASK=SOURCE; a plain SOURCE when the plan has one task) and --model."""
    from dataclasses import replace
    sources = data_sources(args, task=plan.tasks[0] if len(getattr(plan, "tasks", ())) == 1 else None)
    if sources:
        plan = replace(plan, sources={**plan.sources, **{k: v.to_json() for k, v in sources.items()}})
    if getattr(args, "model", None):
        plan = replace(plan, model=args.model)
    return plan


def _check_plan_langs(plan) -> None:
    """Every language of the plan belongs to one of its tasks (a typo would otherwise silently drop it)."""
    known = sorted({lang for task in plan.tasks for lang in plan.task_langs(task)})
    unknown = [lang for lang in plan.langs if lang not in known and "*" not in known]
    if unknown:
        raise ValueError(f"unknown language(s) {', '.join(unknown)} for the plan's tasks "
                         f"({', '.join(plan.tasks)}); known: {', '.join(known)}")


def _print_summary(study, plan) -> None:
    for task in plan.tasks:
        train_langs = plan.source_langs if plan.settings[0] == "cross" else plan.task_langs(task)
        ft = study.finetune_config(task, train_langs, setting=plan.settings[0], **plan.train)
        for lang in plan.task_langs(task):
            ev = study.evaluation(study.eval_config(ft, task, lang, max_sentences=plan.eval_sentences))
            print(f"  {task:6} {lang}: {ev['metric']} {_with_ci(ev)}")


def _gradts_plan(name: str, args):
    """A GradTS preset or JSON plan file, restricted by the command's options."""
    from dataclasses import replace

    from headprune_core.gradts import GradTSPlan, get_gradts_preset
    if name.endswith(".json") or Path(name).is_file():
        plan = GradTSPlan.from_file(name)
    else:
        plan = get_gradts_preset(name)
    split = (lambda v: tuple(x.strip() for x in v.split(",") if x.strip()) if v else None)
    plan = plan.restricted(units=split(getattr(args, "units", None)),
                           primaries=split(getattr(args, "primaries", None)) or split(getattr(args, "primary", None)),
                           sentences=args.sentences, method=getattr(args, "method", None))
    plan = _with_cli_sources(plan, args)
    if getattr(args, "threshold", None) is not None:
        plan = replace(plan, threshold=args.threshold)
    if getattr(args, "max_trial", None) is not None:
        if args.max_trial < 0:
            raise ValueError(f"--max-trial must be 0 (every candidate) or more, got {args.max_trial}")
        plan = replace(plan, max_trial=args.max_trial or None)
    if getattr(args, "train_seeds", None):
        try:
            seeds = tuple(int(v) for v in args.train_seeds.split(",") if v.strip())
        except ValueError:
            raise ValueError(f"--train-seeds takes comma-separated integers, got {args.train_seeds!r}") from None
        plan = replace(plan, train_seeds=seeds)
    if getattr(args, "fg_threshold", None) is not None:
        plan = replace(plan, fg_threshold=args.fg_threshold)
    return plan


def _gradts_runner(plan, args, desc: str):
    """(GradTS, tqdm bar): the bar advances on every cached step and names it."""
    from tqdm.auto import tqdm

    from headprune_core.gradts import GradTS
    from headprune_core.study import Study
    bar = tqdm(desc=desc, unit="step")

    def on_job(what: str, cached: bool) -> None:
        bar.set_postfix_str(("cached: " if cached else "") + what)
        bar.update(1)
    gts = GradTS(Study(plan.model, device=args.device), plan, on_job=on_job)
    return gts, bar


def _print_tau(names, tau, kind: str) -> None:
    from headprune_core.affinity import cluster_order
    order = cluster_order(tau)
    names = [names[i] for i in order]
    tau = np.asarray(tau)[np.ix_(order, order)]
    width = max(len(n) for n in names)
    print(f"{kind} between the units' head maps (clustered order):")
    print(" " * (width + 1) + " ".join(f"{i:>6}" for i in range(len(names))))
    for i, (n, row) in enumerate(zip(names, tau)):
        print(f"{n:>{width}} " + " ".join(f"{v:6.2f}" for v in row) + f"  [{i}]")
    off = tau[~np.eye(len(tau), dtype=bool)]
    print(f"off-diagonal: min {off.min():.3f}, mean {off.mean():.3f}, max {off.max():.3f}")


def cmd_sweep(args) -> int:
    from tqdm.auto import tqdm

    from headprune_core.sweep import SweepSpec, build_graph, dry_run, format_dry_run, run_sweep
    spec = SweepSpec.from_file(args.spec)
    if args.running:
        from headprune_core.sweep import running_sweeps
        for rec, s in running_sweeps():
            if rec.get("name") == spec.name:
                print(f"sweep {spec.name} runs: {s['finished']} of {s['total']} jobs finished")
                return 0
        print(f"no sweep {spec.name} runs on this cache")
        return 1
    graph = build_graph(spec, device=args.device)
    if args.dry_run:
        print(format_dry_run(dry_run(graph, cpus=args.cpus)))
        return 0
    counts = graph.counts()
    bar = tqdm(desc=f"sweep {spec.name}", unit="job", total=len(graph.nodes), initial=counts["cached"])

    def on_event(node, g) -> None:
        bar.total = len(g.nodes)
        if node.state in ("done", "failed", "skipped", "cached"):
            bar.update(1)
        bar.set_postfix_str(f"{node.state}: {node.what}"[:80])

    res = run_sweep(graph, address=args.address, cpus=args.cpus, gpus=args.gpus, on_event=on_event)
    bar.close()
    print(f"{res.jobs} jobs: {res.cached} were cached, {res.computed} computed, {len(res.failed)} failed, "
          f"{len(res.skipped)} skipped; {res.seconds:.1f} s (Ray start {res.ray_seconds:.1f} s)")
    for node in res.failed:
        print(f"  failed after {node.attempts} attempt(s): {node.what}: {node.error}", file=sys.stderr)
    for node in res.skipped:
        print(f"  skipped: {node.what}: {node.error}", file=sys.stderr)
    return 0 if res.ok else 1


def cmd_affinity(args) -> int:
    from headprune_core.affinity import rank_auxiliary, select_threshold
    plan = _gradts_plan(args.plan, args)
    gts, bar = _gradts_runner(plan, args, "head maps")
    bar.total = 2 * len(gts.units)
    aff = gts.affinity()
    bar.close()
    matrix = aff["tau"] if args.correlation == "kendall" else aff["spearman"]
    _print_tau(aff["names"], matrix, "Kendall tau" if args.correlation == "kendall" else "Spearman rho")
    print(f"maps: {plan.method}, fine-tuned alone on {plan.train}, scored on {plan.score_sentences} sentences")
    for primary in (args.primary,) if args.primary else gts.primaries:
        ranking = rank_auxiliary(aff["names"], matrix, primary)
        chosen = set(select_threshold(ranking, plan.threshold))
        print(f"\nauxiliary units for {primary} (* = above the threshold {plan.threshold}):")
        for name, value in ranking:
            print(f"  {'*' if name in chosen else ' '} {name:20} {value:+.3f}")
    return 0


def cmd_gradts(args) -> int:
    from headprune_core.gradts import format_table
    plan = _gradts_plan(args.preset, args)
    gts, bar = _gradts_runner(plan, args, f"gradts {plan.name}")
    bar.total = gts.expected_jobs()
    out = gts.run()
    bar.close()
    res = out["result"]
    if plan.note:
        print(f"note: {plan.note}")
    _print_tau(res["names"], out["tau"], "Kendall tau")
    for v in res["validation"]:
        print(f"\n{v['primary']}: ranking " + ", ".join(f"{n} {t:+.2f}" for n, t in v["ranking"]))
        print(f"  GradTS-thres (tau > {plan.threshold}): {', '.join(v['thres']) or 'none'}")
        print("  GradTS-trial: " + "; ".join(f"{'+'.join(t['aux']) or 'alone'} dev {t['dev']:.1f}"
                                             for t in v["trial"]["trials"])
              + f" -> {', '.join(v['trial']['selected']) or 'alone'}")
        fg = v["fg"]
        print(f"  GradTS-fg (tau > {fg['threshold']}): " + ", ".join(
            f"{u} {f['kept']}/{f['examples']} (median tau {f['tau_median']:+.2f})" for u, f in fg["summary"].items()))
        for seed, b in v["bandit"].items():
            print(f"  bandit seed {seed} ({b['seconds']:.0f} s): " + ", ".join(
                f"{u} {m:.2f}" for u, m in sorted(b["means"].items(), key=lambda kv: -kv[1]))
                  + f" -> {', '.join(b['selected']) or 'alone'}")
    print()
    print(format_table(res))
    s = res["seconds"]
    print(f"\nwall time: {s['wall']:.0f} s when computed (maps {s['wall_maps']:.0f} s, multi-task runs and "
          f"evaluations {s['wall_multitask']:.0f} s); training+scoring of the maps {s['maps_total']:.0f} s, "
          f"multi-task training {s['multitask_total']:.0f} s; key {gts.config().key()}")
    return 0


def cmd_stemcells(args) -> int:
    from headprune_core.stemcells import StemCells
    plan = _gradts_plan(args.preset, args)
    gts, bar = _gradts_runner(plan, args, f"learned pruning {plan.name}")
    l0 = {"penalty": args.penalty} if args.penalty is not None else {"target": args.target}
    cells = StemCells(gts, l0={**l0, "epochs": args.l0_epochs})
    bar.total = len(cells.configs())
    res = cells.run(on_job=gts.on_job)
    bar.close()
    n, shape = len(res["units"]), res["shape"]
    n_heads = shape[0] * shape[1]
    how = f"L0 weight {args.penalty:g}" if args.penalty is not None else \
        f"{args.target:.0%} of {n_heads} heads removed per run"
    print(f"learned pruning (hard-concrete gates, {how}, {args.l0_epochs:g} epoch(s) after each fine-tune) of "
          f"{n} units of plan {plan.name}; heads kept per run: "
          + ", ".join(f"{r['unit']} {r['kept']}" for r in res["per_task"]) + f", all together {res['multi_kept_n']}")
    print(f"heads kept by at least k of {n} tasks (random sets of the same size: expected):")
    for k in range(1, n + 1):
        print(f"  k={k}: {res['claimed'][k]:4d}   (chance {res['claimed_chance'][k]:6.1f})")
    sg = res["stem_vs_gradient"]
    print(f"stem cells (kept by >= {res['majority']}): {len(res['stem_cells'])}: "
          + ", ".join(f"L{a}H{b} ({c})" for a, b, c in res["stem_cells"][:20]))
    print(f"gradient top sets of the same size: {sg['gradient']} heads in >= {res['majority']} tasks; in both: "
          f"{sg['both']} (Jaccard {sg['jaccard']:.2f}); multi-task run keeps {res['multi_kept_n']}")
    print(f"{'unit':18} {'kept':>5} {'grad overlap':>13} {'alone':>16} {'alone, L0':>16} {'multi, L0':>16} "
          f"{'multi-alone':>12}")
    for r in res["per_task"]:
        d = r["multi_vs_single"]
        ci = (lambda x: f"{x['score']:.1f} [{x['low']:.1f},{x['high']:.1f}]")
        print(f"{r['unit']:18} {r['kept']:5d} {r['overlap_gradient']:7.0%} ({r['overlap_chance']:.0%}) "
              f"{ci(r['single']):>16} {ci(r['single_learned']):>16} {ci(r['multi_learned']):>16} "
              f"{d['diff']:+8.1f}{'*' if d['distinguishable'] else ' '}")
    return 0


def cmd_finetune(args) -> int:
    if args.finetuned:
        raise ValueError("--finetuned: the checkpoint is fine-tuned already; score, curve, evaluate or prune it")
    check_run(args)
    study = _study(args)
    ft = _ft(study, args)
    log = study.train_log(ft)
    print(f"fine-tuned {ft.tasks} on {ft.train_langs}: {log['steps']} steps, {log['seconds']} s; key {ft.key()}")
    return 0


def _print_map(m: np.ndarray) -> None:
    print("layer " + " ".join(f"h{h:<5}" for h in range(m.shape[1])))
    for i, row in enumerate(m):
        print(f"{i:5} " + " ".join(f"{v:6.3f}" for v in row))


def cmd_score(args) -> int:
    check_run(args, langs=(args.lang,))
    study = _study(args)
    sc = study.score_config(_ft(study, args), args.task, args.lang, method=args.method,
                            max_sentences=args.sentences)
    res = study.scores(sc)
    print(f"importance ({args.method}, {args.normalize}, min-max) of {args.task}/{args.lang}; key {sc.key()}")
    from headprune_core.importance import normalise
    _print_map(normalise(res["raw"], normalize=args.normalize, minmax=True))
    return 0


def cmd_curve(args) -> int:
    shape = check_run(args, langs=(args.lang, *([args.ranking_lang] if args.ranking_lang else [])))
    if args.step > _heads_total(shape):
        raise ValueError(f"--step {args.step} is more than the model's {_heads_total(shape)} heads")
    study = _study(args)
    cc = study.curve_config(_ft(study, args), args.task, args.lang, strategy=args.strategy,
                            ranking_lang=args.ranking_lang, method=args.method, step=args.step,
                            seeds=args.seeds, max_sentences=args.sentences)
    res = study.curve(cc)
    print(f"{res['metric']} vs heads pruned ({res['strategy']}) on {args.task}/{args.lang}, with the 95% bootstrap "
          f"interval over sentences; key {cc.key()}")
    for k, m, s, lab, lo, hi in zip(res["k"], res["mean"], res["std"], res["labels"], res["low"], res["high"]):
        spread = f"; sd {s:.2f} over {res['n_seeds']} random draws" if res["n_seeds"] > 1 else ""
        print(f"  {lab:>8} k={k:3}: {m:6.2f} (95% CI {lo:.2f}-{hi:.2f}{spread})")
    return 0


def cmd_evaluate(args) -> int:
    from headprune_core.evaluate import load_mask
    shape = check_run(args, langs=(args.lang,))
    mask = load_mask(args.mask, shape).numpy() if args.mask else None
    study = _study(args)
    ft = _ft(study, args)
    ev = study.evaluation(study.eval_config(ft, args.task, args.lang, mask, max_sentences=args.sentences))
    print(f"{args.task}/{args.lang}: {ev['metric']} {_with_ci(ev)}")
    return 0


def _with_ci(ev: dict) -> str:
    """"96.12 (95% CI 95.31-96.88; 3,021 tokens, 200 sentences)": an evaluation with its bootstrap interval."""
    low, high = ev["ci"]
    sentences = len(next(iter(ev["units"].values())))
    return f"{ev['score']:.2f} (95% CI {low:.2f}-{high:.2f}; n={ev['n']}, {sentences} sentences)"


def cmd_refinetune(args) -> int:
    from headprune_core.config import RefinetuneConfig
    shape = check_run(args, langs=args.eval_langs or ())
    top = max([args.max_k, *args.levels])
    if top > _heads_total(shape):
        raise ValueError(f"cannot prune {top} heads: the model has {_heads_total(shape)}")
    study = _study(args)
    ft = _ft(study, args)
    ranking = study.score_config(ft, args.task, ft.train_langs[0]) if args.strategy in ("importance", "reverse") \
        else None
    rc = RefinetuneConfig(finetune=ft, ranking=ranking, strategy=args.strategy, max_k=args.max_k,
                          levels=tuple(args.levels), seeds=tuple(args.train_seeds), random_seed=args.random_seed,
                          max_sentences=args.sentences, eval_langs=args.eval_langs or ())
    if not study.store.has(rc):
        from headprune_core.sweep import estimate_jobs
        est = estimate_jobs(study.store, [rc])
        print(f"{len(rc.points()) * len(rc.train_seeds())} fine-tunings (levels x seeds); about "
              f"{est['seconds'] / 60:.0f} min from the job times measured in this cache"
              + (f" (never measured: {', '.join(est['unknown'])})" if est["unknown"] else ""), file=sys.stderr)
    print(format_refinetune(study.refinetune(rc)))
    return 0


def format_refinetune(res: dict) -> str:
    """A re-fine-tuning's tables as text: dev per level, the level picked per seed, test per language."""
    from headprune_core.uncertainty import describe_ci, describe_diff
    lines = [f"pruned by {res['strategy']}, re-fine-tuned ({res['setting']}), seeds {res['seeds']}, "
             f"{res['metric']} with 95% bootstrap intervals over sentences",
             f"dev ({res['dev_lang']}):"]
    for lab, k in zip(res["levels"], res["k"]):
        lines.append(f"  {lab:>6} ({k:3} heads): {describe_ci(res['dev'][lab])}")
    lines.append("best level on dev per seed: " + ", ".join(f"seed {s}: {lab}" for s, lab in res["best"].items()))
    for lang, r in res["test"].items():
        lines.append(f"  test {lang}: unpruned {describe_ci(r['unpruned'])} -> pruned {describe_ci(r['pruned'])}; "
                     f"change {describe_diff(r['change'])}")
    return "\n".join(lines)


def cmd_prune(args) -> int:
    from headprune_core.evaluate import load_mask, strategy_mask
    from headprune_core.files import claim_output_dir
    from headprune_core.pruned import META, save_pruned
    shape = check_run(args, langs=(args.lang,))
    if (args.k is None) == (args.mask is None):
        raise ValueError("say which heads to prune: --k N (least important) or --mask FILE, not both")
    if args.k is not None and args.k > _heads_total(shape):
        raise ValueError(f"cannot prune {args.k} heads: the model has {_heads_total(shape)} "
                         f"({shape[0]} layers x {shape[1]} heads)")
    mask = load_mask(args.mask, shape) if args.mask else None
    claim_output_dir(args.out, marker=META, force=args.force)  # before any work; checked again when writing
    study = _study(args)
    ft = _ft(study, args)
    if mask is None:
        ranking = study.importance(study.score_config(ft, args.task, args.lang))
        mask = strategy_mask(shape, "importance", args.k, ranking=ranking)
    out = save_pruned(study.finetuned(ft), mask, args.out, tokenizer=study.loaded.tokenizer, force=args.force,
                      meta={"base_model": args.model, "finetune_key": ft.key(),
                            "data": {k: str(v) for k, v in study.sources.items()}})
    print(f"wrote {out} ({int((mask == 0).sum())} heads removed); load it with "
          f"headprune_core.pruned.load_pruned('{out}')")
    return 0


def _store():
    from headprune_core.store import Store
    return Store()


def cmd_ls(args) -> int:
    entries = _store().entries(args.kind)
    if not entries:
        print("the cache is empty")
    for e in entries:
        what = e.describe()
        if e.stale:
            what += "  [stale: written by an older headprune, never read; 'rm' frees its space]"
        print(f"{e.key[:12]}  {e.kind:10} {e.size / 1e6:8.2f} MB  {what}")
    return 0


def cmd_show(args) -> int:
    e = _store().find(args.key)
    print(json.dumps({"kind": e.kind, "key": e.key, "path": str(e.path), "artifacts": e.artifacts,
                      "config": e.config}, indent=2))
    return 0


def cmd_rm(args) -> int:
    store = _store()
    for key in args.key:
        e = store.find(key)
        store.delete(e)
        print(f"deleted {e.kind} {e.key}")
    return 0


EXPORT_VERSION = 1
CSV_HEADERS = ("layer,head,score", "label,heads_pruned,mean,std", "metric,score")


def is_export(path: Path) -> bool:
    """Whether ``path`` is a file ``export`` wrote (JSON with our marker, or CSV with one of our headers)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text).get("headprune_export") == EXPORT_VERSION
        except (ValueError, AttributeError):
            return False
    return text.split("\n", 1)[0].strip() in CSV_HEADERS


def cmd_export(args) -> int:
    from headprune_core.files import claim_output_file, write_file_atomic
    from headprune_core.store import CorruptEntry
    if args.out != "-":
        claim_output_file(args.out, is_ours=is_export, force=args.force)
    store = _store()
    e = store.find(args.key)
    try:
        data = store.read(e)
    except CorruptEntry as err:
        raise ValueError(f"cache entry {e.key[:12]} ({e.kind}) is corrupt ({err}); recompute it, or delete it "
                         f"with 'rm {e.key[:12]}'") from None
    if "raw" in data:
        table = {"layer": [], "head": [], "score": []}
        for (layer, head), v in np.ndenumerate(data["raw"]):
            table["layer"].append(layer)
            table["head"].append(head)
            table["score"].append(float(v))
    elif "curve" in data:
        c = data["curve"]
        table = {"label": c["labels"], "heads_pruned": c["k"], "mean": c["mean"], "std": c["std"]}
    elif "result" in data and "score" in data["result"]:
        table = {"metric": [data["result"]["metric"]], "score": [data["result"]["score"]]}
    else:
        raise ValueError(f"entry {e.key[:12]} ({e.kind}) holds no table to export")
    if args.format == "json":
        text = json.dumps({"headprune_export": EXPORT_VERSION, "kind": e.kind, "key": e.key, "config": e.config,
                           **table}, indent=2)
    else:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(list(table))
        w.writerows(zip(*table.values()))
        text = buf.getvalue()
    if args.out == "-":
        sys.stdout.write(text)
    else:
        write_file_atomic(args.out, text)
        print(f"wrote {args.out}")
    return 0


COMMANDS = {"prepare": cmd_prepare, "tasks": cmd_tasks, "data": cmd_data, "study": cmd_study, "sweep": cmd_sweep,
            "affinity": cmd_affinity,
            "gradts": cmd_gradts, "stemcells": cmd_stemcells, "finetune": cmd_finetune,
            "score": cmd_score, "curve": cmd_curve, "evaluate": cmd_evaluate, "refinetune": cmd_refinetune,
            "prune": cmd_prune, "ls": cmd_ls, "show": cmd_show, "rm": cmd_rm, "export": cmd_export}
