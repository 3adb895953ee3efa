"""The cards whose evidence is multi-task training and per-task head maps (GradTS, Ma et al. 2021; He & Choi
2021): GradTS's auxiliary tasks against AUTOSEM's bandit in quality (f1-f3) and compute (f4), every task
together against the task alone (j), and heads that most tasks rank on top (g)."""

from __future__ import annotations

import numpy as np

from headprune_core.findings.card import Card, mean_of
from headprune_core.methods.inference import SAME, Estimate
from headprune_core.methods.uncertainty import run_estimate

SHARED_TOP_PERCENT = 10.0
MIN_TASKS = 5  # "claimed by most tasks": a majority of at least this many distinct tasks (3 tasks: "most" is 2)


class MultitaskCards:
    """Cards f1-f4, g and j (mixed into :class:`~headprune_core.findings.cards.Findings`)."""

    # --- GradTS and multi-task training ------------------------------------------------------------------------
    def _gradts_runs(self, card: Card, arm: str, control: str, stat) -> tuple[dict | None, Estimate | None]:
        job, res, _ = self.gradts()
        if res is None:
            card.missing = [job.what if job else "the plan has no GradTS check"]
            return None, None
        runs: dict[int, dict] = {}
        for v in res["validation"]:
            rows = {(r["row"], r["seed"]): r for r in v["rows"] if r["row"] in (arm, control)}
            for (row, seed), r in rows.items():
                runs.setdefault(seed, {})[f"{row}:{v['primary']}"] = (f"{v['primary']} test", r["test_units"])
        primaries = [v["primary"] for v in res["validation"]]
        complete = [run for run in runs.values() if len(run) == 2 * len(primaries)]
        if not complete:
            card.missing = [f"GradTS rows '{arm}' and '{control}' for the same training seed"]
            return res, None
        est = run_estimate(complete, lambda m: mean_of([stat(m[f"{arm}:{p}"], m[f"{control}:{p}"]) for p in primaries]))
        for v in res["validation"]:
            for row in (arm, control):
                rs = [r for r in v["rows"] if r["row"] == row]
                card.rows.append({"primary": v["primary"], "row": row,
                                  "auxiliaries": "; ".join(", ".join(r["aux"]) or "-" for r in rs[:1]),
                                  "test (mean of seeds)": f"{np.mean([r['test'] for r in rs]):.1f}",
                                  "per seed": ", ".join(f"{r['seed']}: {r['test']:.1f}" for r in rs)})
        return res, est

    def _gradts_card(self, card_id: str, arm: str, control: str, stat, what: str, fmt: str) -> Card:
        """A card whose statistic is ``stat(arm, control)`` on the primary's test, per training seed."""
        card = self._card(card_id)
        res, est = self._gradts_runs(card, arm, control, stat)
        if est is None:
            return card
        card.decide({"": est})
        card.measured = f"{what}, per seed: {', '.join(fmt.format(v) for v in est.runs)}; {card.estimate_text()}."
        card.protocol = _gradts_protocol(res)
        return card

    def _card_gradts_quality(self, card_id: str, arm: str) -> Card:
        return self._gradts_card(card_id, arm, "bandit", lambda a, b: 100 * (a - b) / np.maximum(b, 1e-9),
                                 f"{arm} vs the bandit", "{:+.1f}%")

    def card_f1(self) -> Card:
        card = self._card_gradts_quality("f1", "trial")
        if card.estimates and self._same_picks():
            card.notes.append("GradTS-thres chose exactly these auxiliaries for every primary: card f2 is this "
                              "result, shown and counted once, here.")
        return card

    def card_f2(self) -> Card:
        if not self._same_picks():
            return self._card_gradts_quality("f2", "thres")
        card = self._card("f2")  # the same auxiliaries: the same training runs, one result (card f1's)
        card.verdict, card.same_as = SAME, "f1"
        _, res, _ = self.gradts()
        picks = "; ".join(f"{v['primary']}: {', '.join(v['thres']) or 'none'}" for v in res["validation"])
        card.reason = f"GradTS-thres chose exactly GradTS-trial's auxiliaries ({picks}), so its runs are card f1's"
        card.measured = card.reason + "; the verdict is card f1's, and the page counts it once."
        card.protocol = _gradts_protocol(res)
        return card

    def _same_picks(self) -> bool:
        """Whether GradTS-thres chose exactly GradTS-trial's auxiliaries for every primary."""
        _, res, _ = self.gradts()
        return res is not None and all(sorted(v["thres"]) == sorted(v["trial"]["selected"])
                                       for v in res["validation"])

    def card_f3(self) -> Card:
        return self._card_gradts_quality("f3", "fg")

    def card_f4(self) -> Card:
        """Training steps (batches) spent choosing the auxiliaries and training the final model: GradTS-trial
        (every unit's single-task fine-tune for its map, each trial run, the final run) against the bandit (its
        search steps, the final run); counted from the runs' logs as the GradTS result keeps them, so shared cores do
        not move it."""
        card = self._card("f4")
        job, res, gts = self.gradts()
        if res is None:
            card.missing = [job.what if job else "the plan has no GradTS check"]
            return card

        def steps(cfg, stored=None) -> int | None:  # kept in the result; older results: the run's log
            return int(stored) if stored is not None else gts.train_steps(cfg)

        kept = res.get("map_steps") or {}
        maps = [steps(gts.single_config(u), kept.get(u)) for u in gts.units]
        savings, wall = [], []
        for v in res["validation"]:
            primary = v["primary"]
            trials = [steps(gts.multi_config(primary, t["aux"]), t.get("train_steps")) for t in v["trial"]["trials"]]
            for seed, b in v["bandit"].items():
                final = {row: steps(gts.multi_config(primary, r["aux"], seed=int(seed)), r.get("train_steps"))
                         for row in ("trial", "bandit")
                         for r in v["rows"] if r["row"] == row and str(r["seed"]) == seed}
                if None in (*maps, *trials, *final.values()) or len(final) < 2:
                    continue
                trial = sum(maps) + sum(trials) + final["trial"]
                bandit = int(b["steps"]) + final["bandit"]
                savings.append(100 * (bandit - trial) / bandit)
                row = {"primary": primary, "seed": seed, "GradTS-trial (steps)": trial, "bandit (steps)": bandit,
                       "saving": f"{savings[-1]:+.1f}%"}
                seconds = self._f4_seconds(v, seed)
                if seconds is not None:  # the paper's measure: wall time of choosing and training
                    wall.append(100 * (seconds[1] - seconds[0]) / seconds[1])
                    row |= {"GradTS-trial (s)": round(seconds[0], 1), "bandit (s)": round(seconds[1], 1),
                            "saving in time": f"{wall[-1]:+.1f}%"}
                card.rows.append(row)
        if not savings:
            card.missing = ["GradTS rows 'trial' and 'bandit' for the same training seed, with their runs' logs"]
            return card
        card.decide({"": Estimate(tuple(savings))})
        card.measured = f"Training steps saved by GradTS-trial against the bandit: {card.estimate_text()}."
        if len(wall) == len(savings) and len(wall) > 1:
            w = Estimate(tuple(wall))
            low, high = w.interval()
            card.measured += (f" Wall time (the paper's measure; one torch thread, the GradTS check's setting) saved: "
                              f"{w.diff:+.1f}% [{low:+.1f}, {high:+.1f}] over {w.n_runs} training runs, shown beside "
                              "the steps, not decided on (on shared cores it moves by about 31% from run to run).")
        rounds = (gts.plan.bandit or {}).get("rounds")
        card.protocol = (f"Optimizer steps (batches of {gts.plan.train.get('batch_size', 8)} sentences) from each "
                         "run's log: GradTS-trial = every unit's single-task fine-tune (its map) + its trial runs + "
                         "the final training; the bandit = its search + the final training. Scoring and dev "
                         "evaluations (forward passes) are left out of both. The baseline is AUTOSEM's first stage "
                         f"(the bandit) at this plan's budget of {rounds or 'the default'} rounds, where AutoSeM runs "
                         "about 200; its second stage (mixing ratios) is not run.")
        return card

    @staticmethod
    def _f4_seconds(v: dict, seed: str) -> tuple[float, float] | None:
        """Wall seconds of GradTS-trial (its maps and trial runs, then the final training with ``seed``) and of the
        bandit (its search with ``seed``, then its final training), as the GradTS result records them; None where
        a part is not recorded."""
        finals = {r["row"]: r.get("train_seconds") for r in v["rows"] if str(r["seed"]) == seed
                  and r["row"] in ("trial", "bandit")}
        search = (v["bandit"].get(seed) or {}).get("seconds")
        chosen = (v.get("costs") or {}).get("trial", {}).get("selection")  # maps and trial runs, seconds
        if None in (finals.get("trial"), finals.get("bandit"), search, chosen):
            return None
        return float(chosen) + float(finals["trial"]), float(search) + float(finals["bandit"])

    def card_j(self) -> Card:
        return self._gradts_card("j", "single", "all", lambda a, b: a - b, "Alone minus with all tasks", "{:+.2f}")

    # --- (g) stem cells ------------------------------------------------------------------------------------------
    def card_g(self, *, top_percent: float = SHARED_TOP_PERCENT, draws: int = 2000) -> Card:
        card = self._card("g")
        gts, tops, missing = self.task_tops(top_percent)
        if gts is not None and len(gts.task_units()) < MIN_TASKS:
            missing = [f"the plan's task maps need at least {MIN_TASKS} distinct tasks, so that 'most' is a "
                       f"majority of many (has {', '.join(gts.task_units())})"]
        controls = {}
        if not missing:
            _, controls, missing = self.task_tops(top_percent, control=True)
        if missing:
            card.missing = missing
            return card
        units, seeds = list(tops), list(gts.map_seeds())
        most = len(units) // 2 + 1
        k = int(next(iter(tops[units[0]].values())).sum())
        claimed, beyond_null, beyond_control = f"heads in >= {most} of {len(units)} tasks' top {k}", [], []
        for r in range(len(seeds)):  # run r: task i from seed r + i, the tasks of a run spread over the seeds
            pick = {u: seeds[(r + i) % len(seeds)] for i, u in enumerate(units)}
            sets = [tops[u][pick[u]] for u in units]
            observed = int((sum(s.astype(int) for s in sets) >= most).sum())
            control = int((sum(controls[u][pick[u]].astype(int) for u in units) >= most).sum())
            null = _layer_null(sets, most, draws, seed=r)
            beyond_null.append(observed - float(null.mean()))
            beyond_control.append(float(observed - control))
            card.rows.append({"run": r + 1, "seeds": ", ".join(f"{u}: {pick[u]}" for u in units),
                              claimed: observed,
                              "null: mean [95th percentile]": f"{null.mean():.1f} [{np.percentile(null, 95):.0f}]",
                              "shuffled-label control": control,
                              "beyond the null": f"{beyond_null[-1]:+.1f}",
                              "beyond the control": f"{beyond_control[-1]:+.0f}"})
        card.decide({"beyond the layer null": Estimate(tuple(beyond_null)),
                     "beyond the shuffled-label control": Estimate(tuple(beyond_control))})
        ceiling = {u: int((sum(tops[u][s].astype(int) for s in seeds[:len(units)]) >= most).sum()) for u in units} \
            if len(seeds) >= len(units) else {}
        overlap = {u: _pair_overlap([tops[u][s] for s in seeds]) for u in units}
        card.numbers = {"claimed": [row[claimed] for row in card.rows],
                        "control": [row["shuffled-label control"] for row in card.rows],
                        "ceiling": ceiling, "run_to_run_overlap": {u: o[0] for u, o in overlap.items()},
                        "overlap_null": {u: o[1] for u, o in overlap.items()}}
        card.measured = (
            f"Per run ({len(units)} tasks spread over the training seeds): heads in the top {top_percent:g}% of at "
            f"least {most} tasks {', '.join(map(str, card.numbers['claimed']))}; the same tasks' models trained on "
            f"shuffled labels {', '.join(map(str, card.numbers['control']))}. {card.estimate_text()}. "
            + (f"Ceiling, one task retrained under {len(units)} seeds in place of {len(units)} tasks: "
               f"{', '.join(f'{u} {c}' for u, c in ceiling.items())} heads in at least {most} runs. "
               if ceiling else "")
            + f"One task's top {k} from run to run share "
            f"{', '.join(f'{u} {o[0]:.1f} (null {o[1]:.1f})' for u, o in overlap.items())} heads on average.")
        card.notes.append(self._interference())
        card.protocol = (f"Gradient top-{top_percent:g}% heads ({gts.plan.method} maps) of each task's own fine-tuned "
                         f"model, one language per task ({', '.join(units)}), training seeds "
                         f"{', '.join(map(str, seeds))}; {self.model_text}; not He & Choi's learned pruning (its L0 "
                         "gates are on the Shared heads page). Two controls, both must be beaten: each task's top "
                         "heads permuted within their layers (the layer profile kept), and each task's model "
                         "trained the same way on its labels shuffled (the encoder's and the training's own shape "
                         "kept, the task taken out).")
        return card

    def _interference(self) -> str:
        """He & Choi's interference, read from card j: the primary trained with every task against alone."""
        j = self.card_j()
        if not j.estimates:
            return "He & Choi's interference (training with every task against alone, card j): not computed yet."
        return (f"He & Choi's interference, training with every task against alone (card j, {j.verdict}): "
                f"{j.estimate_text()}. Heads that most tasks claim are where the tasks would compete.")


