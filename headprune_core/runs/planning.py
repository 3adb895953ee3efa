"""Planning a study without the Hub: the jobs of a paper's plan, their sizes and keys' shapes, from shipped tables.

A sweep's ``--dry-run`` builds every job its plans would run (:func:`~headprune_core.plans.plan.plan_jobs`). That
needs each split's size, each model's layers and heads, and fingerprints of the model and of the rows each job
reads, so on a machine without the Hub (or before downloading gigabytes to learn what a plan costs) a Hub model or
data set stopped the dry run before it could answer. :class:`PlannedStudy` is a
:class:`~headprune_core.runs.study.Study` that takes what it cannot read from the recorded tables
(:mod:`headprune_core.data.hub_sizes`, :mod:`headprune_core.encoders.known`), so the job list and its counts are
the real ones; what it cannot know is whether a job is cached, so every job counts as to do. It computes nothing:
loading its model or data raises :class:`PlanningOnly`, so no planned key ever reaches the store.

>>> # graph = build_graph(spec, planning=True); print(format_dry_run(dry_run(graph)))
"""

from __future__ import annotations

import hashlib

from headprune_core.base.choices import HELDOUT
from headprune_core.base.specs import canonical_json
from headprune_core.data.hub import HubUnavailable
from headprune_core.data.hub_sizes import NotRecorded, counted_in, planned_splits
from headprune_core.data.refs import hub_spec_of
from headprune_core.encoders.known import known_config
from headprune_core.encoders.models import ModelLoadError, resolve
from headprune_core.runs.config import train_units
from headprune_core.runs.store import PLANNED
from headprune_core.runs.study import Study


class PlanningOnly(RuntimeError):
    """A planning study was asked to load or compute: it only plans."""


class PlannedStudy(Study):
    """A Study whose Hub data and Hub model come from the shipped tables when they cannot be read (see the module).
    ``planned`` holds what came from the tables: (how, model or data set, config or None)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.planned: set[tuple[str, str, str | None]] = set()

    # --- what a planning study never does ------------------------------------------------------------------
    @property
    def loaded(self):
        raise PlanningOnly(f"a planning study of {self.model_id} loads no model: it only counts jobs")

    def data(self, task: str, lang: str):
        if self._planned_hub(task, lang) is not None:
            raise PlanningOnly(f"a planning study reads no Hub data ({task}/{lang}): it only counts jobs")
        return super().data(task, lang)

    # --- sizes and fingerprints ------------------------------------------------------------------------------
    def finetune_config(self, *args, **kwargs):
        """Study's, with the data fingerprint marked planned when any unit it trains on was sized from the table
        (its key then never reaches the store, whatever the model)."""
        ft = super().finetune_config(*args, **kwargs)
        if any(self._planned_hub(task, lang) is not None for task, lang in train_units(ft)) \
                and not ft.data_fp.startswith(PLANNED):
            ft = ft.replace(data_fp=f"{PLANNED}{ft.data_fp}")
        return ft

    def _planned_hub(self, task: str, lang: str):
        """The Hub spec of ``task``/``lang`` when its sizes come from the table (every Hub data set: a dry run
        never downloads one), else None (embedded and local data are read)."""
        return hub_spec_of(self.source_for(task, lang), task, lang)

    def split_size(self, task: str, lang: str, split: str) -> int:
        spec = self._planned_hub(task, lang)
        if spec is None:
            return super().split_size(task, lang, split)
        try:
            sizes = planned_splits(spec, task)
        except NotRecorded as err:
            raise HubUnavailable(f"{task}/{lang}: {err}") from None
        unit = counted_in(spec)
        self.planned.add(("recorded split sizes" if unit == "sentences" else
                          f"recorded split sizes in {unit}, each counted as one example (so its jobs' times are "
                          "lower bounds)", spec.path, spec.config))
        if split == HELDOUT:
            return sizes["test"] + sizes["train"]
        if split not in sizes:
            raise ValueError(f"{task}/{lang} has no split {split!r}; it has: {', '.join(sizes)}")
        return sizes[split]

    def read_fp(self, task: str, lang: str, split: str, limit: int | None, *, seed: int = 0,
                rows: tuple[int, ...] | None = None) -> str:
        if self._planned_hub(task, lang) is None:
            return super().read_fp(task, lang, split, limit, seed=seed, rows=rows)
        what = {"task": task, "lang": lang, "split": split, "limit": limit, "seed": seed,
                "rows": None if rows is None else list(rows)}
        return PLANNED + hashlib.sha256(canonical_json(what).encode()).hexdigest()[:8]

    @property
    def model_fp(self) -> str:
        if self._model_fp is None:
            try:
                self._model_fp = super().model_fp
            except ModelLoadError:
                self._recorded_config()
                self._model_fp = PLANNED + hashlib.sha256(self.model_id.encode()).hexdigest()[:8]
        return self._model_fp

    @property
    def head_shape(self) -> tuple[int, int]:
        if self._shape is None:
            try:
                self._shape = super().head_shape
            except ModelLoadError:
                config = self._recorded_config()
                self._shape = (config["num_hidden_layers"], config["num_attention_heads"])
        return self._shape

    def _recorded_config(self) -> dict:
        source, _ = resolve(self.model_id)
        config = known_config(self.model_id) if source == "hub" else None
        if config is None:
            raise ModelLoadError(f"cannot plan {self.model_id!r} without the Hub: it is not in the local Hugging "
                                 "Face cache and not one of the recorded models (headprune_core/encoders/"
                                 "known_models.json)")
        self.planned.add(("recorded config", self.model_id, None))
        return config
