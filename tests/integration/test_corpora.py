"""The real embedded corpora: prepared from the registry packages, with the sentence counts we know them to have."""

from __future__ import annotations

import pytest

from headprune_core.data import UNIVERSAL_TAGS, get_task, load_task, prepare_corpora

pytestmark = [pytest.mark.slow, pytest.mark.parallel]

# Sentences per language (train + validation + test). tagged-en-wsj.txt has 1,001 lines (DESIGN.md's 1,000
# counted newlines; the last line has none); tr = wiki 2,310 + web 2,541.
POS_SENTENCES = {"en": 1001, "de": 250, "es": 1000, "fr": 1000, "it": 1000, "nl": 1000, "pt": 8420, "tr": 4851}
# Examples per sentence task after dropping empty and repeated texts (the raw files hold: 4,000; 1,500; 3,000;
# 200; 1,500; 3,000; emotion 4,517 tweets of which 1,871 have exactly one emotion; stance 7,056 of which 6,418
# are about vaccines with a position).
SENTENCE_EXAMPLES = {"polarity-en": 4000, "reviews-en": 1500, "uncertainty-en": 2957, "polarity-de": 155,
                     "polarity-fr": 1284, "polarity-nl": 2969, "emotion-pt": 1871, "stance-pt": 6353}
MAX_X_SHARE = 0.02  # measured: fr 1.45% (FW), every other language below 0.7%


@pytest.fixture(scope="session")
def prepared():
    report = prepare_corpora(progress=False)
    assert not report.missing, report.summary()
    return report


@pytest.mark.parametrize("lang", sorted(POS_SENTENCES))
def test_pos_and_name_languages(prepared, lang):
    pos = load_task("pos", lang)
    assert pos.labels == list(UNIVERSAL_TAGS)  # one label list for zero-shot transfer
    counts = {s: len(d) for s, d in pos.dataset.items()}
    assert sum(counts.values()) == POS_SENTENCES[lang]
    assert counts["validation"] == counts["test"] == round(POS_SENTENCES[lang] * 0.1)
    assert pos.meta["x_share"] < MAX_X_SHARE
    assert sum(pos.meta["tokens"].values()) > 4 * POS_SENTENCES[lang]
    # every split has real tags, and NOUN is common everywhere
    for split in ("train", "test"):
        tags = [t for row in pos.dataset[split]["tags"] for t in row]
        assert tags.count(UNIVERSAL_TAGS.index("NOUN")) / len(tags) > 0.15

    name = load_task("name", lang)
    assert name.labels == ["O", "B-NAME", "I-NAME"]
    assert name.dataset["test"]["tokens"] == pos.dataset["test"]["tokens"]
    flat = [t for row in name.dataset["train"]["tags"] for t in row]
    assert 1 in flat  # some names
    for row in name.dataset["train"]["tags"]:  # valid BIO: I never starts a span
        assert all(not (t == 2 and (i == 0 or row[i - 1] == 0)) for i, t in enumerate(row))


@pytest.mark.parametrize("task", sorted(SENTENCE_EXAMPLES))
def test_sentence_tasks(prepared, task):
    info = get_task(task)
    data = load_task(task, info.languages[0])
    assert data.labels == list(info.labels)
    assert sum(len(d) for d in data.dataset.values()) == SENTENCE_EXAMPLES[task]
    texts = [t for d in data.dataset.values() for t in d["text"]]
    assert len(set(texts)) == len(texts) and all(texts)
    assert set(data.dataset["train"]["label"]) == set(range(len(data.labels)))


def test_second_prepare_does_nothing(prepared):
    again = prepare_corpora(progress=False)
    assert again.nothing_to_do and not again.done


def test_sentence_files_are_what_they_claim(prepared):
    sents = load_task("polarity-en", "en").dataset["train"]["text"]
    reviews = load_task("reviews-en", "en").dataset["train"]["text"]
    assert sum(map(len, sents)) / len(sents) < 300 < sum(map(len, reviews)) / len(reviews)
    de = load_task("pos", "de")
    assert any("Milliardär" in row for split in de.dataset.values() for row in split["tokens"])
    pt = load_task("pos", "pt")
    words = {w for split in pt.dataset.values() for row in split["tokens"] for w in row}
    assert {"da", "do", "na", "no"} <= words  # multi-word tokens kept as surface words
    tr = load_task("pos", "tr")
    assert any("Birleşmiş" in row for split in tr.dataset.values() for row in split["tokens"])
