"""Tag-map tables, NAME spans, and the converters of the embedded corpora on small hand-written samples."""

from __future__ import annotations

import pytest

from headprune_core.data.corpora import dedupe, read_tagged, split_indices, turkish_words
from headprune_core.data.formats import conllu_words
from headprune_core.data.tagsets import NAME_TAGS, TABLES, UNIVERSAL_TAGS, TagMapper, bio_names, is_proper


def test_universal_tag_set_is_fixed():
    # The order is part of the contract: a model trained on English is evaluated on other languages.
    assert UNIVERSAL_TAGS == ("ADJ", "ADP", "ADV", "CONJ", "DET", "NOUN", "NUM", "PRON", "PRT", "PUNCT",
                              "VERB", "X")
    assert NAME_TAGS == ("O", "B-NAME", "I-NAME")
    for name, table in TABLES.items():
        assert set(table.values()) <= set(UNIVERSAL_TAGS), name


@pytest.mark.parametrize("tagset, tag, coarse", [
    ("penn", "NNP", "NOUN"), ("penn", "MD", "VERB"), ("penn", "PRP$", "PRON"), ("penn", "TO", "PRT"),
    ("penn", "``", "PUNCT"), ("penn", "''", "PUNCT"), ("penn", "-LRB-", "PUNCT"), ("penn", "(", "PUNCT"),
    ("penn", "$", "PUNCT"), ("penn", "WDT", "DET"), ("penn", "POS", "PRT"), ("penn", "FW", "X"),
    ("penn-fr", "PR", "PRON"), ("penn-it", "FC", "PUNCT"), ("penn-it", "X", "X"),
    ("stts", "PROAV", "ADV"), ("stts", "NE", "NOUN"), ("stts", "APPRART", "ADP"), ("stts", "PTKZU", "PRT"),
    ("stts", "$(", "PUNCT"), ("stts", '"', "PUNCT"), ("stts", "PPOSAT", "PRON"), ("stts", "PIAT", "DET"),
    ("stts", "VVIZU", "VERB"), ("stts", "TRUNC", "X"),
    ("parole", "NCS", "NOUN"), ("parole", "NP", "NOUN"), ("parole", "SP", "ADP"), ("parole", "DA", "DET"),
    ("parole", "VMI", "VERB"), ("parole", "VSS", "VERB"), ("parole", "Fpa", "PUNCT"), ("parole", "Z", "NUM"),
    ("parole", "Zu", "NOUN"), ("parole", "W", "NOUN"), ("parole", "P0", "PRON"), ("parole", "RN", "ADV"),
    ("wotan", "N(eigen,ev,neut)12", "NOUN"), ("wotan", "V(hulp,ott,1of2of3,mv)", "VERB"),
    ("wotan", "Punc(komma)", "PUNCT"), ("wotan", "Art(onbep,zijdofonzijd,neut)", "DET"),
    ("wotan", "Prep(voor)", "ADP"), ("wotan", "Misc(vreemd)", "X"), ("wotan", "Int", "X"),
    ("upos", "PROPN", "NOUN"), ("upos", "AUX", "VERB"), ("upos", "SCONJ", "CONJ"), ("upos", "PART", "PRT"),
    ("upos", "SYM", "X"), ("tr-universal", "CONJ", "CONJ"), ("tr-universal", "ONOM", "X"),
])
def test_known_mappings(tagset, tag, coarse):
    assert TagMapper(tagset).map(tag) == coarse


def test_unknown_tag_maps_to_x_and_is_counted():
    m = TagMapper("penn")
    assert [m.map(t) for t in ["NN", "858", "858", "VB"]] == ["NOUN", "X", "X", "VERB"]
    assert m.unknown == {"858": 2}
    assert m.x_share() == pytest.approx(0.5)
    with pytest.raises(KeyError, match="858"):
        TagMapper("penn", strict=True).map("858")
    with pytest.raises(ValueError, match="known: penn"):
        TagMapper("klingon")


