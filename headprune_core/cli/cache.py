"""Commands on the cache: ``ls``, ``show``, ``rm``, ``export`` (an entry's map, curve or metric as CSV/JSON) and
``cache ls | du | gc`` (what takes space, and freeing it)."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np

from headprune_core.base.cache import cache_root
from headprune_core.base.files import claim_output_file, remove_dir, write_file_atomic
from headprune_core.runs.inventory import collect, entry_files, scan, scan_runs, summary
from headprune_core.runs.store import CorruptEntry, Store


def _store():
    return Store()


def cmd_ls(args) -> int:
    store = _store()
    entries = store.entries(args.kind)
    states = {i.key: i for i in scan_runs(store.root) if i.key}
    broken = [i for i in states.values() if i.state == "corrupt" and (not args.kind or i.area == f"runs/{args.kind}")]
    if not entries and not broken:
        print("the cache is empty")
    for e in entries:
        what = e.describe()
        state = states.get(e.key)
        if e.stale or (state is not None and state.state == "stale"):
            why = state.reason if state is not None and state.reason else "written by an older headprune"
            what += f"  [stale: {why}; never read; 'cache gc' frees its space]"
        print(f"{e.key[:12]}  {e.kind:10} {e.size / 1e6:8.2f} MB  {what}")
    for i in broken:
        print(f"{i.key[:12]}  {i.area.split('/', 1)[1]:10} {i.size / 1e6:8.2f} MB  [corrupt: {i.reason}; "
              f"'rm {i.key[:12]}' or 'cache gc' removes it]")
    return 0


def cmd_show(args) -> int:
    store = _store()
    try:
        e = store.find(args.key)
    except KeyError:
        item = _one_broken(store, args.key)
        print(json.dumps({"kind": item.area.split("/", 1)[1], "key": item.key, "path": str(item.path),
                          "state": item.state, "problem": item.reason, "files": entry_files(item.path)}, indent=2))
        return 0
    print(json.dumps({"kind": e.kind, "key": e.key, "path": str(e.path), "artifacts": e.artifacts,
                      "config": e.config}, indent=2))
    return 0


def cmd_rm(args) -> int:
    store = _store()
    for key in args.key:
        try:
            e = store.find(key)
        except KeyError:
            item = _one_broken(store, key)
            remove_dir(item.path)
            print(f"deleted {item.area.split('/', 1)[1]} {item.key} (corrupt: {item.reason})")
            continue
        store.delete(e)
        print(f"deleted {e.kind} {e.key}")
    return 0


def _one_broken(store: Store, prefix: str):
    """The one corrupt entry whose key starts with ``prefix`` (listed by ``ls``, unreadable as an entry)."""
    hits = [i for i in scan_runs(store.root) if i.key and i.key.startswith(prefix) and i.state == "corrupt"] \
        if prefix else []
    if len(hits) != 1:
        raise KeyError(f"{len(hits)} cache entries match {prefix!r}" + (
            "; use a longer prefix" if hits else "; see 'python -m headprune_core ls'"))
    return hits[0]


def cmd_cache(args) -> int:
    root = cache_root()
    if args.cache_command == "ls":
        items = [i for i in scan(root) if i.removable or not args.stale]
        for i in items:
            where = i.path.relative_to(root) if i.path.is_relative_to(root) else i.path
            print(f"{i.state:12} {i.size / 1e6:9.2f} MB  {where}" + (f"  ({i.reason})" if i.reason else ""))
        print(f"{len(items)} items, {sum(i.size for i in items) / 1e6:.1f} MB")
        return 0
    if args.cache_command == "du":
        items = scan(root)
        print(f"{'area':18} {'state':12} {'items':>6} {'MB':>10}")
        for r in summary(items):
            print(f"{r['area']:18} {r['state']:12} {r['items']:6d} {r['MB']:10.2f}")
        free = sum(i.size for i in items if i.removable)
        print(f"{root}: {sum(i.size for i in items) / 1e6:.1f} MB in all; 'cache gc' frees {free / 1e6:.1f} MB")
        return 0
    res = collect(root, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for i in res["removed"]:
        why = f"; {i.reason}" if i.reason else ""
        print(f"{verb} {i.state}: {i.path.relative_to(root)} ({i.size / 1e6:.2f} MB){why}")
    for i, why in res["skipped"]:
        print(f"left {i.state}: {i.path.relative_to(root)} ({why})")
    print(f"{'dry run: ' if args.dry_run else ''}{verb} {len(res['removed'])} items, {res['bytes'] / 1e6:.1f} MB; "
          f"{res['kept_bytes'] / 1e6:.1f} MB kept (valid results, the embedded default, registered data, plans)")
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
