"""GradTS task affinity, auxiliary-task selection, and heads shared by many tasks.

GradTS (Ma et al. 2021): fine-tune each task alone, take its head-importance map (|gradient| of key and value
weights per head, each layer row divided by its sum, min-max over the matrix), and correlate the flattened maps
of two tasks with Kendall's tau. For a primary task, auxiliary tasks are ranked by tau; GradTS-thres keeps those
above a threshold, GradTS-trial adds them greedily in tau order (one multi-task run each) and keeps the set that
is best on dev; GradTS-fg keeps the auxiliary *examples* whose own map correlates with the primary's above a
threshold. Each task's map is computed once and cached, so adding a candidate computes only its map.

Shared heads (He & Choi 2021): how many tasks have each head in their top p%.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from headprune_core.methods.importance import normalise
from headprune_core.methods.similarity import jaccard_matrix, rank_correlation, top_sets


def gradts_map(raw: np.ndarray) -> np.ndarray:
    """GradTS normalisation of a raw ``(layers, heads)`` map: per-layer sum, then global min-max."""
    return normalise(raw, normalize="layer_sum", minmax=True)


def rank_auxiliary(names: Sequence[str], tau: np.ndarray, primary: str) -> list[tuple[str, float]]:
    """Candidate auxiliary tasks for ``primary``, most similar first (ties by name)."""
    if primary not in names:
        raise ValueError(f"unknown primary task {primary!r}; known: {', '.join(names)}")
    i = list(names).index(primary)
    pairs = [(n, float(tau[i, j])) for j, n in enumerate(names) if j != i]
    return sorted(pairs, key=lambda p: (-p[1], p[0]))


def primary_order(primaries, names) -> list[str]:
    """The units to offer as primary task: the plan's primaries (those with a map) first, then the others (the
    Task affinity page's choices and, the first, its default; the handout's too).

    >>> primary_order(["pos/de"], ["pos/en", "pos/de", "name/es"])
    ['pos/de', 'pos/en', 'name/es']
    """
    return [p for p in primaries if p in names] + [n for n in names if n not in primaries]


def select_threshold(ranking: Sequence[tuple[str, float]], threshold: float) -> list[str]:
    """GradTS-thres: every auxiliary task whose tau with the primary is above ``threshold``."""
    return [name for name, tau in ranking if tau > threshold]


def select_trial(ranking: Sequence[tuple[str, float]], dev_score: Callable[[list[str]], float], *,
                 max_tasks: int | None = None) -> dict:
    """GradTS-trial: add auxiliary tasks one at a time in tau order, keep the set with the best dev score.

    ``dev_score(aux_tasks)`` trains the primary task with those auxiliaries (``[]`` = alone) and returns its
    dev metric. Returns the chosen set and every trial.
    """
    candidates = [name for name, _ in ranking][:max_tasks]
    trials = [{"aux": [], "dev": float(dev_score([]))}]
    for i in range(1, len(candidates) + 1):
        trials.append({"aux": candidates[:i], "dev": float(dev_score(candidates[:i]))})
    best = max(trials, key=lambda t: (t["dev"], -len(t["aux"])))
    return {"selected": best["aux"], "best_dev": best["dev"], "trials": trials}


def select_instances(instance_maps: np.ndarray, primary_map: np.ndarray, threshold: float) -> dict:
    """GradTS-fg: Kendall tau of each example's map (GradTS-normalised) with the primary task's map; the
    examples above ``threshold`` are kept.

    Args:
        instance_maps: ``(examples, layers, heads)`` raw per-example maps of one auxiliary unit.
        primary_map: the primary task's ``(layers, heads)`` map (raw or normalised: it is normalised here).
    Returns:
        ``{"tau": [per example], "kept": [indices of the examples kept]}``.
    """
    target = gradts_map(primary_map)
    taus = [rank_correlation(gradts_map(m), target) for m in np.asarray(instance_maps)]
    return {"tau": taus, "kept": [i for i, t in enumerate(taus) if t > threshold]}


def shared_heads(maps: dict[str, np.ndarray], *, top_percent: float = 10.0) -> dict:
    """How many tasks claim each head (top p%), the Jaccard overlap of the top sets, and the most-claimed heads.

    Returns ``{"count": (layers, heads) int array, "names": [...], "jaccard": (n, n) array,
    "heads": [(layer, head, count, [task, ...]), ...] sorted by count}``.
    """
    if not maps:
        raise ValueError("no importance maps given")
    shape = np.shape(next(iter(maps.values())))
    sets = top_sets(maps, top_percent=top_percent)
    count = np.zeros(shape, dtype=int)
    owners: dict[tuple[int, int], list[str]] = {}
    for name, s in sets.items():
        for head in s:
            count[head] += 1
            owners.setdefault(head, []).append(name)
    names = list(maps)
    jac = jaccard_matrix([sets[n] for n in names])
    heads = sorted(((h[0], h[1], len(o), sorted(o)) for h, o in owners.items()),
                   key=lambda r: (-r[2], r[0], r[1]))
    return {"count": count, "names": names, "jaccard": jac, "heads": heads}
