"""OntoNotes' trees and semantic-role frames read as tags (data/ontonotes.py): the constituency encoding gives every
tree's labelled spans back, on the data set card's own example and on random trees with unary chains; bad trees
and frames fail saying what."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headprune_core.data.ontonotes import (
    BadTree,
    Node,
    constituency_tags,
    decode_spans,
    parse_tree,
    spans,
    srl_examples,
    words_of,
)

# the first sentence of the conll2012_ontonotesv5 card (document nw/wsj/23/wsj_2311)
CARD = ("(TOP(S(NP (NNP CONCORDE) (JJ trans-Atlantic) (NNS flights) )(VP (VBP are) (NP(NP(NP ($ $) (CD 2,400) )"
        "(PP (IN to) (NP (NNP Paris) ))) (CC and) (NP(NP ($ $) (CD 3,200) )(PP (IN to) (NP (NNP London) ))))) (. .) ))")


def test_the_cards_tree_reads_and_its_tags_give_its_spans_back():
    tree = parse_tree(CARD)
    words = words_of(tree)
    assert words == ["CONCORDE", "trans-Atlantic", "flights", "are", "$", "2,400", "to", "Paris", "and", "$",
                     "3,200", "to", "London", "."]
    tags = constituency_tags(tree)
    assert len(tags) == len(words)
    got = spans(tree)
    assert ("S", 0, 14) in got and ("NP", 0, 3) in got and ("VP", 3, 13) in got and ("NP", 7, 8) in got
    assert ("PP", 6, 8) in got and ("NP", 4, 13) in got and ("NP", 4, 8) in got and ("NP", 4, 6) in got
    assert decode_spans(tags) == got
    # the first words: CONCORDE shares S and NP with trans-Atlantic (2 more than before), Paris is NP alone
    assert tags[0] == "2/NP/" and tags[7].endswith("/NP") and tags[-1] == "NONE//"


def test_unary_chains_and_top_are_joined_as_the_encoding_keeps_them():
    tree = parse_tree("(TOP (S (VP (VB Go) (NP (PRP you)))))")
    assert spans(tree) == {("S+VP", 0, 2), ("NP", 1, 2)}
    assert decode_spans(constituency_tags(tree)) == spans(tree)
    one = parse_tree("(TOP (FRAG (NP (UH Hello))))")
    assert constituency_tags(one) == ["NONE//FRAG+NP"] and decode_spans(["NONE//FRAG+NP"]) == {("FRAG+NP", 0, 1)}


def _random_tree(rng: random.Random, words: list[str], depth: int = 0) -> Node:
    """A random constituent over ``words``: split into 1-4 parts, a part of one word a POS node (sometimes under a
    one-word constituent), sometimes a unary chain above."""
    label = rng.choice(["S", "NP", "VP", "PP", "SBAR", "ADJP"])
    if len(words) == 1:
        leaf = Node(rng.choice(["NN", "VB", "DT"]), word=words[0])
        return Node(label, [leaf]) if rng.random() < 0.5 else leaf
    cuts = sorted(rng.sample(range(1, len(words)), min(len(words) - 1, rng.randint(1, 3))))
    parts = [words[a:b] for a, b in zip([0, *cuts], [*cuts, len(words)])]
    node = Node(label, [_random_tree(rng, p, depth + 1) for p in parts])
    return Node(rng.choice(["S", "VP"]), [node]) if rng.random() < 0.2 else node


def _bracketed(node: Node) -> str:
    if node.is_leaf:
        return f"({node.label} {node.word})"
    return f"({node.label} {' '.join(_bracketed(c) for c in node.children)})"


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 25))
def test_random_trees_round_trip_through_their_tags(seed, n):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(n)]
    tree = _random_tree(rng, words)
    tree = tree if not tree.is_leaf else Node("NP", [tree])
    text = f"(TOP {_bracketed(tree)})"
    parsed = parse_tree(text)
    assert words_of(parsed) == words
    tags = constituency_tags(parsed)
    assert len(tags) == n and decode_spans(tags) == spans(parsed)


def test_a_broken_estimator_of_the_tags_is_caught():
    """The round trip can fail: tags with one change altered no longer give the tree's spans."""
    tags = constituency_tags(parse_tree(CARD))
    change, label, unary = tags[3].split("/")
    broken = [*tags[:3], f"{int(change) + 1}/{label}/{unary}", *tags[4:]]
    assert decode_spans(broken) != spans(parse_tree(CARD))


@pytest.mark.parametrize("text", ["(S (NP (NN a)", "(S (NN a)) extra)", "S (NN a))", "(S )"])
def test_a_malformed_tree_fails_saying_where(text):
    with pytest.raises(BadTree, match="token"):
        parse_tree(text)


def test_srl_frames_become_one_example_a_predicate_and_bad_frames_fail():
    words = ["CONCORDE", "flights", "are", "cheap"]
    frames = [{"verb": "are", "frames": ["B-ARG1", "I-ARG1", "B-V", "B-ARG2"]}]
    assert srl_examples(words, frames) == [(2, ["B-ARG1", "I-ARG1", "B-V", "B-ARG2"])]
    with pytest.raises(ValueError, match="'are': 3 tags for 4 words"):
        srl_examples(words, [{"verb": "are", "frames": ["O", "B-V", "O"]}])
    with pytest.raises(ValueError, match="0 B-V"):
        srl_examples(words, [{"verb": "are", "frames": ["O"] * 4}])


def test_a_tag_that_is_not_a_constituency_tag_fails():
    with pytest.raises(ValueError, match="not a constituency tag"):
        decode_spans(["1/S/", "B-PER"])
