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

Writing (:func:`add_step`, :func:`save`, :func:`move_step`, :func:`drop_step`, :func:`delete`) goes to
``<cache>/lessons`` through an atomic write, and never replaces another lesson unless asked (``replace=True``).
Changing a shipped lesson saves the teacher's copy in the cache, which shadows it; the package is not touched.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from headprune_core.base.cache import cache_root
from headprune_core.base.files import write_file_atomic

PRESET_DIR = Path(__file__).with_name("lessons")
MAX_BYTES = 256 * 1024  # a lesson is notes and links: a bigger file is not one
LESSON_PARAMS = ("lesson", "step", "present")  # a lesson's position and the display, not the view's choices
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


def parse_view(text: str, pages: Collection[str] | None = None) -> tuple[str, tuple[tuple[str, str], ...], str]:
    """``"prune?strategy=random&k=3"`` -> (page, params, problem). ``pages``: the dashboard's page names, which
    the app hands in (the core keeps no list of them). The page is the last part of the path that names one, so a
    link copied from a server under a sub-path (``https://uni.example/course/prune?k=3``) reads as ``prune``, and
    a link whose path names none (``https://uni.example/course/``) is the server's first page, ``home``. A view
    written as a page name alone (``nowhere?k=3``) that is not one of ``pages`` has a problem that says so; with
    ``pages`` None nothing is checked and the last part of the path is the page."""
    parts = urlsplit(text.strip())
    params = tuple((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
                   if k not in LESSON_PARAMS)
    names = [part for part in parts.path.split("/") if part]  # a full link pasted: its path, not its host
    if pages is None:
        return (names[-1] if names else "home"), params, ""
    page = next((name for name in reversed(names) if name in pages), None)
    if page is not None:
        return page, params, ""
    if parts.scheme or parts.netloc or parts.path.startswith("/") or not names:
        return "home", params, ""  # an address of the server itself: its base path (a sub-path) is its first page
    return "/".join(names), params, f"unknown page {'/'.join(names)!r} (pages: {', '.join(pages)})"


def parse(text: str, name: str, source: str = "", *, pages: Collection[str] | None = None) -> Lesson:
    """A lesson from its Markdown text; :class:`LessonError` when it has no front matter, title or step. A step
    whose view is not one of ``pages`` (the app's; None: not checked) has a problem that says so."""
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
            page, params, problem = parse_view(view.partition(":")[2], pages)
            notes = "\n".join(lines[1:]).strip()
        if problem:
            problems.append(f"step {k} ({title.strip()}): {problem}")
        steps.append(Step(title.strip() or f"Step {k}", page, params, notes, problem))
    return Lesson(name, meta["title"], meta.get("plan", ""), meta.get("description", ""), tuple(steps), source,
                  tuple(problems))


def read(path: Path, *, pages: Collection[str] | None = None) -> Lesson:
    """The lesson in ``path``: :class:`LessonError` (naming the file) when it is too big, not text or not a
    lesson; its steps' views checked against ``pages`` (:func:`parse`)."""
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
    return parse(text, path.stem, str(path), pages=pages)


def lesson_files(cache: Path | None = None) -> list[Path]:
    """Every lesson file: the presets', then the cache's (so that a later one of the same name shadows)."""
    return [path for folder in (PRESET_DIR, lessons_dir(cache))
            for path in (sorted(folder.glob("*.md")) if folder.is_dir() else [])]


def available(cache: Path | None = None, *, pages: Collection[str] | None = None
              ) -> tuple[dict[str, Lesson], list[str]]:
    """Every lesson by name (the cache's shadow the presets') and a line for each file that cannot be read; the
    steps' views checked against ``pages`` (:func:`parse`)."""
    found, problems = {}, []
    for path in lesson_files(cache):
        if not NAME.match(path.stem):
            problems.append(f"{path}: a lesson's file name is letters, digits, - _ . (at most 64)")
            continue
        try:
            found[path.stem] = read(path, pages=pages)
        except LessonError as err:
            problems.append(str(err))
    return found, problems


# --- writing -----------------------------------------------------------------------------------------------------

def _line(text: str) -> str:
    """One line of a heading or the front matter (newlines become spaces)."""
    return " ".join(str(text).split())


def render(lesson: Lesson) -> str:
    """The lesson as its Markdown file (what :func:`parse` reads back)."""
    lines = ["---", f"title: {_line(lesson.title)}", f"plan: {_line(lesson.plan)}"]
    if lesson.description:
        lines.append(f"description: {_line(lesson.description)}")
    lines += ["---", ""]
    for step in lesson.steps:
        view = step.page + (f"?{step.query()}" if step.params else "")
        lines += [f"## {_line(step.title)}", f"view: {view}", ""]
        if step.notes.strip():
            lines += [step.notes.strip(), ""]
    return "\n".join(lines)


def make_step(title: str, link: str, notes: str = "", *, pages: Collection[str] | None = None) -> Step:
    """A step showing the view of ``link`` (a full "Copy link" address, or ``PAGE?CHOICES``), with ``notes``;
    :class:`LessonError` when the page is not one of ``pages`` (the dashboard's) or a notes line would start a
    new step."""
    page, params, problem = parse_view(link, pages)
    if problem:
        raise LessonError(f"this view cannot be a step: {problem}")
    bad = [line for line in notes.splitlines() if re.match(r"^## ", line)]
    if bad:
        raise LessonError(f"a notes line starts with '## ', which starts a new step ({bad[0]!r}): use '### '")
    return Step(_line(title) or page, page, params, notes.strip())


def lesson_path(name: str, cache: Path | None = None) -> Path:
    """Where the teacher's lesson ``name`` is written; :class:`LessonError` for a name that is not a file name."""
    if not NAME.match(name or ""):
        raise LessonError(f"lesson name {name!r}: use letters, digits, - _ . (at most 64, no leading dot)")
    return lessons_dir(cache) / f"{name}.md"


def save(lesson: Lesson, cache: Path | None = None, *, replace_existing: bool = False) -> Path:
    """Write ``lesson`` to ``<cache>/lessons/NAME.md`` atomically; :class:`LessonError` if a lesson of that name
    is already in the cache and ``replace_existing`` is false, or if it has no step or is too big."""
    path = lesson_path(lesson.name, cache)
    if not lesson.steps:
        raise LessonError(f"{path}: a lesson needs at least one step (delete the lesson instead)")
    if path.exists() and not replace_existing:
        raise LessonError(f"{path}: a lesson of this name exists; add to it, pick another name, or replace it")
    text = render(lesson)
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise LessonError(f"{path}: too big for a lesson (at most {MAX_BYTES // 1024} kB)")
    return write_file_atomic(path, text)


def add_step(name: str, step: Step, cache: Path | None = None, *, title: str = "", plan: str = "",
             new: bool = False, replace_existing: bool = False) -> tuple[Lesson, Path]:
    """Append ``step`` to lesson ``name`` (a new one with ``title`` and ``plan`` when ``new``; a shipped one is
    saved as the cache's copy). Returns the lesson as written and its file."""
    if new:
        if name in available(cache)[0] and not replace_existing:
            raise LessonError(f"lesson {name!r} exists; add to it, pick another name, or replace it")
        lesson = Lesson(name, _line(title) or name, _line(plan), "", (step,))
        return lesson, save(lesson, cache, replace_existing=True)
    found = available(cache)[0]
    if name not in found:
        raise LessonError(f"no lesson {name!r} here (lessons: {', '.join(found) or 'none'})")
    lesson = replace(found[name], steps=(*found[name].steps, step))
    return lesson, save(lesson, cache, replace_existing=True)


def move_step(lesson: Lesson, k: int, by: int) -> Lesson:
    """The lesson with step ``k`` (1-based) moved ``by`` places (-1: up), kept within the lesson."""
    steps = list(lesson.steps)
    to = min(max(k - 1 + by, 0), len(steps) - 1)
    steps.insert(to, steps.pop(k - 1))
    return replace(lesson, steps=tuple(steps))


def drop_step(lesson: Lesson, k: int) -> Lesson:
    """The lesson without step ``k`` (1-based)."""
    return replace(lesson, steps=lesson.steps[:k - 1] + lesson.steps[k:])


def is_preset(lesson: Lesson) -> bool:
    """Whether ``lesson`` was read from the package (a shipped lesson) rather than the cache."""
    return bool(lesson.source) and Path(lesson.source).parent == PRESET_DIR


def delete(name: str, cache: Path | None = None) -> Path:
    """Delete the teacher's lesson ``name`` from the cache (a shipped one cannot be deleted)."""
    path = lesson_path(name, cache)
    if not path.exists():
        raise LessonError(f"{path}: no such lesson in the cache (shipped lessons cannot be deleted)")
    path.unlink()
    return path
