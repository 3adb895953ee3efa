"""The papers' own numbers as data: one row per number that docs/papers.md records, read from ``paper_numbers.csv``.

Each row (:class:`PaperNumber`) says which paper, where in it (a table, figure, section, footnote, the abstract or
the authors' repository, as docs/papers.md names it), the cell (task, model, setting, row, column), what the
number is (``quantity``, ``unit``), its value and how docs/papers.md writes it (``written``: same digits, sign and
decimals, e.g. ``-22.29`` or ``88 out of 96``), where docs/papers.md got it (``kind``, its legend: ``P`` the
paper's text, ``A`` the abstract, ``R`` the authors' repository, ``2nd`` third-party notes quoting the paper,
``calc`` a recomputation from the paper's tables) and the line of docs/papers.md that holds it (``doc_line``).
tests/unit/test_paper_numbers.py checks every row against that line, and every number of docs/papers.md's paper
sections against the rows: each is here or on the test's list of numbers left out, with the reason.

Choices:

- **Recomputed numbers are kept, marked ``kind="calc"``.** Some are the only per-setting numbers docs/papers.md
  has (Ma et al.'s slot-filling average gains; the text does not state them), and some disagree with the paper's
  text (Ma et al.'s NER averages: 0.81 in the text, 1.14 recomputed from Table 3), which a comparison should be
  able to show. A view of the paper's own numbers leaves them out with ``kind=OWN``.
- **Protocol numbers are rows too, with ``role="protocol"``** (epochs, learning rates, batch size, sequence
  length, the k limit, seeds, data shares): a paper plan can be checked against them, and a table of results
  selects ``role="result"``.
- **Absent, not invented:** what docs/papers.md marks NF, what a paper gives only in a figure that docs/papers.md
  does not quote (Figure 1's cells beyond its ranges, Figs 2-3's curves), the cells of Ma et al.'s Tables 2-4 it
  does not quote, numbers that are names (UD v2.7, SST-2, MTL-5), docs/papers.md's own arithmetic and glosses, and
  an AI-generated note's layer range (He & Choi "5-8"). Budhraja et al. 2021 has no row: docs/papers.md records
  no number of it.

>>> from headprune_core.findings.paper_numbers import select
>>> ja = select(paper="ma2021", where="Table 5", task="POS", setting="cross-lingual", column="EN->JA")
>>> [(n.row, n.value, n.unit) for n in ja]
[('Max-Pruning', -22.29, 'F1 points'), ('Rand-Pruning', -1.23, 'F1 points')]
>>> [n.written for n in select(paper="michel2019", unit="count")]
['8 (out of 96)']
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Literal, get_args

NUMBERS = Path(__file__).with_name("paper_numbers.csv")
"""The data file, shipped in the package (pyproject's package-data)."""

Paper = Literal["ma2021", "gradts2021", "budhraja2020", "budhraja2021", "hechoi2021", "michel2019"]
Kind = Literal["P", "A", "R", "2nd", "calc"]
Role = Literal["result", "protocol"]
Setting = Literal["cross-lingual", "multilingual", "monolingual", ""]
Unit = Literal["F1", "F1 points", "BLEU points", "accuracy", "%", "rho", "tau", "p", "count", "heads", "epochs",
               "learning rate", "batch size", "tokens", "seed", "runs", "coefficient", "gate"]
MODELS = ("bert-base-multilingual-cased", "xlm-roberta-base", "bert-base-cased", "bert-base", "transformer-large", "")
"""The models the rows name ("" where a number is about every model of the paper, or none)."""

OWN: tuple[str, ...] = ("P", "A", "R", "2nd")
"""The kinds that are the paper's own numbers (everything but docs/papers.md's recomputations)."""

PAPERS: dict[str, str] = {
    "ma2021": "Contributions of Transformer Attention Heads in Multi- and Cross-lingual Tasks",
    "gradts2021": "GradTS",
    "budhraja2020": "On the weak link between importance and prunability of attention heads",
    "budhraja2021": "On the prunability of attention heads in multilingual BERT",
    "hechoi2021": "The Stem Cell Hypothesis",
    "michel2019": "Are Sixteen Heads Really Better than One?",
}
"""Each paper's id and its title as docs/papers.md's heading gives it."""

COUNT = re.compile(r"^(\d+)(?: out of (\d+)|/(\d+)| \(out of (\d+)\))?$")
"""How a count is written: ``88``, ``88 out of 96``, ``90/96`` or ``8 (out of 96)``."""


def _known(name: str, value, known: Iterable) -> None:
    known = tuple(known)
    if value not in known:
        raise ValueError(f"unknown {name} {value!r}; known: {', '.join(repr(k) for k in known)}")


@dataclass(frozen=True)
class PaperNumber:
    """One number a paper reports, as docs/papers.md records it at line ``doc_line``."""

    paper: Paper
    where: str  # "Table 5", "Figure 1", "Sec 4.1", "Footnote 6", "abstract", "repository" ("" where unnamed)
    task: str
    model: str
    setting: Setting
    row: str
    column: str
    quantity: str
    written: str  # as docs/papers.md writes it: "-22.29", "+0.88", "5e-5", "88 out of 96"
    value: float
    unit: Unit
    out_of: int | None  # a count's total ("88 out of 96": 96)
    kind: Kind
    role: Role
    doc_line: int

    def __post_init__(self):
        _known("paper", self.paper, PAPERS)
        _known("kind", self.kind, get_args(Kind))
        _known("role", self.role, get_args(Role))
        _known("setting", self.setting, get_args(Setting))
        _known("unit", self.unit, get_args(Unit))
        _known("model", self.model, MODELS)
        if not self.quantity or self.doc_line < 1:
            raise ValueError(f"{self.written!r}: a quantity and a line of docs/papers.md are needed")
        value, out_of = written_value(self.written, self.unit)
        if value != self.value or (out_of is not None and out_of != self.out_of):
            raise ValueError(f"{self.written!r} is not value {self.value:g}" +
                             (f" out of {self.out_of}" if self.out_of is not None else ""))
        if self.out_of is not None and self.unit != "count":
            raise ValueError(f"{self.written!r}: only a count has a total (out_of)")

    def to_dict(self) -> dict[str, str]:
        """The row as the file holds it (every field a string)."""
        out = {k: "" if v is None else str(v) for k, v in asdict(self).items()}
        out["value"] = f"{self.value:g}"
        return out

    @classmethod
    def from_dict(cls, row: dict[str, str]) -> PaperNumber:
        """A row of the file; a clear error when a field is missing or malformed."""
        names = [f.name for f in fields(cls)]
        if missing := [n for n in names if n not in row]:
            raise ValueError(f"missing fields {missing}")
        data = {n: row[n] for n in names}
        return cls(**{**data, "value": float(data["value"]), "doc_line": int(data["doc_line"]),
                      "out_of": int(data["out_of"]) if data["out_of"] else None})


def written_value(written: str, unit: str) -> tuple[float, int | None]:
    """The value (and a count's total) that ``written`` gives: ``("88 out of 96", "count")`` is ``(88, 96)``."""
    if unit == "count":
        match = COUNT.match(written)
        if not match:
            raise ValueError(f"count {written!r}: write it as 88, 88 out of 96, 88/96 or 88 (out of 96)")
        total = next((g for g in match.groups()[1:] if g), None)
        return float(match.group(1)), int(total) if total else None
    try:
        return float(written), None
    except ValueError:
        raise ValueError(f"{written!r} is not a number as docs/papers.md writes one (-22.29, +0.88, 5e-5)") from None


def paper_numbers(path: Path | str = NUMBERS) -> tuple[PaperNumber, ...]:
    """Every row of the data file, in its order; an error names the file's line of a bad row."""
    path = Path(path)
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    out = []
    for number, row in enumerate(rows, 2):
        try:
            out.append(PaperNumber.from_dict(row))
        except (ValueError, TypeError) as err:
            raise ValueError(f"{path.name} line {number}: {err}") from None
    return tuple(out)


def _matches(value, wanted) -> bool:
    return wanted is None or (value == wanted if isinstance(wanted, str) else value in wanted)


def select(numbers: Iterable[PaperNumber] | None = None, *, paper=None, where=None, task=None, model=None,
           setting=None, row=None, column=None, unit=None, kind=None, role=None) -> tuple[PaperNumber, ...]:
    """The rows of ``numbers`` (default: the data file's) whose fields equal each given filter; a filter may be one
    value or a collection of them (``kind=OWN``). An unknown paper, kind, role, setting or unit is an error.

    >>> [n.value for n in select(paper="gradts2021", role="result")]
    [0.33, 17.93, 21.32]
    """
    for name, wanted, known in (("paper", paper, PAPERS), ("kind", kind, get_args(Kind)),
                                ("role", role, get_args(Role)), ("setting", setting, get_args(Setting)),
                                ("unit", unit, get_args(Unit))):
        for value in () if wanted is None else [wanted] if isinstance(wanted, str) else wanted:
            _known(name, value, known)
    filters = {"paper": paper, "where": where, "task": task, "model": model, "setting": setting, "row": row,
               "column": column, "unit": unit, "kind": kind, "role": role}
    numbers = paper_numbers() if numbers is None else numbers
    return tuple(n for n in numbers if all(_matches(getattr(n, k), v) for k, v in filters.items()))
