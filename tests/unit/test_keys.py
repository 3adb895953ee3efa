"""Honest cache keys: a key changes exactly when the computed result can change.

One direction: every keyed field, changed, changes the computation (fine-tuned weights, importance maps,
evaluations, curves), not only the key; descriptive fields and ineffective values change neither. The other
direction: every input a computation reads is in its key (the code's reads of a config are recorded and must be
keyed fields), and a change to the data that is read or to the model's files changes the fingerprints.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from headprune_core.plans.presets import PRESETS
from headprune_core.runs.config import RunConfig
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study

BASE = {"max_train_sentences": 40, "epochs": 1.0, "lr": 1e-3, "batch_size": 8}


@pytest.fixture(scope="module")
def study(tiny_cache, tmp_path_factory):
    """One study (and store) for the module, so the baseline fine-tune is trained once."""
    root, model = tiny_cache
    mp = pytest.MonkeyPatch()
    mp.setenv("HEADPRUNE_CACHE", str(root))
    yield Study(model, store=Store(tmp_path_factory.mktemp("runs")), device="cpu", progress=False)
    mp.undo()


def _weights(study: Study, ft) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in study.finetuned(ft).state_dict().items()}


def _same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k].shape == b[k].shape and torch.equal(a[k], b[k]) for k in a)


# every keyed field of a fine-tune, changed to a value that can be trained on the fixture
FT_FIELDS = [("tasks", {"tasks": "name"}), ("train_langs", {"train_langs": ("de",)}), ("epochs", {"epochs": 2.0}),
             ("lr", {"lr": 5e-4}), ("head_lr", {"head_lr": 5e-3}), ("batch_size", {"batch_size": 4}),
             ("max_length", {"max_length": 8}), ("max_train_sentences", {"max_train_sentences": 30}),
             ("freeze_embeddings", {"freeze_embeddings": False}), ("sampling", {"sampling": "round_robin"}),
             ("seed", {"seed": 14}), ("pruned", {"pruned": ((0, 1), (2, 3))}),
             ("l0", {"l0": (("target", 0.5),)}), ("keep", {"keep": (("pos", tuple(range(0, 80, 2))),)}),
             ("shuffle_labels", {"shuffle_labels": True})]


def _ft(study: Study, **change):
    tasks = change.pop("tasks", "pos")
    langs = change.pop("train_langs", ("en",))
    pruned = change.pop("pruned", ())
    return study.finetune_config(tasks, langs, **{**BASE, **change}).replace(pruned=pruned)


def test_kept_rows_key_the_rows_they_read(study):
    """GradTS-fg trains on chosen rows: their content is in the data fingerprint, and rows beyond the split fail."""
    some = _ft(study, keep=(("pos", (0, 2, 4)),))
    assert some.data_fp != _ft(study, keep=(("pos", (0, 2, 5)),)).data_fp
    with pytest.raises(ValueError, match="row 100000 was asked for"):
        _ft(study, keep=(("pos", (1, 100000)),))
    with pytest.raises(ValueError, match="keep must be"):
        _ft(study, keep=(("name", (1,)),))


def test_the_table_covers_every_keyed_finetune_field():
    from headprune_core.runs.config import FinetuneConfig
    keyed = {f.name for f in dataclasses.fields(FinetuneConfig) if f.metadata.get("key", True)}
    # fingerprints: tested below; from_checkpoint: tests/unit/test_own_data.py (a checkpoint's own key)
    assert {name for name, _ in FT_FIELDS} == keyed - {"model_fp", "data_fp", "from_checkpoint"}


@pytest.mark.parametrize("name,change", FT_FIELDS, ids=[n for n, _ in FT_FIELDS])
def test_each_finetune_field_changes_key_and_weights(study, name, change):
    base = _ft(study)
    other = _ft(study, **change)
    assert other.key() != base.key()
    assert not _same_weights(_weights(study, base), _weights(study, other)), f"{name} did not change training"


def test_descriptive_fields_change_neither_key_nor_weights(study):
    cross = _ft(study, train_langs=("en", "de"))
    multi = study.finetune_config("pos", ("en", "de"), setting="multi", **BASE)
    renamed = cross.replace(model="another-name-for-the-same-files")
    assert cross.key() == multi.key() == renamed.key()
    first = _weights(study, cross)
    study.store.delete(cross)
    study.forget_models()
    assert _same_weights(first, _weights(study, multi)), "training is not deterministic: keys would lie"


def test_effective_values_key_like_what_is_computed(study):
    """The CLI's --max-train 2000 and the demo's 1000 both read all 240 English training sentences."""
    size = study.split_size("pos", "en", "train")
    assert size == 240
    keys = {study.finetune_config("pos", "en", max_train_sentences=n).key() for n in (size, 1000, 2000, None)}
    assert len(keys) == 1
    assert study.finetune_config("pos", "en", max_train_sentences=2000).max_train_sentences == size
    assert study.finetune_config("pos", "en", max_train_sentences=size - 1).key() not in keys
    ft = _ft(study)
    test_size = study.split_size("pos", "en", "test")
    assert study.eval_config(ft, "pos", "en", max_sentences=10_000).key() == \
        study.eval_config(ft, "pos", "en", max_sentences=None).key() == \
        study.eval_config(ft, "pos", "en", max_sentences=test_size).key()
    assert study.eval_config(ft, "pos", "en", np.ones((3, 4))).key() == study.eval_config(ft, "pos", "en").key()
    assert study.score_config(ft, "pos", "en", seed=5).key() == study.score_config(ft, "pos", "en").key()
    assert study.score_config(ft, "pos", "en", method="random", seed=5).key() != \
        study.score_config(ft, "pos", "en", method="random").key()
    imp = study.curve_config(ft, "pos", "en", seeds=(0, 1, 2))
    assert imp.key() == study.curve_config(ft, "pos", "en").key() and imp.seeds == (0,)
    assert imp.steps == (0, 4, 8, 12)  # one layer's worth, written out
    assert study.curve_config(ft, "pos", "en", step=4).key() == imp.key()
    layers = study.curve_config(ft, "pos", "en", strategy="layers", step=2, normalize="layer_l2")
    assert layers.key() == study.curve_config(ft, "pos", "en", strategy="layers").key()


def test_cli_defaults_find_what_the_demo_trained(study):
    """The README's CLI examples must reuse the demo's fine-tune, not train it again."""
    from headprune_core.cli.args import build_parser
    from headprune_core.cli.runs import check_run
    from headprune_core.cli.runs import finetune_config as cli_ft
    args = build_parser().parse_args(["finetune", "--model", study.model_id])
    check_run(args)  # what every command does first: fills the default training language (en)
    demo = study.finetune_config("pos", ("en",), **PRESETS["demo"].train)
    assert cli_ft(study, args).key() == demo.key()


def _eval_like_changes(study: Study, ft):
    """(name, base config, changed config) for every keyed field of scores, evaluations and curves."""
    sc = study.score_config(ft, "pos", "en", max_sentences=30)
    ev = study.eval_config(ft, "pos", "en", max_sentences=30)
    half = np.ones((3, 4))
    half[:, :2] = 0
    cc = study.curve_config(ft, "pos", "en", score_sentences=30, max_sentences=30, step=4)
    rnd = study.curve_config(ft, "pos", "en", strategy="random", seeds=(0,), max_sentences=30, step=4)
    return [
        ("score.task", sc, study.score_config(ft, "pos", "de", max_sentences=30)),
        ("score.method", sc, study.score_config(ft, "pos", "en", method="kv_grad", max_sentences=30)),
        ("score.split", sc, study.score_config(ft, "pos", "en", split="test", max_sentences=30)),
        ("score.max_sentences", sc, study.score_config(ft, "pos", "en", max_sentences=20)),
        ("score.max_length", sc, study.score_config(ft, "pos", "en", max_sentences=30, max_length=8)),
        ("score.half", sc, study.score_config(ft, "pos", "en", max_sentences=30, half=1)),
        ("score.resample", sc, study.score_config(ft, "pos", "en", max_sentences=30, resample=13)),
        ("score.resample seed", study.score_config(ft, "pos", "en", max_sentences=30, half=2, resample=13),
         study.score_config(ft, "pos", "en", max_sentences=30, half=2, resample=14)),
        ("score.seed", study.score_config(ft, "pos", "en", method="random"),
         study.score_config(ft, "pos", "en", method="random", seed=3)),
        ("eval.mask", ev, study.eval_config(ft, "pos", "en", half, max_sentences=30)),
        ("eval.split", ev, study.eval_config(ft, "pos", "en", split="validation", max_sentences=30)),
        ("eval.max_sentences", ev, study.eval_config(ft, "pos", "en", max_sentences=20)),
        ("eval.max_length", ev, study.eval_config(ft, "pos", "en", max_sentences=30, max_length=8)),
        ("curve.strategy", cc, study.curve_config(ft, "pos", "en", strategy="reverse", score_sentences=30,
                                                  max_sentences=30, step=4)),
        ("curve.ranking", cc, study.curve_config(ft, "pos", "en", ranking_lang="de", score_sentences=30,
                                                 max_sentences=30, step=4)),
        ("curve.normalize", study.curve_config(ft, "pos", "en", score_sentences=30, max_sentences=30, step=1),
         study.curve_config(ft, "pos", "en", normalize="none", score_sentences=30, max_sentences=30, step=1)),
        ("curve.steps", cc, study.curve_config(ft, "pos", "en", score_sentences=30, max_sentences=30, step=3)),
        ("curve.seeds", rnd, study.curve_config(ft, "pos", "en", strategy="random", seeds=(1,),
                                                max_sentences=30, step=4)),
        ("curve.max_length", cc, study.curve_config(ft, "pos", "en", score_sentences=30, max_sentences=30,
                                                    step=4, max_length=8)),
    ]


def _result(study: Study, cfg) -> str:
    if cfg.kind == "score":
        return json.dumps(np.round(study.scores(cfg)["raw"], 10).tolist())
    if cfg.kind == "eval":
        res = study.evaluation(cfg)
        return json.dumps([res["score"], res["report"]], sort_keys=True)
    res = study.curve(cfg)
    return json.dumps([res["k"], res["mean"]])


def test_each_score_eval_and_curve_field_changes_key_and_result(study):
    ft = study.finetune_config("pos", ("en",), max_train_sentences=120, epochs=3.0, lr=3e-3)
    changes = _eval_like_changes(study, ft)
    for name, base, other in changes:
        assert other.key() != base.key(), name
        assert _result(study, other) != _result(study, base), f"{name} changed the key but not the result"


def _recorded_reads(cfg: RunConfig, seen: set[str], prefix: str = "") -> RunConfig:
    """A copy of ``cfg`` (nested configs too) that records which fields computation code reads."""
    cls = type(cfg)
    names = {f.name for f in dataclasses.fields(cls)}
    here = Path(__file__).resolve()
    quiet = {Path(sys.modules["headprune_core.runs.config"].__file__).resolve(),
             Path(sys.modules["headprune_core.runs.store"].__file__).resolve(), here}

    class Recorded(cls):
        def __getattribute__(self, attr):
            if attr in names:
                caller = Path(sys._getframe(1).f_code.co_filename)
                if "headprune_core" in caller.parts and caller.resolve() not in quiet:
                    seen.add(prefix + attr)
            return super().__getattribute__(attr)

    values = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cls)}
    for name, value in values.items():
        if isinstance(value, RunConfig):
            values[name] = _recorded_reads(value, seen, f"{prefix}{name}.")
    Recorded.__name__ = cls.__name__
    return Recorded(**values)


def _keyed_names(cfg: RunConfig, prefix: str = "") -> set[str]:
    out = set()
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if isinstance(value, RunConfig):
            out |= _keyed_names(value, f"{prefix}{f.name}.")
        if f.metadata.get("key", True):
            out.add(prefix + f.name)
    return out


def test_computations_read_only_keyed_fields(study, tmp_path):
    """The other way round: whatever a computation reads from its config is part of the key."""
    study = Study(study.model_id, store=Store(tmp_path / "runs"), device="cpu", progress=False)  # computes all
    ft = study.finetune_config("pos", ("en",), **BASE)
    seen: set[str] = set()
    study.finetuned(_recorded_reads(ft, seen))
    assert seen and seen <= _keyed_names(ft), f"fine-tuning read unkeyed fields {seen - _keyed_names(ft)}"
    assert {"epochs", "lr", "max_length", "max_train_sentences", "seed", "batch_size"} <= seen
    half = np.ones((3, 4))
    half[0] = 0
    for cfg, run in ((study.score_config(ft, "pos", "de", max_sentences=20), study.scores),
                     (study.eval_config(ft, "pos", "de", half, max_sentences=20), study.evaluation),
                     (study.curve_config(ft, "pos", "en", max_sentences=20, score_sentences=20), study.curve)):
        seen = set()
        run(_recorded_reads(cfg, seen))
        assert seen and seen <= _keyed_names(cfg), f"{cfg.kind} read unkeyed fields {seen - _keyed_names(cfg)}"
        assert {"max_sentences", "max_length", "split"} <= seen


def test_data_fingerprint_hashes_the_rows_read(tiny_cache, tmp_path, monkeypatch):
    """Changing a sentence a run reads changes its key; changing one it does not read does not."""
    from headprune_core.data.corpora import corpus_dir
    from headprune_core.runs.study import subset_indices
    root, model = tiny_cache
    copy = tmp_path / "cache"
    import shutil
    shutil.copytree(root / "corpora", copy / "corpora")
    monkeypatch.setenv("HEADPRUNE_CACHE", str(copy))
    fresh = lambda: Study(model, store=Store(tmp_path / "runs"), device="cpu", progress=False)  # noqa: E731
    before = fresh().finetune_config("pos", "en", **BASE)
    every = {**BASE, "max_train_sentences": None}
    all_rows = fresh().finetune_config("pos", "en", **every)
    read = set(subset_indices(240, BASE["max_train_sentences"], seed=before.seed))
    unread = next(i for i in range(240) if i not in read)
    path = corpus_dir("pos", "en") / "train.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()

    def edit(i: int) -> None:
        rec = json.loads(lines[i])
        rec["tokens"][0] = rec["tokens"][0] + "x"
        changed = list(lines)
        changed[i] = json.dumps(rec, ensure_ascii=False)
        path.write_text("\n".join(changed) + "\n", encoding="utf-8")

    edit(unread)
    assert fresh().finetune_config("pos", "en", **BASE).key() == before.key()
    edit(min(read))
    after = fresh().finetune_config("pos", "en", **BASE)
    assert after.data_fp != before.data_fp and after.key() != before.key()
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")  # back as it was: back to the same key
    assert fresh().finetune_config("pos", "en", **every).key() == all_rows.key()
    # the same sentences in another order are another computation too
    path.write_text("\n".join(lines[::-1]) + "\n", encoding="utf-8")
    assert fresh().finetune_config("pos", "en", **every).key() != all_rows.key()


def test_model_fingerprint_covers_weights_anywhere_and_the_tokenizer(tiny_cache, tmp_path):
    import shutil

    from headprune_core.encoders.models import model_fingerprint
    _, model = tiny_cache
    folder = tmp_path / "model"
    shutil.copytree(model, folder)
    base = model_fingerprint(str(folder))
    tok = json.loads((folder / "tokenizer.json").read_text())
    tok["normalizer"] = None  # same vocabulary, other text processing
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    after_tok = model_fingerprint(str(folder))
    assert after_tok != base
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit in the middle of the weights, same size
    weights.write_bytes(bytes(data))
    assert model_fingerprint(str(folder)) not in (base, after_tok)
    final = model_fingerprint(str(folder))
    (folder / "README.md").write_text("notes")  # documentation is not the model
    assert model_fingerprint(str(folder)) == final


def test_the_floor_of_a_metric_is_the_most_frequent_labels_share(study):
    """Card d's floor: what always answering the most frequent tag scores on the sentences a test reads,
    counted here by hand from the same rows."""
    from collections import Counter

    from headprune_core.runs.reading import subset_indices

    size = study.split_size("pos", "en", "test")
    rows = study.data("pos", "en").dataset["test"].select(subset_indices(size, 10))
    tags = [t for row in rows["tags"] for t in row]
    share = study.majority_share("pos", "en", "test", 10)
    assert share == pytest.approx(100 * max(Counter(tags).values()) / len(tags)) and 0 < share < 100


def test_a_resampled_scoring_draws_disjoint_halves_with_replacement(study):
    """Card c's per-run draw: random halves of the rows read, each drawn with replacement to its own size, so a
    run reads a new sample and a new split, no sentence in both halves; the halves together are the whole draw,
    and another seed draws other rows (keyed by their content)."""
    from headprune_core.runs.reading import resampled_rows
    rows = list(range(0, 200, 2))
    one, two, both = (resampled_rows(rows, h, 13) for h in (1, 2, 0))
    assert len(one) == len(two) == 50 and both == one + two
    assert set(one) <= set(rows) and set(two) <= set(rows) and not set(one) & set(two)
    assert len(set(one)) < 50 and one == sorted(one)  # drawn with replacement: some rows twice
    assert resampled_rows(rows, 1, 14) != one and resampled_rows(rows, 1, 13) == one
    plain = study.score_config(study.finetune_config("pos", ("en",), **BASE), "pos", "en", max_sentences=30, half=1)
    drawn = study.score_config(plain.finetune, "pos", "en", max_sentences=30, half=1, resample=13)
    assert drawn.data_fp != plain.data_fp and drawn.key() != plain.key()
