"""He & Choi 2021's five tasks read from CoNLL-2012 OntoNotes rows (data/ontonotes.py, data/hub.py): dependencies
from the trees by head rules (every word one head, one root, no cycle), each task's examples, and the Hub loader
on a local copy in the builder's own schema, through the path that reads the Hub; a row it cannot read fails
naming the document and the sentence."""

from __future__ import annotations

import random

import datasets
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headprune_core.data.ontonotes import (
    ROOT,
    SRL_MARK,
    TASKS,
    constituency_tags,
    dependency_tags,
    examples,
    head_child,
    heads,
    parse_tree,
    words_of,
)
from tests.helpers.hub_world import ONTONOTES_NER, ONTONOTES_POS, ontonotes_features, ontonotes_sentence
from tests.unit.test_ontonotes import CARD, _bracketed, _random_tree

NAMES = {"pos_tags": ONTONOTES_POS, "named_entities": ONTONOTES_NER}


def test_a_small_trees_heads_are_the_ones_the_rules_give():
    tree = parse_tree("(TOP (S (NP-SBJ (DT The) (NN cat)) (VP (VBZ sees) (NP (NNP Anna))) (. .)))")
    assert words_of(tree) == ["The", "cat", "sees", "Anna", "."]
    assert heads(tree) == [1, 2, -1, 2, 2]  # the -> cat -> sees (root) <- Anna, .
    assert dependency_tags(tree) == ["+1", "+1", ROOT, "-1", "-2"]
    card = parse_tree(CARD)  # "flights are $ 2,400 to Paris and $ 3,200 to London": are is the root
    w, h = words_of(card), heads(card)
    assert w[h.index(-1)] == "are" and w[h[w.index("flights")]] == "are" and w[h[w.index("Paris")]] == "to"


def test_head_rules_read_each_labels_direction_and_noun_phrases_their_own_way():
    assert head_child("VP", ["VBD", "NP", "PP"]) == 0
    assert head_child("PP", ["IN", "IN", "NP"]) == 1  # searched from the right
    assert head_child("NP", ["DT", "JJ", "NN", "POS"]) == 3  # a possessive's POS heads it
    assert head_child("NP", ["NP", "CC", "NP"]) == 0  # no noun: the first noun phrase
    assert head_child("NP-SBJ-1", ["DT", "NN"]) == 1  # function tags and indices do not change the rule
    assert head_child("XYZ", ["A", "B"]) == 0  # an unknown label: its first child


def test_empty_elements_are_not_words():
    tree = parse_tree("(TOP (S (NP (-NONE- *)) (VP (VB Go)) (. .)))")
    assert dependency_tags(tree) == [ROOT, "-1"]
    row = {"words": ["Go", "."], "parse_tree": "(TOP (S (NP (-NONE- *)) (VP (VB Go)) (. .)))"}
    assert examples(row, "onto-con", NAMES) == [(["Go", "."], constituency_tags(parse_tree("(TOP (S (VP (VB Go)) "
                                                                                          "(. .)))")))]


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 25))
def test_random_trees_give_every_word_one_head_one_root_and_no_cycle(seed, n):
    rng = random.Random(seed)
    tree = _random_tree(rng, [f"w{i}" for i in range(n)])
    tree = parse_tree(f"(TOP {_bracketed(tree)})")
    h = heads(tree)
    assert len(h) == n and h.count(-1) == 1
    for i in range(n):  # following heads from any word reaches the root in fewer than n steps
        at, steps = i, 0
        while h[at] != -1:
            at, steps = h[at], steps + 1
            assert steps < n
    tags = dependency_tags(tree)
    assert [i + int(t) if t != ROOT else -1 for i, t in enumerate(tags)] == h


def test_each_task_reads_its_examples_from_one_sentence():
    s = ontonotes_sentence(["the", "Anna", "sees", "Berlin", "."])
    pos = examples(s, "onto-pos", NAMES)
    assert pos == [(s["words"], ["DT", "NNP", "VBZ", "NNP", "."])]
    assert examples(s, "onto-ner", NAMES)[0][1] == ["O", "B-PERSON", "O", "B-GPE", "O"]
    (words, dep), = examples(s, "onto-dep", NAMES)
    assert words == s["words"] and dep == ["+1", "+1", ROOT, "-1", "-2"]  # Anna's head is sees
    (_, con), = examples(s, "onto-con", NAMES)
    assert con == constituency_tags(parse_tree(s["parse_tree"]))
    (words, srl), = examples(s, "onto-srl", NAMES)
    assert words == ["the", "Anna", SRL_MARK, "sees", "Berlin", "."]
    assert srl == ["B-ARG0", "I-ARG0", "O", "O", "B-ARG1", "O"]  # the predicate given: not scored
    assert examples({**s, "parse_tree": None}, "onto-dep", NAMES) == []  # no tree: no DEP example
    assert examples({**s, "srl_frames": []}, "onto-srl", NAMES) == []


