"""Commands on the cache: ``ls``, ``show``, ``rm`` and ``export`` (an entry's map, curve or metric as CSV/JSON)."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np

from headprune_core.base.files import claim_output_file, write_file_atomic
from headprune_core.runs.store import CorruptEntry, Store


def _store():
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
