"""Content-addressed on-disk cache under cache/ (override with HEADPRUNE_CACHE).

An entry is a folder ``cache/runs/<kind>/<key>/`` holding ``config.json`` (the run's exact configuration),
one file per artifact and, written last, ``entry.json`` (artifact list, sizes, date). Entries are written into a
temporary folder and renamed into place, so a crash never leaves a half-written entry under its key; an entry
that is missing, partial or unreadable is a miss: it is logged and recomputed. Never pickle: arrays are
``.npy`` (loaded with ``allow_pickle=False``), metrics JSON, weights safetensors.

>>> # store = Store(); result = store.get_or_compute(cfg, lambda: {"scores": np.zeros((12, 12))})
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from headprune_core.config import SCHEMA_VERSION, RunConfig, canonical_json

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_root() -> Path:
    """The cache folder: ``$HEADPRUNE_CACHE`` if set, else ``cache/`` in the repository."""
    env = os.environ.get("HEADPRUNE_CACHE")
    return Path(env).expanduser().resolve() if env else REPO_ROOT / "cache"


class Weights(dict):
    """A state dict (name -> tensor) to be stored as safetensors."""


class CorruptEntry(Exception):
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


class Store:
    """The results cache. ``get_or_compute`` is the only way computations meet it."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else cache_root() / "runs"

    def path_for(self, cfg: RunConfig) -> Path:
        return self.root / cfg.kind / cfg.key()

    def has(self, cfg: RunConfig) -> bool:
        return (self.path_for(cfg) / "entry.json").is_file()

    def get(self, cfg: RunConfig) -> dict[str, Any] | None:
        """The stored artifacts of ``cfg``, or None on a miss (absent or corrupt; a corrupt one is logged)."""
        path = self.path_for(cfg)
        if not path.exists():
            return None
        try:
            return _read_entry(path)
        except CorruptEntry as err:
            log.warning("cache entry %s is corrupt (%s); it will be recomputed", path, err)
            return None

    def put(self, cfg: RunConfig, artifacts: dict[str, Any]) -> Path:
        """Write ``artifacts`` for ``cfg`` atomically (temp folder + rename); return the entry folder."""
        final = self.path_for(cfg)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.parent / f".tmp-{final.name}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            (tmp / "config.json").write_text(json.dumps(
                {"kind": cfg.kind, "schema": SCHEMA_VERSION, "key": cfg.key(), "config": cfg.to_dict()},
                indent=2, sort_keys=True))
            names = [_write_artifact(tmp, name, value) for name, value in artifacts.items()]
            (tmp / "entry.json").write_text(json.dumps(
                {"artifacts": names, "created": time.time(), "schema": SCHEMA_VERSION}, indent=2))
            if final.exists():  # a corrupt entry being replaced
                shutil.rmtree(final)
            os.replace(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return final

    def get_or_compute(self, cfg: RunConfig, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Return the cached artifacts of ``cfg``, computing and storing them on a miss."""
        found = self.get(cfg)
        if found is not None:
            return found
        result = compute()
        self.put(cfg, result)
        return _read_entry(self.path_for(cfg))

    def entries(self, kind: str | None = None) -> list[Entry]:
        """Every complete entry (optionally of one kind), newest first; corrupt ones are skipped."""
        out = []
        kinds = [kind] if kind else sorted(p.name for p in self.root.glob("*") if p.is_dir())
        for k in kinds:
            for path in (self.root / k).glob("*"):
                if path.name.startswith(".") or not path.is_dir():
                    continue
                try:
                    meta = json.loads((path / "entry.json").read_text())
                    cfg = json.loads((path / "config.json").read_text())["config"]
                except (OSError, ValueError, KeyError):
                    continue
                size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
                out.append(Entry(k, path.name, path, cfg, size, meta.get("created", 0.0),
                                 tuple(meta.get("artifacts", []))))
        return sorted(out, key=lambda e: e.created, reverse=True)

    def find(self, key_prefix: str) -> Entry:
        """The one entry whose key starts with ``key_prefix``."""
        hits = [e for e in self.entries() if e.key.startswith(key_prefix)]
        if len(hits) != 1:
            raise KeyError(f"{len(hits)} cache entries match {key_prefix!r}" + (
                "; use a longer prefix" if hits else f"; see 'python -m headprune_core ls'"))
        return hits[0]

    def read(self, entry: Entry) -> dict[str, Any]:
        """The artifacts of a listed entry."""
        return _read_entry(entry.path)

    def delete(self, cfg_or_entry: RunConfig | Entry) -> bool:
        path = cfg_or_entry.path if isinstance(cfg_or_entry, Entry) else self.path_for(cfg_or_entry)
        if path.exists():
            shutil.rmtree(path)
            return True
        return False


def _write_artifact(folder: Path, name: str, value: Any) -> str:
    if "/" in name or name.startswith("."):
        raise ValueError(f"bad artifact name {name!r}")
    if isinstance(value, Weights):
        from safetensors.torch import save_file
        filename = f"{name}.safetensors"
        save_file({k: v.detach().cpu().contiguous() for k, v in value.items()}, str(folder / filename))
    elif isinstance(value, np.ndarray):
        filename = f"{name}.npy"
        np.save(folder / filename, value, allow_pickle=False)
    else:
        filename = f"{name}.json"
        (folder / filename).write_text(canonical_json(value))
    return filename


def _read_entry(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads((path / "entry.json").read_text())
        out: dict[str, Any] = {}
        for filename in meta["artifacts"]:
            name, _, ext = filename.partition(".")
            f = path / filename
            if ext == "npy":
                out[name] = np.load(f, allow_pickle=False)
            elif ext == "json":
                out[name] = json.loads(f.read_text())
            elif ext == "safetensors":
                from safetensors.torch import load_file
                out[name] = Weights(load_file(str(f)))
            else:
                raise CorruptEntry(f"unknown artifact type {filename}")
        return out
    except CorruptEntry:
        raise
    except Exception as err:  # any unreadable file means the entry is not trustworthy
        raise CorruptEntry(f"{type(err).__name__}: {err}") from err
