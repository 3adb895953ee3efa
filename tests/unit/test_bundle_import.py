"""Bundle import and export at the edges, on a small bundle built here from two score entries: a bundle cut short
or damaged is one line naming the file and writes nothing; an import killed while staging leaves a folder that
``cache gc`` leaves alone while the import runs and removes once it is dead; ``bundle export --out`` replaces an
earlier bundle but nothing else without ``--force``."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from headprune_core.base.files import OutputExists
from headprune_core.cli.bundle import claim_bundle_file
from headprune_core.cli.main import main
from headprune_core.plans.bundle import FORMAT, MANIFEST, VERSION, import_bundle, is_bundle
from headprune_core.runs.config import FinetuneConfig, ScoreConfig
from headprune_core.runs.inventory import scan
from headprune_core.runs.store import Store, sha256_file

REPO = Path(__file__).resolve().parents[2]
FT = FinetuneConfig(model="me5-small", tasks=("pos",), train_langs=("en",), model_fp="m" * 16, data_fp="d" * 16)
SC = ScoreConfig(finetune=FT, task="pos", lang="de", data_fp="s" * 16)


def _pack(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """A valid bundle of two score entries (random arrays: the gzip stream is ~200 KB, not a few bytes)."""
    tmp = tmp_path_factory.mktemp("bundle")
    store = Store(tmp / "source" / "runs")
    rng = np.random.default_rng(0)
    entries, members = [], []
    for lang in ("de", "fr"):
        cfg = SC.replace(lang=lang)
        folder = store.put(cfg, {"raw": rng.random(12_000)})
        files = sorted(folder.iterdir())
        entries.append({"kind": cfg.kind, "key": cfg.key(), "files": [
            {"name": f.name, "bytes": f.stat().st_size, "sha256": sha256_file(f)} for f in files]})
        members += [(f"runs/{cfg.kind}/{cfg.key()}/{f.name}", f.read_bytes()) for f in files]
    manifest = {"format": FORMAT, "version": VERSION, "plan": "t", "model": "me5-small", "created": 0.0,
                "with_weights": False, "missing": 0, "weights_left_out": 0, "plans": {"study": None, "gradts": []},
                "entries": entries}
    return _pack(tmp / "two.tar.gz", [(MANIFEST, json.dumps(manifest).encode()), *members])


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    (root / "runs").mkdir(parents=True)
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    return root


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_the_bundle_built_here_imports(bundle, cache):
    done = import_bundle(bundle, Store(cache / "runs"))
    assert done.entries == done.added == 2 and is_bundle(bundle)
    assert not [p for p in (cache / "runs").iterdir() if p.name.startswith(".tmp-")]


def _refused(path: Path, cache: Path, capsys) -> str:
    """The one line ``bundle import`` says about ``path``, after checking it wrote nothing into ``cache``."""
    before = _files(cache)
    assert main(["bundle", "import", str(path)]) == 2
    err = capsys.readouterr().err
    assert _files(cache) == before  # nothing landed, no staging left
    assert err.count("\n") == 1 and "Traceback" not in err and err.startswith(f"error: {path}: "), err
    return err


@pytest.mark.parametrize("fraction", [0.02, 0.5, 0.97])
def test_a_bundle_cut_short_is_one_line_and_writes_nothing(fraction, bundle, cache, tmp_path, capsys):
    data = bundle.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[:int(len(data) * fraction)])  # a download stopped part way
    err = _refused(cut, cache, capsys)
    assert "cut short" in err and "nothing was imported" in err


def _damage(case: str, data: bytes) -> bytes:
    if case == "gzip-header":
        return data[:2] + b"\x63" + data[3:]  # compression method 99: no such thing
    if case == "deflate":
        mid = len(data) // 2
        return data[:mid] + bytes(b ^ 0x5A for b in data[mid:mid + 256]) + data[mid + 256:]
    raw = bytearray(gzip.decompress(data))
    if case == "tar-header":  # a wrong checksum in the second member's header: tarfile stops reading there
        size = int(raw[124:136].rstrip(b"\x00 "), 8)  # the manifest's, from the first header
        second = 512 + -(-size // 512) * 512
        raw[second + 148:second + 156] = b"0000000\x00"
    return gzip.compress(bytes(raw))


@pytest.mark.parametrize("case", ["gzip-header", "deflate", "tar-header"])
def test_a_damaged_bundle_is_one_line_and_writes_nothing(case, bundle, cache, tmp_path, capsys):
    bad = tmp_path / f"{case}.tar.gz"
    bad.write_bytes(_damage(case, bundle.read_bytes()))
    err = _refused(bad, cache, capsys)
    assert "damaged" in err or "cut short" in err, err


@pytest.mark.parametrize("text", [b'{"format": "headprune-bundle", "entries": [', b"[1, 2]", b"\xff\xfe"])
def test_a_bundle_whose_manifest_is_not_json_says_so(text, bundle, cache, tmp_path, capsys):
    with tarfile.open(bundle) as tar:
        members = [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]
    bad = _pack(tmp_path / "bad-manifest.tar.gz", [(MANIFEST, text), *members[1:]])
    err = _refused(bad, cache, capsys)
    assert f"{MANIFEST} is damaged" in err


# --- an import killed while staging ------------------------------------------------------------------------------

KILLED_IMPORT = """
    import os, sys, time
    from pathlib import Path
    from headprune_core.plans import bundle
    from headprune_core.runs.store import Store

    def stop(*args, **kwargs):  # every file is unpacked into the staging folder by now: wait to be killed
        Path(os.environ["READY"]).write_text("staged")
        time.sleep(600)

    bundle._check_entry_folder = stop
    bundle.import_bundle(sys.argv[1], Store(os.environ["ROOT"]))
