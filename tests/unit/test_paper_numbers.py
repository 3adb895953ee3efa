"""The papers' numbers (headprune_core/findings/paper_numbers.csv) against docs/papers.md, both ways: every row is on
its line of docs/papers.md as written, in its paper's section, under the marker of its kind; and every number of a
paper section of docs/papers.md is in the file or on :data:`LEFT_OUT` with a reason (never for the tables that
docs/papers.md gives in full). The rows also agree with each other where one is counted or averaged from others."""

from __future__ import annotations

import csv
import doctest
import re
import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from headprune_core.findings import paper_numbers as module
from headprune_core.findings.paper_numbers import NUMBERS, OWN, PAPERS, PaperNumber, paper_numbers, select

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "papers.md"

NUMBER = re.compile(r"(?<![\w.])(?:(?<=[^\w%)])[+-]|^[+-])?\d+(?:\.\d+)?(?:e-?\d+)?(?!\w|\.\d)")
"""A number as written, with its sign: a '-' or '+' after a digit or a letter is a dash ("0.67-0.87", "SST-2")."""
LABEL = re.compile(r"\b(?:Sec|section|Tables?|Figure|Figs?\.?|Footnote)\s*\d+(?:\.\d+)*(?:\s*-\s*\d+(?:\.\d+)*)?")
"""A place in a paper ("Table 5", "Sec 4.1-4.2", "Figs 2-3"): its digits are a name, not a number."""
MARKERS = {"P": "[P", "A": "[A]", "R": "[R", "2nd": "[2nd", "calc": "[calc]"}
"""docs/papers.md's legend: how each kind is marked ("[R, probe tables ...]" and "[P-intro]" included)."""
FULL = ("(Table 5", "(Table 6", "(Figure 1")
"""The tables docs/papers.md gives in full: every number of theirs is in the file, none left out."""

NAME = "part of a name (a data set, a version, a citation, a script), not a number"
K_LIMIT = "the k limit (up to 12 heads): the protocol row of line 17"
LEFT_OUT: dict[int, dict[str, str]] = {
    12: {"144": "the models' 12x12 heads: a property of the model, not a reported number"},
    13: {"17": "UD's tag count: a property of the data set", "2002": NAME, "03": NAME, "2020": NAME},
    16: {"1": "step numbers (1)-(3) and the range [0, 1] of the scaled scores", "2": "a step number (2)",
         "3": "a step number (3)", "0": "the range [0, 1] of the scaled scores: a definition"},
    17: {"4": "docs/papers.md's gloss (~4-5% of 144 heads)", "5": "docs/papers.md's gloss (~4-5% of 144 heads)",
         "144": "docs/papers.md's gloss (~4-5% of 144 heads)"},
    22: {"1": NAME + " (F-1)", "12": K_LIMIT,
         "23": "per-setting recounts (23/24, 24/24, 20/24, 23/24) whose settings docs/papers.md does not name",
         "24": "per-setting recounts (23/24, 24/24, 20/24, 23/24) whose settings docs/papers.md does not name",
         "20": "per-setting recounts (23/24, 24/24, 20/24, 23/24) whose settings docs/papers.md does not name"},
    24: {"12": K_LIMIT, "8": "docs/papers.md's arithmetic behind 34 (8 x 2 x 2 + 2)",
         "2": "docs/papers.md's arithmetic behind 34 (8 x 2 x 2 + 2)"},
    29: {"1": "the k range 1..12: the protocol row of line 17"},
    46: {"8": "the 8 GLUE tasks: the protocol row of line 45"},
    48: {"1": NAME + " (AUTOSEM phase-1)"},
    49: {"1": "a key of the repository's method dict", "2": "a key of the repository's method dict",
         "3": "a key of the repository's method dict"},
    54: {"14": NAME + " (WMT'14)", "2": NAME + " (SST-2)"},
    58: {"0": "the mask's values (0/1 per head): a definition", "1": "the mask's values (0/1 per head): a definition"},
    59: {s: "the line says NF: the drops at these pruning shares were not found" for s in ("25", "50", "75")},
    70: {"5": NAME + " (OntoNotes 5)"},
    71: {"5": NAME + " (MTL-5)"},
    72: {"3": "the 3 runs: the protocol row of line 71"},
    73: {"5": "an AI-generated note's layer range, unverified", "8": "an AI-generated note's layer range, unverified"},
    80: {"2": NAME + " (SST-2)"},
}
"""The numbers of docs/papers.md's paper sections that are not in the file, per line, with the reason."""


def numbers_on(text: str) -> list[re.Match]:
    """The numbers of ``text`` as written, places ("Table 5") left out."""
    return list(NUMBER.finditer(LABEL.sub(lambda m: " " * len(m.group()), text)))


