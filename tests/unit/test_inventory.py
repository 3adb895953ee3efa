"""The cache inventory and collector on a cache folder holding one of everything: valid, stale and corrupt
entries, temp folders of a dead and of a live process, old and new uploads, the embedded default and a link
pointing outside the cache. ``cache gc --dry-run`` lists and deletes nothing; ``cache gc`` removes exactly what is
stale, corrupt, dead or old, never through the link; ``ls``, ``show`` and ``rm`` see a corrupt entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from headprune_core.base import files as files_mod
from headprune_core.cli.main import main
from headprune_core.runs.config import FinetuneConfig, ScoreConfig
from headprune_core.runs.inventory import collect, scan, summary
from headprune_core.runs.store import Store

FT = FinetuneConfig(model="me5-small", tasks=("pos",), train_langs=("en",), model_fp="m" * 16, data_fp="d" * 16)
SC = ScoreConfig(finetune=FT, task="pos", lang="de", data_fp="s" * 16)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture()
def messy(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    store = Store(root / "runs")
    ok = store.put(SC, {"raw": np.arange(12.0)})
    old_schema = store.put(SC.replace(lang="fr"), {"raw": np.arange(12.0)})
    meta = json.loads((old_schema / "entry.json").read_text())
    (old_schema / "entry.json").write_text(json.dumps({**meta, "schema": 1}))
    old_version = store.put(SC.replace(lang="es"), {"raw": np.arange(12.0)})
    stored = json.loads((old_version / "config.json").read_text())
    (old_version / "config.json").write_text(json.dumps({**stored, "version": SC.version - 1}))
    corrupt = store.put(SC.replace(lang="it"), {"raw": np.arange(12.0)})
    (corrupt / "entry.json").write_text('{"artifacts": [')  # cut off mid-write by hand, say
    host = files_mod._HOST
    dead = root / "runs" / "score" / f".tmp-x.new.{host}.{_dead_pid()}.abcd1234"
    live = root / "corpora" / "pos" / f".tmp-en.new.{host}.{os.getpid()}.abcd1234"
    for folder in (dead, live):
        folder.mkdir(parents=True)
        (folder / "part").write_bytes(b"p" * 100)
    (root / "corpora" / "pos" / "en").mkdir(parents=True)
    (root / "corpora" / "pos" / "en" / "train.jsonl").write_text("{}\n")
    for name, age in (("aaaa", 3 * 86400), ("bbbb", 60)):
        up = root / "uploads" / name
        up.mkdir(parents=True)
        (up / "train.conll").write_text("a\tNOUN\n")
        os.utime(up, (time.time() - age, time.time() - age))
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "thesis.tex").write_text("mine")
    (root / "runs" / "score" / "linked").symlink_to(outside, target_is_directory=True)
    return {"root": root, "store": store, "ok": ok, "old_schema": old_schema, "old_version": old_version,
            "corrupt": corrupt, "dead": dead, "live": live, "old_upload": root / "uploads" / "aaaa",
            "new_upload": root / "uploads" / "bbbb", "outside": outside}


def test_scan_names_every_state(messy):
    states = {i.path: (i.state, i.reason) for i in scan(messy["root"])}
    assert states[messy["ok"]] == ("ok", "")
    assert states[messy["old_schema"]][0] == "stale" and "schema 1" in states[messy["old_schema"]][1]
    assert states[messy["old_version"]] == ("stale", f"algorithm version {SC.version - 1}; this headprune computes "
                                                     f"version {SC.version}")
    assert states[messy["corrupt"]][0] == "corrupt" and "JSONDecodeError" in states[messy["corrupt"]][1]
    assert states[messy["dead"]][0] == "dead temp" and states[messy["live"]][0] == "temp in use"
    assert states[messy["old_upload"]][0] == "old upload" and states[messy["new_upload"]][0] == "upload"
    assert states[messy["root"] / "runs" / "score" / "linked"][0] == "symlink"
    assert states[messy["root"] / "corpora"][0] == "kept"
    rows = {(r["area"], r["state"]): r["items"] for r in summary(scan(messy["root"]))}
    assert rows[("runs/score", "ok")] == 1 and rows[("runs", "stale")] == 2 and rows[("runs", "corrupt")] == 1


def test_gc_dry_run_then_gc(messy, capsys):
    before = {p for p in messy["root"].rglob("*")}
    assert main(["cache", "gc", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert {p for p in messy["root"].rglob("*")} == before  # a dry run deletes nothing
    assert "dry run: would remove 5 items" in out and "would remove corrupt: runs/score/" in out
    assert main(["cache", "gc"]) == 0
    out = capsys.readouterr().out
    assert "removed 5 items" in out
    for gone in ("old_schema", "old_version", "corrupt", "dead", "old_upload"):
        assert not messy[gone].exists(), gone
    for kept in ("ok", "live", "new_upload"):
        assert messy[kept].exists(), kept
    assert (messy["outside"] / "thesis.tex").read_text() == "mine"  # never through the link
    assert (messy["root"] / "runs" / "score" / "linked").is_symlink()
    assert messy["store"].get(SC)["raw"].tolist() == list(range(12))
    assert not [p for p in (messy["root"] / "runs" / "score").iterdir() if p.name.startswith(".tmp-")]
    assert collect(messy["root"], dry_run=True)["removed"] == []  # nothing left to collect


def test_an_entry_whose_lock_is_held_is_left_alone(messy):
    lock = messy["root"] / "runs" / ".locks" / f"score-{messy['corrupt'].name}.lock"
    with files_mod.key_lock(lock):
        res = collect(messy["root"], dry_run=False)
    assert messy["corrupt"].exists()
    assert [(i.path, why) for i, why in res["skipped"]] == [(messy["corrupt"], "another process holds its lock")]


def test_ls_show_and_rm_see_a_corrupt_entry(messy, capsys):
    key = messy["corrupt"].name
    assert main(["ls"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith(key[:12]))
    assert "[corrupt: JSONDecodeError" in line and f"'rm {key[:12]}' or 'cache gc' removes it" in line
    assert "[stale: algorithm version" in out
    assert main(["show", key[:12]]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["state"] == "corrupt" and "entry.json" in shown["files"]
    assert main(["rm", key[:12]]) == 0
    assert f"deleted score {key} (corrupt: JSONDecodeError" in capsys.readouterr().out
    assert not messy["corrupt"].exists() and messy["ok"].exists()


def test_du_says_what_takes_space_and_what_gc_frees(messy, capsys):
    assert main(["cache", "du"]) == 0
    out = capsys.readouterr().out
    removable = sum(i.size for i in scan(messy["root"]) if i.removable)
    assert f"'cache gc' frees {removable / 1e6:.1f} MB" in out and "runs/score" in out
    assert main(["cache", "ls", "--stale"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[-1].startswith("5 items") and all(line.split()[0] in ("stale", "corrupt", "dead", "old")
                                                     for line in listed[:-1])


def test_a_cache_with_nothing_computed_yet(tmp_path, capsys):
    """No runs folder yet (a fresh cache): ls lists nothing, show and rm say no entry matches, gc frees nothing."""
    (tmp_path / "models").mkdir()
    assert [i for i in scan(tmp_path) if i.area.startswith("runs")] == []
    assert main(["show", "zzzz", "--cache", str(tmp_path)]) == 2
    assert "0 cache entries match 'zzzz'" in capsys.readouterr().err
    assert main(["rm", "zzzz", "--cache", str(tmp_path)]) == 2
    assert "0 cache entries match 'zzzz'" in capsys.readouterr().err
    assert main(["cache", "gc", "--dry-run", "--cache", str(tmp_path)]) == 0
    assert not (tmp_path / "runs").exists()
