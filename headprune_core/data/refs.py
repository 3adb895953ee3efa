"""Data references: one way to say where a task's data comes from, used by the CLI, study plans and the app.

| text | means |
|---|---|
| ``embedded`` (default) | the prepared embedded corpus, or a corpus registered with ``data add`` |
| ``hub`` | the task's own Hub data set (``ner`` -> WikiANN in that language, ``pos`` -> UD, ``sst2`` -> GLUE ...) |
| ``hub:NAME[:CONFIG]`` | a Hub data set (1) |
| ``PATH`` or ``TRAIN,VALIDATION,TEST`` | local files (CoNLL, CoNLL-U, JSONL, CSV, parquet) (2) |

(1) ``wikiann``, ``universal_dependencies``, ``glue``, ``xnli``, ``paws-x`` are converted by headprune; any other id
(or a local folder holding a copy of a Hub repository) is read by its word/tag or text/label columns (``columns=``).
(2) One file is split 80/10/10 (seed 13); three are the splits.

Whatever the reference, the data's content is fingerprinted into every cache key, so two sources never share a
result.

>>> str(parse_ref("hub:wikiann:sw"))
'hub:wikiann:sw'
>>> parse_ref("train.conll,dev.conll,test.conll").kind
'local'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headprune_core.base.files import read_json
from headprune_core.data.formats import FORMATS
from headprune_core.data.hub import UD_TASKS, UD_TREEBANKS, HubSpec, hub_spec, known_task, load_hub, load_hub_generic
from headprune_core.data.loading import TaskData, load_embedded, load_local, relabel
from headprune_core.data.massive import locale_of
from headprune_core.data.registry import SOURCES, TASKS, UnknownName

REF_KINDS = ("embedded", "hub", "local")


@dataclass(frozen=True)
class DataRef:
    """Where one task's data comes from (see the module table)."""

    kind: str = "embedded"
    name: str = ""  # hub: data set id, alias or local folder
    config: str | None = None  # hub: configuration (language, treebank, GLUE task)
    files: tuple[str, ...] = ()  # local: 1 or 3 files
    columns: tuple[str, ...] = ()  # (words, tags) or (text, label) or (text, text_pair, label)
    format: str | None = None  # local: file format when the suffix does not say

    def __post_init__(self):
        if self.kind not in REF_KINDS:
            raise ValueError(f"unknown data source kind {self.kind!r}; known: {', '.join(REF_KINDS)}")
        if self.kind == "local" and len(self.files) not in (1, 3):
            raise ValueError(f"local data: give one file (split 80/10/10) or three (train, validation, test), "
                             f"got {len(self.files)}: {', '.join(self.files)}")
        if self.columns and len(self.columns) not in (2, 3):
            raise ValueError(f"columns: give 2 (words,tags or text,label) or 3 (text,text_pair,label), got "
                             f"{','.join(self.columns)}")
        if self.format is not None:
            if self.format not in FORMATS:
                raise ValueError(f"unknown file format {self.format!r}; known: {', '.join(FORMATS)}")

    def __str__(self) -> str:
        if self.kind == "embedded":
            return "embedded"
        if self.kind == "hub":
            return "hub" + (f":{self.name}" if self.name else "") + (f":{self.config}" if self.config else "")
        return ",".join(self.files)

    @property
    def is_embedded(self) -> bool:
        return self.kind == "embedded"

    def to_json(self) -> str | dict:
        """The reference as a plan file holds it: its text, or an object when it has columns or a format."""
        if not self.columns and not self.format:
            return str(self)
        out: dict[str, Any] = {"data": str(self)}
        if self.columns:
            out["columns"] = list(self.columns)
        if self.format:
            out["format"] = self.format
        return out


EMBEDDED = DataRef()


def parse_ref(value, *, columns=None, format: str | None = None, base: str | Path | None = None) -> DataRef:
    """A :class:`DataRef` from its text (see the module table), a plan's object form
    ``{"data": TEXT, "columns": [...], "format": ...}``, or a DataRef. Relative local paths are taken
    relative to ``base`` (a plan file's folder) when given. Raises ``ValueError`` saying what is wrong."""
    if isinstance(value, DataRef):
        return value
    if isinstance(value, dict):
        unknown = set(value) - {"data", "columns", "format"}
        if unknown or "data" not in value:
            raise ValueError(f"a data source object has 'data' (and optionally 'columns', 'format'), got "
                             f"{sorted(value)}")
        return parse_ref(value["data"], columns=value.get("columns"), format=value.get("format"), base=base)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a data source is a text such as 'embedded', 'hub:wikiann:sw' or 'train.conll', "
                         f"got {value!r}")
    text = value.strip()
    cols = _columns(columns)
    if text == "embedded":
        if cols or format:
            raise ValueError("the embedded corpora take no columns or format")
        return EMBEDDED
    if text == "hub" or text.startswith("hub:"):
        rest = text[4:]
        name, _, config = rest.partition(":") if not rest.startswith(("/", ".", "~")) else _split_path(rest)
        return DataRef("hub", name, config or None, columns=cols)
    files = tuple(p.strip() for p in text.split(",") if p.strip())
    if base is not None:
        files = tuple(str(Path(base) / f) if not Path(f).expanduser().is_absolute() else f for f in files)
    files = tuple(str(Path(f).expanduser()) for f in files)
    return DataRef("local", files=files, columns=cols, format=format)


def _split_path(rest: str) -> tuple[str, str, str]:
    """``/data/wikiann:sw`` -> (folder, ":", config); a local folder may itself hold no colon."""
    folder, sep, config = rest.rpartition(":")
    if not sep or "/" in config:
        return rest, "", ""
    return folder, sep, config


