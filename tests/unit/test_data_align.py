"""Tokenise + align with real fast tokenizers built here (WordPiece, and an XLM-R-like Unigram with bare '▁')."""

from __future__ import annotations

import datasets
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from headprune_core.data.align import (
    IGNORE_INDEX,
    AlignStats,
    align_labels,
    shuffled_labels,
    tokenize_sentence_task,
    tokenize_token_task,
)
from headprune_core.data.loading import features_for


@pytest.fixture(scope="module")
def wordpiece():
    vocab = {t: i for i, t in enumerate(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "##s", "sat", "un", "##believ", "##able", "dog",
         "on", "mat", ".", "a", "b", "c", "d", "e"])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]")


@pytest.fixture(scope="module")
def unigram():
    pieces = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -2.0), ("▁the", -1.0),
              ("▁cat", -1.0), ("xyz", -1.0), ("qq", -1.0), ("▁sat", -1.0)]
    tok = Tokenizer(models.Unigram(pieces, unk_id=3, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>")


def token_ds(rows, labels=("O", "A", "B")):
    return datasets.Dataset.from_dict({"tokens": [r[0] for r in rows], "tags": [r[1] for r in rows]},
                                      features=features_for("token", labels))


def test_align_labels_first_subword():
    assert align_labels([None, 0, 0, 1, None], [5, 7]) == [IGNORE_INDEX, 5, IGNORE_INDEX, 7, IGNORE_INDEX]


def test_first_subword_carries_label_wordpiece(wordpiece):
    ds = token_ds([(["the", "cats", "sat", "unbelievable"], [0, 1, 2, 1])])
    out, stats = tokenize_token_task(ds, wordpiece, max_length=32)
    row = out[0]
    pieces = wordpiece.convert_ids_to_tokens(row["input_ids"])
    assert pieces == ["[CLS]", "the", "cat", "##s", "sat", "un", "##believ", "##able", "[SEP]"]
    assert row["labels"] == [-100, 0, 1, -100, 2, 1, -100, -100, -100]
    assert row["word_ids"] == [-1, 0, 1, 1, 2, 3, 3, 3, -1]
    assert set(out.column_names) >= {"input_ids", "attention_mask", "labels", "word_ids"}
    assert "tokens" not in out.column_names
    assert (stats.sentences, stats.words, stats.sentences_truncated, stats.words_lost) == (1, 4, 0, 0)


def test_bare_metaspace_piece_gets_the_label(unigram):
    # "xyz" has no "▁xyz" piece: it becomes "▁" + "xyz", as 10-12% of words do with XLM-R's tokenizer.
    ds = token_ds([(["the", "xyz", "cat"], [1, 2, 0])])
    out, _ = tokenize_token_task(ds, unigram, max_length=16)
    pieces = unigram.convert_ids_to_tokens(out[0]["input_ids"])
    assert pieces == ["<s>", "▁the", "▁", "xyz", "▁cat", "</s>"]
    assert out[0]["labels"] == [-100, 1, 2, -100, 0, -100]


def test_truncation_is_counted_not_dropped(wordpiece):
    rows = [(["the", "cat", "sat"], [1, 1, 1]),                       # 5 tokens with specials: fits
            (["the", "cats", "sat", "on", "the", "mat", "."], [1] * 7),  # 10 tokens: cut at 6
            (["unbelievable", "dog"], [2, 2])]                        # 6 tokens: fits exactly
    out, stats = tokenize_token_task(token_ds(rows), wordpiece, max_length=6)
    assert len(out) == 3  # nothing dropped
    assert all(len(ids) <= 6 for ids in out["input_ids"])
    # sentence 2 keeps [CLS] the cat ##s sat [SEP]: words 'on the mat .' lose their labels
    assert out[1]["labels"] == [-100, 1, 1, -100, 1, -100]
    assert stats.sentences_truncated == 1
    assert stats.words_lost == 4
    assert stats.words == 12 and stats.sentences == 3
    assert stats.words_lost_share == pytest.approx(4 / 12)


def test_word_split_by_the_boundary_keeps_its_label(wordpiece):
    out, stats = tokenize_token_task(token_ds([(["a", "unbelievable"], [0, 1])]), wordpiece, max_length=4)
    assert wordpiece.convert_ids_to_tokens(out[0]["input_ids"]) == ["[CLS]", "a", "un", "[SEP]"]
    assert out[0]["labels"] == [-100, 0, 1, -100]
    assert stats.sentences_truncated == 1 and stats.words_lost == 0


def test_words_without_subwords_are_counted(wordpiece):
    out, stats = tokenize_token_task(token_ds([(["the", "", "cat"], [0, 1, 2])]), wordpiece, max_length=16)
    assert out[0]["labels"] == [-100, 0, 2, -100]
    assert stats.words_without_subwords == 1 and stats.words_lost == 0


def test_datasetdict_gives_per_split_stats(wordpiece):
    dd = datasets.DatasetDict({"train": token_ds([(["the", "cat"], [0, 1])] * 3),
                               "test": token_ds([(["the", "cats", "sat", "on", "the", "mat"], [0] * 6)])})
    out, stats = tokenize_token_task(dd, wordpiece, max_length=5)
    assert set(out) == {"train", "test"}
    assert isinstance(stats, AlignStats)
    assert stats.per_split["train"].sentences == 3 and stats.per_split["test"].sentences_truncated == 1
    assert stats.sentences == 4 and stats.to_dict()["per_split"]["test"]["words_lost"] == 4


def test_slow_tokenizer_rejected():
    class Slow:
        is_fast = False
    with pytest.raises(TypeError, match="not a fast tokenizer"):
        tokenize_token_task(token_ds([(["a"], [0])]), Slow())


def test_sentence_task_single_and_pair(wordpiece):
    single = datasets.Dataset.from_dict({"text": ["the cat sat", "the cats sat on the mat ."], "label": [1, 0]},
                                        features=features_for("sentence", ["neg", "pos"]))
    out, stats = tokenize_sentence_task(single, wordpiece, max_length=6)
    assert out["labels"] == [1, 0]
    assert stats.sentences == 2 and stats.sentences_truncated == 1
    assert max(len(x) for x in out["input_ids"]) == 6

    pair = datasets.Dataset.from_dict({"text": ["the cat"], "text_pair": ["a dog"], "label": [2]},
                                      features=features_for("sentence", ["e", "n", "c"], pair=True))
    out, stats = tokenize_sentence_task(pair, wordpiece, max_length=32)
    assert wordpiece.convert_ids_to_tokens(out[0]["input_ids"]) == [
        "[CLS]", "the", "cat", "[SEP]", "a", "dog", "[SEP]"]
    assert out[0]["labels"] == 2 and stats.sentences_truncated == 0


def test_shuffled_labels_keep_each_labels_count_and_every_unlabelled_position():
    """The control's training set: a token task's labels permuted over its labelled tokens (each sentence keeps its
    length and its -100 positions), a sentence task's over its sentences; the same seed, the same permutation."""
    ign = IGNORE_INDEX
    rows = [[ign, 1, 2, ign], [ign, 3, 3, 3, 0, ign], [ign, 2, ign]]
    ds = datasets.Dataset.from_dict({"input_ids": [[0] * len(r) for r in rows], "labels": rows})
    out = shuffled_labels(ds, seed=13)["labels"]
    assert [len(r) for r in out] == [len(r) for r in rows]
    assert all((a == IGNORE_INDEX) == (b == IGNORE_INDEX) for r, o in zip(rows, out) for a, b in zip(r, o))
    flat = lambda rs: sorted(v for r in rs for v in r if v != IGNORE_INDEX)  # noqa: E731
    assert flat(out) == flat(rows) and out != rows
    assert shuffled_labels(ds, seed=13)["labels"] == out and shuffled_labels(ds, seed=14)["labels"] != out
    sent = datasets.Dataset.from_dict({"input_ids": [[0]] * 8, "labels": [0, 0, 0, 0, 1, 1, 1, 2]})
    got = shuffled_labels(sent, seed=13)["labels"]
    assert sorted(got) == sorted(sent["labels"]) and got != sent["labels"]
