"""The one way headprune writes a file (:func:`atomic_file`) and its work folders (:func:`scratch_dir`): a failed
write leaves the old file as it was and no temp file; what a killed write left is removed by the next write of the
same file; a work folder goes after its block and, left by a dead process, reads as dead to ``cache gc``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from headprune_core.base import files as files_mod
from headprune_core.base.files import atomic_file, scratch_dir, temp_is_dead, write_file_atomic


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_atomic_file_replaces_on_success_and_keeps_the_old_file_on_failure(tmp_path):
    out = tmp_path / "report.md"
    out.write_text("old")
    with pytest.raises(RuntimeError, match="half way"):
        with atomic_file(out) as tmp:
            assert tmp.parent == tmp_path and tmp.name.startswith(files_mod.TMP_PREFIX)
            tmp.write_text("half")
            raise RuntimeError("half way")
    assert out.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]
    with atomic_file(out) as tmp:
        tmp.write_text("new")
        assert out.read_text() == "old"  # a reader sees the old file until the block ends
    assert out.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]
    assert write_file_atomic(tmp_path / "sub" / "x.json", "{}").read_text() == "{}"


def test_a_crash_before_the_rename_leaves_the_old_file(tmp_path, monkeypatch):
    out = tmp_path / "b.tar.gz"
    out.write_bytes(b"old")

    def crash(src, dst):
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(files_mod.os, "replace", crash)
    with pytest.raises(OSError, match="simulated"):
        write_file_atomic(out, b"new")
    monkeypatch.undo()
    assert out.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["b.tar.gz"]


def test_the_next_write_removes_what_a_killed_write_of_the_same_file_left(tmp_path):
    host = files_mod._HOST
    dead = tmp_path / f".tmp-b.tar.gz.file.{host}.{_dead_pid()}.deadbeef"
    live = tmp_path / f".tmp-b.tar.gz.file.{host}.{os.getpid()}.cafecafe"  # a write still running
    other = tmp_path / f".tmp-c.json.file.{host}.{_dead_pid()}.deadbeef"  # another file's: not ours to judge
    for p in (dead, live, other):
        p.write_bytes(b"half")
    write_file_atomic(tmp_path / "b.tar.gz", b"whole")
    assert not dead.exists() and live.exists() and other.exists()


def test_scratch_dir_is_removed_after_its_block_and_reads_as_a_temp(tmp_path):
    with pytest.raises(ValueError):
        with scratch_dir(tmp_path, "import") as work:
            (work / "runs").mkdir()
            (work / "runs" / "x.npy").write_bytes(b"x")
            assert work.name.startswith(".tmp-import.") and not temp_is_dead(work)  # ours, and we are alive
            raise ValueError("bad bundle")
    assert list(tmp_path.iterdir()) == []
    left = tmp_path / work.name.replace(f".{os.getpid()}.", f".{_dead_pid()}.")  # as a killed import leaves it
    left.mkdir()
    assert temp_is_dead(left)
    with scratch_dir(tmp_path, "import"):
        assert not left.exists()  # the next one in that folder removes it


def test_a_pip_download_works_in_a_folder_cache_gc_knows(tmp_path, monkeypatch):
    """pip downloads into a house temp folder (``.tmp-...<host>.<pid>...``), not a ``tempfile`` one: a fetch
    killed inside leaves a folder that ``cache gc`` lists as a dead temp once the process is gone; a finished
    fetch leaves only its wheel."""
    from pathlib import Path

    from headprune_core.base import fetch
    from headprune_core.runs.inventory import scan
    dest = tmp_path / "cache" / "downloads"
    seen = []

    def fake_run(cmd, **kwargs):
        folder = Path(cmd[cmd.index("--dest") + 1])
        seen.append(folder.name)
        (folder / "pkg-1.0-py3-none-any.whl").write_bytes(b"wheel")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(fetch.subprocess, "run", fake_run)
    wheel = fetch.pip_download("pkg", "1.0", dest)
    assert wheel == dest / "pkg-1.0-py3-none-any.whl" and sorted(p.name for p in dest.iterdir()) == [wheel.name]
    assert seen[0].startswith(".tmp-") and f".{os.getpid()}." in seen[0]
    # a fetch killed inside: its folder, named by a process that is gone, is a dead temp to cache gc
    gone = subprocess.Popen([sys.executable, "-c", "pass"])  # a process that has ended: its pid is free
    gone.wait()
    left = dest / seen[0].replace(f".{os.getpid()}.", f".{gone.pid}.")
    left.mkdir()
    states = {i.path.name: i.state for i in scan(tmp_path / "cache")}
    assert states[left.name] == "dead temp"
