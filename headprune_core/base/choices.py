"""The named choices of headprune (settings, strategies, methods, normalisations, splits ...) and the one check
that a value is one of them. Every place that takes a choice (run configurations, plans, the CLI, the app)
checks it here, so the error is the same everywhere: ``unknown strategy 'x'; known: importance, ...``.

>>> check_choice("random", STRATEGIES, "strategy")
'random'
"""

from __future__ import annotations

from typing import Literal, get_args

Setting = Literal["cross", "multi"]
Strategy = Literal["importance", "reverse", "random", "layers", "custom"]
RetrainStrategy = Literal["importance", "reverse", "random", "layers", "layer_pairs"]
Method = Literal["gate_grad", "kv_grad", "taylor", "entropy", "random"]
GradTSMethod = Literal["kv_grad", "gate_grad"]
Normalize = Literal["none", "layer_l2", "layer_sum"]
Split = Literal["train", "validation", "test"]
LayerPart = Literal["bottom", "middle", "top"]
LayerPair = Literal["adjacent low", "adjacent high", "apart outer", "apart inner"]
Sampling = Literal["proportional", "round_robin"]
FileFormat = Literal["conll", "conllu", "jsonl", "csv", "parquet"]

SETTINGS: tuple[str, ...] = get_args(Setting)
"""cross: fine-tune on the source language(s), test on the others zero-shot; multi: fine-tune on every language."""
STRATEGIES: tuple[str, ...] = get_args(Strategy)
"""How heads are chosen for pruning at test time (``custom``: a mask given by hand)."""
RETRAIN_STRATEGIES: tuple[str, ...] = get_args(RetrainStrategy)
"""Strategies a re-fine-tuning prunes by (before training): lowest-ranked, top-ranked, random heads, a layer third,
two adjacent or two separated layers (``layer_pairs``)."""
METHODS: tuple[str, ...] = get_args(Method)
"""Head-importance methods (see :mod:`headprune_core.methods.importance`)."""
GRADTS_METHODS: tuple[str, ...] = get_args(GradTSMethod)
"""Head maps GradTS correlates (its own kv_grad, or the gate gradient)."""
NORMALIZATIONS: tuple[str, ...] = get_args(Normalize)
SPLITS: tuple[str, ...] = get_args(Split)
HELDOUT = "heldout"
"""A split to evaluate on, beside the corpus splits: every sentence outside the validation split (test, then
train), for a language a cross-lingual model never trained on (its training sentences are unused there)."""
EVAL_SPLITS: tuple[str, ...] = (*SPLITS, HELDOUT)
LAYER_PARTS: tuple[str, ...] = get_args(LayerPart)
LAYER_PAIRS: tuple[str, ...] = get_args(LayerPair)
"""The layer pairs a ``layer_pairs`` re-fine-tuning removes (:func:`headprune_core.methods.evaluate.layer_pairs`)."""
SAMPLINGS: tuple[str, ...] = get_args(Sampling)
"""How multi-task training draws batches: in proportion to each task's size, or one task after another."""
FORMATS: tuple[str, ...] = get_args(FileFormat)
"""Corpus file formats headprune reads (:mod:`headprune_core.data.formats`)."""


def check_choice(value, known: tuple[str, ...], what: str, *, where: str = "") -> str:
    """Return ``value`` if it is one of ``known``; else ``ValueError``: "[where: ]unknown <what> 'x'; known: ..."."""
    if value not in known:
        raise ValueError(f"{where + ': ' if where else ''}unknown {what} {value!r}; known: {', '.join(known)}")
    return value
