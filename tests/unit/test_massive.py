"""Slot filling on MASSIVE: the ``[type : words]`` markup read as BIO spans, the Hub's parquet export read through the
same loader as the Hub (a mirror copy in MASSIVE's exact schema), and the errors a bad row gets."""

from __future__ import annotations

import random

import datasets
import pytest

from headprune_core.data import load_task
from headprune_core.data.hub import PARQUET_EXPORT, hub_spec
from headprune_core.data.massive import SLOT_TAGS, SLOT_TYPES, BadAnnotation, words_and_tags
from headprune_core.methods.evaluate import metric_name
from tests.helpers.hub_copy import write_parquet_export
from tests.helpers.hub_world import massive


def test_markup_becomes_bio_spans():
    words, tags = words_and_tags("set an alarm for [time : 5:30 pm] [date : tomorrow] please", "en-US")
    assert words == ["set", "an", "alarm", "for", "5:30", "pm", "tomorrow", "please"]
    assert tags == ["O", "O", "O", "O", "B-time", "I-time", "B-date", "O"]
    # two adjacent spans of one type stay two spans, as the annotators marked them
    assert words_and_tags("[date : monday] [date : tuesday]", "en-US")[1] == ["B-date", "B-date"]
    # no spaces in Japanese and Chinese: one word a character, an ASCII run whole
    words, tags = words_and_tags("[artist_name : BTS]の曲を[date : 明日]", "ja-JP")
    assert words == ["BTS", "の", "曲", "を", "明", "日"]
    assert tags == ["B-artist_name", "O", "O", "O", "B-date", "I-date"]
    assert words_and_tags("播放[song_name : 月亮]", "zh-CN")[0] == ["播", "放", "月", "亮"]


def test_one_label_list_for_every_locale():
    assert len(SLOT_TYPES) == len(set(SLOT_TYPES)) == 55
    assert SLOT_TAGS[0] == "O" and len(SLOT_TAGS) == 111 and metric_name(SLOT_TAGS, "token") == "entity F1"


@pytest.mark.parametrize("annot, says", [
    ("wake me at [wake_time : six]", "unknown slot type 'wake_time'"),
    ("wake me at [time : six", "a bracket outside"),
    ("wake me at time : six]", "a bracket outside"),
    ("wake me at [time : ]", "an empty slot"),
])
def test_bad_markup_is_named(annot, says):
    with pytest.raises(BadAnnotation, match=says):
        words_and_tags(annot, "en-US")


def test_massive_is_read_from_its_parquet_export(tmp_path, monkeypatch):
    spec = hub_spec("slots", "ja")
    assert (spec.path, spec.config, spec.revision, spec.by_dir) == ("AmazonScience/massive", "ja-JP",
                                                                    PARQUET_EXPORT, True)
    rng = random.Random(0)
    mirror = tmp_path / "mirror"
    write_parquet_export(mirror / "AmazonScience" / "massive",
                         {loc: {s: massive(rng, loc, {"validation": "dev"}.get(s, s), 5)
                                for s in ("train", "validation", "test")} for loc in ("de-DE", "ja-JP")})
    monkeypatch.setenv("HEADPRUNE_HUB_MIRROR", str(mirror))
    de = load_task("slots", "de", source="hub")
    raw = datasets.load_dataset(str(mirror / "AmazonScience" / "massive"), data_dir="de-DE")
    assert de.labels == list(SLOT_TAGS) and de.kind == "token"
    assert {s: len(d) for s, d in de.dataset.items()} == {"train": 5, "validation": 5, "test": 5}
    assert (de.meta["hub_path"], de.meta["hub_config"]) == ("AmazonScience/massive", "de-DE")
    for ours, row in zip(de.dataset["test"], raw["test"]):
        assert ours["tokens"] == row["utt"].split()  # Amazon's own word split
        tags = [de.labels[t] for t in ours["tags"]]
        assert [w for w, t in zip(ours["tokens"], tags) if t == "B-person"] == \
            [w for w in ours["tokens"] if w == "Anna"]
    ja = load_task("slots", "ja", source="hub")
    assert all(len(w) == 1 or w.isascii() for s in ja.dataset["train"] for w in s["tokens"])


def test_a_bad_row_names_its_split_and_id(tmp_path):
    rng = random.Random(1)
    good = massive(rng, "fr-FR", "train", 3)
    bad = good.map(lambda r, i: {"annot_utt": r["annot_utt"] + " [mood : joyeux]" if i == 2 else r["annot_utt"]},
                   with_indices=True)
    write_parquet_export(tmp_path / "massive", {"fr-FR": {"train": good, "validation": good, "test": bad}})
    with pytest.raises(BadAnnotation, match=r"AmazonScience/massive \(fr-FR\) test row id 2: unknown slot type 'mood'"):
        load_task("slots", "fr", source="hub", path=str(tmp_path / "massive"), config="fr-FR")
