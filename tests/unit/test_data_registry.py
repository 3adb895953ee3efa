"""Task registry, helpful errors, and prepare_corpora (atomic, idempotent, partial) with fake sources."""

from __future__ import annotations

import json

import pytest

from headprune_core.base import fetch
from headprune_core.data import (
    TASKS,
    UNIVERSAL_TAGS,
    NotPrepared,
    corpora,
    get_task,
    list_tasks,
    load_task,
    prepare_corpora,
)
from headprune_core.data.corpora import CorpusSource, sentence_output, token_outputs
from headprune_core.data.tagsets import TagMapper


def test_registry_contents():
    pos = get_task("pos")
    assert pos.kind == "token" and pos.languages == ("en", "de", "es", "fr", "it", "nl", "pt", "tr")
    assert pos.labels == UNIVERSAL_TAGS
    assert "proxy" in get_task("name").description.lower()
    for name in ("polarity-en", "reviews-en", "uncertainty-en", "polarity-de", "polarity-fr", "polarity-nl",
                 "emotion-pt", "stance-pt"):
        assert get_task(name).kind == "sentence" and "embedded" in get_task(name).sources
    assert [t.name for t in list_tasks(kind="token", source="embedded")] == ["pos", "name"]
    assert set(t.name for t in list_tasks()) == set(TASKS)
    assert {p for p in corpora.embedded_pairs()} == {
        (t.name, l) for t in list_tasks(source="embedded") for l in t.languages}


def test_unknown_task_and_language_list_the_known_ones():
    with pytest.raises(KeyError) as err:
        get_task("xx")
    assert str(err.value).startswith("unknown task 'xx'; known: pos, name, polarity-en")
    with pytest.raises(KeyError, match=r"unknown language 'xx' for task 'pos'; known: en, de, es, fr, it, nl"):
        load_task("pos", "xx")
    with pytest.raises(KeyError, match="unknown source 'web'; known: embedded, hub, local"):
        load_task("pos", "en", source="web")
    with pytest.raises(KeyError, match="task 'sst2' has no embedded corpus"):
        load_task("sst2", "en")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADPRUNE_CACHE", str(tmp_path))
    return tmp_path


def test_embedded_not_prepared_says_how(cache):
    with pytest.raises(NotPrepared, match=r"pos/de is not prepared.*python -m headprune_core prepare"):
        load_task("pos", "de")


def _fake_sources(calls):
    def build_tokens(downloads, work):
        calls.append("tokens")
        sents = [([f"w{i}", "Name", "."], ["NN", "NNP", "."], [False, True, False]) for i in range(20)]
        sents[0] = (["odd"], ["858"], [False])
        yield from token_outputs("en", sents, TagMapper("penn"), {"source": "fake", "notes": ["n"]})

    def build_sentences(downloads, work):
        calls.append("sentences")
        pairs = [(f"text {i}", "positive" if i % 2 else "negative") for i in range(30)] + [("text 1", "positive")]
        yield sentence_output("polarity-en", "en", pairs, {"source": "fake"})
        yield ("reviews-en", "en", "reviews.csv: ValueError: broken row")

    def build_unreachable(downloads, work):
        calls.append("unreachable")
        raise fetch.FetchError("cannot fetch Debian package python3-pattern: apt-get is not on this machine")
        yield  # pragma: no cover

    return (CorpusSource("tokens", [("pos", "en"), ("name", "en")], build_tokens),
            CorpusSource("sentences", [("polarity-en", "en"), ("reviews-en", "en")], build_sentences),
            CorpusSource("unreachable", [("pos", "de"), ("name", "de")], build_unreachable))


