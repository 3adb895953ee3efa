"""Cache keys and the on-disk store: hits, misses, atomic writes, corrupt entries, races, stale temp folders."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest
import torch

from headprune_core.base import files as files_mod
from headprune_core.base.artifacts import Weights
from headprune_core.runs.config import CurveConfig, EvalConfig, FinetuneConfig, ScoreConfig
from headprune_core.runs.store import Store

FT = FinetuneConfig(model="me5-small", tasks=("pos",), train_langs=("en",), model_fp="m" * 16, data_fp="d" * 16)
SC = ScoreConfig(finetune=FT, task="pos", lang="de", data_fp="s" * 16)

# a valid other value for every field of FinetuneConfig
FT_CHANGES = {"tasks": ("name",), "train_langs": ("de",), "epochs": 3.0, "lr": 1e-4, "head_lr": 2e-3,
              "batch_size": 8, "max_length": 64, "max_train_sentences": 50, "freeze_embeddings": False,
              "sampling": "round_robin", "seed": 1, "pruned": ((0, 1),), "model_fp": "x" * 16, "data_fp": "y" * 16,
              "from_checkpoint": True, "l0": (("target", 0.5),), "keep": (("pos", (1, 2)),), "shuffle_labels": True}
DESCRIPTIVE = {"model": "other-name", "setting": "multi"}


def test_every_keyed_field_changes_the_key_and_descriptive_ones_do_not():
    assert set(FT_CHANGES) | set(DESCRIPTIVE) == {f.name for f in dataclasses.fields(FinetuneConfig)}
    keys = {FT.key()} | {FT.replace(**{k: v}).key() for k, v in FT_CHANGES.items()}
    assert len(keys) == 1 + len(FT_CHANGES)
    for name, value in DESCRIPTIVE.items():  # they describe the run but cannot change what it computes
        assert FT.replace(**{name: value}).key() == FT.key()
    score_changes = {"task": "name", "lang": "fr", "method": "kv_grad", "split": "test", "max_sentences": 10,
                     "max_length": 64, "seed": 1, "data_fp": "z" * 16, "finetune": FT.replace(lr=1e-4), "half": 1,
                     "resample": 13}
    assert set(score_changes) == {f.name for f in dataclasses.fields(ScoreConfig)}
    assert len({SC.key()} | {SC.replace(**{k: v}).key() for k, v in score_changes.items()}) == 1 + len(score_changes)


def test_an_option_added_later_keeps_the_keys_computed_before_it():
    """from_checkpoint came after entries existed: at its default it is not hashed, so their keys stand."""
    import hashlib

    from headprune_core.base.specs import canonical_json
    from headprune_core.runs.config import SCHEMA_VERSION
    before = {k: v for k, v in FT.keyed().items()}
    assert not {"from_checkpoint", "shuffle_labels"} & set(before) and "resample" not in SC.keyed()
    payload = canonical_json({"kind": "finetune", "schema": SCHEMA_VERSION, "version": FT.version, "config": before})
    assert FT.key() == hashlib.sha256(payload.encode()).hexdigest()[:20]
    assert FT.replace(from_checkpoint=True).keyed()["from_checkpoint"] is True


def test_integral_floats_key_like_ints_and_kinds_have_versions():
    assert FT.replace(epochs=2).key() == FT.replace(epochs=2.0).key()  # "epochs": 2 in a JSON plan
    assert FT.replace(epochs=2.5).key() != FT.key()

    class Bumped(ScoreConfig):  # the same fields, computed by a changed algorithm
        version = ScoreConfig.version + 1
    bumped = Bumped(**{f.name: getattr(SC, f.name) for f in dataclasses.fields(SC)})
    assert bumped.keyed() == SC.keyed() and bumped.key() != SC.key()


def test_round_trip_and_no_runtime_fields():
    cfg = CurveConfig(finetune=FT, task="pos", lang="de", ranking=SC, steps=(0, 12, 24))
    again = CurveConfig.from_dict(cfg.to_dict())
    assert again == cfg and again.key() == cfg.key()
    ev = EvalConfig(finetune=FT, task="pos", lang="en", mask=((1.0, 0.0), (1.0, 1.0)))
    assert EvalConfig.from_dict(ev.to_dict()) == ev
    names = {f.name for f in dataclasses.fields(FinetuneConfig)}
    assert not names & {"device", "progress", "cache_dir", "path"}
    with pytest.raises(ValueError, match="unknown fields"):
        ScoreConfig.from_dict({**SC.to_dict(), "device": "cuda"})
    assert cfg.fingerprints() == {"finetune.model_fp": "m" * 16, "finetune.data_fp": "d" * 16,
                                  "ranking.finetune.model_fp": "m" * 16, "ranking.finetune.data_fp": "d" * 16,
                                  "ranking.data_fp": "s" * 16, "data_fp": ""}


def test_validation_errors():
    with pytest.raises(ValueError, match="unknown setting 'both'; known: cross, multi"):
        FT.replace(setting="both")
    with pytest.raises(ValueError, match="unknown strategy 'xx'; known: importance, reverse, random"):
        CurveConfig(finetune=FT, task="pos", lang="en", strategy="xx")
    with pytest.raises(ValueError, match="needs a ranking"):
        CurveConfig(finetune=FT, task="pos", lang="en", strategy="importance")


def _scores():
    return {"scores": np.arange(6.0).reshape(2, 3), "meta": {"n": 3}, "weights": Weights({"w": torch.ones(2, 2)})}


def test_hit_miss_with_call_counting(tmp_path):
    store, calls = Store(tmp_path), []

    def compute():
        calls.append(1)
        return _scores()

    first = store.get_or_compute(SC, compute)
    second = store.get_or_compute(SC, compute)
    assert len(calls) == 1
    assert np.array_equal(second["scores"], first["scores"]) and second["meta"] == {"n": 3}
    assert torch.equal(second["weights"]["w"], torch.ones(2, 2))
    store.get_or_compute(SC.replace(lang="fr"), compute)
    assert len(calls) == 2
    saved = json.loads((store.path_for(SC) / "config.json").read_text())
    assert saved["config"]["lang"] == "de" and saved["key"] == SC.key() and saved["version"] == SC.version
    assert [e.config["lang"] for e in store.entries("score")].count("de") == 1


def test_reading_only_computes_nothing_but_the_kinds_it_allows(tmp_path):
    """A class-mode student's page: a cached result is read, a missing one raises NotComputedHere (nothing is
    computed or stored); inside the student's queued work an evaluation may be computed, a score still not; outside
    the block everything computes again."""
    from headprune_core.runs.store import NotComputedHere, reading_only
    store, calls = Store(tmp_path), []

    def compute():
        calls.append(1)
        return _scores()

    store.get_or_compute(SC, compute)
    other = SC.replace(lang="fr")
    with reading_only("a student's session"):
        assert store.get_or_compute(SC, compute)["meta"] == {"n": 3}
        with pytest.raises(NotComputedHere, match="is not cached, and a student's session"):
            store.get_or_compute(other, compute)
        with reading_only("queued", allowed={"eval"}), pytest.raises(NotComputedHere):
            store.get_or_compute(other, compute)
    assert calls == [1] and not store.has(other)
    with reading_only("queued", allowed={"score"}):
        store.get_or_compute(other, compute)
    assert calls == [1, 1] and store.has(other)


def test_put_refuses_empty_fingerprints(tmp_path):
    store = Store(tmp_path)
    with pytest.raises(ValueError, match=r"empty fingerprints \(finetune.data_fp\)"):
        store.put(SC.replace(finetune=FT.replace(data_fp="")), {"scores": np.zeros(2)})
    with pytest.raises(ValueError, match=r"empty fingerprints \(data_fp\)"):
        store.put(SC.replace(data_fp=""), {"scores": np.zeros(2)})
    assert not (tmp_path / "score").exists() or not any((tmp_path / "score").iterdir())


def test_crash_between_write_and_rename_leaves_no_entry(tmp_path, monkeypatch):
    store, calls = Store(tmp_path), []

    def compute():
        calls.append(1)
        return {"scores": np.ones((2, 2))}

    class SimulatedCrash(Exception):
        pass

    def crash(src, dst):
        raise SimulatedCrash("simulated crash before rename")

    monkeypatch.setattr(files_mod.os, "replace", crash)
    with pytest.raises(SimulatedCrash):
        store.get_or_compute(SC, compute)
    monkeypatch.undo()
    assert not store.has(SC) and store.get(SC) is None
    assert not [p for p in (tmp_path / "score").iterdir()]  # no temp folder left behind
    store.get_or_compute(SC, compute)
    assert len(calls) == 2 and store.has(SC)


def test_disk_full_while_writing_leaves_no_half_entry_and_a_rerun_completes(tmp_path, monkeypatch):
    """ENOSPC in the middle of an artifact (half of it written): a clear error naming the cache folder, no entry
    and no temp folder left, the entry written before it intact; once there is room the same call completes."""
    import errno

    from headprune_core.runs import store as store_mod
    store = Store(tmp_path)
    store.get_or_compute(SC.replace(lang="fr"), _scores)  # written before the disk filled
    write = store_mod._write_artifact

    def fill_up(folder, name, value):
        (folder / f"{name}.part").write_bytes(b"x" * 1000)  # what got onto the disk before it was full
        raise OSError(errno.ENOSPC, "No space left on device", str(folder / f"{name}.part"))

    monkeypatch.setattr(store_mod, "_write_artifact", fill_up)
    with pytest.raises(store_mod.CacheWriteError) as info:
        store.get_or_compute(SC, _scores)
    assert str(info.value) == (f"could not store the score result {SC.key()} in the cache folder {tmp_path} (No space "
                               "left on device); nothing half-written was kept and the entries finished before it "
                               "are intact: free space there (or use another --cache) and run the same command again")
    assert info.value.errno == errno.ENOSPC
    assert not store.path_for(SC).exists() and [p.name for p in (tmp_path / "score").iterdir()] == [
        store.path_for(SC.replace(lang="fr")).name]  # no half entry, no temp folder
    assert store.get(SC.replace(lang="fr")) is not None
    monkeypatch.setattr(store_mod, "_write_artifact", write)
    assert store.get_or_compute(SC, _scores)["meta"] == {"n": 3} and store.has(SC)


def test_a_read_only_cache_fails_before_any_computation(tmp_path, monkeypatch):
    """A cache folder that refuses writes (simulated at os.open: tests run as root, whom chmod does not stop):
    the error names the folder and comes before compute is called; reading what is cached still works."""
    import errno

    from headprune_core.runs import store as store_mod
    from headprune_core.runs.jobs import Job, run_jobs
    cached = Store(tmp_path)
    cached.get_or_compute(SC.replace(lang="fr"), _scores)
    real_open = os.open

    def read_only(path, flags, *args, **kwargs):
        if str(path).startswith(str(tmp_path)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(store_mod.os, "open", read_only)
    store, calls = Store(tmp_path), []
    assert store.get(SC.replace(lang="fr"))["meta"] == {"n": 3}  # reading works
    message = (f"the cache folder {tmp_path} cannot be written (Read-only file system), so no result could be "
               "stored and nothing was computed; use a writable folder (--cache DIR or HEADPRUNE_CACHE). What is "
               "cached there can still be read.")
    with pytest.raises(store_mod.CacheWriteError) as info:
        store.get_or_compute(SC, lambda: calls.append(1) or _scores())
    assert str(info.value) == message and not calls
    jobs = [Job("cached", SC.replace(lang="fr"), lambda: calls.append(1)), Job("new", SC, lambda: calls.append(1))]
    with pytest.raises(store_mod.CacheWriteError, match="cannot be written"):
        run_jobs(jobs, Store(tmp_path))
    assert not calls
    assert run_jobs(jobs[:1], Store(tmp_path))["computed"] == 0  # all cached: nothing to write, no error


def _damage(path, how: str) -> None:
    if how == "truncate_npy":
        (path / "scores.npy").write_bytes((path / "scores.npy").read_bytes()[:20])
    elif how == "delete_marker":
        (path / "entry.json").unlink()
    elif how == "garbage_json":
        (path / "meta.json").write_text("{not json")
    elif how == "flip_a_byte":  # same size, other content: only the checksum sees it
        data = bytearray((path / "scores.npy").read_bytes())
        data[-1] ^= 0xFF
        (path / "scores.npy").write_bytes(bytes(data))
    elif how == "other_config":  # config.json of another run under this key
        saved = json.loads((path / "config.json").read_text())
        saved["config"]["lang"] = "fr"
        (path / "config.json").write_text(json.dumps(saved))
    elif how == "old_schema":
        meta = json.loads((path / "entry.json").read_text())
        meta["schema"] = 1
        (path / "entry.json").write_text(json.dumps(meta))
    elif how == "delete_artifact":
        (path / "meta.json").unlink()


DAMAGES = ["truncate_npy", "delete_marker", "garbage_json", "flip_a_byte", "other_config", "old_schema",
           "delete_artifact"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_corrupt_entry_is_a_logged_miss(tmp_path, caplog, damage):
    store, calls = Store(tmp_path), []

    def compute():
        calls.append(1)
        return {"scores": np.ones((4, 4)), "meta": {"a": 1}}

    store.get_or_compute(SC, compute)
    _damage(store.path_for(SC), damage)
    assert store.get(SC) is None
    # status is the cheap check (records, sizes, config): it cannot see a flipped byte, a read can
    assert store.status(SC) == ("ok" if damage == "flip_a_byte" else "corrupt")
    with caplog.at_level("WARNING"):
        again = store.get_or_compute(SC, compute)
    assert len(calls) == 2 and np.array_equal(again["scores"], np.ones((4, 4)))
    assert store.status(SC) == "ok" and store.get(SC)["meta"] == {"a": 1}
    assert "corrupt" in caplog.text


def test_a_valid_entry_is_never_replaced_by_a_later_put(tmp_path):
    """Two writers of one key: the second (the one that lost the race) keeps the first's valid entry."""
    store = Store(tmp_path)
    store.put(SC, {"scores": np.ones(3)})
    first = (store.path_for(SC) / "entry.json").read_text()
    store.put(SC, {"scores": np.zeros(3)})
    assert (store.path_for(SC) / "entry.json").read_text() == first
    assert np.array_equal(store.get(SC)["scores"], np.ones(3))
    _damage(store.path_for(SC), "truncate_npy")  # a corrupt one is replaced
    store.put(SC, {"scores": np.zeros(3)})
    assert np.array_equal(store.get(SC)["scores"], np.zeros(3))


