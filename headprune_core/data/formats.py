"""Readers for the local file formats: CoNLL, CoNLL-U, JSONL and CSV.

Each reader returns plain records that remember where they came from, so that any later error (a malformed
line, a tag missing from the label list) names the file and line: ``data.conll:17: expected ...``.

CoNLL: ``token<TAB>tag`` per line (more tab-separated columns are allowed: the first is the token, the last the
tag; a line without a tab is split on spaces, as in CoNLL-2003), a blank line between sentences, ``-DOCSTART-``
lines skipped. CoNLL-U: comments skipped, empty nodes (``1.1``) skipped, multi-word tokens (``4-5 du``) kept as
one surface word carrying the tag of their first part (``du`` = ``de`` + ``le`` -> ADP), so the words are what a
reader sees and what a tokenizer is given. JSONL: ``{"tokens": [...], "tags": [...]}`` or
``{"text": ..., "label": ..., "text_pair": ...}``. CSV: two columns ``label,text`` (a header row naming
``label`` and ``text`` may give another order), UTF-8 with or without a BOM.

>>> # sents = read_conll("train.conll"); sents[0].tokens, sents[0].tags
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Literal

FileFormat = Literal["conll", "conllu", "jsonl", "csv"]
FORMATS: tuple[str, ...] = ("conll", "conllu", "jsonl", "csv")
_SUFFIXES = {".conll": "conll", ".txt": "conll", ".iob": "conll", ".bio": "conll", ".tsv": "conll",
             ".conllu": "conllu", ".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv"}
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


MAX_WORDS = 5000  # more words in one sentence means blank lines between sentences are missing


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
    for no, line in enumerate(read_text(path).split("\n"), 1):
        yield no, line


def _check_length(rec: "TokenRecord") -> "TokenRecord":
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
    name = str(path)
    out: list = []
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
            out.append(_check_length(TokenRecord([str(t) for t in toks], tags, name, [no] * len(toks))))
        else:
            if "label" not in obj or not isinstance(obj["text"], str):
                raise CorpusError(f"{name}:{no}: expected a string 'text' and a 'label'")
            out.append(TextRecord(obj["text"], obj["label"], obj.get("text_pair"), name, no))
    return out


def read_csv(path: str | Path, *, order: tuple[str, str] = ("label", "text")) -> list[TextRecord]:
    """``label,text`` rows (or ``order``); a header row naming label and text overrides the order."""
    name = str(path)
    out: list[TextRecord] = []
    with io.StringIO(read_text(path), newline="") as f:
        reader = csv.reader(f)
        first = True
        start = 1
        for row in reader:
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


def read_file(path: str | Path, fmt: FileFormat | None = None, **kw) -> list:
    """Dispatch on ``fmt`` (default: guessed from the suffix)."""
    fmt = fmt or guess_format(path)
    if not Path(path).is_file():
        raise FileNotFoundError(f"no such file: {path}")
    if fmt == "conll":
        return read_conll(path)
    if fmt == "conllu":
        return read_conllu(path, **kw)
    if fmt == "jsonl":
        return read_jsonl(path)
    if fmt == "csv":
        return read_csv(path, **kw)
    raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
