"""Cache keys and the on-disk store: hits, misses, atomic writes, corrupt entries."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
import torch

from headprune_core import store as store_mod
from headprune_core.config import CurveConfig, EvalConfig, FinetuneConfig, ScoreConfig
from headprune_core.store import Store, Weights

FT = FinetuneConfig(model="me5-small", tasks=("pos",), train_langs=("en",))


def test_key_changes_with_every_field():
    base = ScoreConfig(finetune=FT, task="pos", lang="de")
    changed = {"task": "name", "lang": "fr", "method": "kv_grad", "split": "test", "max_sentences": 10, "seed": 1}
    keys = {base.key()} | {base.replace(**{k: v}).key() for k, v in changed.items()}
    assert len(keys) == 1 + len(changed)
    ft_keys = {FT.key()}
    valid = {"setting": "multi", "sampling": "round_robin", "max_train_sentences": 50}
    for f in dataclasses.fields(FT):
        value = getattr(FT, f.name)
        if f.name in valid:
            new = valid[f.name]
        elif isinstance(value, bool):
            new = not value
        elif isinstance(value, (int, float)):
            new = value * 2
        elif isinstance(value, tuple):
            new = value + ("xx",)
        else:
            new = value + "x"
        ft_keys.add(FT.replace(**{f.name: new}).key())
    assert len(ft_keys) == 1 + len(dataclasses.fields(FT))
    # nested configs propagate
    assert ScoreConfig(finetune=FT.replace(lr=1e-4), task="pos", lang="de").key() != base.key()


def test_round_trip_and_no_runtime_fields():
    cfg = CurveConfig(finetune=FT, task="pos", lang="de", ranking=ScoreConfig(finetune=FT, task="pos", lang="de"),
                      steps=(0, 12, 24))
    again = CurveConfig.from_dict(cfg.to_dict())
    assert again == cfg and again.key() == cfg.key()
    ev = EvalConfig(finetune=FT, task="pos", lang="en", mask=((1.0, 0.0), (1.0, 1.0)))
    assert EvalConfig.from_dict(ev.to_dict()) == ev
    names = {f.name for f in dataclasses.fields(FinetuneConfig)}
    assert not names & {"device", "progress", "cache_dir", "path"}
    with pytest.raises(ValueError, match="unknown fields"):
        ScoreConfig.from_dict({**ScoreConfig(finetune=FT, task="pos", lang="de").to_dict(), "device": "cuda"})


def test_validation_errors():
    with pytest.raises(ValueError, match="unknown setting 'both'; known: cross, multi"):
        FT.replace(setting="both")
    with pytest.raises(ValueError, match="unknown strategy 'xx'; known: importance, reverse, random"):
        CurveConfig(finetune=FT, task="pos", lang="en", strategy="xx")
    with pytest.raises(ValueError, match="needs a ranking"):
        CurveConfig(finetune=FT, task="pos", lang="en", strategy="importance")


def test_hit_miss_with_call_counting(tmp_path):
    store, calls = Store(tmp_path), []
    cfg = ScoreConfig(finetune=FT, task="pos", lang="de")

    def compute():
        calls.append(1)
        return {"scores": np.arange(6.0).reshape(2, 3), "meta": {"n": 3},
                "weights": Weights({"w": torch.ones(2, 2)})}

    first = store.get_or_compute(cfg, compute)
    second = store.get_or_compute(cfg, compute)
    assert len(calls) == 1
    assert np.array_equal(second["scores"], first["scores"]) and second["meta"] == {"n": 3}
    assert torch.equal(second["weights"]["w"], torch.ones(2, 2))
    store.get_or_compute(cfg.replace(lang="fr"), compute)
    assert len(calls) == 2
    saved = (store.path_for(cfg) / "config.json").read_text()
    assert '"lang": "de"' in saved and cfg.key() in saved
    assert [e.config["lang"] for e in store.entries("score")].count("de") == 1


def test_crash_between_write_and_rename_leaves_no_entry(tmp_path, monkeypatch):
    store, calls = Store(tmp_path), []
    cfg = ScoreConfig(finetune=FT, task="pos", lang="de")

    def compute():
        calls.append(1)
        return {"scores": np.ones((2, 2))}

    class SimulatedCrash(Exception):
        pass

    def crash(src, dst):
        raise SimulatedCrash("simulated crash before rename")

    monkeypatch.setattr(store_mod.os, "replace", crash)
    with pytest.raises(SimulatedCrash):
        store.get_or_compute(cfg, compute)
    monkeypatch.undo()
    assert not store.has(cfg) and store.get(cfg) is None
    assert not [p for p in (tmp_path / "score").iterdir()]  # no temp folder left behind
    store.get_or_compute(cfg, compute)
    assert len(calls) == 2 and store.has(cfg)


@pytest.mark.parametrize("damage", ["truncate_npy", "delete_marker", "garbage_json"])
def test_corrupt_entry_is_a_logged_miss(tmp_path, caplog, damage):
    store, calls = Store(tmp_path), []
    cfg = ScoreConfig(finetune=FT, task="pos", lang="de")

    def compute():
        calls.append(1)
        return {"scores": np.ones((4, 4)), "meta": {"a": 1}}

    store.get_or_compute(cfg, compute)
    path = store.path_for(cfg)
    if damage == "truncate_npy":
        (path / "scores.npy").write_bytes((path / "scores.npy").read_bytes()[:20])
    elif damage == "delete_marker":
        (path / "entry.json").unlink()
    else:
        (path / "meta.json").write_text("{not json")
    with caplog.at_level("WARNING"):
        again = store.get_or_compute(cfg, compute)
    assert len(calls) == 2 and np.array_equal(again["scores"], np.ones((4, 4)))
    if damage != "delete_marker":
        assert "corrupt" in caplog.text


def test_list_find_delete(tmp_path):
    store = Store(tmp_path)
    cfg = ScoreConfig(finetune=FT, task="pos", lang="de")
    store.put(cfg, {"scores": np.zeros(3)})
    [entry] = store.entries()
    assert entry.kind == "score" and entry.size > 0 and store.find(entry.key[:6]).key == cfg.key()
    with pytest.raises(KeyError, match="0 cache entries"):
        store.find("zzzz")
    assert store.delete(entry) and store.entries() == []


def test_cache_root_env(monkeypatch, tmp_path):
    monkeypatch.setenv("HEADPRUNE_CACHE", str(tmp_path))
    assert store_mod.cache_root() == tmp_path.resolve()
    assert Store().root == tmp_path.resolve() / "runs"