def test_unreadable_right_after_put_is_a_miss_and_the_result_is_still_served(tmp_path, monkeypatch, caplog):
    store = Store(tmp_path)
    real_put = Store.put

    def put_then_damage(self, cfg, artifacts, **kw):
        path = real_put(self, cfg, artifacts, **kw)
        _damage(path, "flip_a_byte")
        return path

    monkeypatch.setattr(Store, "put", put_then_damage)
    with caplog.at_level("ERROR"):
        out = store.get_or_compute(SC, lambda: {"scores": np.full(3, 7.0), "meta": {"t": (1, 2)}})
    assert np.array_equal(out["scores"], np.full(3, 7.0)) and out["meta"] == {"t": [1, 2]}
    assert "could not be read back" in caplog.text and store.get(SC) is None


def test_list_find_delete(tmp_path):
    store = Store(tmp_path)
    store.put(SC, {"scores": np.zeros(3)})
    [entry] = store.entries()
    assert entry.kind == "score" and entry.size > 0 and store.find(entry.key[:6]).key == SC.key()
    assert entry.artifacts == ("scores.npy",) and not entry.stale and entry.describe() == "pos/de gate_grad"
    _damage(entry.path, "old_schema")  # listed (so 'rm' can free its space), marked stale
    assert [e.stale for e in store.entries()] == [True]
    with pytest.raises(KeyError, match="0 cache entries"):
        store.find("zzzz")
    assert store.delete(entry) and store.entries() == [] and not store.path_for(SC).exists()
    assert not [p for p in (tmp_path / "score").iterdir()]