def _columns(columns) -> tuple[str, ...]:
    if columns is None:
        return ()
    if isinstance(columns, str):
        columns = columns.split(",")
    return tuple(str(c).strip() for c in columns if str(c).strip())


def check_ref(ref: DataRef) -> None:
    """Check what can be checked before any work: local files exist."""
    if ref.kind == "local":
        for f in ref.files:
            if not Path(f).is_file():
                raise FileNotFoundError(f"no such data file: {f}")


def load_ref(ref: DataRef | str, task: str, lang: str, *, labels: list[str] | None = None):
    """The :class:`~headprune_core.data.loading.TaskData` of ``task`` in ``lang`` from ``ref``.

    ``labels`` fixes the label list and its order (a fine-tuned checkpoint's labels); a tag outside it is an
    error naming the file and line.
    """
    ref = parse_ref(ref)
    if ref.kind == "embedded":
        data = load_embedded(task, lang)
        return relabel(data, labels) if labels else data
    if ref.kind == "local":
        check_ref(ref)
        info = TASKS.get(task)
        keep = labels or (list(info.labels) if info is not None and info.labels else None)
        data = load_local(task, lang, list(ref.files), format=ref.format, labels=keep,
                          **({"columns": ref.columns} if ref.columns else {}))
        data.meta["ref"] = str(ref)
        return data
    if not ref.name:  # the task's own Hub data set
        data = load_hub(task, lang, config=ref.config)
    else:
        builtin = known_task(ref.name, ref.config, task)
        if builtin is not None and not ref.columns:
            data = load_hub(builtin, lang, path=ref.name, config=ref.config or _default_config(builtin, lang))
            data.task = task
        else:
            data = load_hub_generic(ref.name, ref.config, task, lang, columns=ref.columns, labels=labels)
    data.meta["ref"] = str(ref)
    return relabel(data, labels) if labels else data


def hub_spec_of(ref: DataRef | str, task: str, lang: str) -> HubSpec | None:
    """The Hub data set and config ``ref`` reads for ``task`` in ``lang`` (None: not a Hub data set with a built-in
    converter, e.g. embedded or local data, or a generic Hub set read by its columns)."""
    ref = parse_ref(ref)
    if ref.kind != "hub":
        return None
    if not ref.name:  # the task's own data set, as load_hub reads it
        spec = hub_spec(task, lang, treebank=ref.config if task in UD_TASKS else None)
        return HubSpec.of(spec.path, ref.config) if ref.config else spec
    builtin = known_task(ref.name, ref.config, task)
    if builtin is None or ref.columns:
        return None
    return HubSpec.of(ref.name, ref.config or _default_config(builtin, lang))


def _default_config(task: str, lang: str) -> str | None:
    """The config a built-in Hub converter uses for ``lang`` when the reference names none."""
    if task in ("ner", "xnli", "paws-x"):
        return lang
    if task in UD_TASKS:
        return UD_TREEBANKS.get(lang)
    if task == "slots":
        return locale_of(lang)
    return task  # GLUE: the config is the task


def ref_for(sources: Mapping[str, Any], task: str, lang: str):
    """The source ``sources`` names for ``task`` in ``lang``: its ``task/lang`` entry, else its ``task`` entry,
    else None."""
    return sources.get(f"{task}/{lang}") or sources.get(task)


def names_task(sources: Mapping[str, Any], task: str) -> bool:
    """Whether ``sources`` names a source for ``task`` (in any language)."""
    return any(k == task or k.startswith(f"{task}/") for k in sources)


def parse_sources(sources: Mapping[str, Any] | None, *, where: str = "sources",
                  base: str | Path | None = None) -> dict[str, DataRef]:
    """``{"task" or "task/lang": reference}`` -> ``{key: DataRef}``; bad keys or references fail naming
    ``where``."""
    if sources is None:
        return {}
    if not isinstance(sources, Mapping):
        raise ValueError(f"{where}: data sources are an object {{task or task/lang: source}}, got "
                         f"{type(sources).__name__}")
    out = {}
    for key, value in sources.items():
        task, _, lang = str(key).partition("/")
        if not task or "/" in lang:
            raise ValueError(f"{where}: a data source key is 'task' or 'task/lang', got {key!r}")
        try:
            out[str(key)] = parse_ref(value, base=base)
        except ValueError as err:
            raise ValueError(f"{where}: {key}: {err}") from None
    return out


def read_plan_file(path: str | Path, what: str) -> dict:
    """A plan file's JSON with its local data ``sources`` made absolute (relative to the plan's folder), so the
    plan reads the same files from wherever it is run."""
    data = read_json(path, f"{what} (JSON)")
    if isinstance(data, dict) and isinstance(data.get("sources"), dict):
        refs = parse_sources(data["sources"], where=str(path), base=Path(path).resolve().parent)
        data = {**data, "sources": {k: v.to_json() for k, v in refs.items()}}
    return data


def load_task(task: str, lang: str, *, source: str = "embedded", **kw) -> TaskData:
    """Load ``task`` in language ``lang`` from ``source`` ("embedded", "hub" or "local").

    Keyword options go to the source's loader: ``load_local`` (files=, format=, labels=, kind=) or
    ``hub.load_hub`` (data_files=, treebank=, cache_dir=, revision=).

    >>> # load_task("pos", "en").dataset["train"].features["tags"]
    """
    if source not in SOURCES:
        raise UnknownName(f"unknown source {source!r}; known: {', '.join(SOURCES)}")
    if source == "local":
        if "files" not in kw:
            raise ValueError("source='local' needs files={'train': path, 'validation': path, 'test': path}")
        return load_local(task, lang, **kw)
    if kw and source == "embedded":
        raise TypeError(f"the embedded source takes no options, got {sorted(kw)}")
    if source == "embedded":
        return load_embedded(task, lang)
    return load_hub(task, lang, **kw)
