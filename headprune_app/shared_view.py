"""The Shared heads page's panels: the top sets of several head maps (how many maps claim each head, which heads
most, how much two top sets overlap) and the stem-cell analysis of learned pruning beside gradient top sets of
the same size. The numbers are the core's (``multitask.affinity.shared_heads``, ``multitask.stemcells``); the
plain helpers here only arrange them for the figures of :mod:`headprune_core.figures.affinity`.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from headprune_app import affinity_view, captions, figures, tables
from headprune_app.state import Head
from headprune_core.figures.affinity import count_heatmap, jaccard_heatmap
from headprune_core.methods.similarity import chance_jaccard


def top_set_size(n_heads: int, top_p: float) -> int:
    """How many heads the top ``top_p`` percent of ``n_heads`` is (at least one).

    >>> top_set_size(12, 10), top_set_size(144, 10)
    (1, 14)
    """
    return max(1, int(round(n_heads * top_p / 100)))


def owners(shape: tuple[int, int], sets: dict[str, set[Head]]) -> dict[Head, list[str]]:
    """(layer, head) -> the maps (units) whose set holds it, for every head of a ``(layers, heads)`` model.

    >>> owners((1, 2), {"a": {(0, 1)}, "b": {(0, 0), (0, 1)}})
    {(0, 0): ['b'], (0, 1): ['a', 'b']}
    """
    return {(layer, h): [u for u, s in sets.items() if (layer, h) in s]
            for layer in range(shape[0]) for h in range(shape[1])}


def owners_of(heads) -> dict[Head, list[str]]:
    """(layer, head) -> the maps that claim it, from ``shared_heads(...)["heads"]`` (rows of layer, head, count,
    maps).

    >>> owners_of([(0, 1, 2, ["a", "b"])])
    {(0, 1): ['a', 'b']}
    """
    return {(int(layer), int(h)): list(o) for layer, h, _, o in heads}


def kept_sets(kept: dict[str, list]) -> dict[str, set[Head]]:
    """The heads each unit keeps, from its (layers, heads) 0/1 kept mask."""
    return {u: {(int(layer), int(h)) for layer, h in zip(*np.nonzero(np.asarray(m)))} for u, m in kept.items()}


def top_sets(shared: dict, *, what: str, top_p: int) -> None:
    """Metrics, the count heatmap, the most-claimed heads and the Jaccard overlap of ``shared``
    (``shared_heads(maps, top_percent=top_p)``); ``what`` names the maps (tasks, languages)."""
    count = shared["count"]
    n_maps, n_heads = len(shared["names"]), int(count.size)
    k = top_set_size(n_heads, top_p)
    numbers, charts_row = figures.figure_first()
    m1, m2, m3 = numbers.columns(3)
    m1.metric(f"heads in every top set ({n_maps} {what})", int((count == n_maps).sum()))
    m2.metric("heads in no top set", int((count == 0).sum()), help=f"of {n_heads}")
    m3.metric("top set size", f"{k} head{'s' if k != 1 else ''}", help=f"{top_p}% of {n_heads}")
    left, right = charts_row.columns([3, 2])
    with left:
        st.subheader(f"How many {what} claim each head")
        figures.show(count_heatmap(count, owners_of(shared["heads"]), n_maps=n_maps), key="count_map",
                     name=f"shared_heads_{what}_top{top_p}", title=f"How many {what} claim each head",
                     caption=captions.count_caption(what, top_p, k, n_maps, n_heads))
    with right:
        st.subheader("Most-claimed heads")
        st.dataframe(tables.claimed_table(shared["heads"], n_maps), hide_index=True, height=440)
    st.subheader("Overlap of the top sets (Jaccard)")
    chance = chance_jaccard(n_heads, k)
    figures.show(jaccard_heatmap(shared["names"], shared["jaccard"], chance=chance), key="jaccard",
                 name=f"shared_heads_{what}_jaccard", title="Overlap of the top sets (Jaccard)",
                 caption=captions.jaccard_caption(affinity_view.off_diagonal(shared["jaccard"])["mean"], k, n_heads,
                                                  chance))


def stem_cells(summary: dict, *, target: float) -> None:
    """Learned pruning's kept heads beside gradient top sets of the same size, per task and under multi-task
    training (``StemCells.summary()``), with the table per task."""
    units = summary["units"]
    n_units, count = len(units), np.asarray(summary["count"])
    majority, share = summary["majority"], summary["share_kept"]
    kept_k = int(round(share * count.size))
    chance = summary["claimed_chance"][majority]
    overlap = summary["stem_vs_gradient"]
    name = int(target * 100)
    s1, s2, s3 = st.columns(3)
    s1.metric(f"stem cells: kept by ≥ {majority} of {n_units} tasks", overlap["learned"],
              help=f"random sets of {kept_k} heads per task: {chance:.1f} expected")
    s2.metric(f"gradient top-{kept_k}: in ≥ {majority} of {n_units}", overlap["gradient"])
    s3.metric("in both", overlap["both"], help=f"Jaccard {overlap['jaccard']:.2f}")
    left, right = st.columns(2)
    with left:
        st.subheader("Learned pruning keeps")
        learned = owners(count.shape, kept_sets({u: summary["kept"][u] for u in units}))
        figures.show(count_heatmap(count, learned, n_maps=n_units), key="learned_count",
                     name=f"stem_cells_learned_{name}", title="Learned pruning keeps", show_caption=False,
                     caption=captions.stem_count_caption(n_units, share, kept_k, chance, majority))
    with right:
        st.subheader(f"Gradient top {kept_k} heads")
        gradient = owners(count.shape, {u: {tuple(h) for h in summary["gradient_sets"][u]} for u in units})
        figures.show(count_heatmap(np.asarray(summary["gradient_count"]), gradient, n_maps=n_units),
                     key="gradient_count", name=f"stem_cells_gradient_{name}", title=f"Gradient top {kept_k} heads",
                     show_caption=False, caption=captions.stem_count_caption(n_units, share, kept_k, chance, majority))
    st.caption(captions.stem_count_caption(n_units, share, kept_k, chance, majority))
    st.dataframe(tables.stem_table(summary), hide_index=True)
    st.caption(captions.STEM_TABLE)
    c1, c2 = st.columns([3, 2])
    with c1:
        figures.show(jaccard_heatmap(units, np.asarray(summary["jaccard"]),
                                     chance=chance_jaccard(count.size, kept_k)), key="learned_jaccard",
                     name=f"stem_cells_jaccard_{name}", title="Learned kept sets: overlap (Jaccard)",
                     caption=captions.STEM_JACCARD)
    with c2:
        multi = np.asarray(summary["multi_kept"])
        figures.show(count_heatmap(multi.astype(int), {}, n_maps=1), key="multi_kept",
                     name=f"stem_cells_multitask_{name}", title="Heads the multi-task run keeps",
                     caption=captions.multi_kept_caption(summary["multi_kept_n"], multi.size))
