"""Frozen run configurations: one dataclass per kind of run, canonical JSON, and the hash used as cache key.

Only what changes a result belongs here: never the device, paths of this machine or progress settings. A key
changes exactly when the result can change: fields that only describe a run (``DESCRIBES``) are written to
``config.json`` but not hashed; the model and data fingerprints are fields (content hashes of the weights and
tokenizer, and of the examples a run reads), so a changed model file or corpus gives a new key; each kind has
an algorithm ``version`` that is bumped when its computation changes. The study fills in effective values
(sentence caps never above what the data holds), so two requests that compute the same thing share a key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any, ClassVar

from headprune_core.base.choices import (
    EVAL_SPLITS,
    GRADTS_METHODS,
    HELDOUT,
    LAYER_PAIRS,
    METHODS,
    NORMALIZATIONS,
    RETRAIN_STRATEGIES,
    SAMPLINGS,
    SETTINGS,
    STRATEGIES,
    check_choice,
)
from headprune_core.base.defaults import MAX_LENGTH, TRAIN_SEED
from headprune_core.base.specs import canonical_json

SCHEMA_VERSION = 2  # layout of keys and entries (2: keyed fields only, per-kind versions, content fingerprints)

DESCRIBES = {"key": False}
"""Field metadata: the field describes a run (written to config.json) but is not hashed, because it cannot
change the result (the model's name next to its fingerprint; the setting next to the training languages)."""


OMIT_DEFAULT = {"omit_default": True}
"""Field metadata: hashed only when it differs from its default, so adding an option later keeps every key
computed before it existed (the option's default is what those runs did)."""


def _canon(value: Any) -> Any:
    """Values as hashed: tuples as lists, integral floats as ints (``epochs: 2`` in a JSON plan = ``2.0``)."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canon(v) for v in value]
    raise TypeError(f"cannot hash a {type(value).__name__} in a run configuration")


class RunConfig:
    """Mixin: ``to_dict``/``from_dict``, canonical JSON and the cache key of a frozen dataclass.

    ``version`` is the kind's algorithm version: bump it when the computation of that kind changes, so entries
    computed the old way are never served as new ones.
    """

    kind: ClassVar[str] = "run"
    version: ClassVar[int] = 1

    def to_dict(self) -> dict:
        return json.loads(canonical_json(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, data: dict):
        if not isinstance(data, dict):
            raise ValueError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = set(data) - set(known)
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown fields {sorted(unknown)}; known: {sorted(known)}")
        values = {}
        for name, value in data.items():
            sub = _nested_type(known[name])
            values[name] = sub.from_dict(value) if sub is not None and isinstance(value, dict) \
                else _tuplify(value)
        try:
            return cls(**values)
        except TypeError as err:  # a required field is missing
            raise ValueError(f"{cls.__name__}: {err}") from None

    def keyed(self) -> dict:
        """The fields that can change the result (nested configs included), as hashed."""
        out = {}
        for f in dataclasses.fields(self):
            if f.metadata.get("key", True) is False:
                continue
            value = getattr(self, f.name)
            if f.metadata.get("omit_default") and value == f.default:
                continue
            out[f.name] = value.keyed() if isinstance(value, RunConfig) else _canon(value)
        return out

    def key(self) -> str:
        """Hash of kind, schema and algorithm version, and the canonical JSON of every keyed field."""
        payload = canonical_json({"kind": self.kind, "schema": SCHEMA_VERSION, "version": self.version,
                                  "config": self.keyed()})
        return hashlib.sha256(payload.encode()).hexdigest()[:20]

    def fingerprints(self) -> dict[str, str]:
        """Every ``*_fp`` field, nested ones as ``finetune.model_fp``."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, RunConfig):
                out.update({f"{f.name}.{k}": v for k, v in value.fingerprints().items()})
            elif f.name.endswith("_fp"):
                out[f.name] = value
        return out

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


def _count(value, what: str, *, optional: bool = True) -> None:
    """A positive whole number (or None where ``optional``)."""
    if value is None and optional:
        return
    _require(isinstance(value, int) and not isinstance(value, bool) and value >= 1,
             f"{what} must be a whole number of at least 1, got {value!r}")


def _check_eval_fields(cfg) -> None:
    check_choice(cfg.split, EVAL_SPLITS, "split")
    _count(cfg.max_sentences, "max_sentences")
    _require(isinstance(cfg.max_length, int) and cfg.max_length >= 8,
             f"max_length must be at least 8 tokens, got {cfg.max_length!r}")


@dataclass(frozen=True)
class FinetuneConfig(RunConfig):
    """Fine-tune ``model`` on ``tasks`` in ``train_langs`` (``cross``: one source language; ``multi``: all).

    ``max_train_sentences`` is per (task, language), and :meth:`Study.finetune_config` stores the effective
    value (never more than the largest training split), so asking for more than there is keys like the corpus.
    """

    kind: ClassVar[str] = "finetune"
    model: str = dataclasses.field(metadata=DESCRIBES)
    tasks: tuple[str, ...]
    train_langs: tuple[str, ...]
    setting: str = dataclasses.field(default="cross", metadata=DESCRIBES)
    epochs: float = 2.0
    lr: float = 5e-5
    head_lr: float = 1e-3  # the new classifiers; the encoder learns at lr
    batch_size: int = 16
    max_length: int = MAX_LENGTH
    max_train_sentences: int | None = 2000
    freeze_embeddings: bool = True
    sampling: str = "proportional"
    seed: int = TRAIN_SEED
    pruned: tuple[tuple[int, int], ...] = ()  # (layer, head) removed before fine-tuning (re-fine-tuning)
    # the model is a fine-tuned checkpoint whose classifier is used as is (nothing is trained)
    from_checkpoint: bool = dataclasses.field(default=False, metadata=OMIT_DEFAULT)
    # learned head pruning after this fine-tune (its ``base``): sorted (option, value) pairs of L0_OPTIONS
    l0: tuple[tuple[str, Any], ...] = dataclasses.field(default=(), metadata=OMIT_DEFAULT)
    # train only these rows (indices into the unit's train split) of some units (GradTS-fg): (unit, rows) pairs
    keep: tuple[tuple[str, tuple[int, ...]], ...] = dataclasses.field(default=(), metadata=OMIT_DEFAULT)
    # a control: each unit's training labels permuted (seeded by ``seed``) before training, so the model learns
    # the encoder's habits and the data's shape but not the task (Findings card g's control maps)
    shuffle_labels: bool = dataclasses.field(default=False, metadata=OMIT_DEFAULT)
    model_fp: str = ""
    data_fp: str = ""

    def __post_init__(self):
        _require(bool(self.tasks), "a fine-tuning run needs at least one task")
        if self.l0:
            l0_options(self.l0)
        _require(all(len(p) == 2 and p[0] in self.tasks and all(isinstance(i, int) and i >= 0 for i in p[1])
                     for p in self.keep),
                 f"keep must be (unit, row indices) pairs of this run's units, got {str(self.keep)[:200]}")
        _require(bool(self.train_langs), "a fine-tuning run needs at least one training language")
        check_choice(self.setting, SETTINGS, "setting")
        _require(_positive(self.epochs) and _positive(self.lr) and _positive(self.head_lr),
                 f"epochs, lr and head_lr must be positive numbers, got {self.epochs!r}, {self.lr!r}, "
                 f"{self.head_lr!r}")
        _count(self.batch_size, "batch_size", optional=False)
        _require(isinstance(self.max_length, int) and self.max_length >= 8,
                 f"max_length must be at least 8 tokens, got {self.max_length!r}")
        _count(self.max_train_sentences, "max_train_sentences")
        check_choice(self.sampling, SAMPLINGS, "sampling")
        _require(all(len(p) == 2 and all(isinstance(v, int) and v >= 0 for v in p) for p in self.pruned),
                 f"pruned heads must be (layer, head) pairs of non-negative integers, got {self.pruned!r}")

    def base(self) -> FinetuneConfig | None:
        """The fine-tune a learned-pruning run starts from (None for an ordinary fine-tune)."""
        return dataclasses.replace(self, l0=()) if self.l0 else None

    def kept_rows(self, unit: str) -> tuple[int, ...] | None:
        """The train-split rows ``unit`` trains on when ``keep`` names it (else None: the usual subset)."""
        return dict(self.keep).get(unit)


L0_OPTIONS: dict[str, Any] = {"target": None, "penalty": None, "epochs": 1.0, "gate_lr": 0.5, "init": 3.0}
"""Options of a learned-pruning phase (``FinetuneConfig.l0``, see :mod:`headprune_core.methods.learned`): ``target``
share of heads to remove (0-1) or ``penalty`` weight on the expected kept share (exactly one), ``epochs`` of
training with the gates, the gates' learning rate, the initial ``log_alpha`` (3: every gate starts open)."""


def l0_options(pairs) -> dict[str, Any]:
    """The full options of a learned-pruning phase from its (name, value) pairs or dict, checked."""
    given = dict(pairs)
    unknown = sorted(set(given) - set(L0_OPTIONS))
    _require(not unknown, f"unknown learned-pruning options {unknown}; known: {sorted(L0_OPTIONS)}")
    opts = {**L0_OPTIONS, **given}
    _require((opts["target"] is None) != (opts["penalty"] is None),
             "learned pruning needs exactly one of 'target' (share of heads to remove, e.g. 0.5) and 'penalty' "
             f"(weight of the L0 term); got target={opts['target']!r}, penalty={opts['penalty']!r}")
    _require(opts["target"] is None or (_number(opts["target"]) and 0 <= opts["target"] < 1),
             f"the target share of heads to remove must be in [0, 1), got {opts['target']!r}")
    _require(opts["penalty"] is None or (_number(opts["penalty"]) and opts["penalty"] >= 0),
             f"the L0 penalty weight must be 0 or more, got {opts['penalty']!r}")
    for name in ("epochs", "gate_lr"):
        _require(_positive(opts[name]), f"learned-pruning {name} must be a positive number, got {opts[name]!r}")
    _require(_number(opts["init"]), f"learned-pruning init must be a number, got {opts['init']!r}")
    return opts


def l0_pairs(options: dict) -> tuple[tuple[str, Any], ...]:
    """Canonical ``FinetuneConfig.l0`` of some options: checked, defaults left out, sorted."""
    full = l0_options(options)
    return tuple(sorted((k, v) for k, v in full.items() if v != L0_OPTIONS[k]))


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


FIXED_BY_RUN = ("model", "tasks", "train_langs", "setting", "model_fp", "data_fp", "pruned", "from_checkpoint",
                "l0", "keep")
"""FinetuneConfig fields a plan's ``train`` options may not set: the plan or the study decides them."""


def check_train_options(train, where: str) -> None:
    """Raise if ``train`` (a plan's fine-tuning options) is not a dict of FinetuneConfig fields a plan may set."""
    _require(isinstance(train, dict), f"{where}: train must be an object of fine-tuning options, got {train!r}")
    allowed = sorted(set(FinetuneConfig.__dataclass_fields__) - set(FIXED_BY_RUN))
    unknown = sorted(set(train) - set(allowed))
    _require(not unknown, f"{where}: train options {unknown} are not fine-tuning options; known: {allowed}")


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and value == value


@dataclass(frozen=True)
class ScoreConfig(RunConfig):
    """Score every head of a fine-tuned model on one language's split (raw scores; normalise when shown).

    ``max_length`` is the tokenisation of the scored sentences (the fine-tune's own by default).
    """

    kind: ClassVar[str] = "score"
    finetune: FinetuneConfig
    task: str
    lang: str
    method: str = "gate_grad"
    split: str = "validation"
    max_sentences: int | None = 300
    max_length: int = MAX_LENGTH
    seed: int = 0  # only the random method reads it
    data_fp: str = ""
    # 1 or 2: only the first or second half of the sentences read (alternate rows), for split-half reliability
    half: int = dataclasses.field(default=0, metadata=OMIT_DEFAULT)
    # a seed: the sentences read are split into random halves and each half drawn again with replacement
    # (reading.resampled_rows), so each training run scores its own sample and split (Findings card c)
    resample: int | None = dataclasses.field(default=None, metadata=OMIT_DEFAULT)

    def __post_init__(self):
        check_choice(self.method, METHODS, "importance method")
        _check_eval_fields(self)
        _require(self.half in (0, 1, 2), f"half must be 0 (all), 1 or 2, got {self.half!r}")
        _require(self.resample is None or (isinstance(self.resample, int) and not isinstance(self.resample, bool)),
                 f"resample must be a seed (an integer) or null, got {self.resample!r}")


@dataclass(frozen=True)
class CurveConfig(RunConfig):
    """Metric vs number of heads pruned, for one strategy, evaluated on one language."""

    kind: ClassVar[str] = "curve"
    version: ClassVar[int] = 2  # 2: per-sentence counts and bootstrap intervals per point
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
    max_length: int = MAX_LENGTH
    data_fp: str = ""

    def __post_init__(self):
        check_choice(self.strategy, STRATEGIES, "strategy")
        _require(self.strategy not in ("importance", "reverse") or self.ranking is not None,
                 f"strategy {self.strategy!r} needs a ranking (a ScoreConfig)")
        check_choice(self.normalize, NORMALIZATIONS, "normalisation")
        _require(all(isinstance(k, int) and k >= 0 for k in self.steps),
                 f"steps must be numbers of heads (0 or more), got {self.steps!r}")
        _require(isinstance(self.step, int) and self.step >= 0, f"step must be 0 or more, got {self.step!r}")
        _require(bool(self.seeds) and all(isinstance(s, int) for s in self.seeds),
                 f"seeds must be a non-empty list of integers, got {self.seeds!r}")
        _check_eval_fields(self)


@dataclass(frozen=True)
class EvalConfig(RunConfig):
    """Evaluate a fine-tuned model on one language under one head mask (given as a tuple of rows)."""

    kind: ClassVar[str] = "eval"
    version: ClassVar[int] = 2  # 2: per-sentence counts and a bootstrap interval
    finetune: FinetuneConfig
    task: str
    lang: str
    mask: tuple[tuple[float, ...], ...] = ()
    split: str = "test"
    max_sentences: int | None = 500
    max_length: int = MAX_LENGTH
    data_fp: str = ""

    def __post_init__(self):
        rows = {len(r) for r in self.mask}
        _require(len(rows) <= 1, f"the head mask's rows have different lengths: {sorted(rows)}")
        _require(all(v in (0, 1) for r in self.mask for v in r),
                 "head mask entries must be 0 (pruned) or 1 (kept)")
        _check_eval_fields(self)


@dataclass(frozen=True)
class GradTSOptions:
    """What a GradTS validation computes, declared once for a GradTS plan and for its run configuration:
    ``units`` (``task/lang``), the ``primaries`` among them, the head maps' ``method``, GradTS-thres's tau
    ``threshold``, GradTS-trial's cap (``max_trial``, None: every candidate), the random sets' seeds, sentences
    scored and evaluated per unit, the final models' training seeds and GradTS-fg's tau threshold."""

    units: tuple[str, ...]
    primaries: tuple[str, ...]
    method: str = "kv_grad"
    threshold: float = 0.6
    max_trial: int | None = None
    random_seeds: tuple[int, ...] = (0, 1, 2)
    score_sentences: int | None = 200
    eval_sentences: int | None = 200
    train_seeds: tuple[int, ...] = (13, 14, 15)
    fg_threshold: float = 0.62

    def __post_init__(self):
        _require(len(self.units) >= 2 and len(set(self.units)) == len(self.units),
                 "GradTS needs at least two distinct task units")
        missing = [p for p in self.primaries if p not in self.units]
        _require(bool(self.primaries) and not missing,
                 f"primary units must be among the units; not found: {', '.join(missing) or '(none given)'}")
        check_choice(self.method, GRADTS_METHODS, "GradTS method")
        _require(_number(self.threshold) and -1.0 <= self.threshold <= 1.0,
                 f"the tau threshold must be in [-1, 1], got {self.threshold!r}")
        _require(self.max_trial is None or (isinstance(self.max_trial, int) and self.max_trial >= 1),
                 "max_trial must be at least 1 (or None: all)")
        _require(bool(self.train_seeds)
                 and all(isinstance(v, int) and not isinstance(v, bool) for v in self.train_seeds)
                 and len(set(self.train_seeds)) == len(self.train_seeds),
                 f"train_seeds must be a non-empty list of distinct integers, got {self.train_seeds!r}")
        _require(bool(self.random_seeds) and all(isinstance(v, int) and not isinstance(v, bool)
                                                 for v in self.random_seeds),
                 f"random_seeds must be a non-empty list of integers, got {self.random_seeds!r}")
        _count(self.score_sentences, "score_sentences")
        _count(self.eval_sentences, "eval_sentences")
        _require(_number(self.fg_threshold) and -1.0 <= self.fg_threshold <= 1.0,
                 f"the fg tau threshold must be in [-1, 1], got {self.fg_threshold!r}")

    def options(self) -> dict[str, Any]:
        """The GradTS options as a dict (the fields of this class only)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(GradTSOptions)}


@dataclass(frozen=True, kw_only=True)
class GradTSConfig(RunConfig, GradTSOptions):
    """GradTS checked by multi-task training: per-unit maps, task affinity, thres/trial/all/random selections.

    The parts (fine-tunes, scores, evaluations) are cached under their own keys; this entry holds the assembled
    table, the selections and the wall times. ``train`` holds the fine-tuning overrides as sorted (name, value)
    pairs, ``bandit`` every AUTOSEM option (see :data:`BANDIT_OPTIONS`) likewise.
    """

    kind: ClassVar[str] = "gradts"
    # 2: fg, the bandit, training seeds, costs and intervals; trial uncapped by default
    # 3: intervals resample training seeds as well as test sentences
    version: ClassVar[int] = 3
    model: str = dataclasses.field(metadata=DESCRIBES)
    train: tuple[tuple[str, Any], ...] = ()
    bandit: tuple[tuple[str, Any], ...] = ()
    model_fp: str = ""
    data_fp: str = ""


@dataclass(frozen=True)
class InstanceConfig(RunConfig):
    """Per-example head maps (GradTS's kv_grad on one example at a time) of a unit's training rows, from the
    unit's own fine-tuned model: what GradTS-fg correlates with the primary task's map. ``max_sentences`` and
    ``seed`` draw the rows like a fine-tune with those options does."""

    kind: ClassVar[str] = "instances"
    finetune: FinetuneConfig
    task: str
    lang: str
    method: str = "kv_grad"
    split: str = "train"
    max_sentences: int | None = 200
    seed: int = 13
    max_length: int = MAX_LENGTH
    data_fp: str = ""

    def __post_init__(self):
        _require(self.method == "kv_grad", f"per-example maps are computed with kv_grad, got {self.method!r}")
        _check_eval_fields(self)


@dataclass(frozen=True)
class BanditConfig(RunConfig):
    """AUTOSEM's first stage for one primary unit: a Beta-Bernoulli bandit chooses which unit of ``finetune``
    (every candidate and the primary) trains next, rewarded when the primary's dev loss goes down."""

    kind: ClassVar[str] = "bandit"
    finetune: FinetuneConfig
    primary: str
    rounds: int = 40
    round_steps: int = 4
    decay: float = 0.9
    keep: float = 0.5
    dev_sentences: int | None = 100
    data_fp: str = ""

    def __post_init__(self):
        _require(self.primary in self.finetune.tasks,
                 f"the primary {self.primary!r} is not among the run's units: {', '.join(self.finetune.tasks)}")
        _count(self.rounds, "rounds", optional=False)
        _count(self.round_steps, "round_steps", optional=False)
        _require(_number(self.decay) and 0 < self.decay <= 1, f"decay must be in (0, 1], got {self.decay!r}")
        _require(_number(self.keep) and 0 <= self.keep < 1, f"keep must be in [0, 1), got {self.keep!r}")
        _count(self.dev_sentences, "dev_sentences")


BANDIT_OPTIONS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(BanditConfig)
                                  if f.name in ("rounds", "round_steps", "decay", "keep", "dev_sentences")}
"""AUTOSEM stage-1 options a GradTS plan may set (``bandit``), with their defaults (:class:`BanditConfig`'s)."""


@dataclass(frozen=True)
class RefinetuneConfig(RunConfig):
    """Prune, then fine-tune (Ma et al. 2021; Budhraja et al. 2020/2021), and test against the unpruned model.

    For each level (k heads pruned by ``strategy``; for ``layers`` the bottom, middle and top third of the
    layers) and each training seed, the encoder with those heads removed is fine-tuned like ``finetune`` (level
    0 is ``finetune`` itself, unpruned), evaluated on the first training language's dev split and tested in every
    ``eval_langs`` language. Ma et al. pick k on dev (``best``); every level is tested, so the per-k curve and
    the fixed-level comparisons (Budhraja) come from the same entries. ``ranking`` (importance / reverse) is
    whose head scores order the heads: Ma et al. rank on the source language's dev set with the unpruned model.
    """

    kind: ClassVar[str] = "refinetune"
    # 2: strategies, levels, seeds; every level tested, with intervals. 3: random heads drawn per training seed
    # (random_seed + the seed's position), layer pairs
    version: ClassVar[int] = 3
    finetune: FinetuneConfig
    ranking: ScoreConfig | None = None
    normalize: str = "layer_sum"
    max_k: int = 12  # levels 0..max_k when ``levels`` is empty
    eval_langs: tuple[str, ...] = ()
    max_sentences: int | None = 500
    strategy: str = dataclasses.field(default="importance", metadata=OMIT_DEFAULT)
    levels: tuple[int, ...] = dataclasses.field(default=(), metadata=OMIT_DEFAULT)  # numbers of heads; 0 added
    seeds: tuple[int, ...] = dataclasses.field(default=(), metadata=OMIT_DEFAULT)  # training seeds; (): finetune's
    random_seed: int = dataclasses.field(default=0, metadata=OMIT_DEFAULT)  # which heads ``random`` draws
    # what languages the model did not train on are tested on: ``heldout`` = every sentence outside their dev
    # split (their training sentences are unused in the cross-lingual setting), at most ``target_sentences``
    # (None: ``max_sentences``)
    target_split: str = dataclasses.field(default="test", metadata=OMIT_DEFAULT)
    target_sentences: int | None = dataclasses.field(default=None, metadata=OMIT_DEFAULT)

    def __post_init__(self):
        check_choice(self.normalize, NORMALIZATIONS, "normalisation")
        check_choice(self.strategy, RETRAIN_STRATEGIES, "re-fine-tuning strategy")
        _require(self.strategy not in ("importance", "reverse") or self.ranking is not None,
                 f"re-fine-tuning by {self.strategy!r} needs a ranking (a ScoreConfig)")
        _require(isinstance(self.max_k, int) and self.max_k >= 0, f"max_k must be 0 or more, got {self.max_k!r}")
        _require(all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in self.levels),
                 f"levels must be numbers of heads (0 or more), got {self.levels!r}")
        _require(all(isinstance(s, int) and not isinstance(s, bool) for s in self.seeds)
                 and len(set(self.seeds)) == len(self.seeds), f"seeds must be distinct integers, got {self.seeds!r}")
        _require(isinstance(self.random_seed, int), f"random_seed must be an integer, got {self.random_seed!r}")
        _count(self.max_sentences, "max_sentences")
        check_choice(self.target_split, ("test", HELDOUT), "target split")
        _count(self.target_sentences, "target_sentences")

    def points(self) -> list[tuple[str, int | str]]:
        """(label, what to prune) per level: ``("0", 0)`` first, then ``(str(k), k)`` or the layer thirds."""
        if self.strategy == "layers":
            return [("0", 0), ("bottom", "bottom"), ("middle", "middle"), ("top", "top")]
        if self.strategy == "layer_pairs":
            return [("0", 0), *((p, p) for p in LAYER_PAIRS)]
        ks = sorted({0, *self.levels}) if self.levels else list(range(self.max_k + 1))
        return [(str(k), k) for k in ks]

    def train_seeds(self) -> tuple[int, ...]:
        return self.seeds or (self.finetune.seed,)


