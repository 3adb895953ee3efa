"""Where headprune keeps what it computes: the cache folder.

``$HEADPRUNE_CACHE`` when set; else ``cache/`` in the checkout when headprune runs from one (``pip install -e .``
or ``python -m headprune_core`` in the repository); else ``$XDG_CACHE_HOME/headprune`` (``~/.cache/headprune``)
for an installed package.
"""

from __future__ import annotations

import os
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[2]
"""The folder that holds the ``headprune_core`` package (the checkout, or site-packages when installed)."""


def is_checkout(folder: Path = SOURCE_ROOT) -> bool:
    """Whether ``folder`` is a headprune checkout (its ``app.py`` and ``pyproject.toml`` beside the package)."""
    return (folder / "app.py").is_file() and (folder / "pyproject.toml").is_file()


def cache_root() -> Path:
    """The cache folder (see the module docstring); it must be a folder or able to become one."""
    env = os.environ.get("HEADPRUNE_CACHE")
    if env:
        path = Path(env).expanduser().resolve()
    elif is_checkout():
        path = SOURCE_ROOT / "cache"
    else:
        path = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "headprune"
    return check_folder(path, "cache folder")


def check_folder(path: Path, what: str) -> Path:
    """``path`` if it is a folder or can become one (no file in the way), else ``NotADirectoryError``."""
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                raise NotADirectoryError(f"the {what} {path} cannot be used: {p} is a file, not a folder")
            break
    return path