@pytest.mark.parametrize("tagset, tag, proper", [
    ("penn", "NNP", True), ("penn", "NNPS", True), ("penn", "NN", False), ("stts", "NE", True),
    ("stts", "NN", False), ("parole", "NP", True), ("parole", "NCS", False), ("wotan", "N(eigen,ev,gen)", True),
    ("wotan", "N(soort,ev,neut)", False), ("upos", "PROPN", True), ("upos", "NOUN", False),
    ("tr-universal", "NNP", True), ("penn-fr", "NNP", True), ("penn-it", "NNP", True),
])
def test_proper_noun_tags(tagset, tag, proper):
    assert is_proper(tagset, tag) is proper


def test_bio_names_runs():
    assert bio_names([]) == []
    assert bio_names([False, True, True, False, True, False, True]) == [
        "O", "B-NAME", "I-NAME", "O", "B-NAME", "O", "B-NAME"]


def test_read_tagged_splits_on_last_slash_and_decodes(tmp_path):
    f = tmp_path / "tagged.txt"
    f.write_text('"/" Ross/NE Perot/NE wäre/VAFIN 1&slash;2/CD &slash;/( ./.\n\nMr./NNP Vinken/NNP is/VBZ\n',
                 encoding="utf-8")
    sents = read_tagged(f, "stts")
    assert len(sents) == 2
    words, tags, proper = sents[0]
    assert words == ['"', "Ross", "Perot", "wäre", "1/2", "/", "."]
    assert tags == ['"', "NE", "NE", "VAFIN", "CD", "(", "."]
    assert bio_names(proper) == ["O", "B-NAME", "I-NAME", "O", "O", "O", "O"]


def test_turkish_inflectional_groups_merge_into_surface_words():
    def row(i, form, upos, xpos, head, deprel):
        return (i, [str(i), form, "_", upos, xpos, "_", str(head), deprel, "_", "_"])
    rows = [row(1, "Bir", "NOUN", "NN", 2, "ig"), row(2, "leş", "VERB", "VB", 3, "ig"),
            row(3, "miş", "ADJ", "VJ", 4, "rcmod"), row(4, "Milletler'e", "NOUN", "NNP", 5, "pobj"),
            row(5, "katıl", "VERB", "VB", 6, "ig"), row(6, "dığı", "ADJ", "VJ", 0, "root"),
            row(7, ".", "PUNCT", ".", 6, "p")]
    words, tags, proper = turkish_words(rows)
    assert words == ["Birleşmiş", "Milletler'e", "katıldığı", "."]
    assert tags == ["ADJ", "NOUN", "ADJ", "PUNCT"]  # the last group's tag
    assert proper == [False, True, False, False]


def test_conllu_multiword_token_keeps_surface_word_with_first_part_tag():
    lines = ["1\tVamos\tir\tAUX", "2-3\tda\t_\t_", "2\tde\tde\tADP", "3\ta\to\tDET", "3.1\tx\tx\tNOUN",
             "4\tBrasil\tBrasil\tPROPN"]
    rows = [(i, (l.split("\t") + ["_"] * 10)[:10]) for i, l in enumerate(lines, 1)]
    rec = conllu_words(rows)
    assert rec.tokens == ["Vamos", "da", "Brasil"]
    assert rec.tags == ["AUX", "ADP", "PROPN"]
    assert rec.lines == [1, 2, 6]
    syn = conllu_words(rows, mwt="syntactic")
    assert syn.tokens == ["Vamos", "de", "a", "Brasil"]


def test_split_indices_fixed_and_complete():
    a, b = split_indices(250), split_indices(250)
    assert a == b
    assert [len(a[s]) for s in ("train", "validation", "test")] == [200, 25, 25]
    assert sorted(a["train"] + a["validation"] + a["test"]) == list(range(250))
    assert a["train"] == sorted(a["train"])
    assert [len(v) for v in split_indices(1001).values()] == [801, 100, 100]


def test_dedupe_drops_repeats_and_conflicts():
    pairs = [("a", "pos"), ("b", "neg"), ("a", "pos"), ("c", "pos"), ("c", "neg"), ("", "pos")]
    kept, stats = dedupe(pairs)
    assert kept == [("a", "pos"), ("b", "neg")]
    assert stats == {"input": 6, "kept": 2, "conflicting_texts": 1}