CONFIG_KINDS: dict[str, type[RunConfig]] = {c.kind: c for c in (FinetuneConfig, ScoreConfig, CurveConfig, EvalConfig,
                                                                  GradTSConfig, RefinetuneConfig, InstanceConfig,
                                                                  BanditConfig)}
"""Every kind of run configuration, by its ``kind``."""


def config_from_dict(kind: str, data: dict) -> RunConfig:
    """The run configuration of ``kind`` from its ``to_dict`` form (e.g. a stored ``config.json``)."""
    if kind not in CONFIG_KINDS:
        raise ValueError(f"unknown kind of run {kind!r}; known: {', '.join(CONFIG_KINDS)}")
    return CONFIG_KINDS[kind].from_dict(data)


def nested_configs(cfg: RunConfig) -> list[RunConfig]:
    """The run configurations ``cfg`` is computed from (its fine-tune, its ranking's scores), innermost first:
    the results a job reads before it can run."""
    out: list[RunConfig] = []
    base = cfg.base() if isinstance(cfg, FinetuneConfig) else None
    if base is not None:  # a learned-pruning run starts from its fine-tune
        out += [c for c in nested_configs(base) + [base] if c not in out]
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if isinstance(value, RunConfig):
            out += [c for c in nested_configs(value) + [value] if c not in out]
    return out


