"""How alike head maps are: rank correlations (Kendall's tau, Spearman's rho) between flattened ``(layers,
heads)`` maps with the band random rankings fall in, the overlap (Jaccard) of their top sets, and an order that
puts similar maps together for heatmaps. Used across languages (Ma et al.) and across tasks (GradTS, stem cells).

>>> import numpy as np
>>> names, rho = correlation_matrix({"a": np.arange(6.0), "b": np.arange(6.0)[::-1]}, kind="spearman")
>>> float(rho[0, 1])
-1.0
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from headprune_core.base.choices import check_choice

CORRELATIONS = ("kendall", "spearman")


def rank_correlation(a: np.ndarray, b: np.ndarray, *, kind: str = "kendall") -> float:
    """Kendall's tau (or Spearman's rho) of two flattened maps; 0 where it is undefined (a constant map)."""
    # here: scipy.stats takes 1.5 s to import, and a study that only trains and scores never correlates
    from scipy import stats
    check_choice(kind, CORRELATIONS, "correlation")
    fn = stats.kendalltau if kind == "kendall" else stats.spearmanr
    value = fn(np.ravel(a), np.ravel(b)).statistic
    return 0.0 if np.isnan(value) else float(value)


def correlation_matrix(maps: dict[str, np.ndarray], *, kind: str = "kendall") -> tuple[list[str], np.ndarray]:
    """Task x task Kendall tau (or Spearman rho) between the flattened maps; the diagonal is 1."""
    check_choice(kind, CORRELATIONS, "correlation")
    names = list(maps)
    shapes = {np.shape(m) for m in maps.values()}
    if len(shapes) > 1:
        raise ValueError(f"importance maps differ in shape: {sorted(shapes)}")
    out = np.eye(len(names))
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            out[a, b] = out[b, a] = rank_correlation(maps[names[a]], maps[names[b]], kind=kind)
    return names, out


def spearman_matrix(maps: dict[str, np.ndarray]) -> tuple[list[str], np.ndarray]:
    """Spearman correlation between the flattened head rankings of each pair of maps (e.g. languages)."""
    return correlation_matrix(maps, kind="spearman")


def spearman_chance_band(n_items: int, *, level: float = 0.95) -> float:
    """Half-width of the band that Spearman's rho of two independent random rankings of ``n_items`` falls in
    with probability ``level`` (two-sided; t approximation with n - 2 degrees of freedom, close to
    1.96 / sqrt(n - 1) for many items: 0.164 for 144 heads). A correlation inside it says nothing.

    >>> round(spearman_chance_band(144), 3)
    0.164
    """
    from scipy.stats import t as student_t  # here: as in rank_correlation
    if n_items < 4:
        raise ValueError(f"a chance band needs at least 4 ranked items, got {n_items}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    df = n_items - 2
    crit = float(student_t.ppf(0.5 + level / 2, df))
    return crit / float(np.sqrt(df + crit ** 2))


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


def jaccard_matrix(sets: Sequence[set]) -> np.ndarray:
    """``|A & B| / |A | B|`` of every pair of sets (two empty sets: 1), the diagonal 1."""
    out = np.eye(len(sets))
    for a in range(len(sets)):
        for b in range(a + 1, len(sets)):
            union = sets[a] | sets[b]
            out[a, b] = out[b, a] = len(sets[a] & sets[b]) / len(union) if union else 1.0
    return out


def chance_jaccard(n_heads: int, k: int) -> float:
    """Expected Jaccard overlap of two independent random k-subsets of n heads (approximately k / (2n - k)).

    >>> round(chance_jaccard(144, 14), 3)
    0.051
    """
    if n_heads <= 0 or k <= 0:
        return 0.0
    inter = k * k / n_heads
    return inter / (2 * k - inter)


def cluster_order(matrix: np.ndarray) -> list[int]:
    """Row order that puts similar rows together (average-linkage on 1 - similarity) for heatmaps."""
    n = len(matrix)
    if n < 3:
        return list(range(n))
    from scipy.cluster.hierarchy import leaves_list, linkage  # here: scipy on use, as in rank_correlation
    from scipy.spatial.distance import squareform
    dist = np.clip(1 - np.asarray(matrix, dtype=float), 0, 2)
    np.fill_diagonal(dist, 0)
    dist = (dist + dist.T) / 2
    return [int(i) for i in leaves_list(linkage(squareform(dist, checks=False), method="average"))]
