"""Metrics, evaluation under a head mask, pruning strategies and prune-and-evaluate curves.

Metrics: seqeval entity F1 (with its per-type report) for BIO tasks, accuracy (with per-tag accuracy) for POS
and sentence tasks. Strategies turn a ranking into a ``(layers, heads)`` mask (1 = keep, 0 = pruned).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
import torch

from headprune_core.base.choices import LAYER_PAIRS, LAYER_PARTS, STRATEGIES
from headprune_core.base.files import read_json
from headprune_core.base.progress import Progress, report
from headprune_core.encoders.device import autocast, device_of, to_device
from headprune_core.encoders.heads import head_gates, head_shape
from headprune_core.methods.uncertainty import bootstrap_ci, sentence_units


def is_bio(labels: Sequence[str]) -> bool:
    """True if the label set is BIO-encoded spans (then seqeval's entity F1 is the metric)."""
    return any(lab.startswith(("B-", "I-")) for lab in labels)


def metric_name(labels: Sequence[str], kind: str) -> str:
    return "entity F1" if kind == "token" and is_bio(labels) else "accuracy"


def score_predictions(gold: list[list[int]] | list[int], pred: list[list[int]] | list[int],
                      labels: Sequence[str], *, kind: str) -> dict:
    """Metric (0-100), report, per-sentence counts (``units``) and the 95% bootstrap interval over sentences
    (``ci``: see :mod:`headprune_core.methods.uncertainty`) for gold/predicted label ids (per sentence for token tasks).

    >>> score_predictions([[0, 1]], [[0, 0]], ["B-NAME", "I-NAME"], kind="token")["metric"]
    'entity F1'
    """
    res = _score(gold, pred, labels, kind=kind)
    units = sentence_units(gold, pred, labels, kind=kind, bio=res["metric"] == "entity F1")
    ci = bootstrap_ci(units)
    return {**res, "units": units, "ci": [ci["low"], ci["high"]]}


def _score(gold, pred, labels: Sequence[str], *, kind: str) -> dict:
    if kind == "token" and is_bio(labels):
        g = [[labels[i] for i in s] for s in gold]
        p = [[labels[i] for i in s] for s in pred]
        from seqeval.metrics import classification_report, f1_score  # here: it imports scikit-learn (2.5 s),
        from seqeval.scheme import IOB2  # which a run that finds everything cached never needs

        report = classification_report(g, p, mode="strict", scheme=IOB2, output_dict=True, zero_division=0)
        score = 100 * f1_score(g, p, mode="strict", scheme=IOB2, zero_division=0)
        per = {k: {m: float(v) for m, v in d.items()} for k, d in report.items()}
        return {"metric": "entity F1", "score": float(score), "report": per, "n": sum(len(s) for s in g)}
    flat_g = np.array([i for s in gold for i in s] if kind == "token" else gold, dtype=np.int64)
    flat_p = np.array([i for s in pred for i in s] if kind == "token" else pred, dtype=np.int64)
    if flat_g.size == 0:
        raise ValueError("nothing to score: the evaluation split has no labelled tokens")
    per = {}
    for i, lab in enumerate(labels):
        sel = flat_g == i
        if sel.any():
            per[lab] = {"accuracy": float(100 * (flat_p[sel] == i).mean()), "support": int(sel.sum()),
                        "predicted": int((flat_p == i).sum())}
    return {"metric": "accuracy", "score": float(100 * (flat_g == flat_p).mean()), "report": per,
            "n": int(flat_g.size)}


def predict(model: torch.nn.Module, batches: Sequence[dict], *, mask: torch.Tensor | None = None,
            on_progress: Progress | None = None) -> tuple[list, list]:
    """Gold and predicted label ids (lists per sentence for token tasks) under an optional head mask."""
    device = device_of(model)
    gold, pred = [], []
    gates = head_gates(model, mask) if mask is not None else contextlib.nullcontext()
    model.eval()
    with gates, torch.no_grad():
        for n, batch in enumerate(batches, 1):
            with autocast(device):
                inputs = to_device({k: batch[k] for k in ("input_ids", "attention_mask")}, device)
                logits = model(inputs["input_ids"], inputs["attention_mask"], task=batch.get("task"))
            guess = logits.argmax(-1).cpu()
            labels = batch["labels"]
            if labels.dim() == 2:
                for g_row, p_row in zip(labels, guess):
                    keep = g_row != -100
                    gold.append(g_row[keep].tolist())
                    pred.append(p_row[keep].tolist())
            else:
                gold += labels.tolist()
                pred += guess.tolist()
            report(on_progress, "evaluating", n, len(batches))
    return gold, pred


def evaluate(model: torch.nn.Module, batches: Sequence[dict], labels: Sequence[str], *, kind: str,
             mask: torch.Tensor | None = None, on_progress: Progress | None = None) -> dict:
    """Metric and report of ``model`` on ``batches`` with the heads in ``mask`` gated off."""
    gold, pred = predict(model, batches, mask=mask, on_progress=on_progress)
    return score_predictions(gold, pred, labels, kind=kind)


# --- strategies -----------------------------------------------------------------------------------------------

def order_by(ranking: np.ndarray, *, most_important_first: bool = False) -> np.ndarray:
    """Flat head indices in pruning order: least important first (ties by position), or the reverse."""
    flat = np.asarray(ranking, dtype=np.float64).ravel()
    order = np.lexsort((np.arange(flat.size), flat))  # ascending score, stable
    return order[::-1].copy() if most_important_first else order


def mask_from_order(shape: tuple[int, int], order: np.ndarray, k: int) -> torch.Tensor:
    """Mask pruning the first ``k`` heads of ``order``."""
    total = shape[0] * shape[1]
    if not 0 <= k <= total:
        raise ValueError(f"cannot prune {k} heads: the model has {total} ({shape[0]} layers x {shape[1]} heads)")
    mask = torch.ones(total)
    mask[torch.as_tensor(order[:k], dtype=torch.long)] = 0
    return mask.view(shape)


def layer_mask(shape: tuple[int, int], part: str) -> torch.Tensor:
    """Prune every head of the bottom, middle or top third of the layers (Budhraja et al.)."""
    if part not in LAYER_PARTS:
        raise ValueError(f"unknown layer part {part!r}; known: {', '.join(LAYER_PARTS)}")
    n = shape[0]
    third = n // 3
    start = {"bottom": 0, "middle": third, "top": n - third}[part]
    mask = torch.ones(shape)
    mask[start:start + third] = 0
    return mask


def layer_pairs(n_layers: int) -> dict[str, tuple[int, int]]:
    """Two pairs of adjacent layers and two pairs of separated ones made of the same four layers (Budhraja et al.
    2020: consecutive layers cannot be pruned together), so each layer is removed once in each arm and its
    position cancels: ``i, i+1`` low and ``j, j+1`` high adjacent; ``i, j+1`` and ``i+1, j`` apart.

    >>> layer_pairs(12)
    {'adjacent low': (2, 3), 'adjacent high': (8, 9), 'apart outer': (2, 9), 'apart inner': (3, 8)}
    """
    if n_layers < 5:
        raise ValueError(f"layer pairs need at least 5 layers (two adjacent pairs with a layer between); the model "
                         f"has {n_layers}")
    i = min(n_layers // 6, (n_layers - 5) // 2)
    j = n_layers - 2 - i
    return dict(zip(LAYER_PAIRS, ((i, i + 1), (j, j + 1), (i, j + 1), (i + 1, j))))


def layers_mask(shape: tuple[int, int], layers) -> torch.Tensor:
    """Prune every head of ``layers``."""
    mask = torch.ones(shape)
    for layer in layers:
        if not 0 <= layer < shape[0]:
            raise ValueError(f"no layer {layer}: the model has {shape[0]}")
        mask[layer] = 0
    return mask


def strategy_mask(shape: tuple[int, int], strategy: str, k: int = 0, *, ranking: np.ndarray | None = None,
                  seed: int = 0, part: str = "middle", custom=None) -> torch.Tensor:
    """The mask a pruning strategy gives for ``k`` heads.

    ``importance``: the k least important by ``ranking``; ``reverse``: the k most important; ``random``: k
    heads drawn with ``seed``; ``layers``: all heads of one third of the layers (``part``); ``custom``: the
    given mask (nested lists or array of 0/1), checked for shape.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    if strategy in ("importance", "reverse"):
        if ranking is None:
            raise ValueError(f"strategy {strategy!r} needs a head ranking")
        if tuple(np.shape(ranking)) != tuple(shape):
            raise ValueError(f"ranking has shape {np.shape(ranking)}, the model has {tuple(shape)}")
        return mask_from_order(shape, order_by(ranking, most_important_first=strategy == "reverse"), k)
    if strategy == "random":
        return mask_from_order(shape, np.random.default_rng(seed).permutation(shape[0] * shape[1]), k)
    if strategy == "layers":
        return layer_mask(shape, part)
    mask = torch.as_tensor(np.asarray(custom, dtype=np.float32))
    if tuple(mask.shape) != tuple(shape):
        raise ValueError(f"custom mask has shape {tuple(mask.shape)}, the model has {tuple(shape)} "
                         "(layers, heads)")
    if not torch.all((mask == 0) | (mask == 1)):
        raise ValueError("custom mask entries must be 0 (pruned) or 1 (kept)")
    return mask


def load_mask(path, shape: tuple[int, int]) -> torch.Tensor:
    """A ``(layers, heads)`` 0/1 mask from a JSON file (``[[1, 0, ...], ...]``, 1 keep, 0 pruned).

    Errors name the file and what is wrong (not JSON, NaN, not a table of numbers, wrong shape, a value other
    than 0 or 1 and where it is).
    """

    data = read_json(path, "head mask (JSON)")
    layers, heads = shape
    table = isinstance(data, list) and all(isinstance(row, list) for row in data) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for row in data for v in row)
    if not table or len({len(row) for row in data}) > 1 or not data:
        raise ValueError(f"{path}: a head mask is a list of {layers} rows of {heads} numbers (1 keep, 0 pruned)")
    arr = np.asarray(data, dtype=np.float64)
    if arr.shape != tuple(shape):
        raise ValueError(f"{path}: mask has shape {arr.shape}, the model has {tuple(shape)} (layers, heads)")
    bad = np.argwhere(~np.isin(arr, (0.0, 1.0)))
    if len(bad):
        layer, head = (int(v) for v in bad[0])
        raise ValueError(f"{path}: mask entries must be 0 (pruned) or 1 (kept); layer {layer}, head {head} is "
                         f"{data[layer][head]!r}")
    return torch.as_tensor(arr, dtype=torch.float32)


def default_steps(shape: tuple[int, int], *, step: int | None = None) -> list[int]:
    """0, step, 2*step, ... up to all heads (step defaults to one layer's worth of heads)."""
    total = shape[0] * shape[1]
    step = step or shape[1]
    return sorted(set(range(0, total + 1, step)) | {total})


def curve(model: torch.nn.Module, batches: Sequence[dict], labels: Sequence[str], *, kind: str,
          strategy: str, steps: Sequence[int] | None = None, ranking: np.ndarray | None = None,
          seeds: Sequence[int] = (0,), on_progress: Progress | None = None) -> dict:
    """Metric vs heads pruned for one strategy (mean and spread over ``seeds`` for ``random``), with each point's
    95% bootstrap interval over sentences (``low``, ``high``) and per-sentence counts (``units``, per seed).

    For ``layers`` the points are the bottom, middle and top thirds (each prunes the same number of heads).
    """
    shape = head_shape(model)
    if strategy == "layers":
        jobs = [(part, [strategy_mask(shape, "layers", part=part)]) for part in LAYER_PARTS]
    else:
        steps = list(steps) if steps else default_steps(shape)
        use_seeds = list(seeds) if strategy == "random" else [0]
        jobs = [(k, [strategy_mask(shape, strategy, k, ranking=ranking, seed=s) for s in use_seeds])
                for k in steps]
    total = sum(len(m) for _, m in jobs)
    done = 0
    ks, means, stds, parts, lows, highs, units, metric = [], [], [], [], [], [], [], None
    for label, masks in jobs:
        values, point_units = [], []
        for m in masks:
            res = evaluate(model, batches, labels, kind=kind, mask=m)
            metric = res["metric"]
            values.append(res["score"])
            point_units.append(res["units"])
            done += 1
            report(on_progress, f"curve: {strategy}", done, total)
        ci = bootstrap_ci(point_units)  # of the mean over the random seeds' masks
        pruned = int((masks[0] == 0).sum())
        ks.append(pruned)
        parts.append(str(label))
        means.append(float(np.mean(values)))
        stds.append(float(np.std(values)))
        lows.append(ci["low"])
        highs.append(ci["high"])
        units.append(point_units)
    return {"strategy": strategy, "metric": metric, "k": ks, "mean": means, "std": stds, "labels": parts,
            "low": lows, "high": highs, "units": units, "n_seeds": len(seeds) if strategy == "random" else 1}
