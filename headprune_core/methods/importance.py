"""Score every attention head: how much does the task loss depend on it?

Methods (higher score = more important, always a ``(layers, heads)`` array):

* ``gate_grad`` (Michel et al. 2019; Ma et al. 2021): |d loss / d gate| summed over batches, divided by the
  number of labelled tokens. Only the gates need gradients, so all weights stay frozen (cheap).
* ``kv_grad`` (GradTS): |gradient| of each layer's key and value weights, mean over each head's rows, K + V,
  averaged over batches.
* ``taylor`` (TextPruner): |sum(grad * weight)| over each head's columns of the output projection, averaged.
* ``entropy``: attention concentration, 1 - H / log(n) averaged over query positions (focused heads high); no
  gradients and no labels needed.
* ``random``: seeded uniform scores, the baseline.

Normalisations: ``none``, ``layer_l2`` (each layer row divided by its L2 norm, bertology), ``layer_sum`` (each
row divided by its sum, Ma et al. / GradTS), then optional global min-max to [0, 1].
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from headprune_core.base.choices import METHODS, NORMALIZATIONS, check_choice
from headprune_core.base.progress import Progress, report
from headprune_core.encoders.device import autocast, device_of, to_device
from headprune_core.encoders.heads import (
    adapter_for,
    attention_probs,
    captured_io,
    encoder_layers,
    head_dim,
    head_gates,
    head_shape,
    kept_heads,
)

LossFn = Callable[[nn.Module, dict], tuple[torch.Tensor, int]]
"""(model, batch) -> (mean loss over labelled positions, number of labelled positions)."""


def default_loss(model: nn.Module, batch: dict) -> tuple[torch.Tensor, int]:
    """The loss adaptor for :class:`headprune_core.encoders.classifier.HeadedEncoder` (token and sentence tasks)."""
    return model.loss(batch)


@dataclass
class Importance:
    """A head-importance map and what is needed to reproduce it."""

    scores: np.ndarray  # (layers, heads), normalised as asked
    raw: np.ndarray  # (layers, heads), before normalisation
    method: str
    normalize: str
    minmax: bool
    n_batches: int
    n_tokens: int
    seed: int
    seconds: float
    meta: dict = field(default_factory=dict)

    def to_meta(self) -> dict:
        return {"method": self.method, "normalize": self.normalize, "minmax": self.minmax,
                "n_batches": self.n_batches, "n_tokens": self.n_tokens, "seed": self.seed,
                "seconds": round(self.seconds, 3), **self.meta}


def normalise(raw: np.ndarray, *, normalize: str = "none", minmax: bool = False) -> np.ndarray:
    """Apply a per-layer normalisation, then optionally a global min-max, to a ``(layers, heads)`` map.

    >>> normalise(np.array([[1.0, 3.0], [2.0, 2.0]]), normalize="layer_sum").tolist()
    [[0.25, 0.75], [0.5, 0.5]]
    """
    check_choice(normalize, NORMALIZATIONS, "normalisation")
    out = np.asarray(raw, dtype=np.float64).copy()
    if normalize == "layer_l2":
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
    elif normalize == "layer_sum":
        sums = out.sum(axis=1, keepdims=True)
        out = np.divide(out, sums, out=np.zeros_like(out), where=sums != 0)
    if minmax:
        lo, hi = out.min(), out.max()
        out = (out - lo) / (hi - lo) if hi > lo else np.zeros_like(out)
    return out


@contextlib.contextmanager
def _only_grad_for(model: nn.Module, params: list[nn.Parameter]):
    """Freeze every parameter but ``params`` and put the model in eval mode; restore both on exit."""
    saved = [(p, p.requires_grad) for p in model.parameters()]
    was_training = model.training
    keep = {id(p) for p in params}
    try:
        for p, _ in saved:
            p.requires_grad_(id(p) in keep)
            p.grad = None
        model.eval()
        yield
    finally:
        for p, flag in saved:
            p.requires_grad_(flag)
            p.grad = None
        model.train(was_training)


def _per_head(grad_rows: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(heads * head_dim, ...) -> (heads,): mean of |values| over each head's block of rows."""
    return grad_rows.abs().reshape(n_heads, -1).mean(dim=1)