def places(written: str, text: str) -> list[int]:
    """Where ``written`` stands in ``text`` as a number (same digits, sign and decimals, not inside another)."""
    first = NUMBER.search(written)
    if first is None or first.start() != 0:
        return []
    end = re.compile(r"(?!\w|\.\d)")
    return [m.start() for m in numbers_on(text) if m.group() == first.group() and text.startswith(written, m.start())
            and end.match(text, m.start() + len(written))]


class Doc:
    """docs/papers.md read once: its lines, each line's paper section and each section's head (heading and sources)."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.section: dict[int, int] = {}  # line -> line of its "## " heading
        self.head: set[int] = set()  # the lines of the headings and the source lines under them
        heading, in_head = 0, False
        for number, line in enumerate(self.lines, 1):
            if line.startswith("## "):
                heading, in_head = number, True
            elif not line.strip() or line.startswith("- "):
                in_head = False
            self.section[number] = heading
            if in_head:
                self.head.add(number)

    def line(self, number: int) -> str:
        return self.lines[number - 1]

    def heading(self, number: int) -> str:
        return self.line(self.section[number]) if self.section.get(number) else ""

    def section_text(self, number: int) -> str:
        return "\n".join(self.line(n) for n, h in self.section.items() if h == self.section[number])

    def head_text(self, number: int) -> str:
        return "\n".join(self.line(n) for n in sorted(self.head) if self.section[n] == self.section[number])

    def paper_lines(self) -> list[int]:
        """The lines of the papers' sections, their heads left out."""
        headings = {n for n in self.section.values() if n and any(t in self.line(n) for t in PAPERS.values())}
        return [n for n, h in self.section.items() if h in headings and n not in self.head]

    def full_lines(self) -> list[int]:
        """The lines of the tables docs/papers.md gives in full: a bullet naming one, or a bullet under a header
        line naming one."""
        out, block = [], ""
        for number, line in enumerate(self.lines, 1):
            if line.strip() and not line.startswith("- "):
                block = line
            elif line.startswith("- ") and any(f in line or f in block for f in FULL):
                out.append(number)
        return out


def _calc_scopes(text: str) -> list[tuple[int, int]]:
    """Where docs/papers.md's recounts stand on a line: from each [calc] to the end of its parenthesis, or of the
    line where it stands outside one ("(=> 77/96 improved; [calc] confirms 77/96)")."""
    out = []
    for marker in re.finditer(re.escape(MARKERS["calc"]), text):
        depth, end = text[:marker.start()].count("(") - text[:marker.start()].count(")"), len(text)
        for pos in range(marker.end(), len(text)) if depth > 0 else ():
            depth += {"(": 1, ")": -1}.get(text[pos], 0)
            if depth == 0:
                end = pos
                break
        out.append((marker.start(), end))
    return out


def _kind_problem(n: PaperNumber, doc: Doc, at: list[int]) -> str | None:
    """Whether some place of the number agrees with its kind: a recount stands where a [calc] reaches; the paper's
    own number stands where none does (a table's F1 score quoted inside a recount excepted), after its kind's marker
    on the line or under a section whose sources carry it."""
    text, head = doc.line(n.doc_line), doc.head_text(n.doc_line)
    for pos in at:
        in_calc = any(start < pos < end for start, end in _calc_scopes(text))
        if n.kind == "calc":
            if in_calc:
                return None
        elif (not in_calc or n.unit == "F1") and (MARKERS[n.kind] in text[:pos] or MARKERS[n.kind] in head):
            return None
    return f"kind {n.kind!r} but the number stands under no {MARKERS[n.kind]} marker" + (
        "" if n.kind == "calc" else " outside a recount")


def _row_problem(n: PaperNumber, doc: Doc) -> str | None:
    if not 1 <= n.doc_line <= len(doc.lines):
        return f"line {n.doc_line} is not in docs/papers.md ({len(doc.lines)} lines)"
    if PAPERS[n.paper] not in doc.heading(n.doc_line):
        return f"line {n.doc_line} is under {doc.heading(n.doc_line)[:60]!r}, not {n.paper}'s section"
    at = places(n.written, doc.line(n.doc_line))
    if not at:
        elsewhere = [k for k in range(1, len(doc.lines) + 1) if places(n.written, doc.line(k))]
        return f"{n.written!r} is not on line {n.doc_line} as written (it is on lines {elsewhere})"
    if n.out_of is not None and str(n.out_of) not in [m.group() for m in numbers_on(doc.line(n.doc_line))]:
        return f"its total {n.out_of} is not on line {n.doc_line}"
    if n.where in ("abstract", "repository"):
        if (n.where, n.kind) not in (("abstract", "A"), ("repository", "R")):
            return f"where {n.where!r} with kind {n.kind!r}"
    elif n.where and n.where not in doc.section_text(n.doc_line):
        return f"{n.where!r} is not named in {n.paper}'s section"
    return _kind_problem(n, doc, at)


