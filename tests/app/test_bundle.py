"""Result bundles: a plan's results exported from the fixture cache and imported into an empty one show the same
numbers on the pages with nothing recomputed; weights stay out unless asked for; malicious bundles are refused
with nothing written."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest

from headprune_core.cli.main import main
from headprune_core.plans.bundle import MANIFEST, BundleError, export_bundle, import_bundle, is_bundle
from headprune_core.plans.presets import plans_dir
from headprune_core.runs.config import config_from_dict
from headprune_core.runs.store import Store
from tests.helpers.app import copy_cache, make_app, run_page, shown_numbers


@pytest.fixture(scope="module")
def bundles(fixture_cache, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("bundles")
    store = Store(fixture_cache["root"] / "runs")
    with pytest.MonkeyPatch.context() as mp:  # the plan's data are the fixture cache's corpora
        mp.setenv("HEADPRUNE_CACHE", str(fixture_cache["root"]))
        return {"plain": export_bundle(fixture_cache["plan"], out / "plain.tar.gz", store=store, device="cpu").path,
                "weights": export_bundle(fixture_cache["plan"], out / "weights.tar.gz", store=store, device="cpu",
                                         with_weights=True).path}


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def test_export_then_import_gives_the_same_entries_and_pages(fixture_cache, bundles, tmp_path, monkeypatch):
    source = Store(fixture_cache["root"] / "runs")
    with tarfile.open(bundles["plain"]) as tar:
        manifest = json.loads(tar.extractfile(MANIFEST).read())
    kinds = {e["kind"] for e in manifest["entries"]}
    assert manifest["plan"] == "fixture" and manifest["weights_left_out"] > 0 and "finetune" not in kinds
    assert {"score", "eval", "curve"} <= kinds and manifest["missing"] == 0
    dest = copy_cache(fixture_cache, tmp_path / "laptop", runs=False)
    monkeypatch.setenv("HEADPRUNE_CACHE", str(dest))
    assert main(["bundle", "import", str(bundles["plain"])]) == 0
    store = Store(dest / "runs")
    for e in manifest["entries"]:  # every entry landed, valid, with the source's artifacts
        cfg = config_from_dict(e["kind"], json.loads((source.root / e["kind"] / e["key"] / "config.json")
                                                      .read_text())["config"])
        assert store.has(cfg)
        if e["kind"] == "score":
            np.testing.assert_array_equal(store.get(cfg)["raw"], source.get(cfg)["raw"])
    assert not [p for p in (dest / "runs").iterdir() if p.name.startswith(".tmp")]
    # the pages read the imported results: the importance page's table is the source's, nothing to compute
    tables = {}
    for name, cache in (("source", fixture_cache["root"]), ("imported", dest)):
        at = make_app(cache, monkeypatch)
        at.run()
        run_page(at, "importance")
        assert not [b for b in at.button if b.label.startswith("Compute")], name
        tables[name] = at.dataframe[0].value
    assert tables["imported"].equals(tables["source"])
    # the prune page and the inspector need the fine-tuned weights, which this bundle left out: they say so and
    # offer to compute them
    for page in ("prune", "inspector"):
        at = make_app(dest, monkeypatch)
        at.run()
        run_page(at, page)
        assert not at.exception and not at.metric, page
        assert any(b.label.startswith("Compute") for b in at.button), page
    # a second import keeps every entry as it is
    again = import_bundle(bundles["plain"], store)
    assert again.added == 0 and again.kept == again.entries == len(manifest["entries"])


# the pages whose results the fixture plan computes (its re-fine-tunings and findings are computed by slow tests)
@pytest.mark.parametrize("page", ["home", "importance", "prune", "inspector"])
def test_a_bundle_with_weights_shows_every_page_the_same(page, fixture_cache, bundles, tmp_path, monkeypatch):
    dest = copy_cache(fixture_cache, tmp_path / "laptop", runs=False)
    done = import_bundle(bundles["weights"], Store(dest / "runs"))
    assert done.added == done.entries and (dest / "runs" / "finetune").is_dir()
    shown = {}
    for name, cache in (("source", fixture_cache["root"]), ("imported", dest)):
        at = make_app(cache, monkeypatch)
        at.run()
        run_page(at, page)
        assert not at.error and not [b for b in at.button if b.label.startswith("Compute")], (name, page)
        shown[name] = shown_numbers(at)
    assert shown["imported"] == shown["source"] and any(shown["source"].values())
    assert len(list(Store(dest / "runs").entries())) == done.entries  # nothing was computed on the way


def test_the_plan_travels_with_its_results(fixture_cache, bundles, tmp_path, monkeypatch, capsys):
    """A laptop without the plan's file gets it from the bundle and lists it; a plan file of that name already
    there is the user's and is kept."""
    manifest, _ = _read(bundles["plain"])
    assert manifest["plans"]["study"]["name"] == "fixture" and manifest["plans"]["gradts"] == []
    dest = copy_cache(fixture_cache, tmp_path / "laptop", runs=False)
    import shutil
    shutil.rmtree(dest / "plans")
    monkeypatch.setenv("HEADPRUNE_CACHE", str(dest))
    assert main(["bundle", "import", str(bundles["plain"])]) == 0
    assert f"plan fixture: saved as {dest / 'plans' / 'fixture.json'}" in capsys.readouterr().out
    from headprune_core.plans.presets import find_plan
    assert find_plan("fixture") == fixture_cache["plan"]
    at = make_app(dest, monkeypatch)
    at.run()
    assert at.sidebar.selectbox(key="plan").value == "fixture"
    # another plan of that name here: kept, and said so; the results are imported all the same
    other = tmp_path / "other"
    (other / "plans").mkdir(parents=True)
    (other / "plans" / "fixture.json").write_text('{"name": "fixture", "description": "mine"}')
    done = import_bundle(bundles["plain"], Store(other / "runs"))
    assert done.added == done.entries and json.loads((other / "plans" / "fixture.json").read_text())["description"] \
        == "mine"
    assert done.plans == [f"plan fixture: {other / 'plans' / 'fixture.json'} holds another plan of that name; it "
                          "was kept (rename it to see the bundle's plan)"]
    assert import_bundle(bundles["plain"], Store(dest / "runs")).plans == ["plan fixture: already here"]


