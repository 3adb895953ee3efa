"""JSON specs (study plans, GradTS plans, sweep specs) read into frozen dataclasses, with errors that name the
file and the field.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Demo:
...     name: str
...     seeds: tuple = ()
>>> spec_from_dict(Demo, {"name": "x", "seeds": [1, 2]}, where="demo.json")
Demo(name='x', seeds=(1, 2))
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def check_object(data: Any, *, where: str, what: str) -> dict:
    """``data`` if it is a JSON object, else ``ValueError`` naming ``where``."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a {what} is a JSON object of fields, got {type(data).__name__}")
    return data


def spec_from_dict(cls: type[T], data: Any, *, where: str, what: str = "plan") -> T:
    """An instance of the frozen dataclass ``cls`` from JSON data (lists become tuples). Unknown or missing
    fields, and values its ``__post_init__`` refuses, raise ``ValueError`` starting with ``where``."""
    check_object(data, where=where, what=what)
    fields = dataclasses.fields(cls)
    known = sorted(f.name for f in fields)
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"{where}: unknown {what} fields {unknown}; known: {known}")
    required = [f.name for f in fields if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING]
    missing = [name for name in required if name not in data]
    if missing:
        raise ValueError(f"{where}: missing {what} field(s) {missing}")
    try:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})
    except (ValueError, TypeError) as err:
        message = str(err)
        raise ValueError(message if message.startswith(where) else f"{where}: {message}") from None


def is_spec_file(ref: str) -> bool:
    """Whether a plan reference names a file (``*.json`` or an existing file) rather than a preset."""
    return ref.endswith(".json") or Path(ref).is_file()


def find_spec(ref: str | dict, *, presets: Mapping[str, T], folder: Path, read_file: Callable[[Path], T],
              from_dict: Callable[[dict], T], what: str = "plan") -> T:
    """The spec ``ref`` names: an object of its fields, a JSON file, a preset, or a file ``<name>.json`` in
    ``folder`` (where the dashboard keeps saved plans); else ``ValueError`` listing what is known."""
    if isinstance(ref, dict):
        return from_dict(ref)
    if is_spec_file(ref):
        return read_file(Path(ref))
    if ref in presets:
        return presets[ref]
    saved = folder / f"{ref}.json"
    if saved.is_file():
        return read_file(saved)
    files = sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []
    raise ValueError(f"unknown {what} {ref!r}; known: {', '.join([*presets, *files])} (or a JSON file)")


def spec_catalog(*, presets: Mapping[str, T], folder: Path, read_file: Callable[[Path], T]
                 ) -> tuple[dict[str, T], list[str]]:
    """Every spec a user can pick: the presets, then the JSON files in ``folder`` by the name they give
    themselves (``name (file.json)`` when a preset has that name). Returns (specs by name, one line per
    unreadable file)."""
    specs: dict[str, T] = dict(presets)
    problems = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            spec = read_file(path)
        except (OSError, ValueError, TypeError) as err:
            problems.append(f"{path.name}: {err}")
            continue
        name = getattr(spec, "name", path.stem)
        specs[name if name not in presets else f"{name} ({path.name})"] = spec
    return specs, problems


def canonical_json(data: Any) -> str:
    """Key-sorted compact JSON: equal configurations give equal strings."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
