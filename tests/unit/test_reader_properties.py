"""Property-based tests of every corpus reader: any bytes give records or a :class:`CorpusError` that names the
file (and, for text formats, the line), never another exception. Two generators: raw bytes, and text built from
the pieces the formats are made of (tabs, newlines, quotes, braces, digits, BIO tags, long runs), which reaches
far deeper into the parsers than random bytes do."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headprune_core.data.formats import CorpusError, TextRecord, TokenRecord, read_file

FORMATS = ("conll", "conllu", "jsonl", "csv", "parquet")
SUFFIX = {"conll": ".conll", "conllu": ".conllu", "jsonl": ".jsonl", "csv": ".csv", "parquet": ".parquet"}

PIECES = st.sampled_from([
    "\t", "\n", "\n\n", "\r\n", " ", ",", '"', "'", "{", "}", "[", "]", ":", "#", "_", "-", ".", "1", "2", "10",
    "1-2", "2.1", "NOUN", "DET", "B-PER", "I-PER", "O", "label", "text", "tokens", "tags", '"tokens"', '"tags"',
    '"text"', '"label"', "null", "true", "-5", "1e309", "NaN", "é", "\u2028", "\ufeff", "\x00", "x" * 1200,
])
TEXT = st.lists(PIECES, max_size=60).map("".join)
FIELD = st.one_of(PIECES.filter(lambda p: "\t" not in p and "\n" not in p and "\r" not in p), st.text(max_size=5))
CONLLU = st.lists(st.one_of(st.lists(FIELD, min_size=8, max_size=11).map("\t".join), st.just(""), st.just("# c")),
                  max_size=20).map("\n".join)
KEYS = st.sampled_from(["tokens", "tags", "text", "label", "text_pair", "x"])
JSON_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                          lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
                          max_leaves=12)
WORD = st.text(max_size=6)
RECORD = st.one_of(st.fixed_dictionaries({"tokens": st.lists(WORD, max_size=4),
                                          "tags": st.lists(WORD | st.integers(-2, 20), max_size=4)}),
                   st.fixed_dictionaries({"text": WORD, "label": WORD | st.integers(-2, 20)}), JSON_VALUE)
JSONL = st.lists(RECORD.map(json.dumps), max_size=10).map("\n".join)
CONLLU_SENTENCE = st.lists(st.lists(FIELD, min_size=9, max_size=9), min_size=1, max_size=5).map(
    lambda rows: "\n".join("\t".join([str(i + 1), *row]) for i, row in enumerate(rows)))
CONLLU = st.one_of(CONLLU, st.lists(CONLLU_SENTENCE, max_size=4).map("\n\n".join))
STRUCTURED = {"conll": TEXT, "conllu": CONLLU, "jsonl": JSONL, "csv": TEXT}
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read(fmt: str, data: bytes):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"corpus{SUFFIX[fmt]}"
        path.write_bytes(data)
        try:
            out = read_file(path, fmt)
        except CorpusError as err:
            return path, err
        return path, out


def _check(fmt: str, data: bytes) -> None:
    path, out = _read(fmt, data)
    if isinstance(out, CorpusError):
        message = str(out)
        assert message.startswith(str(path)), message
        if fmt != "parquet":  # a text format names the line too (a whole-file problem may name the file only)
            assert re.match(re.escape(str(path)) + r"(:\d+)?: ", message), message
        return
    assert isinstance(out, list) and all(isinstance(r, (TokenRecord, TextRecord)) for r in out)


@pytest.mark.parametrize("fmt", FORMATS)
@SETTINGS
@given(data=st.binary(max_size=3000))
def test_any_bytes_give_records_or_a_corpus_error(fmt, data):
    _check(fmt, data)


@pytest.mark.parametrize("fmt", FORMATS[:4])
@SETTINGS
@given(data=st.data())
def test_format_like_text_gives_records_or_a_corpus_error(fmt, data):
    _check(fmt, data.draw(STRUCTURED[fmt]).encode("utf-8"))
