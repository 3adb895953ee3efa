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

from headprune_core.config import METHODS, NORMALIZATIONS, SETTINGS, STRATEGIES


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


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="me5-small", help="embedded name, local folder or Hub id (me5-small)")
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu, cuda, mps")
    p.add_argument("--cache", default=None, help="cache folder (default: cache/ or $HEADPRUNE_CACHE)")


def _run_args(p: argparse.ArgumentParser, *, lang: bool = True) -> None:
    _common(p)
    p.add_argument("--task", default="pos", help="task name (see 'python -m headprune_core tasks')")
    if lang:
        p.add_argument("--lang", default="en", help="language to score / evaluate on")
    p.add_argument("--train-langs", type=_names, default=("en",),
                   help="comma-separated fine-tuning languages (cross setting)")
    p.add_argument("--setting", default="cross", type=_one_of(SETTINGS, "setting"))
    p.add_argument("--epochs", type=_positive, default=2.0)
    p.add_argument("--max-train", type=_count, default=2000,
                   help="training sentences per language (at most what the corpus holds)")
    p.add_argument("--max-length", type=_count, default=128, help="tokens per sentence (longer ones are cut)")
    p.add_argument("--lr", type=_positive, default=5e-5)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m headprune_core",
                                     description="Score, prune and compare the attention heads of encoders.")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("prepare", help="fetch and convert the embedded default model and corpora into cache/")
    p.add_argument("--force", action="store_true", help="redo even what is already prepared")
    p.add_argument("--only", choices=["models", "corpora"], default=None)
    p.add_argument("--cache", default=None)

    sub.add_parser("tasks", help="list tasks and languages")

    p = sub.add_parser("study", help="run a preset (e.g. demo) or a plan file through the cache")
    p.add_argument("preset", nargs="?", default="demo", help="preset name or a JSON plan file")
    p.add_argument("--langs", default=None, help="restrict to these languages (comma-separated)")
    p.add_argument("--tasks", default=None, help="restrict to these tasks (comma-separated)")
    p.add_argument("--sentences", type=_count, default=None, help="cap sentences per split (quick look)")
    p.add_argument("--device", default="auto")
    p.add_argument("--cache", default=None)

    p = sub.add_parser("affinity", help="GradTS task affinity: per-unit head maps, Kendall tau, auxiliary ranking")
    _gradts_args(p)
    p.add_argument("--primary", default=None, help="rank auxiliary units for this unit (default: the plan's)")
    p.add_argument("--threshold", type=float, default=None, help="GradTS-thres tau threshold (default: plan's)")
    p.add_argument("--correlation", choices=["kendall", "spearman"], default="kendall")

    p = sub.add_parser("gradts", help="GradTS validation: thres/trial/all/random selections checked by "
                                      "multi-task training (preset gradts-demo or a JSON plan file)")
    p.add_argument("preset", nargs="?", default="gradts-demo", help="GradTS preset name or a JSON plan file")
    _gradts_args(p, plan=False)

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

    p = sub.add_parser("refinetune", help="Ma et al.: prune k = 1..K lowest heads, re-fine-tune, best k on dev")
    _run_args(p)
    p.add_argument("--max-k", type=_natural, default=12)
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


def check_run(args, *, langs: tuple[str, ...] = ()) -> tuple[int, int]:
    """Check a run's task, languages and model before any work; return the model's (layers, heads).

    Nothing is loaded or trained here: the model's shape comes from its config file.
    """
    from headprune_core.data import get_task
    from headprune_core.data.registry import check_language
    from headprune_core.models import config_head_shape
    info = get_task(args.task)
    for lang in (*args.train_langs, *langs):
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
    for t in list_tasks():
        print(f"{t.name:16} {t.kind:8} {','.join(t.languages):24} {t.description}")
    return 0


def _study(args):
    from headprune_core.study import Study
    return Study(args.model if hasattr(args, "model") else "me5-small", device=args.device)


def _ft(study, args):
    return study.finetune_config(args.task, args.train_langs, setting=args.setting, epochs=args.epochs,
                                 max_train_sentences=args.max_train, max_length=args.max_length, lr=args.lr,
                                 batch_size=args.batch_size, seed=args.seed)


