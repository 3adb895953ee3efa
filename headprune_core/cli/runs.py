"""Commands on one run at a time: finetune, score, curve, evaluate, refinetune, prune; and the checks every
run's options get before any work (task, languages, data sources, the model's head count)."""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from headprune_core.base.files import claim_output_dir
from headprune_core.data.refs import check_ref, parse_ref, ref_for
from headprune_core.data.registry import UnknownName, all_tasks, check_language
from headprune_core.encoders.models import config_head_shape
from headprune_core.encoders.pruned import META, save_pruned
from headprune_core.methods.evaluate import load_mask, strategy_mask
from headprune_core.methods.importance import normalise
from headprune_core.methods.uncertainty import describe_ci, describe_diff
from headprune_core.runs.config import RefinetuneConfig
from headprune_core.runs.estimate import describe_estimate, estimate_jobs
from headprune_core.runs.study import Study


def data_sources(args, *, task: str | None = None, tasks: tuple[str, ...] | None = None) -> dict:
    """``{"task" or "task/lang": DataRef}`` from --data / --data-lang / --columns / --format.

    A plain SOURCE belongs to ``task`` (restricted to --data-lang when given); TASK=SOURCE and
    TASK/LANG=SOURCE name their own key. A source for a task the command does not run (``tasks``, else
    ``task``), or a second source for the same key, is an error: it would be ignored or silently replaced."""
    used = tuple(tasks or ()) or ((task,) if task else ())
    if not getattr(args, "data", None):
        unused = [f"--{name.replace('_', '-')}" for name in ("data_lang", "columns", "format")
                  if getattr(args, name, None)]
        if unused:
            raise ValueError(f"{' and '.join(unused)} describe{'s' if len(unused) == 1 else ''} the data of --data, "
                             "and no --data was given")
    out: dict = {}
    given: dict[str, str] = {}
    for item in getattr(args, "data", None) or ():
        key, sep, text = item.partition("=")
        if not sep:
            key, text = "", item
        if key and used and key.split("/")[0] not in used:
            raise ValueError(f"--data {item}: this command does not use task {key.split('/')[0]!r} (it runs "
                             f"{', '.join(used)}), so that source would be ignored")
        ref = parse_ref(text, columns=getattr(args, "columns", None), format=getattr(args, "format", None))
        check_ref(ref)
        if key:
            found = {key: ref}
        elif task is None:
            raise ValueError(f"--data {item}: say which task it is for (TASK=SOURCE)")
        elif getattr(args, "data_lang", None):
            found = {f"{task}/{lang}": ref for lang in args.data_lang}
        else:
            found = {task: ref}
        for k in found:
            if k in given:
                raise ValueError(f"--data names {k} twice ({given[k]} and {item}); give one source per task "
                                 "(or task/lang)")
            given[k] = item
        out.update(found)
    return out


def _has_source(sources: dict, task: str, lang: str) -> bool:
    ref = ref_for(sources, task, lang)
    return ref is not None and not ref.is_embedded


def check_run(args, *, langs: tuple[str, ...] = ()) -> tuple[int, int]:
    """Check a run's task, languages, data and model before any work; return the model's (layers, heads).

    Fills in ``args.train_langs`` (default: en, or the task's first language when it has no English, or
    ``--lang`` for data named by --data), ``args.model`` (from --finetuned) and ``args.sources``. Nothing is
    loaded or trained here: the model's shape comes from its config file.
    """
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


def heads_total(shape: tuple[int, int]) -> int:
    return shape[0] * shape[1]


def open_study(args):
    return Study(args.model, device=args.device, sources=getattr(args, "sources", None),
                 finetuned=bool(getattr(args, "finetuned", None)))


def finetune_config(study, args):
    return study.finetune_config(args.task, args.train_langs, setting=args.setting, epochs=args.epochs,
                                 max_train_sentences=args.max_train, max_length=args.max_length, lr=args.lr,
                                 head_lr=args.head_lr, batch_size=args.batch_size, seed=args.seed)


def cmd_finetune(args) -> int:
    if args.finetuned:
        raise ValueError("--finetuned: the checkpoint is fine-tuned already; score, curve, evaluate or prune it")
    check_run(args)
    study = open_study(args)
    ft = finetune_config(study, args)
    log = study.train_log(ft)
    print(f"fine-tuned {ft.tasks} on {ft.train_langs}: {log['steps']} steps, {log['seconds']} s; key {ft.key()}")
    return 0


def _print_map(m: np.ndarray) -> None:
    print("layer " + " ".join(f"h{h:<5}" for h in range(m.shape[1])))
    for i, row in enumerate(m):
        print(f"{i:5} " + " ".join(f"{v:6.3f}" for v in row))


