"""Safe writes for every file headprune makes: atomic folders, per-key locks, and outputs it owns.

* :func:`atomic_dir` builds a folder beside its destination and moves it into place only when complete (files
  and folder fsynced first), so a killed process never leaves a half-written folder under a real name. Temp
  folders of processes that died are removed by the next writer in the same parent folder.
* :func:`atomic_file` (and :func:`write_file_atomic` for data in memory) does the same for one file: reports,
  bundles, exports, plan files.
* :func:`scratch_dir` is a work folder (a bundle's staging) removed after its block; one left by a killed
  process is named so that ``cache gc`` and the next writer in its folder remove it.
* :func:`key_lock` is an inter-process file lock: two processes asking for the same cache key compute it once.
* :func:`claim_output_dir` / :func:`claim_output_file` guard user-named outputs (``prune --out``, exports): a
  non-empty folder (or a file) headprune did not write is refused, nothing touched; ``force`` replaces only
  headprune's own outputs.
* :func:`check_name` refuses names that would escape their folder (``../x``, ``/etc``, ``.hidden``).

>>> # with atomic_dir(cache / "runs" / "eval" / key) as tmp: (tmp / "a.json").write_text("{}")
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from filelock import FileLock

TMP_PREFIX = ".tmp-"
STALE_SECONDS = 24 * 3600  # temp folders of another host are removed after a day
_HOST = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:24] or "host"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")


class OutputExists(FileExistsError):
    """An output path is taken by something headprune did not write (or ``--force`` was not given)."""


# --- atomic folders --------------------------------------------------------------------------------------------

def _temp_name(dest: Path, tag: str) -> str:
    return f"{TMP_PREFIX}{dest.name}.{tag}.{_HOST}.{os.getpid()}.{uuid.uuid4().hex[:8]}"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host exists (True when we cannot tell)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists but is not ours, or we cannot tell: keep its folder
    return True


def clean_stale_temps(parent: Path, prefix: str = TMP_PREFIX) -> list[Path]:
    """Remove temp folders (and files) in ``parent`` left by processes that died (this host) or older than a day
    (others); ``prefix`` narrows them (e.g. to one destination's)."""
    removed = []
    try:
        candidates = [p for p in os.scandir(parent) if p.name.startswith(prefix) and prefix.startswith(TMP_PREFIX)]
    except OSError:
        return removed
    for entry in candidates:
        if temp_is_dead(Path(entry.path)):
            _remove(Path(entry.path))
            removed.append(Path(entry.path))
    return removed


def temp_is_dead(path: Path) -> bool:
    """Whether a temp folder of ours (``.tmp-<dest>.<tag>.<host>.<pid>.<random>``) was left by a process that
    died (this host), or is older than a day (another host); False for names we cannot read."""
    parts = path.name.rsplit(".", 3)  # <prefix+dest.tag>, host, pid, random
    try:
        host, pid = parts[1], int(parts[2])
        age = time.time() - path.lstat().st_mtime
    except (IndexError, ValueError, OSError):
        return False
    return (host == _HOST and pid != os.getpid() and not pid_alive(pid)) or (host != _HOST and age > STALE_SECONDS)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def remove_dir(path: str | Path) -> bool:
    """Delete a folder: renamed aside first (readers never see it half deleted), then removed."""
    path = Path(path)
    aside = path.parent / _temp_name(path, "rm")
    try:
        os.replace(path, aside)
    except FileNotFoundError:
        return False
    _remove(aside)
    return True


def fsync_tree(folder: Path) -> None:
    """Flush every file under ``folder`` and the folders themselves to disk."""
    for root, _dirs, names in os.walk(folder):
        for name in names:
            with open(os.path.join(root, name), "rb") as fh:
                os.fsync(fh.fileno())
        fsync_dir(Path(root))


def fsync_dir(folder: Path) -> None:
    """Flush a folder's entries (a rename is durable only after this); a no-op where unsupported (Windows)."""
    flags = getattr(os, "O_DIRECTORY", None)
    if flags is None:
        return
    try:
        fd = os.open(folder, os.O_RDONLY | flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_dir(dest: str | Path, *, replace: bool | Callable[[Path], bool] = True) -> Iterator[Path]:
    """Yield an empty temp folder beside ``dest``; on success move it to ``dest`` (atomic rename).

    ``replace`` says what happens when ``dest`` already exists at that moment: True replaces it, False keeps it
    (ours is discarded), a callable decides from the existing folder (e.g. keep a valid cache entry that a
    faster process wrote). On an exception the temp folder is removed and ``dest`` is untouched.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temps(dest.parent)
    tmp = dest.parent / _temp_name(dest, "new")
    tmp.mkdir()
    try:
        yield tmp
        fsync_tree(tmp)
        if dest.exists() or dest.is_symlink():
            keep = not (replace(dest) if callable(replace) else replace)
            if keep:
                return
            old = dest.parent / _temp_name(dest, "old")
            os.replace(dest, old)
            os.replace(tmp, dest)
            fsync_dir(dest.parent)
            _remove(old)
        else:
            os.replace(tmp, dest)
            fsync_dir(dest.parent)
    finally:
        if tmp.exists():
            _remove(tmp)


def scratch_path(parent: str | Path, tag: str) -> Path:
    """A fresh path in ``parent`` for scratch work, named so that it is cleaned if its process dies."""
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temps(parent)
    return parent / _temp_name(Path(tag), "work")


@contextlib.contextmanager
def scratch_dir(parent: str | Path, tag: str) -> Iterator[Path]:
    """Yield an empty work folder in ``parent`` (on the same disk as what it will be moved into), removed after
    the block, on an error too. Named like :func:`scratch_path`: if the process is killed, ``cache gc`` and the
    next writer in ``parent`` remove it, and never while its process runs.

    >>> # with scratch_dir(store.root, "import") as staging: ...unpack, check, move entries out of it...
    """
    folder = scratch_path(parent, tag)
    folder.mkdir()
    try:
        yield folder
    finally:
        _remove(folder)


@contextlib.contextmanager
def atomic_file(path: str | Path) -> Iterator[Path]:
    """Yield a temp path beside ``path`` to write (by any means: ``open``, ``tarfile.open``); when the block ends
    it is flushed to disk and renamed onto ``path``, so a reader never sees half a file and a killed or failed
    write leaves ``path`` as it was. On an exception the temp file is removed. ``path``'s folder must exist.

    >>> # with atomic_file(out) as tmp, tarfile.open(tmp, "w:gz") as tar: tar.add(...)
    """
    path = Path(path)
    clean_stale_temps(path.parent, f"{TMP_PREFIX}{path.name}.file.")  # what a killed write of this file left
    tmp = path.parent / _temp_name(path, "file")
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    finally:
        if tmp.exists() or tmp.is_symlink():
            _remove(tmp)


def write_file_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` (its folder created if needed) through :func:`atomic_file`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


# --- locks -------------------------------------------------------------------------------------------------------

@contextlib.contextmanager
def key_lock(lock_path: str | Path, *, timeout: float = -1) -> Iterator[None]:
    """Hold an inter-process lock on ``lock_path`` (created if needed) for the block; -1 waits forever.

    An OS lock (``flock``/``LockFileEx`` through ``filelock``): released by the OS when its holder dies, so a
    killed process never leaves a stale lock behind.
    """

    lock_path = Path(lock_path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock_path), timeout=timeout):
        yield


# --- reading user files ---------------------------------------------------------------------------------------

def read_json(path: str | Path, what: str = "JSON file"):
    """The parsed content of a JSON file; errors name the file (and the line and column of bad JSON).

    ``NaN`` and ``Infinity`` (which Python's json would accept) are refused: they are not JSON.
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder; expected a {what}")
    if not path.is_file():
        raise FileNotFoundError(f"no such {what}: {path}")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text; expected a {what}") from None

    def refuse(name: str):
        raise ValueError(f"{path}: {name} is not allowed in a {what} (JSON has no such number)")

    try:
        return json.loads(text, parse_constant=refuse)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON (line {err.lineno} column {err.colno}: {err.msg}); expected "
                         f"a {what}") from None


# --- names and user-named outputs ------------------------------------------------------------------------------

def check_name(name: str, what: str = "name") -> str:
    """``name`` if it is safe as one path component (letters, digits, ``._+-``; no leading dot, no slash)."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise ValueError(f"bad {what} {name!r}: use letters, digits, '.', '_', '+' or '-' (no path separators, "
                         "no '..', not starting with a dot, at most 128 characters)")
    return name


def safe_filename(text: str) -> str:
    """``text`` made into one harmless file-name component (for download names built from user data)."""
    cleaned = re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("._") or "download"
    return cleaned[:128]


def claim_output_dir(out: str | Path, *, marker: str, force: bool = False) -> Path:
    """Check that ``out`` may receive a headprune output folder; raise :class:`OutputExists` if not.

    Free: a path that does not exist, or an empty folder. Taken: a file (always refused); a non-empty folder
    without ``marker`` (headprune did not write it: refused, even with ``force``); a folder with ``marker`` that
    holds files the marker does not list (someone added them: refused); a headprune output (replaced only with
    ``force``). Nothing is touched here.
    """
    out = Path(out)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise OutputExists(f"{out} exists and is not a folder; nothing was touched. Choose a new folder.")
    if not out.exists() or not any(out.iterdir()):
        return out
    meta_path = out / marker
    owned = _listed_files(meta_path)
    if owned is None:
        raise OutputExists(f"{out} is not empty and is not a headprune output (no {marker}); nothing was "
                           "touched. Choose an empty or new folder.")
    extra = sorted(p.name for p in out.iterdir() if p.name != marker and p.name not in owned)
    if extra:
        raise OutputExists(f"{out} holds files headprune did not write ({', '.join(extra[:5])}); nothing was "
                           "touched, --force does not replace them. Choose an empty or new folder.")
    if not force:
        raise OutputExists(f"{out} already holds a headprune output; use --force to replace it")
    return out


def _listed_files(meta_path: Path) -> set[str] | None:
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        return set(meta["files"]) if isinstance(meta, dict) and isinstance(meta.get("files"), list) else None
    except (OSError, ValueError):
        return None


def claim_output_file(path: str | Path, *, is_ours: Callable[[Path], bool], force: bool = False) -> Path:
    """Check that ``path`` may receive an exported file: new, or (with ``force``) a file headprune exported."""
    path = Path(path)
    if path.is_dir():
        raise OutputExists(f"{path} is a folder; give a file name")
    if path.exists() or path.is_symlink():
        if not is_ours(path):
            raise OutputExists(f"{path} exists and is not a headprune export; nothing was touched. Choose a new "
                               "file name.")
        if not force:
            raise OutputExists(f"{path} exists (an earlier headprune export); use --force to replace it")
    return path