def problems(numbers, doc: Doc) -> list[str]:
    """What does not hold between the rows and docs/papers.md (empty when all does)."""
    out, seen, covered = [], set(), {}
    for n in numbers:
        if problem := _row_problem(n, doc):
            cell = " ".join(x for x in (n.paper, n.where, n.task, n.setting, n.row, n.column) if x)
            out.append(f"{cell} {n.written!r}: {problem}")
        key = (n.paper, n.where, n.task, n.model, n.setting, n.row, n.column, n.quantity)
        if key in seen:
            out.append(f"twice: {key}")
        seen.add(key)
        covered.setdefault(n.doc_line, set()).update(m.group() for s in (n.written, n.row, n.column)
                                                     for m in NUMBER.finditer(s))
    full, lines = set(doc.full_lines()), set(doc.paper_lines())
    for number in sorted(lines):
        on_line, mine = {m.group() for m in numbers_on(doc.line(number))}, covered.get(number, set())
        left = set(LEFT_OUT.get(number, {}))
        out += [f"line {number}: {w} is neither in the file nor left out"
                for w in sorted(on_line - mine - (set() if number in full else left))]
        out += [f"line {number}: {w} is left out but {'in the file' if w in mine else 'not on the line'}"
                for w in sorted(left) if w in mine or w not in on_line]
    out += [f"line {number}: a table given in full has numbers left out" for number in sorted(full) if
            LEFT_OUT.get(number)]
    out += [f"line {number}: numbers left out of a line outside the papers' sections" for number in
            sorted(set(LEFT_OUT) - lines)]
    return out


