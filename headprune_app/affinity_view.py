"""App-side bridge for the Task affinity and Shared heads pages: GradTS plans, cached reads, and the
"what is missing, compute it?" panels. Pages call these and render; the work is done by
:mod:`headprune_core.multitask.gradts` under the dashboard's compute lock (``headprune_app.cached``).

GradTS plans are the core presets plus JSON files (fields of ``GradTSPlan``) in ``<cache>/plans/gradts/``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import streamlit as st

from headprune_app import cached
from headprune_core.multitask.affinity import gradts_map
from headprune_core.multitask.plan import GRADTS_PRESETS, GradTSPlan
from headprune_core.multitask.gradts import GradTS
from headprune_core.base.cache import cache_root


def plans_dir() -> Path:
    return cache_root() / "plans" / "gradts"


def plans() -> tuple[dict[str, GradTSPlan], list[str]]:
    """Presets, then plan files in ``<cache>/plans/gradts``; (plans by name, problems with unreadable files)."""
    out: dict[str, GradTSPlan] = {}
    problems = []
    for path in sorted(plans_dir().glob("*.json")) if plans_dir().is_dir() else []:
        try:
            plan = GradTSPlan.from_file(path)
        except (OSError, ValueError, TypeError) as err:
            problems.append(f"{path.name}: {err}")
            continue
        out[plan.name if plan.name not in GRADTS_PRESETS else f"{plan.name} ({path.name})"] = plan
    return {**out, **GRADTS_PRESETS}, problems


@st.cache_resource(show_spinner=False, max_entries=16)
def _gradts(plan_json: str, root: str) -> GradTS:
    plan = GradTSPlan.from_dict(json.loads(plan_json))
    return GradTS(cached.study(plan.model), plan)


def gradts(plan: GradTSPlan) -> GradTS:
    """The GradTS of ``plan`` on the shared Study of its model (cache folder of this session)."""
    return _gradts(json.dumps(plan.to_dict(), sort_keys=True), str(cache_root()))


def map_status(gts: GradTS) -> dict[str, str]:
    """unit -> ``ok`` / ``missing`` / ``corrupt`` for the plan's head maps (nothing is computed)."""
    return {u: cached.state(gts.study, gts.score_config(u)) for u in gts.units}


def maps(gts: GradTS) -> dict[str, np.ndarray]:
    """GradTS-normalised maps of the units whose scores are cached (never computes)."""
    out = {}
    for u in gts.units:
        found = cached.read(gts.study, gts.score_config(u))
        if found is not None:
            out[u] = gradts_map(np.asarray(found["raw"], dtype=np.float64))
    return out


def result(gts: GradTS) -> dict | None:
    """The cached validation ``{"result", "tau", "spearman"}`` of the plan, or None."""
    try:
        return cached.read(gts.study, gts.config())
    except cached.problems():
        return None


def run_evals(gts: GradTS, primary: str, aux) -> dict | None:
    """Cached dev and test metric of ``primary`` trained with ``aux`` (None unless both are cached)."""
    dev = cached.read(gts.study, gts.eval_config(primary, aux, split="validation"))
    test = cached.read(gts.study, gts.eval_config(primary, aux, split="test"))
    if dev is None or test is None:
        return None
    return {"dev": dev["result"]["score"], "test": test["result"]["score"], "metric": test["result"]["metric"]}


def estimate_minutes(gts: GradTS, *, units: int) -> str:
    """A rough duration for ``units`` unit-trainings at this plan's size on a 2-core CPU (for button labels)."""
    n = gts.plan.train.get("max_train_sentences") or 2000
    epochs = gts.plan.train.get("epochs", 2.0)
    minutes = units * n * epochs / 200 * 0.75  # about 45 s per 200 sentence-epochs of me5-small
    return f"about {max(1, round(minutes))} min" if minutes >= 1 else "under a minute"


def _run(gts: GradTS, title: str, fn, *, total: int) -> bool:
    """``fn()`` under the compute lock with a progress bar fed by GradTS steps and Study progress."""
    bar = st.progress(0.0, text=f"{title}: starting ...")
    state = {"done": 0, "what": ""}
    start = time.perf_counter()

    def on_job(what: str, was_cached: bool) -> None:
        state["done"] += 1
        state["what"] = what
        bar.progress(min(1.0, state["done"] / max(total, 1)), text=f"{title}: {what}")

    def on_progress(what: str, done: int, n: int | None) -> None:
        step = f" {done}/{n}" if n else ""
        bar.progress(min(1.0, state["done"] / max(total, 1)), text=f"{title}: {state['what'] or what}{step}")

    with cached.compute_lock():
        old_job, old_progress = gts.on_job, gts.study.on_progress
        gts.on_job, gts.study.on_progress = on_job, on_progress
        try:
            fn()
        except cached.problems() + (RuntimeError,) as err:
            bar.empty()
            st.error(f"{title} failed at '{state['what']}': {type(err).__name__}: {err}")
            return False
        finally:
            gts.on_job, gts.study.on_progress = old_job, old_progress
    bar.progress(1.0, text=f"{title}: done in {time.perf_counter() - start:.0f} s")
    return True