"""


def test_gc_removes_the_staging_of_a_killed_import_and_never_of_a_running_one(bundle, cache, tmp_path, capsys):
    runs, ready = cache / "runs", tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": str(REPO), "ROOT": str(runs), "READY": str(ready)}
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(KILLED_IMPORT), str(bundle)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 300
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.time() < deadline, "the import never reached its staging"
            time.sleep(0.1)
        staging = [p for p in runs.iterdir() if p.name.startswith(".tmp-")]
        assert len(staging) == 1 and len(list(staging[0].rglob("*.npy"))) == 2
        states = {i.path: i.state for i in scan(cache)}
        assert states[staging[0]] == "temp in use"
        assert main(["cache", "gc"]) == 0  # while the import runs: its staging stays
        assert staging[0].is_dir() and len(list(staging[0].rglob("*.npy"))) == 2
        capsys.readouterr()
    finally:
        proc.kill()  # SIGKILL: no finally of the import runs
        proc.communicate()
    assert staging[0].is_dir() and {i.path: i.state for i in scan(cache)}[staging[0]] == "dead temp"
    assert main(["cache", "gc"]) == 0
    assert "removed 1 item" in capsys.readouterr().out
    assert not staging[0].exists() and _files(runs) == []  # nothing left behind, nothing landed
    assert import_bundle(bundle, Store(runs)).added == 2  # and the next import works


# --- export --out ------------------------------------------------------------------------------------------------

def test_export_refuses_to_replace_what_is_not_a_bundle(bundle, tmp_path, capsys):
    mine = tmp_path / "thesis.tar.gz"
    mine.write_text("my thesis")
    assert main(["bundle", "export", "demo", "--out", str(mine)]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {mine} exists and is not a headprune bundle; nothing was touched. Choose a new file "
                   "name, or use --force to replace it\n")
    assert mine.read_text() == "my thesis"
    assert claim_bundle_file(mine, force=True) == mine  # --force: replaced
    assert claim_bundle_file(bundle) == bundle  # an earlier bundle: replaced without --force
    assert claim_bundle_file(tmp_path / "new.tar.gz") == tmp_path / "new.tar.gz"
    with pytest.raises(OutputExists, match="is a folder"):
        claim_bundle_file(tmp_path, force=True)
    for other in (b"", b"\x1f\x8b", gzip.compress(b"x" * 1000)):  # not bundles, whatever they look like
        mine.write_bytes(other)
        assert not is_bundle(mine)
    foreign = _pack(tmp_path / "foreign.tar.gz", [(MANIFEST, json.dumps({"format": "other"}).encode())])
    assert not is_bundle(foreign)
