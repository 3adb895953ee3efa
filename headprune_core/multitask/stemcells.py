"""Stem-cell heads as He & Choi (2021) found them: learned head pruning per task and under multi-task training.

For every unit of a GradTS plan, its single-task fine-tune (the one GradTS maps come from) continues with
hard-concrete head gates and an L0 term (:mod:`headprune_core.methods.learned`) until it keeps the share of heads asked
for; the multi-task fine-tune on all units (GradTS's "all" run) does the same with one set of gates for every
task. Then: the kept set of each task, how many tasks keep each head (heads most tasks keep are the "stem
cells"), the Jaccard overlap between tasks, the kept set under multi-task training, each task's test metric
under single-task and multi-task learned pruning (with intervals), and how the learned sets compare with the
tasks' top gradient heads of the same size and with random sets (the chance level).

Every fine-tune and evaluation is a cached entry of its own; the summary is assembled from them (cheap).

>>> # cells = StemCells(GradTS(Study("me5-small"), GRADTS_PRESETS["gradts-demo"])); cells.run()
"""

from __future__ import annotations

from math import comb

import numpy as np

from headprune_core.base.progress import Progress, cached_label, report
from headprune_core.methods.similarity import jaccard_matrix, top_sets
from headprune_core.methods.uncertainty import bootstrap_ci, paired_bootstrap
from headprune_core.runs.config import l0_pairs, split_unit

DEFAULT_L0 = {"target": 0.5, "epochs": 1.0}
"""Learned pruning of the stem-cell analysis: remove half of the heads, in one epoch of the unit's data."""


def expected_claimed(n_tasks: int, share: float, at_least: int) -> float:
    """Chance level: the expected share of heads kept by at least ``at_least`` of ``n_tasks`` tasks when each
    task keeps an independent random ``share`` of the heads (binomial)."""
    return float(sum(comb(n_tasks, j) * share ** j * (1 - share) ** (n_tasks - j)
                     for j in range(at_least, n_tasks + 1)))


def mask_set(mask: np.ndarray) -> set[tuple[int, int]]:
    """The (layer, head) pairs a 0/1 mask keeps."""
    return {(int(a), int(b)) for a, b in zip(*np.nonzero(np.asarray(mask) > 0))}