LESSON = "---\ntitle: Heads of the fixture\nplan: fixture\n---\n\n## Heads\nview: importance?lang=de\n\nLook.\n"


def test_the_teachers_lessons_of_the_plan_travel_with_its_results(fixture_cache, tmp_path, monkeypatch):
    """A lesson for the plan goes into the bundle (one for another plan does not); on import it is saved where
    no lesson of that name is, and one already there is kept."""
    source = copy_cache(fixture_cache, tmp_path / "box", runs=True)
    monkeypatch.setenv("HEADPRUNE_CACHE", str(source))
    (source / "lessons").mkdir()
    (source / "lessons" / "heads.md").write_text(LESSON)
    (source / "lessons" / "other.md").write_text(LESSON.replace("plan: fixture", "plan: demo"))
    out = export_bundle(fixture_cache["plan"], tmp_path / "b.tar.gz", store=Store(source / "runs"), device="cpu")
    manifest, _ = _read(out.path)
    assert manifest["lessons"] == {"heads": LESSON}
    laptop = tmp_path / "laptop"
    done = import_bundle(out.path, Store(laptop / "runs"))
    assert (laptop / "lessons" / "heads.md").read_text() == LESSON
    assert f"lesson heads: saved as {laptop / 'lessons' / 'heads.md'}" in done.plans
    (laptop / "lessons" / "heads.md").write_text(LESSON.replace("Look.", "Mine."))
    again = import_bundle(out.path, Store(laptop / "runs"))
    assert "lesson heads: " in " ".join(again.plans) and "it was kept" in " ".join(again.plans)
    assert "Mine." in (laptop / "lessons" / "heads.md").read_text()


# --- malicious bundles --------------------------------------------------------------------------------------------

def _read(path: Path) -> tuple[dict, dict[str, bytes]]:
    with tarfile.open(path) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    return json.loads(files.pop(MANIFEST)), files


