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

from typing import Callable, Sequence

import numpy as np

from headprune_core.importance import normalise


def gradts_map(raw: np.ndarray) -> np.ndarray:
    """GradTS normalisation of a raw ``(layers, heads)`` map: per-layer sum, then global min-max."""
    return normalise(raw, normalize="layer_sum", minmax=True)


def correlation_matrix(maps: dict[str, np.ndarray], *, kind: str = "kendall") -> tuple[list[str], np.ndarray]:
    """Task x task Kendall tau (or Spearman rho) between the flattened maps; the diagonal is 1."""
    from scipy.stats import kendalltau, spearmanr  # here: scipy.stats takes seconds to import, and most
    # commands that import this module (every `study`) never correlate anything

    fn = {"kendall": kendalltau, "spearman": spearmanr}.get(kind)
    if fn is None:
        raise ValueError(f"unknown correlation {kind!r}; known: kendall, spearman")
    names = list(maps)
    shapes = {np.shape(m) for m in maps.values()}
    if len(shapes) > 1:
        raise ValueError(f"importance maps differ in shape: {sorted(shapes)}")
    out = np.eye(len(names))
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            value = fn(np.ravel(maps[names[a]]), np.ravel(maps[names[b]])).statistic
            out[a, b] = out[b, a] = 0.0 if np.isnan(value) else float(value)
    return names, out


def rank_auxiliary(names: Sequence[str], tau: np.ndarray, primary: str) -> list[tuple[str, float]]:
    """Candidate auxiliary tasks for ``primary``, most similar first (ties by name)."""
    if primary not in names:
        raise ValueError(f"unknown primary task {primary!r}; known: {', '.join(names)}")
    i = list(names).index(primary)
    pairs = [(n, float(tau[i, j])) for j, n in enumerate(names) if j != i]
    return sorted(pairs, key=lambda p: (-p[1], p[0]))


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
    from scipy.stats import kendalltau
    target = np.ravel(gradts_map(primary_map))
    taus = []
    for m in np.asarray(instance_maps):
        value = kendalltau(np.ravel(gradts_map(m)), target).statistic
        taus.append(0.0 if np.isnan(value) else float(value))
    return {"tau": taus, "kept": [i for i, t in enumerate(taus) if t > threshold]}


def top_sets(maps: dict[str, np.ndarray], *, top_percent: float) -> dict[str, set[tuple[int, int]]]:
    """Each map's top ``top_percent`` % heads as (layer, head) pairs (at least one head)."""
    if not 0 < top_percent <= 100:
        raise ValueError(f"top_percent must be in (0, 100], got {top_percent}")
    out = {}
    for name, m in maps.items():
        m = np.asarray(m)
        k = max(1, int(round(m.size * top_percent / 100)))
        order = np.lexsort((np.arange(m.size), -m.ravel()))[:k]  # highest first, ties by position
        out[name] = {(int(i // m.shape[1]), int(i % m.shape[1])) for i in order}
    return out


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


def jaccard_matrix(sets: Sequence[set]) -> np.ndarray:
    """``|A & B| / |A | B|`` of every pair of sets (two empty sets: 1), the diagonal 1."""
    out = np.eye(len(sets))
    for a in range(len(sets)):
        for b in range(a + 1, len(sets)):
            union = sets[a] | sets[b]
            out[a, b] = out[b, a] = len(sets[a] & sets[b]) / len(union) if union else 1.0
    return out


def cluster_order(matrix: np.ndarray) -> list[int]:
    """Row order that puts similar rows together (average-linkage on 1 - similarity) for heatmaps."""
    n = len(matrix)
    if n < 3:
        return list(range(n))
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform
    dist = np.clip(1 - np.asarray(matrix, dtype=float), 0, 2)
    np.fill_diagonal(dist, 0)
    dist = (dist + dist.T) / 2
    return [int(i) for i in leaves_list(linkage(squareform(dist, checks=False), method="average"))]