def offer_maps(gts: GradTS, *, key: str) -> bool:
    """If some units' head maps are missing: say which and offer to compute them. True when all are there."""
    status = map_status(gts)
    todo = [u for u, s in status.items() if s != "ok"]
    if not todo:
        return True
    need_ft = [u for u in todo if cached.status(gts.study, gts.single_config(u)) != "ok"]
    lines = [f"- {u}: **{status[u]}**" + (" (needs its single-task fine-tune)" if u in need_ft else "")
             for u in todo]
    st.warning(f"{len(todo)} of {len(status)} head maps ({gts.plan.method}) are not in the cache:\n\n"
               + "\n".join(lines))
    label = f"Compute {len(todo)} head map(s)" + (f" ({estimate_minutes(gts, units=len(need_ft))})"
                                                  if need_ft else "")
    if st.button(label, key=f"maps:{key}", type="primary"):
        def work():
            for u in todo:
                gts.unit_raw(u)
        if _run(gts, "Head maps", work, total=2 * len(todo)):
            st.rerun()
    return False


def offer_validation(gts: GradTS, *, key: str) -> None:
    """Say that the validation is not cached and offer to run it (cached parts are reused)."""
    n = len(gts.units)
    p = gts.plan
    seeds = len(p.train_seeds)
    trial = min(p.max_trial or n - 1, n - 1)
    # unit-trainings: trial runs (2..trial+1 units), rows alone/thres/trial/fg/bandit/random (~2 units each) and
    # all (n units) per seed, the bandit's search (about an all-units run)
    units = len(gts.primaries) * (sum(range(2, trial + 2)) + seeds * (6 * 2 + n) + seeds * 2 + 2 * len(p.random_seeds))
    st.warning(f"The GradTS validation of plan **{p.name}** ({p.method}) is not cached: it trains each primary "
               f"alone, with its GradTS-thres, GradTS-trial ({'every candidate' if p.max_trial is None else f'up to {p.max_trial}'}) "
               f"and GradTS-fg selections, with the bandit's (AUTOSEM) choice, with all {n - 1} other units "
               f"({seeds} training seed(s) each) and with {len(p.random_seeds)} random sets. Parts already cached "
               "are reused.")
    if st.button(f"Run the validation ({estimate_minutes(gts, units=units)} on a 2-core CPU)",
                 key=f"validate:{key}", type="primary"):
        if _run(gts, "GradTS validation", gts.run, total=gts.expected_jobs()):
            st.rerun()


def offer_selection(gts: GradTS, primary: str, aux: list[str], *, key: str) -> None:
    """Train ``primary`` with ``aux`` (one multi-task run) and evaluate it on dev and test."""
    units = len(aux) + 1
    if st.button(f"Train {primary} with these {len(aux)} unit(s) ({estimate_minutes(gts, units=units)})",
                 key=f"selection:{key}"):
        def work():
            gts.evaluate(primary, aux, split="validation")
            gts.evaluate(primary, aux, split="test")
        if _run(gts, "Multi-task run", work, total=3):
            st.rerun()


def stemcells(gts: GradTS, target: float):
    """The learned-pruning (stem cell) analysis of ``gts``'s units at ``target`` share of heads removed."""
    from headprune_core.multitask.stemcells import DEFAULT_L0, StemCells
    return StemCells(gts, l0={**DEFAULT_L0, "target": target})


def stemcells_summary(cells) -> dict | None:
    """The summary when every run it reads is cached (None otherwise)."""
    try:
        return None if cells.missing() else cells.summary()
    except cached.problems():
        return None


def offer_stemcells(cells, *, key: str) -> None:
    """Say what learned pruning still needs and offer to compute it, with progress and an estimate."""
    missing = cells.missing()
    fts = [c for c in missing if c.kind == "finetune"]
    n = len(cells.gts.units)
    st.warning(f"Learned pruning of plan **{cells.gts.plan.name}** is not complete: {len(fts)} fine-tune(s) with "
               f"head gates (each of the {n} units alone, and all {n} together) and {len(missing) - len(fts)} "
               "evaluation(s) are missing. Fine-tunes already cached (GradTS's single-task and all-units runs) "
               "are the starting points.")
    units = sum(len(c.tasks) for c in fts) + sum(len(c.tasks) for c in fts if not cells.study.store.has(c.base()))
    if st.button(f"Run learned pruning ({estimate_minutes(cells.gts, units=units)} on a 2-core CPU)",
                 key=f"stemcells:{key}", type="primary"):
        if _run(cells.gts, "Learned pruning", lambda: cells.run(on_job=cells.gts.on_job),
                total=len(cells.configs())):
            st.rerun()