def test_cache_root_env_and_a_file_in_the_way(monkeypatch, tmp_path):
    from headprune_core.runs import store as store_mod
    monkeypatch.setenv("HEADPRUNE_CACHE", str(tmp_path))
    assert store_mod.cache_root() == tmp_path.resolve()
    assert Store().root == tmp_path.resolve() / "runs"
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("HEADPRUNE_CACHE", str(tmp_path / "file"))
    with pytest.raises(NotADirectoryError, match="is a file, not a folder"):
        Store()


def test_temp_folders_of_dead_processes_are_cleaned(tmp_path):
    """A writer killed mid-write leaves a temp folder; the next writer in that folder removes it (not those of
    live processes)."""
    store = Store(tmp_path)
    parent = tmp_path / "score"
    parent.mkdir()
    dead = parent / f"{files_mod.TMP_PREFIX}abc.new.{files_mod._HOST}.999999999.deadbeef"
    alive = parent / f"{files_mod.TMP_PREFIX}abc.new.{files_mod._HOST}.{os.getppid()}.cafecafe"
    for p in (dead, alive):
        p.mkdir()
        (p / "half.npy").write_bytes(b"\x93NUMPY")
    store.put(SC, {"scores": np.zeros(2)})
    assert not dead.exists() and alive.exists() and store.has(SC)
