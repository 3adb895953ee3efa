"""App-side bridge for the Task affinity and Shared heads pages: GradTS plans, cached reads, the "what is
missing, compute it?" panels, and the Task affinity page's panels (the selection's multi-task run, the
validation's details). Pages call these and render; the work is done by :mod:`headprune_core.multitask.gradts`
through the dashboard's compute queue (``headprune_app.cached``).

GradTS plans are the core presets plus JSON files (fields of ``GradTSPlan``) in ``<cache>/plans/gradts/``.
"""

from __future__ import annotations

import json

import numpy as np
import streamlit as st

from headprune_app import cached, captions, computing, figures, roles, tables
from headprune_app.resident import resident
from headprune_core.base.cache import cache_root
from headprune_core.figures.affinity import fg_chart
from headprune_core.multitask.affinity import gradts_map
from headprune_core.multitask.gradts import GradTS
from headprune_core.multitask.plan import GradTSPlan, available_gradts_plans
from headprune_core.multitask.stemcells import DEFAULT_L0, StemCells
from headprune_core.runs.jobs import Job, study_jobs

METHODS = ["kv_grad", "gate_grad"]  # head maps GradTS can compare


def plans() -> tuple[dict[str, GradTSPlan], list[str]]:
    """Presets, then plan files in ``<cache>/plans/gradts``; (plans by name, problems with unreadable files)."""
    return available_gradts_plans()


def pick_plan(plan_col, method_col, *, key: str) -> GradTSPlan:
    """The GradTS plan (widget ``{key}_plan`` in ``plan_col``) with the head maps chosen in ``method_col``
    (widget ``{key}_method:<plan>``); unreadable plan files are named below."""
    all_plans, problems = plans()
    name = plan_col.selectbox("GradTS plan", list(all_plans), key=f"{key}_plan", bind="query-params",
                              help="A preset or a plan file in <cache>/plans/gradts: task units, primaries, sizes.")
    for p in problems:
        st.caption(f":orange[unreadable GradTS plan file {p}]")
    base = all_plans[name]
    method = method_col.radio("Head maps", METHODS, index=METHODS.index(base.method), horizontal=True,
                              key=f"{key}_method", bind="query-params",
                              help="kv_grad: GradTS's key/value weight gradients; gate_grad: |d loss / d head gate|.")
    return base.restricted(method=method)


def off_diagonal(matrix) -> dict[str, float]:
    """Min, mean and max of a square matrix's entries off its diagonal (pairs of two different units).

    >>> off_diagonal([[1.0, 0.25], [0.75, 1.0]])
    {'min': 0.25, 'mean': 0.5, 'max': 0.75}
    """
    m = np.asarray(matrix, dtype=float)
    off = m[~np.eye(len(m), dtype=bool)]
    if not off.size:
        raise ValueError("a matrix of one unit has no pairs")
    return {"min": float(off.min()), "mean": float(off.mean()), "max": float(off.max())}


def validated(res: dict | None, primary: str) -> dict | None:
    """The validation of ``primary`` in a cached GradTS result (:func:`result`); None when it has none."""
    return next((v for v in (res or {}).get("result", {}).get("validation", []) if v["primary"] == primary), None)


@resident(max_entries=16)
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
    cfgs = [gts.score_config(u) for u in todo]
    if roles.owner_button(f"Compute {len(todo)} head map(s) ({computing.estimate_text(gts.study, cfgs)})",
                          key=f"maps:{key}", type="primary", what="computing head maps"):
        if computing.compute_jobs(gts.study, study_jobs(gts.study, cfgs, names=[f"head map {u}" for u in todo]),
                           title="Head maps"):
            st.rerun()
    return False


