"""How large the Hub data sets are, without the Hub: the split sizes recorded in ``hub_sizes.json``.

A sweep's dry run on a machine without the Hub (``headprune sweep sweeps/ma2021-ner.json --dry-run``) plans from
these: how many sentences each job reads, how much each data set downloads. Every number names the public source
it was read from (the data set's card or the ``datasets`` library's recorded infos); a number no source gave is
null. Nothing records it again yet: on a machine with the Hub, ``datasets.load_dataset_builder(ID, CONFIG)
.info.splits`` gives the sizes to check a row against.

>>> from headprune_core.data.hub import hub_spec
>>> planned_splits(hub_spec("ner", "de"), "ner")["test"]
10000
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from headprune_core.data.hub import GLUE_COLUMNS, HubSpec, glue_validation_size

TABLE = Path(__file__).with_name("hub_sizes.json")

class NotRecorded(LookupError):
    """A data set or config whose sizes the shipped table does not hold."""


@cache
def recorded_table() -> dict:
    """The shipped table: ``{"datasets": {id: {"aliases", "configs": {config: {"splits", "download_bytes",
    "dataset_bytes", "source", ...}}}}}``."""
    return json.loads(TABLE.read_text(encoding="utf-8"))


def recorded(spec: HubSpec) -> dict:
    """The table's row for ``spec``'s data set and config; :class:`NotRecorded` names what the table holds."""
    sets = recorded_table()["datasets"]
    by_alias = {a: name for name, d in sets.items() for a in d.get("aliases", ())}
    name = spec.path if spec.path in sets else by_alias.get(spec.path)
    if name is None:
        raise NotRecorded(f"no recorded sizes for the Hub data set {spec.path} (recorded: {', '.join(sets)}); "
                          "a dry run without the Hub plans only those")
    configs = sets[name]["configs"]
    if spec.config not in configs:
        raise NotRecorded(f"no recorded sizes for {name} config {spec.config!r} (recorded: {', '.join(configs)})")
    return configs[spec.config]


def planned_splits(spec: HubSpec, task: str) -> dict[str, int]:
    """Our train/validation/test sizes of ``task`` read from ``spec``, as :func:`~headprune_core.data.hub.load_hub`
    would make them: GLUE's test is its official validation (``validation_matched`` for MNLI) and its validation
    a 10% carve of train (at most :data:`GLUE_VALIDATION_MAX`); elsewhere the Hub's splits. Sentence-pair sets
    drop rows without a label: these sizes count every row (an upper bound)."""
    splits = dict(recorded(spec)["splits"])
    if task in GLUE_COLUMNS:
        train = splits["train"]
        n_val = glue_validation_size(train)
        official = "validation_matched" if task == "mnli" else "validation"
        return {"train": train - n_val, "validation": n_val, "test": splits[official]}
    if "dev" in splits and "validation" not in splits:
        splits["validation"] = splits.pop("dev")
    return {s: splits[s] for s in ("train", "validation", "test") if s in splits}


def counted_in(spec: HubSpec) -> str:
    """What ``spec``'s recorded split sizes count: ``"sentences"`` (examples), or the record's own ``unit`` where
    a row is more than one example (OntoNotes: documents of sentences, whose sentence counts no source gave)."""
    unit = recorded(spec).get("unit")
    return unit.split(" ", 1)[0] if unit else "sentences"


def download_bytes(spec: HubSpec) -> int | None:
    """What downloading ``spec``'s config costs on disk (bytes, as recorded), or None when no source gave it."""
    row = recorded(spec)
    value = row.get("download_bytes")
    return int(value) if isinstance(value, (int, float)) else None


def download_total(specs) -> tuple[int, list[str]]:
    """The bytes downloading every distinct config of ``specs`` costs, and the configs of unknown size. A data set
    whose recorded download is one archive for all its configs (``download_shared``: WikiANN's) counts once."""
    total, unknown, shared = 0, [], set()
    for spec in dict.fromkeys(specs):
        what = f"{spec.path} ({spec.config})"
        try:
            size = download_bytes(spec)
            whole = recorded_table()["datasets"].get(spec.path, {}).get("download_shared", False)
        except NotRecorded:
            size, whole = None, False
        if size is None:
            unknown.append(what)
        elif not whole or spec.path not in shared:
            total += size
            shared.add(spec.path)
    return total, unknown
