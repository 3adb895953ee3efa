"""GradTS affinity and shared heads on fixed inputs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr

from headprune_core.methods.similarity import cluster_order, correlation_matrix, top_sets
from headprune_core.multitask.affinity import gradts_map, rank_auxiliary, select_threshold, select_trial, shared_heads


def _maps():
    rng = np.random.default_rng(0)
    a = rng.random((3, 4))
    return {"a": a, "b": a + 0.05 * rng.random((3, 4)), "c": rng.random((3, 4)), "d": -a}


def test_tau_and_spearman_equal_scipy():
    maps = _maps()
    names, tau = correlation_matrix(maps)
    assert names == ["a", "b", "c", "d"]
    assert tau[0, 2] == pytest.approx(kendalltau(maps["a"].ravel(), maps["c"].ravel()).statistic)
    assert tau[0, 3] == pytest.approx(-1.0) and np.allclose(np.diag(tau), 1) and np.allclose(tau, tau.T)
    _, rho = correlation_matrix(maps, kind="spearman")
    assert rho[1, 2] == pytest.approx(spearmanr(maps["b"].ravel(), maps["c"].ravel()).statistic)
    with pytest.raises(ValueError, match="unknown correlation 'pearson'"):
        correlation_matrix(maps, kind="pearson")


def test_gradts_map_normalisation():
    m = gradts_map(np.array([[1.0, 3.0], [2.0, 2.0]]))
    assert m.min() == 0 and m.max() == 1
    assert m.tolist() == [[0.0, 1.0], [0.5, 0.5]]


def test_ranking_threshold_and_trial():
    names = ["p", "x", "y", "z"]
    tau = np.array([[1, 0.7, 0.2, 0.65], [0.7, 1, 0, 0], [0.2, 0, 1, 0], [0.65, 0, 0, 1]])
    ranking = rank_auxiliary(names, tau, "p")
    assert ranking == [("x", 0.7), ("z", 0.65), ("y", 0.2)]
    assert select_threshold(ranking, 0.6) == ["x", "z"]
    assert select_threshold(ranking, 0.9) == []
    calls = []
    dev = {(): 80.0, ("x",): 82.0, ("x", "z"): 81.0, ("x", "z", "y"): 79.0}

    def dev_score(aux):
        calls.append(tuple(aux))
        return dev[tuple(aux)]

    res = select_trial(ranking, dev_score)
    assert res["selected"] == ["x"] and res["best_dev"] == 82.0
    assert calls == [(), ("x",), ("x", "z"), ("x", "z", "y")]
    assert select_trial(ranking, dev_score, max_tasks=1)["trials"][-1]["aux"] == ["x"]
    with pytest.raises(ValueError, match="unknown primary task 'q'"):
        rank_auxiliary(names, tau, "q")


def test_shared_heads_counts_and_jaccard():
    maps = {"t1": np.array([[9.0, 1, 1], [1, 8, 1]]), "t2": np.array([[9.0, 1, 1], [1, 1, 7]]),
            "t3": np.array([[9.0, 5, 1], [1, 1, 1]])}
    assert top_sets(maps, top_percent=34)["t1"] == {(0, 0), (1, 1)}
    res = shared_heads(maps, top_percent=34)  # 2 heads of 6 each
    assert res["count"].tolist() == [[3, 1, 0], [0, 1, 1]]
    assert res["heads"][0] == (0, 0, 3, ["t1", "t2", "t3"])
    assert res["jaccard"][0, 1] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="top_percent"):
        shared_heads(maps, top_percent=0)


def test_cluster_order_groups_similar_rows():
    sim = np.array([[1, 0.9, 0.1, 0.1], [0.9, 1, 0.1, 0.1], [0.1, 0.1, 1, 0.8], [0.1, 0.1, 0.8, 1]])
    order = cluster_order(sim)
    assert sorted(order) == [0, 1, 2, 3]
    assert abs(order.index(0) - order.index(1)) == 1 and abs(order.index(2) - order.index(3)) == 1