def score_heads(model: nn.Module, batches: Iterable[dict], *, method: str = "gate_grad",
                normalize: str = "none", minmax: bool = False, loss_fn: LossFn = default_loss, seed: int = 0,
                max_batches: int | None = None, on_progress: Progress | None = None) -> Importance:
    """Score every head of ``model`` on labelled ``batches`` with ``method``.

    Args:
        model: a task model whose ``base_model`` is a supported encoder (see :mod:`headprune_core.encoders.heads`).
        batches: dicts of tensors (``input_ids``, ``attention_mask``, ``labels``, ...), moved to the model's device.
        loss_fn: the loss adaptor, so token and sentence tasks share this loop.
        on_progress: called as ``on_progress(what, done, total)`` after each batch
            (:mod:`headprune_core.base.progress`).
    Returns:
        :class:`Importance`; heads already pruned from the model score 0.

    >>> # scores = score_heads(model, loader, method="gate_grad", normalize="layer_sum", minmax=True).scores
    """
    check_choice(method, METHODS, "importance method")
    check_choice(normalize, NORMALIZATIONS, "normalisation")
    shape = head_shape(model)
    start = time.perf_counter()
    if method == "random":
        raw = np.random.default_rng(seed).random(shape)
        return Importance(normalise(raw, normalize=normalize, minmax=minmax), raw, method, normalize, minmax,
                          0, 0, seed, time.perf_counter() - start)
    device = device_of(model)
    total = max_batches if max_batches is not None else (len(batches) if hasattr(batches, "__len__") else None)
    acc = torch.zeros(shape, dtype=torch.float64)
    n_batches = n_tokens = 0
    step = {"gate_grad": _gate_grad_step, "kv_grad": _kv_grad_step, "taylor": _taylor_step,
            "entropy": _entropy_step}[method]
    params = _trainable_for(model, method)
    torch.manual_seed(seed)
    with _only_grad_for(model, params):
        for batch in batches:
            if max_batches is not None and n_batches >= max_batches:
                break
            batch = to_device(batch, device)
            acc += step(model, batch, loss_fn, shape, device)
            n_batches += 1
            n_tokens += int((batch["labels"] != -100).sum()) if "labels" in batch \
                else int(batch["attention_mask"].sum())
            report(on_progress, f"scoring heads ({method})", n_batches, total)
    if n_batches == 0:
        raise ValueError("no batches to score heads on: the data split is empty")
    raw = (acc / max(n_tokens, 1) if method == "gate_grad" else acc / n_batches).numpy()
    return Importance(normalise(raw, normalize=normalize, minmax=minmax), raw, method, normalize, minmax,
                      n_batches, n_tokens, seed, time.perf_counter() - start)


def _trainable_for(model: nn.Module, method: str) -> list[nn.Parameter]:
    adapter = adapter_for(model)
    layers = encoder_layers(model)
    if method == "kv_grad":
        return [layer.get_submodule(p).weight for layer in layers for p in (adapter.key, adapter.value)]
    if method == "taylor":
        return [layer.get_submodule(adapter.out).weight for layer in layers]
    return []  # gate_grad: only the gate; entropy: nothing


def _gate_grad_step(model, batch, loss_fn, shape, device) -> torch.Tensor:
    gate = torch.ones(shape, device=device, requires_grad=True)
    with head_gates(model, gate), autocast(device):
        loss, _ = loss_fn(model, batch)
    loss.backward()
    return gate.grad.detach().abs().double().cpu()


def _weight_grad_step(model, batch, loss_fn, shape, device, per_layer) -> torch.Tensor:
    """Backward once, then ``per_layer(layer, kept heads) -> (kept,)`` scores from the weight gradients."""
    with autocast(device):
        loss, _ = loss_fn(model, batch)
    loss.backward()
    out = torch.zeros(shape, dtype=torch.float64)
    for i, layer in enumerate(encoder_layers(model)):
        kept = kept_heads(model, i)
        if kept:
            out[i, kept] += per_layer(layer, kept).double().cpu()
    for p in model.parameters():
        p.grad = None
    return out