class StemCells:
    """Learned head pruning on the units of a :class:`~headprune_core.multitask.gradts.GradTS` plan."""

    def __init__(self, gts, *, l0: dict | None = None):
        self.gts = gts
        self.study = gts.study
        self.l0 = l0_pairs(l0 or DEFAULT_L0)

    # --- configurations ------------------------------------------------------------------------------------
    def single_config(self, unit: str):
        """``unit``'s GradTS single-task fine-tune, continued with learned pruning."""
        return self._learned(self.gts.single_config(unit))

    def multi_config(self):
        """The multi-task fine-tune on every unit (GradTS's "all" run), continued with learned pruning."""
        return self._learned(self.gts.finetune_config(self.gts.units))

    def _learned(self, ft):
        return ft.replace(l0=self.l0)

    def eval_config(self, ft, unit: str):
        return self.study.eval_config(ft, unit, split_unit(unit)[1], split="test",
                                      max_sentences=self.gts.plan.eval_sentences)

    def configs(self) -> list:
        """Every cached run :meth:`run` reads: the learned fine-tunes, the test evaluations (single-task
        unpruned, single-task learned, multi-task unpruned, multi-task learned) and each unit's gradient map (the
        top sets the learned ones are compared with), so that :meth:`summary` of a complete set computes nothing."""
        out = []
        multi, multi_base = self.multi_config(), self.gts.finetune_config(self.gts.units)
        for unit in self.gts.units:
            single = self.single_config(unit)
            out += [single, self.eval_config(single.base(), unit), self.eval_config(single, unit)]
        out += [multi] + [self.eval_config(ft, u) for u in self.gts.units for ft in (multi_base, multi)]
        return out + [self.gts.score_config(u) for u in self.gts.units]

    def missing(self) -> list:
        return [c for c in self.configs() if not self.study.store.has(c)]

    # --- the analysis --------------------------------------------------------------------------------------
    def run(self, *, on_progress: Progress | None = None, top_percent: float | None = None) -> dict:
        """Compute what is missing (each part announced to ``on_progress(what, i, n)``, ``what`` saying
        ``cached: ...`` for a part read from the cache) and assemble the summary."""
        cfgs = self.configs()
        for i, cfg in enumerate(cfgs):
            report(on_progress, cached_label(_describe(cfg), self.study.store.has(cfg)), i, len(cfgs))
            self.study.compute(cfg)
        return self.summary(top_percent=top_percent)

    def summary(self, *, top_percent: float | None = None) -> dict:
        """The kept sets and their comparisons (everything must be cached: see :meth:`missing`).

        ``top_percent``: size of the gradient top sets compared with the learned sets (default: the share each
        learned set keeps, so the two have the same size).
        """
        units = list(self.gts.units)
        singles = {u: self.single_config(u) for u in units}
        multi_ft = self.multi_config()
        learned = {u: self.study.learned(ft) for u, ft in singles.items()}
        multi = self.study.learned(multi_ft)
        sets = {u: mask_set(h.kept) for u, h in learned.items()}
        shape = learned[units[0]].kept.shape
        n_heads = int(np.prod(shape))
        count = sum(h.kept for h in learned.values()).astype(int)  # (layers, heads)
        majority = len(units) // 2 + 1
        share = float(np.mean([h.kept.mean() for h in learned.values()]))
        stem = sorted(((int(a), int(b), int(count[a, b])) for a, b in zip(*np.nonzero(count >= majority))),
                      key=lambda r: (-r[2], r[0], r[1]))
        jac = jaccard_matrix([sets[u] for u in units])
        multi_set = mask_set(multi.kept)
        # gradient top sets of the same size as each learned set (or top_percent of the heads)
        maps = self.gts.maps()
        grad = {}
        for u in units:
            k = max(1, len(sets[u])) if top_percent is None else max(1, round(n_heads * top_percent / 100))
            grad[u] = top_sets({u: maps[u]}, top_percent=100 * k / n_heads)[u]
        grad_count = np.zeros(shape, dtype=int)
        for s in grad.values():
            for h in s:
                grad_count[h] += 1
        per_task = []
        for u in units:
            ev = {name: self.study.evaluation(self.eval_config(ft, u)) for name, ft in (
                ("single", singles[u].base()), ("single_learned", singles[u]), ("multi", multi_ft.base()),
                ("multi_learned", multi_ft))}
            k = len(sets[u])
            per_task.append({
                "unit": u, "kept": k, "metric": ev["single"]["metric"],
                **{name: bootstrap_ci([e["units"]]) for name, e in ev.items()},
                "learned_vs_unpruned": paired_bootstrap([ev["single"]["units"]], [ev["single_learned"]["units"]]),
                "multi_vs_single": paired_bootstrap([ev["single_learned"]["units"]],
                                                    [ev["multi_learned"]["units"]]),
                "overlap_gradient": len(sets[u] & grad[u]) / max(1, len(grad[u])),
                "overlap_chance": len(grad[u]) / n_heads,
                "jaccard_multi": float(jaccard_matrix([sets[u], multi_set])[0, 1])})
        claimed = {m: int((count >= m).sum()) for m in range(1, len(units) + 1)}
        chance = {m: expected_claimed(len(units), share, m) * n_heads for m in range(1, len(units) + 1)}
        return {"units": units, "shape": list(shape), "l0": dict(self.l0), "majority": majority,
                "count": count.tolist(), "kept": {u: learned[u].kept.tolist() for u in units},
                "multi_kept": multi.kept.tolist(), "stem_cells": stem, "jaccard": jac.tolist(),
                "share_kept": share, "claimed": claimed, "claimed_chance": chance,
                "gradient_count": grad_count.tolist(), "gradient_sets": {u: sorted(s) for u, s in grad.items()},
                "stem_vs_gradient": _overlap(count >= majority, grad_count >= majority),
                "per_task": per_task, "multi_kept_n": len(multi_set)}


def _overlap(a: np.ndarray, b: np.ndarray) -> dict:
    """How many heads two boolean maps share, with Jaccard."""
    sa, sb = mask_set(a), mask_set(b)
    return {"learned": len(sa), "gradient": len(sb), "both": len(sa & sb),
            "jaccard": float(jaccard_matrix([sa, sb])[0, 1])}


def _describe(cfg) -> str:
    if cfg.kind == "finetune":
        what = "learned pruning" if cfg.l0 else "fine-tune"
        return f"{what} {'+'.join(cfg.tasks)}"
    return f"evaluate {cfg.task} ({'learned' if cfg.finetune.l0 else 'unpruned'}, {len(cfg.finetune.tasks)} task(s))"

