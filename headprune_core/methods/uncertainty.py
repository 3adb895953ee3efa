"""How sure a metric is: per-sentence counts, bootstrap intervals over sentences, paired bootstrap differences.

Test splits here hold 100 to 500 sentences, so a difference of a point or two may be noise. Every evaluation
keeps, per sentence, the counts its metric is made of (``units``): ``correct``/``total`` tokens (or 0/1 for a
sentence task) for accuracy, ``tp``/``pred``/``gold`` entities for seqeval's strict micro F1. Resampling
sentences (not tokens: tokens of a sentence are not independent) 1,000 times gives a 95% percentile interval;
two results on the same sentences are compared on the same resamples (paired bootstrap), and the difference is
called distinguishable from zero when its interval excludes 0. Results of several training seeds are averaged
per resample, so the interval is that of the seed mean over sentences; the seeds' own spread is given beside it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from headprune_core.methods.inference import Estimate

N_BOOT = 1000
LEVEL = 0.95

Units = dict  # {"correct": [...], "total": [...]} or {"tp": [...], "pred": [...], "gold": [...]}


def sentence_units(gold: list, pred: list, labels: Sequence[str], *, kind: str, bio: bool) -> Units:
    """Per-sentence counts of the metric: entity tp/pred/gold (seqeval strict IOB2) when ``bio``, else
    correct/total tokens (token tasks) or 0/1 (sentence tasks).

    >>> sentence_units([[0, 1], [2]], [[0, 0], [2]], ["B-X", "I-X", "O"], kind="token", bio=True)
    {'tp': [0, 0], 'pred': [2, 0], 'gold': [1, 0]}
    """
    if bio:
        from seqeval.scheme import IOB2, Entities  # here: seqeval imports scikit-learn (2 s); only BIO tasks need it
        g = [[labels[i] for i in s] for s in gold]
        p = [[labels[i] for i in s] for s in pred]
        gold_ents = Entities(g, IOB2).entities
        pred_ents = Entities(p, IOB2).entities
        tp, n_pred, n_gold = [], [], []
        for ge, pe in zip(gold_ents, pred_ents):
            gs = {e.to_tuple() for e in ge}
            ps = {e.to_tuple() for e in pe}
            tp.append(len(gs & ps))
            n_pred.append(len(ps))
            n_gold.append(len(gs))
        return {"tp": tp, "pred": n_pred, "gold": n_gold}
    if kind == "token":
        return {"correct": [int(sum(a == b for a, b in zip(g, p))) for g, p in zip(gold, pred)],
                "total": [len(g) for g in gold]}
    return {"correct": [int(a == b) for a, b in zip(gold, pred)], "total": [1] * len(gold)}


def _arrays(units: Units) -> tuple[str, np.ndarray]:
    """("f1" | "acc", array (n_stats, n_sentences))."""
    if "tp" in units:
        return "f1", np.array([units["tp"], units["pred"], units["gold"]], dtype=np.float64)
    if "correct" in units:
        return "acc", np.array([units["correct"], units["total"]], dtype=np.float64)
    raise ValueError(f"not per-sentence metric counts (tp/pred/gold or correct/total): fields {sorted(units)}")


def n_sentences(units: Units) -> int:
    return len(units.get("tp", units.get("correct", [])))


def _metric(kind: str, sums: np.ndarray) -> np.ndarray:
    """Metric (0-100) from summed counts: sums has shape (n_stats, ...)."""
    if kind == "f1":
        denom = sums[1] + sums[2]
        return np.where(denom > 0, 200 * sums[0] / np.where(denom > 0, denom, 1), 0.0)
    return np.where(sums[1] > 0, 100 * sums[0] / np.where(sums[1] > 0, sums[1], 1), 0.0)


def metric_of(units: Units) -> float:
    """The metric over all sentences (equals the evaluation's score)."""
    kind, arr = _arrays(units)
    return float(_metric(kind, arr.sum(1)))


def resamples(n: int, *, n_boot: int = N_BOOT, seed: int = 0) -> np.ndarray:
    """(n_boot, n) sentence indices drawn with replacement; the same seed gives the same draws, so results on
    the same sentences are resampled alike (paired)."""
    if n < 1:
        raise ValueError("cannot bootstrap an evaluation of no sentences")
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def _boot_scores(runs: Sequence[Units], idx: np.ndarray, run_idx: np.ndarray | None = None) -> np.ndarray:
    """Per resample, the metric averaged over ``runs`` (seeds) on the same sentences: shape (n_boot,). With
    ``run_idx`` ((n_boot, len(runs)) run indices drawn with replacement), each resample averages its own draw of
    runs instead of every run once (a two-level bootstrap: training seeds and sentences)."""
    n_boot, n = idx.shape
    # how often each resample draws each sentence: (n_boot, n)
    counts = np.bincount((idx + n * np.arange(n_boot)[:, None]).ravel(), minlength=n_boot * n).reshape(n_boot, n)
    scores = np.zeros((len(runs), n_boot))
    for i, units in enumerate(runs):
        kind, arr = _arrays(units)  # (n_stats, n)
        if arr.shape[1] != n:
            raise ValueError(f"runs to average are on different sentences ({arr.shape[1]} vs {n})")
        scores[i] = _metric(kind, arr @ counts.T)  # counts summed over each resample's sentences: (n_stats, n_boot)
    if run_idx is None:
        return scores.mean(axis=0)
    return scores[run_idx, np.arange(n_boot)[:, None]].mean(axis=1)


def _run_draws(n_runs: int, n_boot: int, seed: int) -> np.ndarray | None:
    """(n_boot, n_runs) run indices drawn with replacement (None for a single run: nothing to resample)."""
    if n_runs < 2:
        return None
    return np.random.default_rng([seed, n_runs, 7]).integers(0, n_runs, size=(n_boot, n_runs))


def _as_runs(x) -> list[Units]:
    runs = [x] if isinstance(x, dict) else list(x)
    if not runs:
        raise ValueError("no results to take an interval of")
    return runs


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.percentile(values, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def bootstrap_ci(runs, *, n_boot: int = N_BOOT, level: float = LEVEL, seed: int = 0,
                 resample_seeds: bool = False) -> dict:
    """The metric (mean over ``runs``: one result's units, or one per training seed on the same sentences) and
    its ``level`` percentile interval from ``n_boot`` resamples of sentences (and, with ``resample_seeds``, of
    the runs too: then the interval also holds the variation between training seeds).

    Returns ``{"score", "low", "high", "n", "seeds", "spread"}``; ``spread`` is the seeds' (min, max) score.
    """
    runs = _as_runs(runs)
    n = n_sentences(runs[0])
    per_seed = [metric_of(u) for u in runs]
    draws = _run_draws(len(runs), n_boot, seed) if resample_seeds else None
    low, high = _interval(_boot_scores(runs, resamples(n, n_boot=n_boot, seed=seed), draws), level)
    return {"score": float(np.mean(per_seed)), "low": low, "high": high, "n": n, "seeds": len(runs),
            "spread": [min(per_seed), max(per_seed)], "per_seed": per_seed}


def paired_bootstrap(a, b, *, n_boot: int = N_BOOT, level: float = LEVEL, seed: int = 0,
                     resample_seeds: bool = False) -> dict:
    """Difference ``b - a`` of two results on the same sentences (each one result or several seeds), with its
    paired-bootstrap interval: both are scored on the same resamples of sentences. With ``resample_seeds``
    the runs are also drawn with replacement, so the interval holds the variation between training runs as
    well; runs at the same position are paired (the same training seed: one draw serves both sides) when both
    sides have as many, else each side is drawn on its own.

    ``distinguishable`` is True when the interval excludes 0; ``p`` is the two-sided share of resamples on the
    other side of 0 (a bootstrap p-value, at least 1/n_boot).
    """
    ra, rb = _as_runs(a), _as_runs(b)
    n = n_sentences(ra[0])
    if n_sentences(rb[0]) != n:
        raise ValueError(f"a paired comparison needs the same sentences; got {n} and {n_sentences(rb[0])}")
    idx = resamples(n, n_boot=n_boot, seed=seed)
    da = db = None
    if resample_seeds:
        da = _run_draws(len(ra), n_boot, seed)
        db = da if len(rb) == len(ra) else _run_draws(len(rb), n_boot, seed + 1)
    diffs = _boot_scores(rb, idx, db) - _boot_scores(ra, idx, da)
    diff = float(np.mean([metric_of(u) for u in rb]) - np.mean([metric_of(u) for u in ra]))
    return _diff_result(diff, diffs, n, level, n_boot)


def as_interval(res: dict) -> dict:
    """``{"score", "low", "high"}`` of a :func:`bootstrap_ci` result, or of an evaluation (its ``score`` and its
    ``ci`` pair)."""
    if "low" in res:
        return res
    low, high = res["ci"]
    return {**res, "low": low, "high": high}


def ci_text(res: dict, *, digits: int = 1) -> str:
    """The compact form for tables: ``"96.1 [95.2, 96.9]"`` (a :func:`bootstrap_ci` result or an evaluation)."""
    r = as_interval(res)
    return f"{r['score']:.{digits}f} [{r['low']:.{digits}f}, {r['high']:.{digits}f}]"


def diff_text(res: dict, *, digits: int = 1) -> str:
    """The compact form of a paired difference: ``"+1.2 [-0.3, +2.6]"``, with `` *`` when distinguishable from 0."""
    return (f"{res['diff']:+.{digits}f} [{res['low']:+.{digits}f}, {res['high']:+.{digits}f}]"
            + (" *" if res["distinguishable"] else ""))


def describe_diff(res: dict, *, unit: str = "points") -> str:
    """In words: ``"+1.2 points (95% CI -0.3 to +2.6; not distinguishable from 0)"``."""
    verdict = "distinguishable from 0" if res["distinguishable"] else "not distinguishable from 0"
    return f"{res['diff']:+.1f} {unit} (95% CI {res['low']:+.1f} to {res['high']:+.1f}; {verdict})"


def describe_ci(res: dict, *, digits: int = 1) -> str:
    """In words: ``"96.1 (95% CI 95.2-96.9)"``, with the seeds' range when there are several (a
    :func:`bootstrap_ci` result or an evaluation)."""
    r = as_interval(res)
    text = f"{r['score']:.{digits}f} (95% CI {r['low']:.{digits}f}-{r['high']:.{digits}f})"
    if r.get("seeds", 1) > 1:
        text += f", {r['seeds']} seeds {r['spread'][0]:.{digits}f}-{r['spread'][1]:.{digits}f}"
    return text


def _points(curve: dict, ks: Sequence[int]) -> list[list[Units]]:
    """The per-seed units of a curve's points at ``ks`` (heads pruned)."""
    at = {k: u for k, u in zip(curve["k"], curve["units"])}
    missing = [k for k in ks if k not in at]
    if missing:
        raise ValueError(f"the curve has no point at {missing} heads pruned; it has {curve['k']}")
    return [at[k] for k in ks]


def curve_mean_ci(curve: dict, ks: Sequence[int], *, n_boot: int = N_BOOT, level: float = LEVEL,
                  seed: int = 0) -> dict:
    """The curve's mean metric over the points ``ks`` (each point: its mean over random seeds), with the 95%
    interval from resampling sentences (all points scored on the same resamples): ``{"score", "low", "high"}``."""
    points = _points(curve, ks)
    idx = resamples(n_sentences(points[0][0]), n_boot=n_boot, seed=seed)
    boot = np.mean([_boot_scores(runs, idx) for runs in points], axis=0)
    score = float(np.mean([np.mean([metric_of(u) for u in runs]) for runs in points]))
    low, high = _interval(boot, level)
    return {"score": score, "low": low, "high": high, "n": idx.shape[1], "points": len(ks)}


def paired_curves(a: dict, b: dict, ks: Sequence[int], *, n_boot: int = N_BOOT, level: float = LEVEL,
                  seed: int = 0) -> dict:
    """Mean over the points ``ks`` of curve ``b`` minus curve ``a`` (same sentences), paired bootstrap: the
    same sentence resamples score every point of both curves. Keys as :func:`paired_bootstrap`."""
    pa, pb = _points(a, ks), _points(b, ks)
    n = n_sentences(pa[0][0])
    if n_sentences(pb[0][0]) != n:
        raise ValueError(f"a paired comparison needs the same sentences; got {n} and {n_sentences(pb[0][0])}")
    idx = resamples(n, n_boot=n_boot, seed=seed)
    diffs = np.mean([_boot_scores(rb, idx) - _boot_scores(ra, idx) for ra, rb in zip(pa, pb)], axis=0)
    diff = float(np.mean([np.mean([metric_of(u) for u in rb]) - np.mean([metric_of(u) for u in ra])
                          for ra, rb in zip(pa, pb)]))
    return _diff_result(diff, diffs, n, level, n_boot)


def _diff_result(diff: float, diffs: np.ndarray, n: int, level: float, n_boot: int) -> dict:
    low, high = _interval(diffs, level)
    side = np.mean(diffs <= 0) if diff > 0 else np.mean(diffs >= 0)
    return {"diff": diff, "low": low, "high": high, "n": n, "distinguishable": bool(low > 0 or high < 0),
            "p": float(max(min(1.0, 2 * side), 1 / n_boot))}


def sentence_values(units: Units) -> np.ndarray:
    """Per-sentence values whose mean is exactly the metric over all sentences: the metric's linearisation
    (its influence function, as the delta method takes it), so a statistic of metrics can be analysed per
    sentence. Accuracy: ``M + 100 (c_i - M/100 t_i) / mean(t)``; F1: ``F + (200 tp_i - F (pred_i + gold_i)) /
    mean(pred + gold)``. Shape ``(n_sentences,)``.

    >>> sentence_values({"correct": [1, 3], "total": [2, 4]}).round(2).tolist()
    [50.0, 83.33]
    """
    kind, arr = _arrays(units)
    metric = float(_metric(kind, arr.sum(1)))
    if kind == "f1":
        denom = arr[1] + arr[2]
        scale = denom.mean()
        return metric + (200 * arr[0] - metric * denom) / scale if scale > 0 else np.zeros(arr.shape[1])
    scale = arr[1].mean()
    return metric + 100 * (arr[0] - metric / 100 * arr[1]) / scale if scale > 0 else np.zeros(arr.shape[1])


FD_STEP = 1e-3  # metric points: the statistics are smooth (differences and ratios of metrics near 1-100)


def _gradient(statistic, metrics: dict[str, float]) -> dict[str, float]:
    """d statistic / d metric for each metric, by central differences."""
    out = {}
    for k in metrics:
        up, down = dict(metrics), dict(metrics)
        up[k] += FD_STEP
        down[k] -= FD_STEP
        out[k] = (float(statistic(up)) - float(statistic(down))) / (2 * FD_STEP)
    return out


def run_estimate(runs: Sequence[dict], statistic) -> Estimate:
    """An :class:`~headprune_core.methods.inference.Estimate` of ``statistic`` with training runs as the unit and
    its variance from the crossed random-effects ANOVA of runs and test sentences
    (:func:`~headprune_core.methods.inference.crossed_parts`).

    ``runs`` holds one dict per training run: name -> ``(test set, units)``. ``statistic`` maps a dict of name ->
    metric to the run's value (any smooth function: differences, means, relative costs). Per run it is
    linearised around that run's metrics, so each test set gets per-(run, sentence) values: the gradient times
    each metric's per-sentence values (:func:`sentence_values`), summed over the metrics on that test set.
    Every run must have its results on each test set on the same sentences.
    """
    if not runs:
        raise ValueError("no training runs to estimate from")
    values, per_set = [], {}
    for run in runs:
        metrics = {k: metric_of(u) for k, (_, u) in run.items()}
        values.append(float(statistic(metrics)))
        grad = _gradient(statistic, metrics)
        rows: dict[str, np.ndarray] = {}
        for k, (test, units) in run.items():
            contrib = grad[k] * sentence_values(units)
            if test in rows and rows[test].shape != contrib.shape:
                raise ValueError(f"results on test set {test!r} have different numbers of sentences "
                                 f"({rows[test].shape[0]} and {contrib.shape[0]})")
            rows[test] = rows.get(test, 0.0) + contrib
        for test, row in rows.items():
            per_set.setdefault(test, []).append(row)
    blocks = []
    for test, rows in per_set.items():
        if len(rows) != len(runs) or len({r.shape for r in rows}) != 1:
            raise ValueError(f"results on test set {test!r} have different numbers of sentences in different runs")
        blocks.append(np.stack(rows))  # (runs, sentences)
    return Estimate.crossed(values, blocks)
