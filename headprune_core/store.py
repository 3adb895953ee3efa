"""Content-addressed on-disk cache under cache/ (override with HEADPRUNE_CACHE)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_root() -> Path:
    """The cache folder: ``$HEADPRUNE_CACHE`` if set, else ``cache/`` in the repository."""
    env = os.environ.get("HEADPRUNE_CACHE")
    return Path(env).expanduser().resolve() if env else REPO_ROOT / "cache"