@pytest.fixture(scope="module")
def doc() -> Doc:
    return Doc(DOC.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def rows() -> tuple[PaperNumber, ...]:
    return paper_numbers()


def test_every_row_is_on_its_line_of_docs_papers_and_every_number_there_is_a_row_or_left_out(rows, doc):
    assert problems(rows, doc) == []


def test_the_full_tables_are_found_and_complete(rows, doc):
    """Table 5 (2 tasks x Max/Rand x 2 settings x 8 targets), Table 6 (2 tasks x 5 languages x unpruned/pruned)
    and Figure 1's ranges (3 tasks x 2 models x lowest/highest) have each cell once."""
    assert doc.full_lines() == [26, *range(30, 36), *range(38, 42)]  # Table 6; Table 5; Figure 1 and footnote 7
    table5 = select(rows, paper="ma2021", where="Table 5", kind="P", unit="F1 points")
    assert len({(n.task, n.row, n.setting, n.column) for n in table5}) == len(table5) == 64
    table6 = select(rows, where="Table 6", unit="F1")
    assert len({(n.task, n.row, n.column) for n in table6}) == len(table6) == 20
    ranges = [n for n in select(rows, where="Figure 1") if "off-diagonal" in n.quantity]
    assert len({(n.task, n.model, n.quantity) for n in ranges}) == len(ranges) == 12


def _recount_problems(numbers) -> list[str]:
    """Where a count, mean or median the rows give differs from the one the cells they come from give."""
    out = []
    t5 = {(n.task, n.row, n.setting, n.column): n.value for n in select(numbers, where="Table 5", kind="P",
                                                                          unit="F1 points")}

    def cells(task, row, setting=None):
        return [v for (t, r, s, _), v in t5.items() if (t, r) == (task, row) and setting in (None, s)]

    for n in select(numbers, where=("Sec 5.1", "Table 5"), unit=("count", "F1 points"), kind=("P", "calc")):
        if n.where == "Table 5" and n.column:
            continue
        values = cells(n.task, n.row, n.setting or None)
        got = (sum(v < 0 for v in values) if n.unit == "count" else
               statistics.median(values) if "median" in n.quantity else statistics.mean(values))
        if abs(got - n.value) > 0.005 + 1e-9:
            out.append(f"{n.where} {n.task} {n.row} {n.setting}: {n.written} but the cells give {got:.3f}")
    t6 = {(n.task, n.column, n.row): n.value for n in select(numbers, where="Table 6", unit="F1")}
    helped = sum(t6[t, c, "pruned"] > t6[t, c, "unpruned"] for t, c, r in t6 if r == "pruned")
    out += [f"Table 6: {n.written} cases but {helped} in the cells" for n in select(numbers, where="Table 6",
                                                                                   unit="count") if helped != n.value]
    return out


def test_the_counts_and_means_agree_with_the_cells_they_come_from(rows):
    """The paper's "14 out of 16" and "15 out of 16", the recounted means, median and 6/8 of Table 5 and Table 6's
    "all 10 cases" are what the file's cells give (to the 0.005 of two decimals)."""
    assert _recount_problems(rows) == []
    for model in ("bert-base-multilingual-cased", "xlm-roberta-base"):
        (both,) = select(rows, where="Sec 4.1", task="POS", model=model, setting="", row="", column="")
        settings = select(rows, where="Sec 4.1", task="POS", model=model, setting=("cross-lingual", "multilingual"))
        assert abs(statistics.mean(n.value for n in settings) - both.value) <= 0.005 + 1e-9


def test_a_changed_or_missing_number_is_reported(rows, doc):
    """The checks can fail: one number changed, moved, relabelled, doubled or dropped is reported."""
    ja = next(n for n in rows if n.written == "-22.29")
    at = rows.index(ja)

    def with_row(new):
        return rows[:at] + ((new,) if new else ()) + rows[at + 1:]

    assert any("'-22.20' is not on line 33" in p for p in problems(with_row(replace(ja, written="-22.20",
                                                                                    value=-22.20)), doc))
    assert any("'22.29' is not on line 33" in p for p in problems(with_row(replace(ja, written="22.29",
                                                                                   value=22.29)), doc))
    assert any("is not on line 34" in p for p in problems(with_row(replace(ja, doc_line=34)), doc))
    assert any("not gradts2021's section" in p for p in problems(with_row(replace(ja, paper="gradts2021")), doc))
    assert any("'Table 7' is not named" in p for p in problems(with_row(replace(ja, where="Table 7")), doc))
    assert any("no [calc] marker" in p for p in problems(with_row(replace(ja, kind="calc")), doc))
    recount = next(n for n in rows if n.written == "1.14")
    assert problems(tuple(replace(n, kind="P") if n is recount else n for n in rows), doc) == [
        "ma2021 Table 3 NER cross-lingual '1.14': kind 'P' but the number stands under no [P marker outside a recount"]
    assert any(p.startswith("twice:") for p in problems(rows + (ja,), doc))
    assert problems(with_row(None), doc) == ["line 33: -22.29 is neither in the file nor left out"]
    assert any("15 out of 16" in p for p in _recount_problems(with_row(replace(ja, written="+22.29", value=22.29))))
    with pytest.raises(ValueError, match="is not value"):
        replace(ja, value=-22.2)


def test_left_out_numbers_are_checked_too(rows, doc, monkeypatch):
    """A left-out number that is in the file, or not on its line, is reported; so is one left out of a full table."""
    with monkeypatch.context() as patch:
        patch.setitem(LEFT_OUT, 33, {"-22.29": "a wrong reason"})
        assert problems(rows, doc) == ["line 33: -22.29 is left out but in the file",
                                       "line 33: a table given in full has numbers left out"]
    with monkeypatch.context() as patch:
        patch.setitem(LEFT_OUT, 12, {"144": "", "999": ""})
        patch.setitem(LEFT_OUT, 7, {"136": ""})
        assert problems(rows, doc) == ["line 12: 999 is left out but not on the line",
                                       "line 7: numbers left out of a line outside the papers' sections"]


def test_the_file_is_written_the_way_the_loader_writes_rows(rows):
    """The file's rows are the rows' to_dict (value written with :g, empty out_of where none): no drift."""
    with NUMBERS.open(encoding="utf-8", newline="") as handle:
        assert [n.to_dict() for n in rows] == list(csv.DictReader(handle))
    assert {n.paper for n in rows} == set(PAPERS) - {"budhraja2021"}  # docs/papers.md has no number of 3b


def test_select_filters_and_names_what_it_knows(rows):
    own = select(rows, paper="ma2021", task="NER", where="Sec 4.2", kind=OWN, role="result")
    assert sorted(n.value for n in own if n.unit == "F1 points") == [0.31, 0.67, 0.81, 1.08]
    assert all(n.kind != "calc" for n in own)
    with pytest.raises(ValueError, match="unknown paper 'ma2012'; known: 'ma2021'"):
        select(rows, paper="ma2012")
    with pytest.raises(ValueError, match="unknown unit 'pts'"):
        replace(rows[0], unit="pts")
    with pytest.raises(ValueError, match="count '88 of 96'"):
        replace(rows[0], written="88 of 96", unit="count")


def test_the_bad_row_names_its_line_of_the_file(tmp_path):
    text = NUMBERS.read_text(encoding="utf-8").splitlines()
    text[5] = text[5].replace(",P,", ",Q,", 1)
    bad = tmp_path / "paper_numbers.csv"
    bad.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="paper_numbers.csv line 6: unknown kind 'Q'"):
        paper_numbers(bad)


def test_the_module_examples_run():
    assert doctest.testmod(module).failed == 0