def cmd_score(args) -> int:
    check_run(args, langs=(args.lang,))
    study = open_study(args)
    sc = study.score_config(finetune_config(study, args), args.task, args.lang, method=args.method,
                            max_sentences=args.sentences)
    res = study.scores(sc)
    print(f"importance ({args.method}, {args.normalize}, min-max) of {args.task}/{args.lang}; key {sc.key()}")
    _print_map(normalise(res["raw"], normalize=args.normalize, minmax=True))
    return 0


def cmd_curve(args) -> int:
    shape = check_run(args, langs=(args.lang, *([args.ranking_lang] if args.ranking_lang else [])))
    if args.step > heads_total(shape):
        raise ValueError(f"--step {args.step} is more than the model's {heads_total(shape)} heads")
    study = open_study(args)
    cc = study.curve_config(finetune_config(study, args), args.task, args.lang, strategy=args.strategy,
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
    shape = check_run(args, langs=(args.lang,))
    mask = load_mask(args.mask, shape).numpy() if args.mask else None
    study = open_study(args)
    ft = finetune_config(study, args)
    ev = study.evaluation(study.eval_config(ft, args.task, args.lang, mask, max_sentences=args.sentences))
    print(f"{args.task}/{args.lang}: {ev['metric']} {with_ci(ev)}")
    return 0


def with_ci(ev: dict) -> str:
    """"96.12 (95% CI 95.31-96.88), n=3021, 200 sentences": an evaluation with its bootstrap interval."""
    sentences = len(next(iter(ev["units"].values())))
    return f"{describe_ci(ev, digits=2)}, n={ev['n']}, {sentences} sentences"


def cmd_refinetune(args) -> int:
    shape = check_run(args, langs=args.eval_langs or ())
    top = max([args.max_k, *args.levels])
    if top > heads_total(shape):
        raise ValueError(f"cannot prune {top} heads: the model has {heads_total(shape)}")
    study = open_study(args)
    ft = finetune_config(study, args)
    ranking = study.score_config(ft, args.task, ft.train_langs[0]) if args.strategy in ("importance", "reverse") \
        else None
    rc = RefinetuneConfig(finetune=ft, ranking=ranking, strategy=args.strategy, max_k=args.max_k,
                          levels=tuple(args.levels), seeds=tuple(args.train_seeds), random_seed=args.random_seed,
                          max_sentences=args.sentences, eval_langs=args.eval_langs or ())
    if not study.store.has(rc):
        print(f"{len(rc.points()) * len(rc.train_seeds())} fine-tunings (levels x seeds); "
              f"{describe_estimate(estimate_jobs(study.store, [rc]))}", file=sys.stderr)
    print(format_refinetune(study.refinetune(rc)))
    return 0


def format_refinetune(res: dict) -> str:
    """A re-fine-tuning's tables as text: dev per level, the level picked per seed, test per language."""
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
    shape = check_run(args, langs=(args.lang,))
    if (args.k is None) == (args.mask is None):
        raise ValueError("say which heads to prune: --k N (least important) or --mask FILE, not both")
    if args.k is not None and args.k > heads_total(shape):
        raise ValueError(f"cannot prune {args.k} heads: the model has {heads_total(shape)} "
                         f"({shape[0]} layers x {shape[1]} heads)")
    mask = load_mask(args.mask, shape) if args.mask else None
    claim_output_dir(args.out, marker=META, force=args.force)  # before any work; checked again when writing
    study = open_study(args)
    ft = finetune_config(study, args)
    if mask is None:
        ranking = study.importance(study.score_config(ft, args.task, args.lang))
        mask = strategy_mask(shape, "importance", args.k, ranking=ranking)
    out = save_pruned(study.finetuned(ft), mask, args.out, tokenizer=study.loaded.tokenizer, force=args.force,
                      meta={"base_model": args.model, "finetune_key": ft.key(),
                            "data": {k: str(v) for k, v in study.sources.items()}})
    print(f"wrote {out} ({int((mask == 0).sum())} heads removed); load it with "
          f"headprune_core.encoders.pruned.load_pruned('{out}')")
    return 0


def with_cli_sources(plan, args):
    """The plan with --data sources (TASK=SOURCE; a plain SOURCE when the plan has one task) and --model."""
    tasks = tuple(plan.tasks) if hasattr(plan, "tasks") else tuple(dict.fromkeys(u.split("/")[0] for u in plan.units))
    sources = data_sources(args, task=tasks[0] if len(tasks) == 1 else None, tasks=tasks)
    if sources:
        plan = replace(plan, sources={**plan.sources, **{k: v.to_json() for k, v in sources.items()}})
    if getattr(args, "model", None):
        plan = replace(plan, model=args.model)
    return plan
