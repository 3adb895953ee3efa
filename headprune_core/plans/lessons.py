"""Lessons: a teacher's path through the dashboard's live views, step by step, with notes.

A lesson is a Markdown file, readable and editable by hand::

    ---
    title: Attention heads across languages
    plan: demo
    description: One line on what the class will see.
    ---

    ## One language's heads
    view: importance?task=pos&lang=de

    The teacher's notes for this step, in Markdown (shown above the view).

    ## Taking heads away
    view: prune?strategy=importance&k=36

    ...

The front matter holds ``title`` and ``plan`` (the study plan the lesson needs; ``description`` is optional).
Each ``## `` heading starts a step; its first line ``view: PAGE?CHOICES`` names the page and the choices its link
carries (the part of a view's "Copy link" after the host). The notes follow. Lessons live in ``<cache>/lessons``
and in the package (presets, :data:`PRESET_DIR`); one in the cache shadows a preset of the same name.

Reading never raises for one bad step: a step whose view cannot be read keeps its notes and says why
(:attr:`Step.problem`); a file that cannot be read at all is a :class:`LessonError` naming the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from headprune_core.base.cache import cache_root

PRESET_DIR = Path(__file__).with_name("lessons")
MAX_BYTES = 256 * 1024  # a lesson is notes and links: a bigger file is not one
PAGES = ("home", "importance", "prune", "retrain", "inspector", "task_affinity", "shared_heads", "findings", "runs",
         "add_data")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class LessonError(ValueError):
    """A lesson file that cannot be read (named, with why)."""


@dataclass(frozen=True)
class Step:
    title: str
    page: str
    params: tuple[tuple[str, str], ...]
    notes: str
    problem: str = ""  # why this step's view cannot be shown (empty: it can)

    def query(self) -> str:
        """The view's link parameters, as a query string."""
        return urlencode(list(self.params))


@dataclass(frozen=True)
class Lesson:
    name: str
    title: str
    plan: str
    description: str
    steps: tuple[Step, ...]
    source: str = ""  # the file it was read from
    problems: tuple[str, ...] = field(default=())

    def step_link(self, k: int) -> str:
        """The link (path and query, no host) that opens step ``k`` (1-based) of this lesson."""
        step = self.steps[k - 1]
        return f"/{step.page}?{urlencode([*step.params, ('lesson', self.name), ('step', str(k))])}"


def lessons_dir(cache: Path | None = None) -> Path:
    """``<cache>/lessons``: the teacher's own lessons."""
    return (cache if cache is not None else cache_root()) / "lessons"


def parse_view(text: str) -> tuple[str, tuple[tuple[str, str], ...], str]:
    """``"prune?strategy=random&k=3"`` -> (page, params, problem): the problem is empty when the view is one
    this dashboard has."""
    parts = urlsplit(text.strip())
    page = parts.path.strip("/") or "home"
    params = tuple((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                   if k not in ("lesson", "step"))
    if parts.scheme or parts.netloc:
        page = parts.path.strip("/") or "home"  # a full link pasted: keep its page and choices, not its host
    if page not in PAGES:
        return page, params, f"unknown page {page!r} (pages: {', '.join(PAGES)})"
    return page, params, ""


def parse(text: str, name: str, source: str = "") -> Lesson:
    """A lesson from its Markdown text; :class:`LessonError` when it has no front matter, title or step."""
    where = source or name
    match = re.match(r"\A---\s*\n(.*?)\n---\s*\n(.*)\Z", text, re.S)
    if not match:
        raise LessonError(f"{where}: no front matter (a first block between '---' lines with title and plan)")
    meta = {}
    for line in match.group(1).splitlines():
        if line.strip():
            key, sep, value = line.partition(":")
            if not sep:
                raise LessonError(f"{where}: front matter line {line.strip()!r} is not 'key: value'")
            meta[key.strip().lower()] = value.strip()
    if not meta.get("title"):
        raise LessonError(f"{where}: the front matter has no title")
    chunks = re.split(r"^## +", match.group(2), flags=re.M)[1:]
    if not chunks:
        raise LessonError(f"{where}: no steps (each step starts with a '## ' heading)")
    steps, problems = [], []
    for k, chunk in enumerate(chunks, 1):
        title, _, body = chunk.partition("\n")
        lines = body.strip("\n").splitlines()
        view = lines[0] if lines else ""
        if not view.lower().startswith("view:"):
            page, params, problem = "home", (), "its first line is not 'view: PAGE?CHOICES'"
            notes = body.strip()
        else:
            page, params, problem = parse_view(view.partition(":")[2])
            notes = "\n".join(lines[1:]).strip()
        if problem:
            problems.append(f"step {k} ({title.strip()}): {problem}")
        steps.append(Step(title.strip() or f"Step {k}", page, params, notes, problem))
    return Lesson(name, meta["title"], meta.get("plan", ""), meta.get("description", ""), tuple(steps), source,
                  tuple(problems))


def read(path: Path) -> Lesson:
    """The lesson in ``path``: :class:`LessonError` (naming the file) when it is too big, not text or not a
    lesson."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise LessonError(f"{path}: {size / 1e6:.1f} MB, too big for a lesson (at most {MAX_BYTES // 1024} kB)")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise LessonError(f"{path}: not UTF-8 text") from None
    except OSError as err:
        raise LessonError(f"{path}: cannot be read ({err.strerror or err})") from None
    return parse(text, path.stem, str(path))


def available(cache: Path | None = None) -> tuple[dict[str, Lesson], list[str]]:
    """Every lesson by name (the cache's shadow the presets') and a line for each file that cannot be read."""
    found, problems = {}, []
    for folder in (PRESET_DIR, lessons_dir(cache)):
        for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
            if not NAME.match(path.stem):
                problems.append(f"{path}: a lesson's file name is letters, digits, - _ . (at most 64)")
                continue
            try:
                found[path.stem] = read(path)
            except LessonError as err:
                problems.append(str(err))
    return found, problems