def _gradts_protocol(res: dict) -> str:
    return f"{len(res['units'])} task units ({', '.join(res['units'])}); {res['note']}"


def _pair_overlap(sets: list[np.ndarray]) -> tuple[float, float]:
    """The mean number of heads two of ``sets`` share over every pair, and its mean when each set's heads are
    permuted within their layers (sum over layers of a_l * b_l / heads per layer)."""
    pairs = [(a, b) for i, a in enumerate(sets) for b in sets[i + 1:]]
    if not pairs:
        return float("nan"), float("nan")
    heads = sets[0].shape[1]
    shared = np.mean([(a & b).sum() for a, b in pairs])
    null = np.mean([(a.sum(axis=1) * b.sum(axis=1)).sum() / heads for a, b in pairs])
    return float(shared), float(null)


def _layer_null(sets: list[np.ndarray], most: int, draws: int, seed: int = 0) -> np.ndarray:
    """Per draw, how many heads are in at least ``most`` of ``sets`` when each set's heads are permuted within
    their layers (each task keeps its count per layer)."""
    rng = np.random.default_rng(seed)
    layers, heads = sets[0].shape
    counts = np.zeros((draws, layers, heads), dtype=np.int16)
    for s in sets:
        keys = rng.random((draws, layers, heads))
        ranks = np.argsort(np.argsort(keys, axis=2), axis=2)  # a random order of the heads in each layer
        counts += (ranks < s.sum(axis=1)[None, :, None]).astype(np.int16)
    return (counts >= most).sum(axis=(1, 2))
