"""A benchmark section's result (a table, its goals and notes), saved as JSON and rendered as Markdown.

Each section is measured by its own run and keeps the command that made it, so ``RESULTS.md`` can gather sections
measured at different times without mixing their numbers.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import re
from pathlib import Path


@dataclasses.dataclass
class Goal:
    """A goal of the issue and what was measured against it; ``met`` is None when it was not measured."""
    what: str
    target: str
    measured: str
    met: bool | None


@dataclasses.dataclass
class Section:
    name: str
    title: str
    columns: list[str]
    rows: list[list]
    goals: list[Goal] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    command: str = ""
    machine: str = ""
    when: str = ""
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Section:
        data = dict(data)
        data["goals"] = [Goal(**g) for g in data.get("goals", [])]
        return cls(**data)


def machine() -> str:
    """CPU model, cores, threads and library versions: what the numbers were measured on."""
    import torch
    import transformers

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = f", GPU {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ", no GPU"
    return (f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__} ({torch.get_num_threads()} threads), "
            f"transformers {transformers.__version__}, Python {platform.python_version()}{gpu}")


def stamp(section: Section, command: str, seconds: float) -> Section:
    section.command, section.seconds = command, seconds
    section.machine = machine()
    section.when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return section


def save(section: Section, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{section.name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(section.to_dict(), indent=1, default=str))
    tmp.replace(path)
    return path


def load_all(folder: Path, order: list[str]) -> list[Section]:
    found = {p.stem: Section.from_dict(json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))}
    return [found[n] for n in order if n in found]


def _cell(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "**no**"
    if isinstance(v, float):
        if v != v:
            return "-"
        return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
    return str(v)


def table(columns: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def render_section(s: Section) -> str:
    out = [f"## {s.title}", "", f"Measured {s.when} with `{s.command}` ({s.seconds:.0f} s) on {s.machine}.", "",
           table(s.columns, s.rows), ""]
    if s.goals:
        out += ["Goals:", "", table(["goal", "target", "measured", "met"],
                                    [[g.what, g.target, g.measured, "-" if g.met is None else g.met]
                                     for g in s.goals]), ""]
    out += [f"- {n}" for n in s.notes]
    return "\n".join(out).rstrip() + "\n"


def _blocks(text: str) -> list[tuple[str, str]]:
    """(title, text) of each ``## `` section of a Markdown file, in order (the text before the first is left out)."""
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    return [(p.split("\n", 1)[0].strip(), "## " + p) for p in parts]


WRITTEN = re.compile(r"\A## .*\n\nMeasured \d{4}-\d\d-\d\d \d\d:\d\d UTC with `python -m bench")
"""The opening of a section :func:`render_section` writes (what tells it from a section measured by hand)."""


def render(sections: list[Section], header: str, *, kept: str = "") -> str:
    """The Markdown file: ``header``, then every section. What ``kept`` (the file as it was) holds that no
    section writes, the parts measured by hand, stays: a ``### `` subsection of a written section after that
    section (after the last one if its section is gone), and a ``## `` section of its own at the end, in order."""
    titles = {s.title for s in sections}
    tails: dict[str, str] = {}
    hand: list[str] = []
    for title, block in _blocks(kept):
        if title in titles or WRITTEN.match(block):
            at = re.search(r"^### ", block, flags=re.M)
            if at:
                tails[title] = block[at.start():].rstrip() + "\n"
        else:
            hand.append(block.rstrip() + "\n")
    out = []
    for s in sections:
        out.append(render_section(s) + ("\n" + tails.pop(s.title) if s.title in tails else ""))
    out += list(tails.values()) + hand
    return header.rstrip() + "\n\n" + "\n".join(out)