def _copy(tmp_path, sentences_by_split: dict[str, list[dict]]):
    from tests.helpers.hub_copy import write_parquet_export
    feats = ontonotes_features()
    splits = {split: datasets.Dataset.from_dict(
        {"document_id": [f"bc/cctv/00/cctv_{i:04d}" for i in range(len(sents))], "sentences": [[x] for x in sents]},
        features=feats) for split, sents in sentences_by_split.items()}
    return write_parquet_export(tmp_path / "ontonotes", {"english_v4": splits})


@pytest.mark.parametrize("task", TASKS)
def test_the_hub_loader_reads_a_local_copy_in_the_builders_schema(tmp_path, task):
    from headprune_core.data.hub import hub_spec, load_hub
    from headprune_core.methods.evaluate import metric_name
    rng = random.Random(3)
    words = ["the", "a", "big", "red", "Anna", "Berlin", "sees", "runs", "in"]
    sents = {s: [ontonotes_sentence([rng.choice(words) for _ in range(rng.randint(2, 6))] + ["."])
                 for _ in range(5)] for s in ("train", "validation", "test")}
    folder = _copy(tmp_path, sents)
    assert hub_spec(task, "en").config == "english_v4"
    if task == "onto-dep":  # the head rules are English's
        with pytest.raises(ValueError, match="unknown language 'zh' for task 'onto-dep'; known: en"):
            hub_spec(task, "zh")
    else:
        assert hub_spec(task, "zh").config == "chinese_v4" and hub_spec(task, "ar").config == "arabic_v4"
    data = load_hub(task, "en", path=str(folder), config="english_v4")
    n = {s: sum(len(examples(x, task, NAMES)) for x in rows) for s, rows in sents.items()}
    assert {s: len(d) for s, d in data.dataset.items()} == n and n["train"] > 0
    first = data.dataset["train"][0]
    want_words, want_tags = examples(sents["train"][0], task, NAMES)[0]
    assert first["tokens"] == want_words and [data.labels[i] for i in first["tags"]] == want_tags
    expected_metric = "entity F1" if task in ("onto-ner", "onto-srl") else "accuracy"
    assert metric_name(data.labels, data.kind) == expected_metric
    if task == "onto-pos":
        assert data.labels == ONTONOTES_POS  # the data set's own class names, in its order
    elif task != "onto-ner":  # the tag inventory: every tag of the three splits, sorted
        assert data.labels == sorted({t for rows in sents.values() for x in rows
                                      for _, tags in examples(x, task, NAMES) for t in tags})


def test_a_row_that_cannot_be_read_names_the_document_and_the_sentence(tmp_path):
    from headprune_core.data.hub import load_hub
    good = ontonotes_sentence(["Anna", "sees", "Berlin", "."])
    bad = {**good, "parse_tree": "(TOP (S (NP (NNP Anna)) (VP (VBZ sees)"}
    folder = _copy(tmp_path, {"train": [good, bad], "validation": [good], "test": [good]})
    with pytest.raises(ValueError, match=r"train: document 'bc/cctv/00/cctv_0001', sentence 0: .*not closed"):
        load_hub("onto-con", "en", path=str(folder), config="english_v4")
    short = {**good, "words": ["Anna", "sees", "."]}
    folder = _copy(tmp_path / "b", {"train": [short], "validation": [good], "test": [good]})
    with pytest.raises(ValueError, match=r"tree's 4 words are not the sentence's 3 \(they differ from word 2\)"):
        load_hub("onto-dep", "en", path=str(folder), config="english_v4")
    with pytest.raises(ValueError, match=r"document 'bc/cctv/00/cctv_0000', sentence 0: 4 pos_tags for 3 words"):
        load_hub("onto-pos", "en", path=str(folder), config="english_v4")
