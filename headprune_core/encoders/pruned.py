"""Save a physically pruned model to a folder, and load it back.

transformers 5 keeps no per-layer head counts in the config, so ``from_pretrained`` cannot rebuild a pruned
model (size mismatch). We store the removed heads beside the weights (``headprune_pruned.json``), rebuild the
full architecture from ``config.json``, prune the same heads, then load the state dict strictly.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoConfig, AutoModel

from headprune_core.base.files import atomic_dir, claim_output_dir
from headprune_core.encoders.classifier import HeadedEncoder, TaskHead
from headprune_core.encoders.heads import head_shape, present_mask, prune_heads, pruned_copy

FORMAT_VERSION = 1
META = "headprune_pruned.json"


def save_pruned(model: HeadedEncoder, mask: torch.Tensor, out_dir: str | Path, *, tokenizer=None,
                meta: dict | None = None, force: bool = False) -> Path:
    """Write ``model`` with the heads where ``mask`` is 0 physically removed into ``out_dir`` (atomic).

    ``out_dir`` must be new or empty; an earlier headprune output there is replaced only with ``force``, and a
    folder holding anything else is refused untouched (:class:`~headprune_core.base.files.OutputExists`).
    """
    out = claim_output_dir(out_dir, marker=META, force=force)
    small = pruned_copy(model, mask)
    with atomic_dir(out) as tmp:
        small.encoder.config.to_json_file(str(tmp / "config.json"))
        save_file({k: v.detach().cpu().contiguous() for k, v in small.state_dict().items()},
                  str(tmp / "model.safetensors"))
        if tokenizer is not None:
            tokenizer.save_pretrained(str(tmp))
        removed = (present_mask(small) == 0).nonzero().tolist()
        files = sorted(p.name for p in tmp.iterdir())
        (tmp / META).write_text(json.dumps({
            "format": FORMAT_VERSION, "heads_removed": removed, "shape": list(head_shape(small)),
            "tasks": {n: {"kind": t.kind, "labels": list(t.labels)} for n, t in small.tasks.items()},
            **(meta or {}), "files": files}, indent=2))
    return out


def load_pruned(folder: str | Path, *, device: str | torch.device = "cpu") -> HeadedEncoder:
    """Rebuild the pruned model saved by :func:`save_pruned` (never unpickles anything)."""
    folder = Path(folder)
    meta_path = folder / META
    if not meta_path.is_file():
        raise FileNotFoundError(f"{folder} is not a headprune pruned-model folder (no {META})")
    meta = json.loads(meta_path.read_text())
    if meta.get("format") != FORMAT_VERSION:
        raise ValueError(f"{meta_path}: unsupported format {meta.get('format')!r} (expected {FORMAT_VERSION})")
    config = AutoConfig.from_pretrained(str(folder), trust_remote_code=False)
    weights = load_file(str(folder / "model.safetensors"))
    if any(k.startswith("encoder.pooler.") for k in weights):
        encoder = AutoModel.from_config(config, trust_remote_code=False)
    else:
        try:
            encoder = AutoModel.from_config(config, trust_remote_code=False, add_pooling_layer=False)
        except TypeError:  # families without a pooler (DistilBERT, ELECTRA) take no such flag
            encoder = AutoModel.from_config(config, trust_remote_code=False)
    tasks = {n: TaskHead(t["kind"], tuple(t["labels"])) for n, t in meta["tasks"].items()}
    model = HeadedEncoder(encoder, tasks)
    mask = torch.ones(tuple(meta["shape"]))
    for layer, head in meta["heads_removed"]:
        mask[layer, head] = 0
    prune_heads(model, mask)
    model.load_state_dict(weights, strict=True)
    return model.to(device).eval()
