"""Frozen run configurations: one dataclass per kind of run, canonical JSON, and the hash used as cache key.

Only what changes a result belongs here: never the device, paths of this machine or progress settings. The
model and data fingerprints are fields, so a changed model file or corpus gives a new key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args

SCHEMA_VERSION = 1

Setting = Literal["cross", "multi"]
Strategy = Literal["importance", "reverse", "random", "layers", "custom"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)
SETTINGS: tuple[str, ...] = get_args(Setting)


def canonical_json(data: Any) -> str:
    """Key-sorted compact JSON: equal configurations give equal strings."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class RunConfig:
    """Mixin: ``to_dict``/``from_dict``, canonical JSON and the cache key of a frozen dataclass."""

    kind: ClassVar[str] = "run"

    def to_dict(self) -> dict:
        return json.loads(canonical_json(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, data: dict):
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = set(data) - set(known)
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown fields {sorted(unknown)}; known: {sorted(known)}")
        values = {}
        for name, value in data.items():
            sub = _nested_type(known[name])
            values[name] = sub.from_dict(value) if sub is not None and isinstance(value, dict) \
                else _tuplify(value)
        return cls(**values)

    def key(self) -> str:
        """Hash of kind, schema version and the canonical JSON of every field."""
        payload = canonical_json({"kind": self.kind, "schema": SCHEMA_VERSION, "config": self.to_dict()})
        return hashlib.sha256(payload.encode()).hexdigest()[:20]

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def _tuplify(value):
    return tuple(_tuplify(v) for v in value) if isinstance(value, list) else value


def _nested_type(f: dataclasses.Field):
    for candidate in (FinetuneConfig, ScoreConfig):
        if f.type in (candidate, candidate.__name__) or f.type == f"{candidate.__name__} | None":
            return candidate
    return None


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise ValueError(message)


@dataclass(frozen=True)
class FinetuneConfig(RunConfig):
    """Fine-tune ``model`` on ``tasks`` in ``train_langs`` (``cross``) or in every language (``multi``)."""

    kind: ClassVar[str] = "finetune"
    model: str
    tasks: tuple[str, ...]
    train_langs: tuple[str, ...]
    setting: str = "cross"
    epochs: float = 2.0
    lr: float = 5e-5
    head_lr: float = 1e-3  # the new classifiers; the encoder learns at lr
    batch_size: int = 16
    max_length: int = 128
    max_train_sentences: int | None = 2000
    freeze_embeddings: bool = True
    sampling: str = "proportional"
    seed: int = 13
    pruned: tuple[tuple[int, int], ...] = ()  # (layer, head) removed before fine-tuning (re-fine-tuning)
    model_fp: str = ""
    data_fp: str = ""

    def __post_init__(self):
        _require(bool(self.tasks), "a fine-tuning run needs at least one task")
        _require(bool(self.train_langs), "a fine-tuning run needs at least one training language")
        _require(self.setting in SETTINGS, f"unknown setting {self.setting!r}; known: {', '.join(SETTINGS)}")
        _require(self.epochs > 0 and self.lr > 0 and self.batch_size > 0 and self.max_length >= 8,
                 "epochs, lr and batch_size must be positive and max_length at least 8")
        _require(self.sampling in ("proportional", "round_robin"),
                 f"unknown sampling {self.sampling!r}; known: proportional, round_robin")


@dataclass(frozen=True)
class ScoreConfig(RunConfig):
    """Score every head of a fine-tuned model on one language's split (raw scores; normalise when shown)."""

    kind: ClassVar[str] = "score"
    finetune: FinetuneConfig
    task: str
    lang: str
    method: str = "gate_grad"
    split: str = "validation"
    max_sentences: int | None = 300
    seed: int = 0
    data_fp: str = ""


@dataclass(frozen=True)
class CurveConfig(RunConfig):
    """Metric vs number of heads pruned, for one strategy, evaluated on one language."""

    kind: ClassVar[str] = "curve"
    finetune: FinetuneConfig
    task: str
    lang: str
    strategy: str = "importance"
    ranking: ScoreConfig | None = None  # for importance / reverse: whose ranking
    normalize: str = "layer_sum"  # applied to the ranking's raw scores before ordering heads
    steps: tuple[int, ...] = ()  # empty: every `step` heads, 0 to all
    step: int = 0  # 0: one layer's worth of heads
    seeds: tuple[int, ...] = (0,)
    split: str = "test"
    max_sentences: int | None = 500
    data_fp: str = ""

    def __post_init__(self):
        _require(self.strategy in STRATEGIES,
                 f"unknown strategy {self.strategy!r}; known: {', '.join(STRATEGIES)}")
        _require(self.strategy not in ("importance", "reverse") or self.ranking is not None,
                 f"strategy {self.strategy!r} needs a ranking (a ScoreConfig)")


@dataclass(frozen=True)
class EvalConfig(RunConfig):
    """Evaluate a fine-tuned model on one language under one head mask (given as a tuple of rows)."""

    kind: ClassVar[str] = "eval"
    finetune: FinetuneConfig
    task: str
    lang: str
    mask: tuple[tuple[float, ...], ...] = ()
    split: str = "test"
    max_sentences: int | None = 500
    data_fp: str = ""


@dataclass(frozen=True)
class GradTSConfig(RunConfig):
    """GradTS checked by multi-task training: per-unit maps, task affinity, thres/trial/all/random selections.

    The parts (fine-tunes, scores, evaluations) are cached under their own keys; this entry holds the assembled
    table, the selections and the wall times. ``train`` holds the fine-tuning overrides as sorted (name, value)
    pairs; ``units`` are ``task/lang``.
    """

    kind: ClassVar[str] = "gradts"
    model: str
    units: tuple[str, ...]
    primaries: tuple[str, ...]
    method: str = "kv_grad"
    threshold: float = 0.6
    max_trial: int | None = 3
    random_seeds: tuple[int, ...] = (0, 1)
    score_sentences: int | None = 200
    eval_sentences: int | None = 200
    train: tuple[tuple[str, Any], ...] = ()
    model_fp: str = ""
    data_fp: str = ""

    def __post_init__(self):
        _require(len(self.units) >= 2 and len(set(self.units)) == len(self.units),
                 "GradTS needs at least two distinct task units")
        missing = [p for p in self.primaries if p not in self.units]
        _require(bool(self.primaries) and not missing,
                 f"primary units must be among the units; not found: {', '.join(missing) or '(none given)'}")
        _require(self.method in ("kv_grad", "gate_grad"),
                 f"unknown GradTS importance method {self.method!r}; known: kv_grad, gate_grad")
        _require(-1.0 <= self.threshold <= 1.0, f"the tau threshold must be in [-1, 1], got {self.threshold}")
        _require(self.max_trial is None or self.max_trial >= 1, "max_trial must be at least 1 (or None: all)")


@dataclass(frozen=True)
class RefinetuneConfig(RunConfig):
    """Ma et al.: for k = 1..max_k lowest-ranked heads, prune, re-fine-tune, keep the best k on dev."""

    kind: ClassVar[str] = "refinetune"
    finetune: FinetuneConfig
    ranking: ScoreConfig
    normalize: str = "layer_sum"
    max_k: int = 12
    eval_langs: tuple[str, ...] = ()
    max_sentences: int | None = 500

