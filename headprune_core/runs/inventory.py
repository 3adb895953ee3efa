"""What the cache folder holds, what takes space and what can go (``headprune cache ls | du | gc``, the Runs page).

Every result entry is listed with its state: **ok** (read when its key is asked), **stale** (written under
another schema, algorithm version or set of fields: its key is never asked again) or **corrupt** (its files do not
check out: unreadable ``entry.json``, a missing or truncated artifact). Besides entries: temp folders
(``.tmp-*``) of processes that died, uploads the Add data page kept (older than a day: no page previews them
any more), and what is kept on purpose (the prepared corpora and models, registered data, plans, sweep logs,
locks).

The collector removes only stale and corrupt entries, dead temp folders and old uploads, never anything outside
the cache root and never through a symbolic link (a link is listed as such and left alone), each entry under
its key's lock (skipped while another process holds it) and renamed aside before it is deleted.

>>> from headprune_core.runs.inventory import AREAS
>>> "runs" in AREAS
True
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from filelock import Timeout

from headprune_core.base.cache import cache_root
from headprune_core.base.files import STALE_SECONDS, TMP_PREFIX, key_lock, remove_dir, temp_is_dead
from headprune_core.runs.config import CONFIG_KINDS, SCHEMA_VERSION, config_from_dict
from headprune_core.runs.store import CorruptEntry, check_entry

AREAS = ("runs", "corpora", "models", "downloads", "data", "uploads", "plans", "sweeps")
"""The cache root's folders: results, the embedded default (corpora, models, the packages they came from),
registered user data, kept uploads, saved plans, sweep logs."""

REMOVABLE = ("stale", "corrupt", "dead temp", "old upload")
"""The states the collector removes."""


@dataclass(frozen=True)
class Item:
    """One thing in the cache folder: where, what state, how many bytes, and why (for stale, corrupt)."""

    path: Path
    area: str  # "runs/<kind>", or a folder of AREAS, or "other"
    state: str  # ok, stale, corrupt, dead temp, temp in use, old upload, upload, kept, symlink
    size: int
    reason: str = ""
    key: str = ""

    @property
    def removable(self) -> bool:
        return self.state in REMOVABLE


def tree_size(path: Path) -> int:
    """Bytes under ``path`` (a file's own size; links are not followed and count as themselves)."""
    try:
        st = path.lstat()
    except OSError:
        return 0
    if not path.is_dir() or path.is_symlink():
        return st.st_size
    total = 0
    for root, dirs, files in os.walk(path, followlinks=False):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def entry_state(path: Path, kind: str) -> tuple[str, str]:
    """(``ok`` | ``stale`` | ``corrupt``, why) of the entry folder ``path`` of ``kind``."""
    try:
        check_entry(path, None, hashes=False)
        stored = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except CorruptEntry as err:
        text = str(err)
        if text.startswith("schema "):
            return "stale", f"written under cache {text}"
        return "corrupt", text
    except (OSError, ValueError) as err:
        return "corrupt", f"{type(err).__name__}: {err}"
    cls = CONFIG_KINDS.get(kind)
    if cls is None:
        return "stale", f"a kind of result this headprune does not compute ({kind!r})"
    if stored.get("version") != cls.version:
        return "stale", f"algorithm version {stored.get('version')!r}; this headprune computes version {cls.version}"
    try:
        key = config_from_dict(kind, stored.get("config", {})).key()
    except (ValueError, TypeError, KeyError) as err:
        return "stale", f"its configuration no longer reads ({type(err).__name__}: {str(err)[:120]})"
    if key != path.name:
        return "stale", "its configuration hashes to another key now (fields changed): never asked again"
    return "ok", ""


def scan(root: str | Path | None = None) -> list[Item]:
    """Everything in the cache folder ``root`` (default: the cache root), entry by entry for results."""
    root = Path(root) if root is not None else cache_root()
    items: list[Item] = []
    if not root.is_dir():
        return items
    for top in sorted(root.iterdir()):
        if top.is_symlink():
            items.append(Item(top, "other", "symlink", tree_size(top), "a link: never followed"))
        elif top.name == "runs" and top.is_dir():
            items += scan_runs(top)
        elif top.name == "uploads" and top.is_dir():
            items += _scan_uploads(top)
        elif top.is_dir():
            area = top.name if top.name in AREAS else "other"
            temps = _temps(top, area)
            items += temps
            items.append(Item(top, area, "kept", tree_size(top) - sum(t.size for t in temps)))
        else:
            items.append(Item(top, "other", "kept", tree_size(top)))
    return items


def scan_runs(runs: Path) -> list[Item]:
    """The items of a results folder (``<cache>/runs``): every entry with its state, temp folders, locks (none
    when nothing was computed yet and the folder does not exist)."""
    items = []
    if not runs.is_dir() or runs.is_symlink():
        return items
    for folder in sorted(runs.iterdir()):
        if folder.is_symlink():
            items.append(Item(folder, "runs", "symlink", tree_size(folder), "a link: never followed"))
            continue
        if folder.name.startswith(TMP_PREFIX):  # a bundle import's staging, never a kind of result
            items.append(_temp(folder, "runs"))
            continue
        if not folder.is_dir():
            items.append(Item(folder, "runs", "kept", tree_size(folder)))
            continue
        if folder.name == ".locks":
            items.append(Item(folder, "runs", "kept", tree_size(folder), "locks of keys (empty files)"))
            continue
        area = f"runs/{folder.name}"
        for path in sorted(folder.iterdir()):
            if path.is_symlink():
                items.append(Item(path, area, "symlink", tree_size(path), "a link: never followed"))
            elif path.name.startswith(TMP_PREFIX):
                items.append(_temp(path, area))
            elif path.is_dir():
                state, why = entry_state(path, folder.name)
                items.append(Item(path, area, state, tree_size(path), why, path.name))
            else:
                items.append(Item(path, area, "kept", tree_size(path)))
    return items


def _scan_uploads(uploads: Path) -> list[Item]:
    items = []
    now = time.time()
    for path in sorted(uploads.iterdir()):
        if path.is_symlink():
            items.append(Item(path, "uploads", "symlink", tree_size(path), "a link: never followed"))
        elif path.name.startswith(TMP_PREFIX):
            items.append(_temp(path, "uploads"))
        else:
            age = now - path.lstat().st_mtime
            old = age > STALE_SECONDS
            items.append(Item(path, "uploads", "old upload" if old else "upload", tree_size(path),
                              f"kept for a preview {age / 3600:.0f} h ago" if old else "kept for a preview"))
    return items


def _temps(top: Path, area: str) -> list[Item]:
    """Temp folders anywhere under ``top`` (links not followed)."""
    found = []
    for dirpath, dirs, _files in os.walk(top, followlinks=False):
        for name in list(dirs):
            if name.startswith(TMP_PREFIX):
                found.append(_temp(Path(dirpath) / name, area))
                dirs.remove(name)
    return found


def _temp(path: Path, area: str) -> Item:
    dead = temp_is_dead(path)
    return Item(path, area, "dead temp" if dead else "temp in use", tree_size(path),
                "left by a process that died" if dead else "a process that runs is writing it")


def summary(items: list[Item]) -> list[dict]:
    """Rows ``{"area", "state", "items", "MB"}``, largest first: what takes space."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i in items:
        area = "runs" if i.area.startswith("runs/") and i.state != "ok" else i.area
        g = groups.setdefault((area, i.state), [0, 0])
        g[0] += 1
        g[1] += i.size
    rows = [{"area": a, "state": s, "items": n, "MB": round(b / 1e6, 2)} for (a, s), (n, b) in groups.items()]
    return sorted(rows, key=lambda r: -r["MB"])


def collect(root: str | Path | None = None, *, dry_run: bool = True) -> dict:
    """Remove (or, with ``dry_run``, only list) what :data:`REMOVABLE` names: ``{"removed": [Item], "skipped":
    [(Item, why)], "bytes": freed, "kept_bytes": what stays}``."""
    root = Path(root) if root is not None else cache_root()
    real_root = os.path.realpath(root)
    items = scan(root)
    removed, skipped = [], []
    for item in items:
        if not item.removable:
            continue
        inside = os.path.commonpath([real_root, os.path.realpath(item.path.parent)]) == real_root
        if not inside or item.path.is_symlink() or item.path.parent.is_symlink():
            skipped.append((item, "outside the cache root or through a link"))
            continue
        if dry_run:
            removed.append(item)
            continue
        try:
            if item.key:  # an entry: under its key's lock, so no process writing it sees it vanish
                lock = root / "runs" / ".locks" / f"{item.area.split('/', 1)[1]}-{item.key}.lock"
                with key_lock(lock, timeout=0):
                    gone = remove_dir(item.path)
            else:
                gone = remove_dir(item.path) if item.path.is_dir() else _unlink(item.path)
        except Timeout:
            skipped.append((item, "another process holds its lock"))
            continue
        except OSError as err:
            skipped.append((item, f"{type(err).__name__}: {err}"))
            continue
        (removed if gone else skipped).append(item if gone else (item, "already gone"))
    freed = sum(i.size for i in removed)
    return {"removed": removed, "skipped": skipped, "bytes": freed,
            "kept_bytes": sum(i.size for i in items) - freed, "schema": SCHEMA_VERSION}


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def entry_files(path: Path) -> list[str]:
    """The file names of an entry folder (for showing a corrupt one)."""
    try:
        return sorted(p.name for p in path.iterdir())
    except OSError:
        return []

