"""The docs' tables of the Findings cards, written from :mod:`headprune_core.findings.hypotheses` (one source of
truth): ``headprune findings --docs`` rewrites the marked block of each file, and a test fails when a block
differs from what the hypotheses give.

A block sits between ``<!-- cards: KIND -->`` and ``<!-- /cards -->`` (KIND: ``full`` for docs/findings.md, one
row per card with its hypothesis, rule and the paper's number; ``short`` for the README, one row per card).
"""

from __future__ import annotations

import re
from pathlib import Path

from headprune_core.base.files import write_file_atomic
from headprune_core.findings.hypotheses import HYPOTHESES, Hypothesis

BLOCK = re.compile(r"(<!-- cards: (full|short) -->\n)(.*?)(<!-- /cards -->)", re.S)
DEFAULT_FILES = ("README.md", "docs/findings.md")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def rule_text(h: Hypothesis) -> str:
    """The card's rule in a cell: what its interval is compared with."""
    r = h.rule
    parts = (f" (on {' and on '.join(h.parts)}: decided only where they agree)" if h.scales else
             f" (every part: {', '.join(h.parts)})" if h.parts else "")
    if r.kind == "superiority":
        return (f"superiority in {r.unit}: above 0 reproduces; below {r.effect:g} not; wholly below 0 the other "
                f"way{parts}")
    return f"equivalence within +-{r.margin:g} {r.unit}: inside reproduces; wholly outside the other way{parts}"


def table(kind: str = "full") -> str:
    """The Markdown table of every card (``full`` or ``short``), from the hypotheses."""
    if kind == "short":
        rows = ["| card | claim | paper | the paper's number |", "|---|---|---|---|"]
        rows += [f"| {h.id} | {_cell(h.title)} | {_cell(h.paper)} | {_cell(h.paper_effect)} |" for h in HYPOTHESES]
    else:
        rows = ["| card | paper | hypothesis tested here | statistic | rule | the paper's number |",
                "|---|---|---|---|---|---|"]
        rows += [f"| {h.id} | {_cell(h.paper)} | {_cell(h.hypothesis)} | {_cell(h.statistic)} | {_cell(rule_text(h))} "
                 f"| {_cell(h.paper_effect)} |" for h in HYPOTHESES]
    return "\n".join(rows) + "\n"


def rewritten(text: str, *, name: str = "the file") -> str:
    """``text`` with each marked block replaced by its table; a clear error when it has none."""
    if not BLOCK.search(text):
        raise ValueError(f"{name} has no cards block (a line '<!-- cards: full -->' or '<!-- cards: short -->', the "
                         "table, then '<!-- /cards -->')")
    return BLOCK.sub(lambda m: m.group(1) + table(m.group(2)) + m.group(4), text)


def write(paths=DEFAULT_FILES) -> list[Path]:
    """Rewrite the cards block of each file in ``paths``; returns the files that changed."""
    changed = []
    for path in map(Path, paths):
        if not path.is_file():
            raise FileNotFoundError(f"no such file to write the cards' table into: {path}")
        text = path.read_text(encoding="utf-8")
        new = rewritten(text, name=str(path))
        if new != text:
            write_file_atomic(path, new)
            changed.append(path)
    return changed
