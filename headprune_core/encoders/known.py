"""The papers' encoders as recorded, without the Hub: ``known_models.json`` holds each model's config fields and
weight-file sizes, read from public sources (each field names its source; a size no source gave is null).

A dry run without the Hub sizes a paper plan's jobs from these (layers x heads for the pruning levels, parameters
for memory and the disk a fine-tune stores). Loading a model always reads its real config.

>>> known_config("xlm-roberta-base")["vocab_size"]
250002
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

TABLE = Path(__file__).with_name("known_models.json")


@cache
def _table() -> dict:
    return json.loads(TABLE.read_text(encoding="utf-8"))["models"]


def _entry(model_id: str) -> dict | None:
    models = _table()
    if model_id in models:
        return models[model_id]
    return next((m for m in models.values() if model_id in m.get("aliases", ())), None)


def known_ids() -> list[str]:
    """Every id the table answers for (Hub ids and their short aliases)."""
    return [i for name, m in _table().items() for i in (name, *m.get("aliases", ()))]


def known_config(model_id: str) -> dict | None:
    """The recorded config fields of ``model_id`` (a Hub id or its short alias), or None."""
    entry = _entry(model_id)
    return dict(entry["config"]) if entry else None


def config_params(config: dict) -> int | None:
    """Parameters of an encoder (embeddings and layers) from its config fields, or None when sizes are missing."""
    def size(*names: str) -> int | None:  # BERT-like names, then DistilBERT's
        return next((config[n] for n in names if isinstance(config.get(n), int)), None)

    hidden, layers = size("hidden_size", "dim"), size("num_hidden_layers", "n_layers")
    ffn, vocab = size("intermediate_size", "hidden_dim"), size("vocab_size")
    if None in (hidden, layers, ffn, vocab):
        return None
    positions = size("max_position_embeddings") or 512
    return (vocab + positions) * hidden + layers * (4 * hidden * hidden + 2 * hidden * ffn)


def frozen_params(config: dict, *, freeze_embeddings: bool) -> int:
    """Parameters a fine-tune leaves untouched: the word embeddings (vocabulary x hidden size) when they stay
    frozen, else none."""
    return config["vocab_size"] * config.get("hidden_size", 0) if freeze_embeddings else 0


def download_bytes(model_id: str) -> tuple[int | None, str]:
    """(bytes, how known) of downloading ``model_id``'s weights: the recorded safetensors (else PyTorch) file
    size, else 4 bytes per parameter of its recorded config ("from its parameters"), else (None, "unknown")."""
    entry = _entry(model_id)
    if entry is None:
        return None, "unknown"
    files = entry.get("weights_bytes") or {}
    for name in ("model.safetensors", "pytorch_model.bin"):
        if isinstance(files.get(name), int):
            return files[name], f"recorded ({name})"
    params = config_params(entry["config"])
    return (4 * params, "from its parameters (fp32)") if params else (None, "unknown")
