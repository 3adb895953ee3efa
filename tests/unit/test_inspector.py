"""The head inspector's core: word tags with and without a mask, one head's attention, the model untouched."""

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from headprune_core.encoders.classifier import HeadedEncoder, TaskHead
from headprune_core.encoders.inspector import MAX_CHARS, bounded_words, head_attention, split_words, tag_sentence
from tests.helpers.tiny_models import tiny_encoder


def _tokenizer():
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "anna", "sees", "the", "dog", "."]
    vocab = {w: i for i, w in enumerate(words)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]")


def _model(kind="token"):
    return HeadedEncoder(tiny_encoder("bert"), {"t": TaskHead(kind, ("A", "B", "C"))}).eval()


def test_split_words_separates_punctuation():
    assert split_words("Anna's dog, Müller-Lüdenscheid!") == ["Anna's", "dog", ",", "Müller-Lüdenscheid", "!"]


def test_a_huge_sentence_is_cut_before_any_work_and_says_so():
    """A 4 MB sentence of a million words (a hostile student's): at most MAX_CHARS characters are split and at most
    max_length - 2 words kept, with a note; a short sentence is read whole, with no note."""
    words, note = bounded_words("dog " * 1_000_000, max_length=128)
    assert words == ["dog"] * 126 and "first 126 words" in note
    words, note = bounded_words("x" * (MAX_CHARS + 10), max_length=128)
    assert words == ["x" * MAX_CHARS] and f"{MAX_CHARS:,} characters" in note
    assert bounded_words("Anna sees the dog .", max_length=128) == (["Anna", "sees", "the", "dog", "."], "")


def test_tags_one_label_per_word_and_mask_changes_nothing_when_all_ones():
    model, tok = _model(), _tokenizer()
    words = ["anna", "sees", "the", "dog", "."]
    full = tag_sentence(model, tok, words)
    assert len(full["labels"]) == len(words) and all(lab in ("A", "B", "C") for lab in full["labels"])
    same = tag_sentence(model, tok, words, mask=torch.ones(2, 4))
    assert same["labels"] == full["labels"]
    assert not model.encoder.encoder.layer[0].attention.output.dense._forward_pre_hooks


def test_sentence_task_gives_class_probabilities():
    out = tag_sentence(_model("sentence"), _tokenizer(), ["anna", "sees"])
    assert out["kind"] == "sentence" and abs(sum(out["probs"].values()) - 1) < 1e-5


def test_head_attention_rows_sum_to_one_and_gates_are_removed():
    model, tok = _model(), _tokenizer()
    mask = torch.ones(2, 4)
    mask[0, 1] = 0
    pieces, att = head_attention(model, tok, ["anna", "sees", "the", "dog"], 1, 2, mask=mask)
    assert pieces[0] == "[CLS]" and att.shape == (len(pieces), len(pieces))
    assert torch.allclose(att.sum(-1), torch.ones(len(pieces)), atol=1e-5)
    assert not model.encoder.encoder.layer[1].attention.output.dense._forward_pre_hooks