def offer_validation(gts: GradTS, *, key: str) -> None:
    """Say that the validation is not cached and offer to run it (cached parts are reused)."""
    p, n = gts.plan, len(gts.units)
    trial = "every candidate" if p.max_trial is None else f"up to {p.max_trial}"
    st.warning(f"The GradTS validation of plan **{p.name}** ({p.method}) is not cached: it trains each primary "
               f"alone, with its GradTS-thres, GradTS-trial ({trial}) "
               f"and GradTS-fg selections, with the bandit's (AUTOSEM) choice, with all {n - 1} other units "
               f"({len(p.train_seeds)} training seed(s) each) and with {len(p.random_seeds)} random sets. Parts "
               "already cached are reused.")
    cfg = gts.config()
    if roles.owner_button(f"Run the validation ({computing.estimate_text(gts.study, [cfg])}, a rough upper estimate)",
                          key=f"validate:{key}", type="primary", what="running the GradTS validation"):
        gts.expected = gts.expected_jobs()
        if computing.compute_jobs(gts.study, [Job(f"GradTS {p.name}", cfg, gts.run)], title="GradTS validation",
                               gts=gts):
            st.rerun()


def offer_selection(gts: GradTS, primary: str, aux: list[str], *, key: str) -> None:
    """Train ``primary`` with ``aux`` (one multi-task run) and evaluate it on dev and test."""
    cfgs = [gts.eval_config(primary, aux, split=split) for split in ("validation", "test")]
    if roles.owner_button(f"Train {primary} with these {len(aux)} unit(s) ({computing.estimate_text(gts.study, cfgs)})",
                          key=f"selection:{key}", what="training"):
        names = [f"evaluate {primary} with {len(aux)} auxiliary ({split})" for split in ("validation", "test")]
        if computing.compute_jobs(gts.study, study_jobs(gts.study, cfgs, names=names), title="Multi-task run"):
            st.rerun()


def stemcells(gts: GradTS, target: float):
    """The learned-pruning (stem cell) analysis of ``gts``'s units at ``target`` share of heads removed."""
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
               "evaluation(s) or gradient map(s) are missing. Fine-tunes already cached (GradTS's single-task and "
               "all-units runs) "
               "are the starting points.")
    if roles.owner_button(f"Run learned pruning ({computing.estimate_text(cells.study, missing)})",
                          key=f"stemcells:{key}", type="primary", what="learned pruning (training)"):
        if computing.compute_jobs(cells.study, study_jobs(cells.study, missing), title="Learned pruning"):
            st.rerun()


def selection_panel(gts: GradTS, primary: str, chosen: list[str], *, key: str) -> None:
    """Test and dev metric of ``primary`` trained with the ``chosen`` auxiliary units, against alone; offers the
    multi-task run when it is not cached."""
    if not chosen:
        st.caption("Nothing is above the threshold: GradTS-thres trains the primary alone.")
        return
    now, alone = run_evals(gts, primary, chosen), run_evals(gts, primary, [])
    if now is None:
        st.caption("This set's multi-task run is not cached (each distinct set of units is one run).")
        offer_selection(gts, primary, chosen, key=key)
        return
    m1, m2 = st.columns(2)
    m1.metric(f"test {now['metric']} with {len(chosen)} auxiliary", f"{now['test']:.2f}",
              delta=None if alone is None else f"{now['test'] - alone['test']:+.2f} vs alone")
    m2.metric(f"dev {now['metric']}", f"{now['dev']:.2f}",
              delta=None if alone is None else f"{now['dev'] - alone['dev']:+.2f} vs alone")


def validation_details(result: dict) -> None:
    """Expanders with the validation's details: every GradTS-trial's dev score, the auxiliary examples GradTS-fg
    kept, and the bandit's posterior per unit."""
    with st.expander("GradTS-trial: every trial's dev score"):
        for v in result["validation"]:
            st.markdown(captions.trial_line(v))
    with st.expander("GradTS-fg: which auxiliary examples were kept"):
        for v in result["validation"]:
            fg = v.get("fg")
            if fg:
                st.markdown(f"**{v['primary']}** (tau > {fg['threshold']}):")
                figures.show(fg_chart(fg), name=f"gradts_fg_{v['primary'].replace('/', '_')}",
                             title=f"GradTS-fg: examples kept for {v['primary']}", key=f"fg:{v['primary']}")
    with st.expander("Bandit (AUTOSEM stage 1): posterior utility of each unit"):
        for v in result["validation"]:
            if v.get("bandit"):
                st.markdown(f"**{v['primary']}**")
                st.dataframe(tables.bandit_frame(v["bandit"]), hide_index=True)
        st.caption(captions.BANDIT)