def _write(path: Path, manifest: dict | None, files: dict[str, bytes], extra=()) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        items = ([(MANIFEST, json.dumps(manifest).encode())] if manifest is not None else []) + list(files.items())
        for name, data in items:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info)
    return path


def _relist(manifest: dict, name: str, data: bytes) -> None:
    """Make the manifest agree with a changed file (so only the deeper check can refuse it)."""
    import hashlib
    _, kind, key, file = name.split("/")
    for e in manifest["entries"]:
        if e["kind"] == kind and e["key"] == key:
            for f in e["files"]:
                if f["name"] == file:
                    f["bytes"], f["sha256"] = len(data), hashlib.sha256(data).hexdigest()
                    return
            e["files"].append({"name": file, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})


def _first(files: dict[str, bytes], kind: str, suffix: str) -> str:
    return next(n for n in sorted(files) if n.startswith(f"runs/{kind}/") and n.endswith(suffix))


def _object_npy() -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    return buf.getvalue()


def _link(name: str, kind=tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, "/etc/passwd"
    return info


def _evil(case: str, manifest: dict, files: dict[str, bytes]):
    """Turn a valid bundle into the malicious ``case``; returns (manifest, files, extra members, message)."""
    score_cfg = _first(files, "score", "config.json")
    entry = score_cfg.rsplit("/", 1)[0]
    npy = _first(files, "score", ".npy")
    extra = []
    if case == "traversal":
        files[f"{entry}/../../../evil.json"] = b"{}"
        msg = "leaves its folder"
    elif case == "absolute":
        files["/tmp/headprune-evil.json"] = b"{}"
        msg = "absolute"
    elif case == "symlink":
        extra.append(_link(f"{entry}/link.json"))
        msg = "a link"
    elif case == "hardlink":
        extra.append(_link(f"{entry}/hard.json", tarfile.LNKTYPE))
        msg = "a link"
    elif case == "folder":
        info = tarfile.TarInfo(f"{entry}/sub")
        info.type = tarfile.DIRTYPE
        extra.append(info)
        msg = "a folder"
    elif case == "unlisted-file":
        files[f"{entry}/extra.json"] = b"{}"
        msg = "not listed in manifest.json"
    elif case == "pickle":
        files[f"{entry}/model.pkl"] = b"\x80\x04K\x01."
        _relist(manifest, f"{entry}/model.pkl", files[f"{entry}/model.pkl"])
        msg = "never pickles"
    elif case == "object-npy":
        files[npy] = _object_npy()
        _relist(manifest, npy, files[npy])
        entry_json = json.loads(files[f"{entry}/entry.json"])
        import hashlib
        for r in entry_json["artifacts"]:
            if npy.endswith(r["file"]):
                r["bytes"], r["sha256"] = len(files[npy]), hashlib.sha256(files[npy]).hexdigest()
        files[f"{entry}/entry.json"] = json.dumps(entry_json).encode()
        _relist(manifest, f"{entry}/entry.json", files[f"{entry}/entry.json"])
        msg = "not a plain array"
    elif case == "hash-mismatch":
        files[npy] = files[npy][:-1] + bytes([files[npy][-1] ^ 1])
        msg = "SHA-256"
    elif case == "config-not-its-key":
        stored = json.loads(files[score_cfg])
        stored["config"]["max_sentences"] = 7
        files[score_cfg] = json.dumps(stored).encode()
        _relist(manifest, score_cfg, files[score_cfg])
        msg = "hashes to"
    elif case == "key-mismatch":
        stored = json.loads(files[score_cfg])
        stored["key"] = "0" * 20
        files[score_cfg] = json.dumps(stored).encode()
        _relist(manifest, score_cfg, files[score_cfg])
        msg = "recorded as"
    elif case == "unknown-kind":
        files["runs/shell/" + "a" * 20 + "/x.json"] = b"{}"
        msg = "unknown kind"
    elif case == "no-manifest":
        manifest = None
        msg = "no manifest.json"
    elif case == "listed-but-absent":
        del files[npy]
        msg = "not in the bundle"
    elif case == "plan-name-traversal":
        manifest["plans"]["study"]["name"] = "../../../etc/cron.d/evil"
        msg = "a plan it carries is unreadable: .*bad plan name"
    elif case == "plan-unknown-field":
        manifest["plans"]["study"]["command"] = "rm -rf ~"
        msg = r"a plan it carries is unreadable: .*unknown plan fields \['command'\]"
    elif case == "lesson-name-traversal":
        manifest["lessons"] = {"../../../../evil": LESSON}
        msg = "lesson '../../../../evil': lesson name"
    elif case == "lesson-not-a-lesson":
        manifest["lessons"] = {"big": "x" * (300 * 1024)}
        msg = "lesson 'big' is not a lesson file"
    else:
        raise ValueError(case)
    return manifest, files, extra, msg


CASES = ["traversal", "absolute", "symlink", "hardlink", "folder", "unlisted-file", "pickle", "object-npy",
         "hash-mismatch", "config-not-its-key", "key-mismatch", "unknown-kind", "no-manifest", "listed-but-absent",
         "plan-name-traversal", "plan-unknown-field", "lesson-name-traversal", "lesson-not-a-lesson"]


@pytest.mark.parametrize("case", CASES)
def test_malicious_bundles_are_refused_with_nothing_written(case, bundles, tmp_path):
    manifest, files = _read(bundles["plain"])
    manifest, files, extra, msg = _evil(case, manifest, files)
    bad = _write(tmp_path / f"{case}.tar.gz", manifest, files, extra)
    root = tmp_path / "deep" / "er" / "still" / "cache" / "runs"  # a ../../../ escape still lands in tmp_path
    root.mkdir(parents=True)
    escapes = [Path("/tmp") / "headprune-evil.json"]
    if case == "plan-name-traversal":  # where the plan file would land if its name were trusted
        escape = Path(os.path.normpath(plans_dir(root.parent) / f"{manifest['plans']['study']['name']}.json"))
        assert escape.is_relative_to(tmp_path) and not escape.is_relative_to(root.parent), escape
        escapes.append(escape)
    before = _files(tmp_path)
    with pytest.raises(BundleError, match=msg):
        import_bundle(bad, Store(root))
    assert _files(tmp_path) == before  # nothing landed, no temp folder left, nothing escaped the cache
    assert not [e for e in escapes if e.exists()]


def test_import_refuses_what_is_not_a_bundle(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HEADPRUNE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "x.tar.gz").write_bytes(b"not a tar")
    assert main(["bundle", "import", str(tmp_path / "x.tar.gz")]) == 2
    assert "not a bundle" in capsys.readouterr().err
    assert main(["bundle", "import", str(tmp_path / "absent.tar.gz")]) == 2
    assert "no such bundle" in capsys.readouterr().err


def test_bundle_export_from_the_command_line(fixture_cache, tmp_path, capsys):
    out = tmp_path / "fixture.tar.gz"
    assert main(["bundle", "export", str(fixture_cache["plan_file"]), "--out", str(out), "--device", "cpu",
                 "--cache", str(fixture_cache["root"])]) == 0
    said = capsys.readouterr().out
    assert f"wrote {out}" in said and "fine-tuned models' weights left out" in said
    manifest, files = _read(out)
    assert len(manifest["entries"]) == len({n.split("/")[2] for n in files})
    # an earlier bundle there is replaced; any other file only with --force
    mine = tmp_path / "mine.tar.gz"
    mine.write_text("not a bundle")
    export = ["bundle", "export", str(fixture_cache["plan_file"]), "--device", "cpu", "--cache",
              str(fixture_cache["root"])]
    assert main([*export, "--out", str(out)]) == 0 and is_bundle(out)
    assert main([*export, "--out", str(mine)]) == 2 and mine.read_text() == "not a bundle"
    assert f"{mine} exists and is not a headprune bundle" in capsys.readouterr().err
    assert main([*export, "--out", str(mine), "--force"]) == 0 and _read(mine)[0]["entries"] == manifest["entries"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fixture.tar.gz", "mine.tar.gz"]  # no temp file left