def _kv_grad_step(model, batch, loss_fn, shape, device) -> torch.Tensor:
    adapter = adapter_for(model)

    def per_layer(layer, kept):
        grads = [layer.get_submodule(p).weight.grad for p in (adapter.key, adapter.value)]  # (heads*hd, hidden)
        return sum(_per_head(g, len(kept)) for g in grads)

    return _weight_grad_step(model, batch, loss_fn, shape, device, per_layer)


def _taylor_step(model, batch, loss_fn, shape, device) -> torch.Tensor:
    adapter, size = adapter_for(model), head_dim(model)

    def per_layer(layer, kept):
        weight = layer.get_submodule(adapter.out).weight  # (hidden, heads * head_dim)
        contrib = (weight.grad * weight.detach()).reshape(weight.shape[0], len(kept), size)  # (hidden, heads, hd)
        return contrib.sum(dim=(0, 2)).abs()

    return _weight_grad_step(model, batch, loss_fn, shape, device, per_layer)


def _entropy_step(model, batch, loss_fn, shape, device) -> torch.Tensor:
    probs = attention_probs(model, batch["input_ids"], batch["attention_mask"])
    mask = batch["attention_mask"].bool()  # (batch, seq)
    lengths = mask.sum(-1).clamp(min=2).double()  # (batch,)
    out = torch.zeros(shape, dtype=torch.float64)
    for i, p in enumerate(probs):
        kept = kept_heads(model, i)
        if not kept:
            continue
        p = p.double()  # (batch, heads, seq, seq)
        ent = -(p * torch.log(p.clamp(min=1e-12))).sum(-1)  # (batch, heads, seq)
        conc = 1 - ent / torch.log(lengths)[:, None, None]
        q = mask[:, None, :].double()  # (batch, 1, seq) real query positions
        per_seq = (conc * q).sum(-1) / q.sum(-1)  # (batch, heads)
        out[i, kept] += per_seq.mean(0).cpu()
    return out


def instance_kv_maps(model: nn.Module, batches: Iterable[dict], *, on_progress: Progress | None = None) -> np.ndarray:
    """GradTS's kv_grad map of every example on its own, ``(examples, layers, heads)``, in batch order.

    One backward pass per batch: the gradient of a key or value projection's weight for one example is
    ``sum over positions of outer(d loss / d output, input)``, so hooks keep each projection's input and the
    gradient of its output, and the per-example weight gradients are formed from them (``einsum``) instead of
    one backward pass per example. The loss is the sum of each example's own mean loss
    (:meth:`~headprune_core.encoders.classifier.HeadedEncoder.example_losses`), so each map equals ``score_heads`` with
    ``kv_grad`` on a batch of that example alone (tested).
    """
    adapter = adapter_for(model)
    layers = encoder_layers(model)
    device = device_of(model)
    modules = [(i, layer.get_submodule(p)) for i, layer in enumerate(layers) if kept_heads(model, i)
               for p in (adapter.key, adapter.value)]
    shape = head_shape(model)
    total = len(batches) if hasattr(batches, "__len__") else None
    out = []
    with _only_grad_for(model, [m.weight for _, m in modules]):
        for n, batch in enumerate(batches, 1):
            batch = to_device(batch, device)
            with captured_io([m for _, m in modules]) as seen:  # id(module) -> (input, output)
                losses = model.example_losses(batch)  # (batch,)
            pairs = [seen[id(m)] for _, m in modules]
            grads = torch.autograd.grad(losses.sum(), [o for _, o in pairs])
            maps = torch.zeros(losses.shape[0], *shape, dtype=torch.float64)  # (batch, layers, heads)
            for (i, _), (x, _), dy in zip(modules, pairs, grads):
                kept = kept_heads(model, i)
                w = torch.einsum("bso,bsi->boi", dy.float(), x.float())  # (batch, heads*head_dim, hidden)
                maps[:, i, kept] += w.abs().reshape(w.shape[0], len(kept), -1).mean(-1).double().cpu()
            out.append(maps)
            report(on_progress, "kv_grad maps", n, total)
    if not out:
        raise ValueError("no examples to compute per-example head maps on")
    return torch.cat(out).numpy()
