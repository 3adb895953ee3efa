"""Readers for the local file formats: CoNLL, CoNLL-U, JSONL, CSV and parquet.

Each reader returns plain records that remember where they came from, so that any later error (a malformed
line, a tag missing from the label list) names the file and line: ``data.conll:17: expected ...``.

CoNLL: ``token<TAB>tag`` per line (more tab-separated columns are allowed: the first is the token, the last the
tag; a line without a tab is split on spaces, as in CoNLL-2003), a blank line between sentences, ``-DOCSTART-``
lines skipped. CoNLL-U: comments skipped, empty nodes (``1.1``) skipped, multi-word tokens (``4-5 du``) kept as
one surface word carrying the tag of their first part (``du`` = ``de`` + ``le`` -> ADP), so the words are what a
reader sees and what a tokenizer is given. JSONL: ``{"tokens": [...], "tags": [...]}`` or
``{"text": ..., "label": ..., "text_pair": ...}``. CSV: two columns ``label,text`` (a header row naming
``label`` and ``text`` may give another order), UTF-8 with or without a BOM. Parquet (and JSONL or CSV with
other column names): a table whose columns are found by name (``tokens``/``words`` + ``tags``/``ner_tags``/
``upos``...; ``text``/``sentence`` + ``label``) or given with ``columns=("words", "tags")``.

>>> # sents = read_conll("train.conll"); sents[0].tokens, sents[0].tags
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pyarrow.parquet as pq

from headprune_core.base.choices import FORMATS, FileFormat

_SUFFIXES = {".conll": "conll", ".txt": "conll", ".iob": "conll", ".bio": "conll", ".tsv": "conll",
             ".conllu": "conllu", ".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet"}
_CONLLU_ID = re.compile(r"^(\d+)(?:-(\d+)|\.(\d+))?$")


@dataclass
class TokenRecord:
    """One sentence of a token task: words, their (native or coarse) tags, the source line of each word."""

    tokens: list[str]
    tags: list
    path: str = ""
    lines: list[int] = field(default_factory=list)

    def where(self, i: int = 0) -> str:
        line = self.lines[i] if i < len(self.lines) else (self.lines[0] if self.lines else 0)
        return f"{self.path}:{line}"

    def __post_init__(self):
        if self.tokens and max(len(t) if isinstance(t, str) else 0 for t in self.tokens) > MAX_TOKEN_CHARS:
            i = next(i for i, t in enumerate(self.tokens) if isinstance(t, str) and len(t) > MAX_TOKEN_CHARS)
            raise CorpusError(f"{self.where(i)}: a word of {len(self.tokens[i]):,} characters "
                              f"({_short(self.tokens[i])}); a word has at most {MAX_TOKEN_CHARS:,} (is this "
                              "text without spaces, or not a token file?)")


@dataclass
class TextRecord:
    """One example of a sentence task."""

    text: str
    label: object
    text_pair: str | None = None
    path: str = ""
    line: int = 0

    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def __post_init__(self):
        for name in ("text", "text_pair"):
            value = getattr(self, name)
            if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
                raise CorpusError(f"{self.where()}: a {name} of {len(value):,} characters; at most "
                                  f"{MAX_TEXT_CHARS:,} (the model reads only its first few hundred words)")


MAX_WORDS = 5000  # more words in one sentence means blank lines between sentences are missing
MAX_TOKEN_CHARS = 1000
"""The longest word a token file may hold: a longer one is text without spaces or a blob, and a tokenizer given
tens of megabytes as one word takes gigabytes."""
MAX_TEXT_CHARS = 100_000
"""The longest text (or text pair) of a sentence task's example: the model reads its first ``max_length``
tokens, and a tokenizer given megabytes of one text takes gigabytes."""
MAX_LABELS = 10_000
"""The most labels a task may have: more is a column of numbers or ids taken for labels (an integer tag of
10**9 would otherwise make a label for every integer below it)."""


class CorpusError(ValueError):
    """A corpus file cannot be read as given; the message starts with ``file:line``."""


def read_text(path: str | Path) -> str:
    """The file's text: UTF-8 (a BOM is dropped; CRLF and CR line ends become LF).

    Raises :class:`CorpusError` naming the file and line of the first byte that is not UTF-8, or of a NUL
    byte (a binary file, or UTF-16 text).
    """
    name = str(path)
    data = Path(path).read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise CorpusError(f"{name}:{line}: not UTF-8 text (byte 0x{data[err.start]:02x} at column {column}); "
                          "save the file as UTF-8") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise CorpusError(f"{name}:{line}: NUL byte: a binary file or UTF-16 text, not UTF-8 text")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _numbered_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    yield from enumerate(read_text(path).split("\n"), 1)


def _check_length(rec: TokenRecord) -> TokenRecord:
    if len(rec.tokens) > MAX_WORDS:
        raise CorpusError(f"{rec.where(0)}: a sentence of {len(rec.tokens)} words (lines {rec.lines[0]}-"
                          f"{rec.lines[-1]}); more than {MAX_WORDS} words means the blank lines between "
                          "sentences are missing")
    return rec


def guess_format(path: str | Path) -> FileFormat:
    fmt = _SUFFIXES.get(Path(path).suffix.lower())
    if fmt is None:
        raise ValueError(f"cannot tell the format of {path} from its suffix; pass format= one of "
                         f"{', '.join(FORMATS)}")
    return fmt  # type: ignore[return-value]


def _short(line: str) -> str:
    return repr(line if len(line) <= 60 else line[:57] + "...")


def read_conll(path: str | Path) -> list[TokenRecord]:
    """Sentences of a CoNLL file (``token<TAB>tag``); a malformed line raises ``ValueError`` with file:line."""
    out: list[TokenRecord] = []
    toks: list[str] = []
    tags: list[str] = []
    lines: list[int] = []
    name = str(path)

    def flush():
        if toks:
            out.append(_check_length(TokenRecord(list(toks), list(tags), name, list(lines))))
        toks.clear(), tags.clear(), lines.clear()

    for no, line in _numbered_lines(path):
        if not line.strip():
            flush()
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if parts[0] == "-DOCSTART-":
            flush()
            continue
        if len(parts) < 2 or not parts[0] or not parts[-1].strip():
            raise CorpusError(f"{name}:{no}: expected 'token<TAB>tag', got {_short(line)}")
        toks.append(parts[0])
        tags.append(parts[-1].strip())
        lines.append(no)
    flush()
    return out


def iter_conllu(path: str | Path) -> Iterator[list[tuple[int, list[str]]]]:
    """Raw CoNLL-U sentences: lists of (line number, 10 fields), comments dropped, every row checked."""
    name = str(path)
    rows: list[tuple[int, list[str]]] = []
    for no, line in _numbered_lines(path):
        if not line.strip():
            if rows:
                yield rows
            rows = []
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise CorpusError(f"{name}:{no}: expected 10 tab-separated CoNLL-U fields, got {len(cols)}: "
                              f"{_short(line)}")
        if not _CONLLU_ID.match(cols[0]):
            raise CorpusError(f"{name}:{no}: bad CoNLL-U ID {cols[0]!r} (expected 3, 3-4 or 3.1)")
        rows.append((no, cols))
    if rows:
        yield rows


def conllu_words(rows: list[tuple[int, list[str]]], *, column: int = 3, path: str = "",
                 mwt: Literal["surface", "syntactic"] = "surface") -> TokenRecord:
    """Words and tags of one CoNLL-U sentence.

    ``mwt="surface"`` keeps a multi-word token (``4-5 da``) as one word tagged like its first part (ADP for
    da = de + a); ``"syntactic"`` keeps the parts instead. Empty nodes (``8.1``) are always skipped.
    """
    toks, tags, lines = [], [], []
    skip_to = 0
    for i, (no, cols) in enumerate(rows):
        m = _CONLLU_ID.match(cols[0])
        start = int(m.group(1))
        if m.group(3) is not None:  # empty node
            continue
        if m.group(2) is not None:  # multi-word token range
            end = int(m.group(2))
            if mwt == "syntactic":
                continue
            first = next((c for _, c in rows[i + 1:] if c[0] == str(start)), None)
            if first is None:
                raise CorpusError(f"{path}:{no}: multi-word token {cols[0]} has no word {start}")
            toks.append(cols[1])
            tags.append(first[column])
            lines.append(no)
            skip_to = end
            continue
        if start <= skip_to:
            continue
        toks.append(cols[1])
        tags.append(cols[column])
        lines.append(no)
    return TokenRecord(toks, tags, path, lines)


def read_conllu(path: str | Path, *, column: Literal["upos", "xpos"] = "upos",
                mwt: Literal["surface", "syntactic"] = "surface") -> list[TokenRecord]:
    """Sentences of a CoNLL-U file with the UPOS (or XPOS) column as tags; see ``conllu_words``."""
    col = {"upos": 3, "xpos": 4}[column]
    return [_check_length(conllu_words(rows, column=col, path=str(path), mwt=mwt)) for rows in iter_conllu(path)]


def read_jsonl(path: str | Path) -> list[TokenRecord] | list[TextRecord]:
    """Records of a JSONL file: all token records or all sentence records (not mixed)."""
    return list(iter_jsonl(path))


def iter_jsonl(path: str | Path) -> Iterator[TokenRecord | TextRecord]:
    """The records of a JSONL file one at a time, checked as :func:`read_jsonl` checks them (a caller can encode
    them in chunks and never hold them all as Python objects)."""
    name = str(path)
    kind = None
    for no, raw in _numbered_lines(path):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as err:
            raise CorpusError(f"{name}:{no}: invalid JSON ({err.msg}): {_short(raw.strip())}") from None
        if not isinstance(obj, dict):
            raise CorpusError(f"{name}:{no}: expected a JSON object, got {type(obj).__name__}")
        this = "token" if "tokens" in obj else "sentence" if "text" in obj else None
        if this is None:
            raise CorpusError(f"{name}:{no}: expected keys 'tokens'+'tags' or 'text'+'label', "
                              f"got {sorted(obj)}")
        if kind is not None and this != kind:
            raise CorpusError(f"{name}:{no}: a {this} record in a file of {kind} records")
        kind = this
        if this == "token":
            toks, tags = obj.get("tokens"), obj.get("tags")
            if not isinstance(toks, list) or not isinstance(tags, list) or len(toks) != len(tags):
                raise CorpusError(f"{name}:{no}: 'tokens' and 'tags' must be lists of equal length")
            if not toks:
                raise CorpusError(f"{name}:{no}: empty sentence")
            yield _check_length(TokenRecord([str(t) for t in toks], tags, name, [no] * len(toks)))
        else:
            if "label" not in obj or not isinstance(obj["text"], str):
                raise CorpusError(f"{name}:{no}: expected a string 'text' and a 'label'")
            yield TextRecord(obj["text"], obj["label"], obj.get("text_pair"), name, no)


def _csv_rows(reader, name: str) -> Iterator:
    """The rows of a ``csv`` reader; its errors (a field over the csv module's limit, a stray quote) become
    :class:`CorpusError` naming the file and line."""
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            line = reader.line_num
            if "field larger than field limit" in str(err):
                raise CorpusError(f"{name}:{line}: a field of more than {csv.field_size_limit():,} characters; a "
                                  f"text has at most {MAX_TEXT_CHARS:,} (the model reads only its first few "
                                  "hundred words)") from None
            raise CorpusError(f"{name}:{line}: not valid CSV ({err})") from None


def read_csv(path: str | Path, *, order: tuple[str, str] = ("label", "text")) -> list[TextRecord]:
    """``label,text`` rows (or ``order``); a header row naming label and text overrides the order."""
    name = str(path)
    out: list[TextRecord] = []
    with io.StringIO(read_text(path), newline="") as f:
        reader = csv.reader(f)
        first = True
        start = 1
        for row in _csv_rows(reader, name):
            no, start = start, reader.line_num + 1
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if first:
                first = False
                low = [c.strip().lower() for c in row]
                if "label" in low and "text" in low:
                    order = tuple(low)  # type: ignore[assignment]
                    continue
            if len(row) != len(order):
                raise CorpusError(f"{name}:{no}: expected {len(order)} fields ({','.join(order)}), got "
                                 f"{len(row)}: {_short(','.join(row))}")
            rec = dict(zip(order, row))
            out.append(TextRecord(rec["text"], rec["label"].strip(), rec.get("text_pair"), name, no))
    return out


def read_file(path: str | Path, fmt: FileFormat | None = None, *, columns: tuple[str, ...] = (), **kw) -> list:
    """Dispatch on ``fmt`` (default: guessed from the suffix); ``columns`` names a table's columns (parquet,
    JSONL, CSV with a header): ``(words, tags)``, ``(text, label)`` or ``(text, text_pair, label)``."""
    fmt = fmt or guess_format(path)
    if not Path(path).is_file():
        raise FileNotFoundError(f"no such file: {path}")
    if fmt == "parquet":
        return read_parquet(path, columns=columns)
    if columns and fmt in ("jsonl", "csv"):
        return records_from_rows(_table_rows(path, fmt), columns=columns, path=str(path))
    if columns:
        raise ValueError(f"{path}: columns= applies to parquet, JSONL and CSV tables, not to {fmt} files")
    if fmt == "conll":
        return read_conll(path)
    if fmt == "conllu":
        return read_conllu(path, **kw)
    if fmt == "jsonl":
        return read_jsonl(path)
    if fmt == "csv":
        return read_csv(path, **kw)
    raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")


# --- tables (parquet, Hub rows, JSONL/CSV with other column names) ---------------------------------------------

WORD_COLUMNS = ("tokens", "words", "token", "form", "forms")
TAG_COLUMNS = ("tags", "ner_tags", "pos_tags", "upos", "xpos", "labels", "label", "ner", "pos", "chunk_tags")
TEXT_COLUMNS = ("text", "sentence", "sentence1", "premise", "question1", "question", "content", "review")
PAIR_COLUMNS = {"sentence1": "sentence2", "premise": "hypothesis", "question1": "question2", "question": "sentence"}
LABEL_COLUMNS = ("label", "labels", "category", "class", "target")


def find_columns(names: list[str], first_row: dict | None = None) -> tuple[str, ...]:
    """Which columns hold the words and tags (token task) or text[, pair] and label (sentence task).

    Token columns hold lists; a table with a list-of-strings column among ``WORD_COLUMNS`` is a token task.
    Raises ``ValueError`` listing the columns when nothing fits (then pass ``columns=`` / ``--columns``).
    """
    row = first_row or {}
    words = next((c for c in WORD_COLUMNS if c in names and isinstance(row.get(c, []), list)), None)
    if words is not None:
        tags = next((c for c in TAG_COLUMNS if c in names and c != words and isinstance(row.get(c, []), list)),
                    None)
        if tags is not None:
            return words, tags
    text = next((c for c in TEXT_COLUMNS if c in names and isinstance(row.get(c, ""), str)), None)
    label = next((c for c in LABEL_COLUMNS if c in names), None)
    if text is not None and label is not None:
        pair = PAIR_COLUMNS.get(text)
        return (text, pair, label) if pair in names else (text, label)
    raise ValueError(f"cannot tell which columns hold the words and tags (or the text and label) among "
                     f"{', '.join(names)}; name them, e.g. columns=('tokens', 'ner_tags') or --columns text,label")


def records_from_rows(rows: list[dict], *, columns: tuple[str, ...] = (), path: str = "",
                      names: dict[str, list[str]] | None = None, line_offset: int = 1) -> list:
    """Rows of a table -> token or sentence records (``where()`` gives ``path:row``, rows counted from 1).

    ``names`` maps a column to its class names (a Hub ClassLabel): integer values become those names.
    """
    if not rows:
        return []
    cols = tuple(columns) or find_columns(list(rows[0]), rows[0])
    missing = [c for c in cols if c not in rows[0]]
    if missing:
        raise CorpusError(f"{path}: no column {', '.join(map(repr, missing))}; the table has: "
                          f"{', '.join(rows[0])}")
    if len(cols) not in (2, 3):
        raise ValueError(f"columns: give (words, tags), (text, label) or (text, text_pair, label), got {cols}")
    names = names or {}

    def named(col, value):
        table = names.get(col)
        if table and isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(table):
            return table[value]
        return value

    out: list = []
    token = len(cols) == 2 and isinstance(rows[0][cols[0]], list)
    for i, row in enumerate(rows):
        no = i + line_offset
        if token:
            words, tags = row[cols[0]], row[cols[1]]
            if not isinstance(words, list) or not isinstance(tags, list) or len(words) != len(tags):
                raise CorpusError(f"{path}:{no}: {cols[0]!r} and {cols[1]!r} must be lists of equal length")
            if not words:
                continue  # Hub token sets hold a few empty rows; an empty sentence has nothing to tag
            out.append(_check_length(TokenRecord([str(w) for w in words], [named(cols[1], t) for t in tags],
                                                 path, [no] * len(words))))
        else:
            text, label = row[cols[0]], row[cols[-1]]
            pair = row[cols[1]] if len(cols) == 3 else None
            if not isinstance(text, str) or label is None:
                raise CorpusError(f"{path}:{no}: expected a string {cols[0]!r} and a {cols[-1]!r}")
            out.append(TextRecord(text, named(cols[-1], label), pair, path, no))
    return out


def _table_rows(path: str | Path, fmt: str) -> list[dict]:
    if fmt == "jsonl":
        rows = []
        for no, raw in _numbered_lines(path):
            if raw.strip():
                try:
                    rows.append(json.loads(raw))
                except json.JSONDecodeError as err:
                    raise CorpusError(f"{path}:{no}: invalid JSON ({err.msg}): {_short(raw.strip())}") from None
        return rows
    with io.StringIO(read_text(path), newline="") as f:
        reader = csv.DictReader(f)
        return [dict(r) for r in _csv_rows(reader, str(path))]


def read_parquet(path: str | Path, *, columns: tuple[str, ...] = ()) -> list:
    """Records of a parquet table (as the Hub serves data sets); ClassLabel names travel in its metadata."""

    try:
        table = pq.read_table(str(path))
    except Exception as err:  # pyarrow raises ArrowInvalid, OSError ... for a file that is not parquet
        raise CorpusError(f"{path}: not a readable parquet file ({type(err).__name__}: {err})") from None
    names: dict[str, list[str]] = {}
    meta = (table.schema.metadata or {}).get(b"huggingface")
    if meta:
        try:
            feats = json.loads(meta).get("info", {}).get("features", {})
        except ValueError:
            feats = {}
        for col, feat in feats.items():
            feat = feat.get("feature", feat) if isinstance(feat, dict) else {}
            if isinstance(feat, dict) and feat.get("_type") == "ClassLabel" and feat.get("names"):
                names[col] = list(feat["names"])
    return records_in_batches(table.to_batches(max_chunksize=ROW_BATCH), columns=tuple(columns), path=str(path),
                              names=names)


ROW_BATCH = 20_000
"""Rows of a table turned into Python at a time (a table of 500,000 rows is never one list of dicts)."""


def records_in_batches(batches, *, columns: tuple[str, ...] = (), path: str = "",
                       names: dict[str, list[str]] | None = None) -> list:
    """:func:`records_from_rows` over Arrow record batches or column dicts (``Dataset.iter``), rows numbered
    across them; the columns are found once, from the first row."""
    out: list = []
    offset = 1
    for batch in batches:
        if hasattr(batch, "to_pylist"):
            rows = batch.to_pylist()
        else:  # {"column": [values ...]}
            keys = list(batch)
            rows = [dict(zip(keys, values)) for values in zip(*(batch[k] for k in keys))]
        if not rows:
            continue
        if not columns:
            columns = find_columns(list(rows[0]), rows[0])
        out += records_from_rows(rows, columns=columns, path=path, names=names, line_offset=offset)
        offset += len(rows)
    return out
