"""Content-addressed on-disk cache under cache/ (override with HEADPRUNE_CACHE).

An entry is a folder ``cache/runs/<kind>/<key>/`` holding ``config.json`` (the run's exact configuration and
its key), one file per artifact and ``entry.json`` (each artifact's file, size and SHA-256; the date). Entries
are written into a temporary folder, fsynced and renamed into place, so a crash never leaves a half-written
entry under its key; an entry that is missing, partial, unreadable, altered or written for another
configuration is a miss: it is logged and recomputed. Per-key locks (``runs/.locks/``) let many processes share
one cache. Never pickle: arrays are ``.npy`` (loaded with ``allow_pickle=False``), metrics JSON, weights
safetensors.

>>> # store = Store(); result = store.get_or_compute(cfg, lambda: {"scores": np.zeros((12, 12))})
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from headprune_core.base.artifacts import Weights
from headprune_core.base.cache import cache_root, check_folder
from headprune_core.base.files import atomic_dir, key_lock, remove_dir
from headprune_core.base.specs import canonical_json
from headprune_core.runs.config import SCHEMA_VERSION, RunConfig

log = logging.getLogger(__name__)

ENTRY = "entry.json"


class CacheWriteError(OSError):
    """The cache folder cannot take a result (read-only, full, no permission); the message names the folder."""

    def __str__(self) -> str:
        return str(self.strerror)


class NotComputedHere(PermissionError):
    """A result that is not cached was asked for where nothing may be computed (:func:`reading_only`)."""


_READING: ContextVar[tuple[str, frozenset[str]] | None] = ContextVar("headprune_reading_only", default=None)


@contextlib.contextmanager
def reading_only(why: str, *, allowed: frozenset[str] | set[str] = frozenset()) -> Iterator[None]:
    """Inside the block (this thread or task), a result that is not cached is not computed: the store raises
    :class:`NotComputedHere` with ``why``, except for the run kinds in ``allowed`` (a class-mode student's
    session: every page reads the teacher's results; only its queued, capped work computes, and only
    evaluations)."""
    token = _READING.set((why, frozenset(allowed)))
    try:
        yield
    finally:
        _READING.reset(token)


def _check_may_compute(cfg: RunConfig) -> None:
    reading = _READING.get()
    if reading is not None and cfg.kind not in reading[1]:
        raise NotComputedHere(f"{cfg.kind} result {cfg.key()} is not cached, and {reading[0]}: nothing was "
                              "computed")


_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


PLANNED = "planned-"
"""What a fingerprint planned without its model or data starts with (runs/planning.py; real ones are hex): the store
never writes such a key."""


class CorruptEntry(ValueError):
    """An entry on disk could not be read back."""


@dataclass(frozen=True)
class Entry:
    """One cached result, as listed."""

    kind: str
    key: str
    path: Path
    config: dict
    size: int
    created: float
    artifacts: tuple[str, ...]
    schema: int | None = SCHEMA_VERSION  # entries of another schema are never read (their keys are not asked)
    seconds: float | None = None  # how long the computation took (None: not recorded, older entries)
    threads: int | None = None  # torch's CPU threads while it ran
    device: str | None = None  # "cpu" or "cuda:<GPU name>" (None: not recorded, older entries: the CPU)

    @property
    def stale(self) -> bool:
        return self.schema != SCHEMA_VERSION

    def describe(self) -> str:
        """One line saying what the entry holds (for listings)."""
        c = self.config
        if self.kind == "finetune":
            return f"{'+'.join(c.get('tasks', []))} on {'+'.join(c.get('train_langs', []))} ({c.get('setting', '?')})"
        parts = [f"{c.get('task')}/{c.get('lang')}"] if c.get("task") else []
        parts += [str(c[k]) for k in ("method", "strategy") if c.get(k)]
        if self.kind == "eval" and c.get("mask"):
            parts.append(f"{sum(v == 0 for row in c['mask'] for v in row)} heads masked")
        return " ".join(parts)


class Store:
    """The results cache. ``get_or_compute`` is the only way computations meet it.

    Shared by processes: a per-key file lock around compute + put makes two processes asking for one key
    compute it once; entries are written with :func:`~headprune_core.base.files.atomic_dir` and a valid entry is
    never replaced. Every read checks the entry against its key (the config it was written for) and its
    artifacts against their recorded sizes and SHA-256; anything that does not match is a miss.
    """

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else cache_root() / "runs"
        check_folder(self.root, "cache folder")
        self.computations = 0  # computations this Store ran (a key another process computed meanwhile is read)
        self._writable = False

    def check_writable(self) -> None:
        """Raise :class:`CacheWriteError` naming the folder when a result could not be stored in it (a read-only
        or foreign folder), before anything is computed; reading cached entries needs no write. Checked once per
        Store, by creating and removing a probe file."""
        if self._writable:
            return
        probe = self.root / f".write-probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            os.unlink(probe)
        except OSError as err:
            raise CacheWriteError(err.errno, f"the cache folder {self.root} cannot be written ({err.strerror}), so "
                                             "no result could be stored and nothing was computed; use a writable "
                                             "folder (--cache DIR or HEADPRUNE_CACHE). What is cached there can "
                                             "still be read.") from None
        self._writable = True

    def path_for(self, cfg: RunConfig) -> Path:
        return self.root / cfg.kind / cfg.key()

    def lock_path(self, cfg: RunConfig) -> Path:
        return self.root / ".locks" / f"{cfg.kind}-{cfg.key()}.lock"

    def status(self, cfg: RunConfig) -> str:
        """``ok``, ``missing`` or ``corrupt``, from the entry's records and file sizes (no content read)."""
        path = self.path_for(cfg)
        if not path.exists():
            return "missing"
        try:
            check_entry(path, cfg, hashes=False)
        except CorruptEntry:
            return "corrupt"
        return "ok"

    def has(self, cfg: RunConfig) -> bool:
        return self.status(cfg) == "ok"

    def get(self, cfg: RunConfig) -> dict[str, Any] | None:
        """The stored artifacts of ``cfg``, or None on a miss (absent or corrupt; a corrupt one is logged)."""
        path = self.path_for(cfg)
        if not path.exists():
            return None
        try:
            return _read_entry(path, cfg)
        except CorruptEntry as err:
            log.warning("cache entry %s is corrupt (%s); it will be recomputed", path, err)
            return None

    def put(self, cfg: RunConfig, artifacts: dict[str, Any], *, seconds: float | None = None,
            threads: int | None = None, device: str | None = None) -> Path:
        """Write ``artifacts`` for ``cfg`` atomically; return the entry folder.

        ``seconds`` (how long the computation took), ``threads`` (torch's CPU threads meanwhile) and ``device``
        (``cpu`` or ``cuda:<GPU name>``) are recorded beside the artifacts, outside the key: sweeps estimate the
        time of what is still to compute from them.

        Refuses a config with an empty fingerprint (its key would not say what data or model it describes).
        An existing valid entry is kept (another process finished first); a corrupt one is replaced.
        """
        empty = [name for name, value in cfg.fingerprints().items() if not value]
        if empty:
            raise ValueError(f"refusing to store a {cfg.kind} result whose config has empty fingerprints "
                             f"({', '.join(empty)}): build configs through Study so the key says what model "
                             "and data it describes")
        planned = [name for name, value in cfg.fingerprints().items() if str(value).startswith(PLANNED)]
        if planned:  # runs/planning.py: sized from the recorded tables, never computed
            raise ValueError(f"refusing to store a {cfg.kind} result planned without its model or data "
                             f"({', '.join(planned)} planned): a planning study only counts jobs")
        final = self.path_for(cfg)
        try:
            with atomic_dir(final, replace=lambda existing: not entry_is_valid(existing, cfg)) as tmp:
                (tmp / "config.json").write_text(json.dumps(
                    {"kind": cfg.kind, "schema": SCHEMA_VERSION, "version": cfg.version, "key": cfg.key(),
                     "config": cfg.to_dict()}, indent=2, sort_keys=True, ensure_ascii=False), encoding="utf-8")
                records = [_write_artifact(tmp, name, value) for name, value in artifacts.items()]
                (tmp / ENTRY).write_text(json.dumps(
                    {"artifacts": records, "created": time.time(), "schema": SCHEMA_VERSION, "key": cfg.key(),
                     "seconds": None if seconds is None else round(float(seconds), 3), "threads": threads,
                     "device": device},
                    indent=2), encoding="utf-8")
        except OSError as err:
            if err.errno not in _FULL or isinstance(err, CacheWriteError):
                raise
            raise CacheWriteError(err.errno, f"could not store the {cfg.kind} result {cfg.key()} in the cache folder "
                                             f"{self.root} ({err.strerror}); nothing half-written was kept and the "
                                             "entries finished before it are intact: free space there (or use "
                                             "another --cache) and run the same command again") from err
        return final

    def get_part(self, cfg: RunConfig, name: str) -> Any | None:
        """One JSON or array artifact of ``cfg``'s entry (e.g. a fine-tune's ``log`` without its weights);
        None when absent, corrupt or not such an artifact. The entry's records are checked and the artifact's
        own SHA-256 verified."""
        path = self.path_for(cfg)
        if not path.is_dir():
            return None
        try:
            records = check_entry(path, cfg, hashes=False)
            rec = next((r for r in records if r.get("name") == name), None)
            if rec is None or not rec["file"].endswith((".json", ".npy")):
                return None
            f = path / rec["file"]
            if sha256_file(f) != rec.get("sha256"):
                raise CorruptEntry(f"{f.name} does not have the SHA-256 it was written with")
            return json.loads(f.read_text(encoding="utf-8")) if f.suffix == ".json" else np.load(f, allow_pickle=False)
        except (CorruptEntry, OSError, ValueError) as err:
            log.warning("cache entry %s: %s", path, err)
            return None

    def seconds(self, cfg: RunConfig) -> float | None:
        """How long ``cfg``'s stored computation took (None: not cached, or not recorded)."""
        try:
            return json.loads((self.path_for(cfg) / ENTRY).read_text(encoding="utf-8")).get("seconds")
        except (OSError, ValueError):
            return None

    def get_or_compute(self, cfg: RunConfig, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Return the cached artifacts of ``cfg``, computing and storing them on a miss.

        The compute + put runs under the key's lock, and the cache is asked again once the lock is held: a
        process that waited for another one computing the same key gets its entry instead of computing again.
        """
        found = self.get(cfg)
        if found is not None:
            return found
        _check_may_compute(cfg)
        self.check_writable()
        with key_lock(self.lock_path(cfg)):
            found = self.get(cfg)
            if found is not None:
                return found
            start = time.perf_counter()
            self.computations += 1
            result = compute()
            torch = sys.modules.get("torch")  # loaded by whatever computed; never imported here
            self.put(cfg, result, seconds=time.perf_counter() - start,
                     threads=torch.get_num_threads() if torch is not None else None, device=_ran_on(torch))
        found = self.get(cfg)
        if found is None:  # written but unreadable (disk full, a file changed under us): serve what we computed
            log.error("cache entry %s could not be read back right after it was written; using the result in "
                      "memory (it will be recomputed next time)", self.path_for(cfg))
            return _as_stored(result)
        return found

    def entries(self, kind: str | None = None) -> list[Entry]:
        """Every complete entry (optionally of one kind), newest first; corrupt ones are skipped."""
        out = []
        if not self.root.is_dir():
            return out
        kinds = [kind] if kind else sorted(p.name for p in self.root.iterdir()
                                           if p.is_dir() and not p.name.startswith("."))
        for k in kinds:
            folder = self.root / k
            if not folder.is_dir():
                continue
            for path in folder.iterdir():
                if path.name.startswith(".") or not path.is_dir():
                    continue
                try:
                    meta = json.loads((path / ENTRY).read_text(encoding="utf-8"))
                    cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))["config"]
                    names = tuple(a["file"] if isinstance(a, dict) else a for a in meta.get("artifacts", []))
                except (OSError, ValueError, KeyError, TypeError):
                    continue
                size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
                seconds, threads, device = meta.get("seconds"), meta.get("threads"), meta.get("device")
                out.append(Entry(k, path.name, path, cfg, size, meta.get("created", 0.0), names,
                                 meta.get("schema"), seconds if isinstance(seconds, (int, float)) else None,
                                 threads if isinstance(threads, int) else None,
                                 device if isinstance(device, str) else None))
        return sorted(out, key=lambda e: e.created, reverse=True)

    def find(self, key_prefix: str) -> Entry:
        """The one entry whose key starts with ``key_prefix``."""
        hits = [e for e in self.entries() if e.key.startswith(key_prefix)] if key_prefix else []
        if len(hits) != 1:
            raise KeyError(f"{len(hits)} cache entries match {key_prefix!r}" + (
                "; use a longer prefix" if hits else "; see 'python -m headprune_core ls'"))
        return hits[0]

    def read(self, entry: Entry) -> dict[str, Any]:
        """The artifacts of a listed entry (raises :class:`CorruptEntry` if they do not check out)."""
        return _read_entry(entry.path, None)

    def delete(self, cfg_or_entry: RunConfig | Entry) -> bool:
        """Remove one entry (moved aside first, so no reader sees it half deleted)."""
        path = cfg_or_entry.path if isinstance(cfg_or_entry, Entry) else self.path_for(cfg_or_entry)
        if path.parent.parent != self.root or not path.is_dir():
            return False
        return remove_dir(path)


def _write_artifact(folder: Path, name: str, value: Any) -> dict:
    """Write one artifact; return its record (name, file, bytes, sha256)."""
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or "." in name:
        raise ValueError(f"bad artifact name {name!r}")
    if isinstance(value, Weights):
        from safetensors.torch import save_file  # here: it imports torch (2 s), which listing the cache never needs
        filename = f"{name}.safetensors"
        save_file({k: v.detach().cpu().contiguous() for k, v in value.items()}, str(folder / filename))
    elif isinstance(value, np.ndarray):
        if value.dtype == object:
            raise ValueError(f"artifact {name!r}: object arrays cannot be stored without pickle")
        filename = f"{name}.npy"
        np.save(folder / filename, value, allow_pickle=False)
    else:
        filename = f"{name}.json"
        (folder / filename).write_text(canonical_json(value), encoding="utf-8")
    path = folder / filename
    return {"name": name, "file": filename, "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file, read 1 MiB at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_entry(path: Path, cfg: RunConfig | None, *, hashes: bool) -> list[dict]:
    """The entry's artifact records, after checking them; raises :class:`CorruptEntry` with the reason.

    Checked: ``entry.json`` and ``config.json`` parse; the entry was written for ``cfg`` (its key and its
    configuration); every artifact file has its recorded size (and SHA-256 when ``hashes``).
    """
    try:
        meta = json.loads((path / ENTRY).read_text(encoding="utf-8"))
        stored = json.loads((path / "config.json").read_text(encoding="utf-8"))
        records = meta["artifacts"]
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise CorruptEntry(f"{ENTRY} lists no artifact records (written by an older headprune)")
        if meta.get("schema") != SCHEMA_VERSION:
            raise CorruptEntry(f"schema {meta.get('schema')!r}, expected {SCHEMA_VERSION}")
    except CorruptEntry:
        raise
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CorruptEntry(f"{type(err).__name__}: {err}") from err
    if meta.get("key") != path.name or stored.get("key") != path.name:
        raise CorruptEntry(f"the entry's recorded key ({stored.get('key')!r}) is not its folder name")
    if cfg is not None and (stored.get("config") != cfg.to_dict() and _keyed_of(stored, cfg) != cfg.keyed()):
        raise CorruptEntry("config.json does not match the configuration this key stands for")
    for rec in records:
        name = rec.get("file")
        if not isinstance(name, str) or name.startswith(".") or "/" in name or "\\" in name:
            raise CorruptEntry(f"bad artifact file name {name!r}")
        f = path / name
        if not f.is_file():
            raise CorruptEntry(f"artifact {name!r} is missing")
        if f.stat().st_size != rec.get("bytes"):
            raise CorruptEntry(f"{f.name} has {f.stat().st_size} bytes, {rec.get('bytes')} were written")
        if hashes and sha256_file(f) != rec.get("sha256"):
            raise CorruptEntry(f"{f.name} does not have the SHA-256 it was written with")
    return records


def _keyed_of(stored: dict, cfg: RunConfig) -> dict | None:
    """The keyed fields of a stored config (descriptive fields may differ: they are not part of the key)."""
    try:
        return type(cfg).from_dict(stored["config"]).keyed()
    except (ValueError, KeyError, TypeError):
        return None


def entry_is_valid(path: Path, cfg: RunConfig) -> bool:
    """Whether the entry folder ``path`` checks out for ``cfg``, every file's SHA-256 included."""
    try:
        check_entry(path, cfg, hashes=True)
        return True
    except CorruptEntry:
        return False


def _read_entry(path: Path, cfg: RunConfig | None) -> dict[str, Any]:
    records = check_entry(path, cfg, hashes=True)
    out: dict[str, Any] = {}
    try:
        for rec in records:
            f = path / rec["file"]
            ext = f.suffix
            if ext == ".npy":
                out[rec["name"]] = np.load(f, allow_pickle=False)
            elif ext == ".json":
                out[rec["name"]] = json.loads(f.read_text(encoding="utf-8"))
            elif ext == ".safetensors":
                from safetensors.torch import load_file  # here: as in _write_artifact
                out[rec["name"]] = Weights(load_file(str(f)))
            else:
                raise CorruptEntry(f"unknown artifact type {rec['file']}")
        return out
    except CorruptEntry:
        raise
    except Exception as err:  # any unreadable file means the entry is not trustworthy
        raise CorruptEntry(f"{type(err).__name__}: {err}") from err


def _as_stored(artifacts: dict[str, Any]) -> dict[str, Any]:
    """Artifacts as a read would return them (JSON values through JSON), for when the read-back failed."""
    return {k: v if isinstance(v, (Weights, np.ndarray)) else json.loads(canonical_json(v))
            for k, v in artifacts.items()}


def _ran_on(torch) -> str | None:
    """Where the process's computations ran: ``cuda:<GPU name>`` once CUDA is in use, else ``cpu`` (None without
    torch)."""
    if torch is None:
        return None
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return f"cuda:{torch.cuda.get_device_name()}"
    return "cpu"