def cmd_study(args) -> int:
    from tqdm.auto import tqdm

    from headprune_core.study import Study, StudyPlan, get_preset, run_plan
    if args.preset.endswith(".json") or Path(args.preset).is_file():
        plan = StudyPlan.from_file(args.preset)
    else:
        from headprune_core.gradts import GRADTS_PRESETS
        if args.preset in GRADTS_PRESETS:  # `study gradts-demo` is the same as `gradts gradts-demo`
            for name in ("units", "primaries", "method", "model"):
                setattr(args, name, None)
            return cmd_gradts(args)
        plan = get_preset(args.preset)
    plan = plan.restricted(langs=_names(args.langs) if args.langs else None,
                           tasks=_names(args.tasks) if args.tasks else None, sentences=args.sentences)
    _check_plan_langs(plan)
    study = Study(plan.model, device=args.device)
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


def _check_plan_langs(plan) -> None:
    """Every language of the plan belongs to one of its tasks (a typo would otherwise silently drop it)."""
    from headprune_core.data import get_task
    known = sorted({lang for task in plan.tasks for lang in get_task(task).languages})
    unknown = [lang for lang in plan.langs if lang not in known and "*" not in known]
    if unknown:
        raise ValueError(f"unknown language(s) {', '.join(unknown)} for the plan's tasks "
                         f"({', '.join(plan.tasks)}); known: {', '.join(known)}")


def _print_summary(study, plan) -> None:
    from headprune_core.data import get_task
    for task in plan.tasks:
        ft = study.finetune_config(task, plan.source_langs, setting=plan.settings[0], **plan.train)
        for lang in plan.langs:
            if lang not in get_task(task).languages:
                continue
            ev = study.evaluation(study.eval_config(ft, task, lang, max_sentences=plan.eval_sentences))
            print(f"  {task:6} {lang}: {ev['metric']} {ev['score']:.1f} (n={ev['n']})")


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
    if getattr(args, "model", None):
        plan = replace(plan, model=args.model)
    if getattr(args, "threshold", None) is not None:
        plan = replace(plan, threshold=args.threshold)
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
    print()
    print(format_table(res))
    s = res["seconds"]
    print(f"\nwall time: {s['wall']:.0f} s when computed (maps {s['wall_maps']:.0f} s, multi-task runs and "
          f"evaluations {s['wall_multitask']:.0f} s); training+scoring of the maps {s['maps_total']:.0f} s, "
          f"multi-task training {s['multitask_total']:.0f} s; key {gts.config().key()}")
    return 0


def cmd_finetune(args) -> int:
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
    print(f"{res['metric']} vs heads pruned ({res['strategy']}) on {args.task}/{args.lang}; key {cc.key()}")
    for k, m, s, lab in zip(res["k"], res["mean"], res["std"], res["labels"]):
        print(f"  {lab:>8} k={k:3}: {m:6.2f}" + (f" ± {s:.2f}" if s else ""))
    return 0


def cmd_evaluate(args) -> int:
    from headprune_core.evaluate import load_mask
    shape = check_run(args, langs=(args.lang,))
    mask = load_mask(args.mask, shape).numpy() if args.mask else None
    study = _study(args)
    ft = _ft(study, args)
    ev = study.evaluation(study.eval_config(ft, args.task, args.lang, mask, max_sentences=args.sentences))
    print(f"{args.task}/{args.lang}: {ev['metric']} {ev['score']:.2f} (n={ev['n']})")
    return 0


def cmd_refinetune(args) -> int:
    from headprune_core.config import RefinetuneConfig
    shape = check_run(args, langs=args.eval_langs or ())
    if args.max_k > _heads_total(shape):
        raise ValueError(f"--max-k {args.max_k} is more than the model's {_heads_total(shape)} heads")
    study = _study(args)
    ft = _ft(study, args)
    rc = RefinetuneConfig(finetune=ft, ranking=study.score_config(ft, args.task, ft.train_langs[0]),
                          max_k=args.max_k, max_sentences=args.sentences, eval_langs=args.eval_langs or ())
    res = study.refinetune(rc)
    for row in res["rows"]:
        print(f"  k={row['k']:2}: dev {row['dev']:.2f}")
    print(f"best k on dev: {res['best_k']}")
    for lang, r in res["test"].items():
        print(f"  test {lang}: unpruned {r['unpruned']:.2f} -> pruned {r['pruned']:.2f} ({r['metric']})")
    return 0


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
                      meta={"base_model": args.model, "finetune_key": ft.key()})
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


COMMANDS = {"prepare": cmd_prepare, "tasks": cmd_tasks, "study": cmd_study, "affinity": cmd_affinity,
            "gradts": cmd_gradts, "finetune": cmd_finetune,
            "score": cmd_score, "curve": cmd_curve, "evaluate": cmd_evaluate, "refinetune": cmd_refinetune,
            "prune": cmd_prune, "ls": cmd_ls, "show": cmd_show, "rm": cmd_rm, "export": cmd_export}