def split_unit(unit: str, default_lang: str | None = None) -> tuple[str, str | None]:
    """``"pos/de"`` -> ``("pos", "de")``; a bare task name keeps ``default_lang``.

    A fine-tuning run's tasks are units: a bare task trains on every ``train_langs`` language, ``task/lang``
    only on that language (GradTS mixes tasks of different languages in one multi-task run).

    >>> split_unit("pos/de"), split_unit("pos", "en")
    (('pos', 'de'), ('pos', 'en'))
    """
    task, _, lang = unit.partition("/")
    return task, (lang or default_lang)


def data_task(unit: str) -> str:
    """The task whose data a unit reads: ``"pos/de"`` -> ``"pos"``."""
    return unit.partition("/")[0]


def train_units(ft: FinetuneConfig) -> list[tuple[str, str]]:
    """(task, language) of every training part of ``ft``, in training order: a bare task trains on every
    ``train_langs`` language, a ``task/lang`` unit on its own language only."""
    out = []
    for unit in ft.tasks:
        task, lang = split_unit(unit)
        out += [(task, lang)] if lang else [(task, l) for l in ft.train_langs]
    return out


def train_unit_names(ft: FinetuneConfig) -> list[str]:
    """The unit (classifier name) of each entry of :func:`train_units`."""
    return [unit for unit in ft.tasks for _ in ([0] if split_unit(unit)[1] else ft.train_langs)]
