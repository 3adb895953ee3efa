"""Commands on data: ``prepare`` (the embedded default), ``tasks`` and ``data add / ls / show / rm`` (your own
corpora)."""

from __future__ import annotations

from headprune_core.data import list_tasks, load_task, user
from headprune_core.data.preview import corpus_report
from headprune_core.data.refs import load_ref, parse_ref
from headprune_core.encoders.models import load_tokenizer
from headprune_core.runs.prepare import prepare_all


def cmd_prepare(args) -> int:
    report = prepare_all(force=args.force, only=args.only)
    print(report.summary())
    return 0 if report.ok else 1


def cmd_tasks(args) -> int:
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
    data = load_task(task, lang)
    tokenizer = None
    if model:
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