def test_prepare_writes_reports_missing_and_is_idempotent(cache, monkeypatch):
    calls = []
    monkeypatch.setattr(corpora, "SOURCES", _fake_sources(calls))
    report = prepare_corpora(progress=False)
    assert report.done == [("pos", "en"), ("name", "en"), ("polarity-en", "en")]
    missing = {(t, l): why for t, l, why in report.missing}
    assert set(missing) == {("reviews-en", "en"), ("pos", "de"), ("name", "de")}
    assert "apt-get is not on this machine" in missing[("pos", "de")]
    assert "broken row" in missing[("reviews-en", "en")]
    assert "missing pos/de" in report.summary()

    meta = json.loads((cache / "corpora/pos/en/meta.json").read_text())
    assert meta["counts"] == {"train": 16, "validation": 2, "test": 2}
    assert meta["labels"] == list(UNIVERSAL_TAGS)
    assert meta["unknown_tags"] == {"858": 1} and meta["x_share"] == pytest.approx(1 / 58, abs=1e-6)
    assert meta["split"]["seed"] == 13
    assert not list((cache / "corpora/pos").glob(".tmp-*"))

    data = load_task("pos", "en")
    assert sum(len(d) for d in data.dataset.values()) == 20
    name = load_task("name", "en")
    assert name.dataset["train"]["tokens"] == data.dataset["train"]["tokens"]  # same sentences, same splits
    assert [name.labels[t] for t in name.dataset["train"][0]["tags"]] in (["O", "B-NAME", "O"], ["O"])
    pol = load_task("polarity-en", "en")
    assert sum(len(d) for d in pol.dataset.values()) == 30  # the repeated text was dropped
    assert pol.labels == ["negative", "positive"]

    # second run: nothing fetched, nothing written, and it says so
    calls.clear()
    stamp = (cache / "corpora/pos/en/meta.json").stat().st_mtime_ns
    again = prepare_corpora(progress=False)
    assert calls == ["sentences", "unreachable"]  # only sources with something missing are tried again
    assert again.done == [] and ("pos", "en", "already prepared") in again.skipped
    assert (cache / "corpora/pos/en/meta.json").stat().st_mtime_ns == stamp

    forced = prepare_corpora(force=True, progress=False)
    assert ("pos", "en") in forced.done


def test_prepare_nothing_to_do(cache, monkeypatch):
    calls = []
    monkeypatch.setattr(corpora, "SOURCES", _fake_sources(calls)[:1])
    prepare_corpora(progress=False)
    report = prepare_corpora(progress=False)
    assert report.nothing_to_do and "nothing to do" in report.summary()


def test_crash_while_writing_leaves_no_partial_folder(cache, monkeypatch):
    calls = []
    monkeypatch.setattr(corpora, "SOURCES", _fake_sources(calls)[:1])

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(corpora.json, "dumps", boom)
    report = prepare_corpora(progress=False)
    assert {(t, l) for t, l, _ in report.missing} == {("pos", "en"), ("name", "en")}
    assert "disk full" in report.missing[0][2]
    assert not (cache / "corpora/pos/en").exists()
    assert not list((cache / "corpora/pos").glob(".tmp-*"))


def test_empty_split_in_embedded_corpus_is_a_clear_error(cache, monkeypatch):
    def tiny(downloads, work):
        yield from token_outputs("en", [(["a"], ["NN"], [False])] * 4, TagMapper("penn"), {"source": "fake"})
    monkeypatch.setattr(corpora, "SOURCES", (CorpusSource("tiny", [("pos", "en")], tiny),))
    prepare_corpora(progress=False)
    with pytest.raises(ValueError, match="pos/en: the 'validation' split is empty"):
        load_task("pos", "en")


def test_write_corpus_public_writer(cache):
    from headprune_core.data.corpora import write_corpus
    recs = [{"text": f"t{i}", "label": "positive"} for i in range(10)]
    path = write_corpus("polarity-en", "en", recs, {"kind": "sentence", "labels": ["negative", "positive"],
                                                    "source": "test"})
    assert (path / "meta.json").is_file()
    assert sum(len(d) for d in load_task("polarity-en", "en").dataset.values()) == 10
    with pytest.raises(ValueError, match="meta needs kind"):
        write_corpus("pos", "en", [], {})
