"""App-side logic of the Prune & evaluate page: the strategy's parameters and the mask they give, which ranking
prunes by default, the metrics under the mask, the clickable mask grid, the curves, the size/latency panel and
the downloads. Strategies and masks are the core's (``config.STRATEGIES``, ``strategy_mask``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np
import streamlit as st

from headprune_app import cached, captions, exports, figures, links, panels, roles, state
from headprune_app.page_end import end_page
from headprune_core.base.choices import LAYER_PARTS
from headprune_core.base.choices import STRATEGIES as CORE_STRATEGIES
from headprune_core.base.files import safe_filename
from headprune_core.figures.curves import curves_chart
from headprune_core.figures.heads import mask_grid as mask_figure
from headprune_core.methods.uncertainty import describe_ci, describe_diff, diff_text, paired_bootstrap
from headprune_core.plans import selection as S
from headprune_core.runs.config import l0_pairs

STRATEGIES = (*CORE_STRATEGIES[:-1], "learned", CORE_STRATEGIES[-1])
"""The core's strategies, and ``learned``: heads ordered by the hard-concrete gates of a learned-pruning run of
this fine-tune (the pruned set at the learned size is the set learned pruning kept)."""
LEARNED_TARGETS = (0.25, 0.5, 0.75)
PENDING = ("strategy", "custom_heads")  # widgets a click on the mask grid sets before they are drawn

__all__ = ["STRATEGIES", "LEARNED_TARGETS", "Params", "read_params", "ranking_for", "read_mask", "learned_config",
           "ranking_choices", "rank_label", "mask_label", "mask_payload", "change", "apply_grid_click",
           "metrics", "learned_model_panel", "mask_grid", "curves_panel", "measure_panel", "downloads",
           "speed_panel"]


@dataclass(frozen=True)
class Params:
    """A strategy and the parameters the page read for it (the defaults where it has none)."""

    strategy: str
    rank_lang: str  # whose ranking orders the heads (importance, reverse; custom shows it on the grid)
    seed: int = 0  # random
    part: str = "middle"  # layers: bottom / middle / top third
    target: float = 0.5  # learned: the share of heads learned pruning removes

    def label(self, k: int) -> str:
        return mask_label(self.strategy, k, rank_lang=self.rank_lang, seed=self.seed, part=self.part,
                          target=self.target)


def read_params(col, sel: S.Selection, strategy: str) -> Params:
    """The widget of ``strategy``'s parameter, drawn in ``col``."""
    options, default = ranking_choices(sel)
    p = Params(strategy, options[default])
    if strategy in ("importance", "reverse"):
        return replace(p, rank_lang=links.selectbox("Ranking of", options, index=default, where=col,
                                                    format_func=lambda lang: rank_label(sel, lang),
                                                    key="ranking", help=captions.RANK_LANG_HELP))
    if strategy == "random":
        return replace(p,
                       seed=int(col.number_input("Seed", min_value=0, value=0, step=1, key="seed",
                                                 bind="query-params")))
    if strategy == "layers":
        return replace(p,
                       part=col.radio("Layers", LAYER_PARTS, index=1, horizontal=True, key="part", bind="query-params",
                                      help="Prune every head of the bottom, middle or top third of the layers."))
    if strategy == "learned":
        return replace(p, target=links.select_slider("Learned pruning removes", LEARNED_TARGETS, value=0.5,
                                                     where=col, format_func=lambda v: f"{v:.0%}",
                                                     key="learned_target", help=captions.LEARNED_HELP))
    return p


def ranking_for(study, sel: S.Selection, ft, p: Params):
    """(head ranking, learned-pruning run or None) that ``p`` prunes by. While the ranking or the learned-pruning
    run it needs is not cached, says so, offers to compute it and stops the page."""
    if p.strategy == "learned":
        learned_ft = learned_config(ft, p.target)
        if not panels.offer_compute(study, [(f"learned pruning of {sel.task} ({p.target:.0%} of the heads)",
                                             learned_ft)], key=f"learned:{p.target}",
                                    note="hard-concrete head gates trained for one epoch after this fine-tune"):
            end_page()
        learned = study.learned(learned_ft)  # reads the run's log, not its weights
        return learned.ranking(), learned
    if p.strategy not in ("importance", "reverse", "custom"):
        return None, None
    ranking = cached.ranking(study, sel, p.rank_lang)
    if ranking is None and p.strategy != "custom":
        panels.offer_compute(study, [(f"head scores {sel.task}/{p.rank_lang} ({sel.method})",
                                      S.score_config(study, sel, p.rank_lang))], key="ranking",
                             note="the ranking this strategy prunes by")
        end_page()
    return ranking, None


def read_mask(col, shape: tuple[int, int], p: Params, ranking, learned, *,
              before: state.MaskChoice | None) -> np.ndarray:
    """The widget choosing how many heads (or which, by hand) in ``col``, and the (layers, heads) mask it gives.
    A custom mask starts from ``before``, the mask shown before switching to custom."""
    total, custom, k = shape[0] * shape[1], None, 0
    if p.strategy == "custom":
        if "custom_heads" not in st.session_state:
            st.session_state["custom_heads"] = list(before.pruned) if before and before.shape == shape else []
        chosen = col.multiselect("Pruned heads (or click squares below)", state.all_heads(shape),
                                 format_func=state.head_label, key="custom_heads", bind="query-params")
        custom, k = state.mask_of(shape, chosen), len(chosen)
    elif p.strategy == "layers":
        col.caption(f"Every head of the {p.part} third of the layers.")
    elif p.strategy == "learned":
        removed = int((learned.kept == 0).sum())
        k = col.slider("Heads pruned (k)", 0, total, value=removed, key=f"k_learned:{p.target}", bind="query-params",
                       help=captions.learned_k_help(removed))
    else:
        if "k" in st.session_state:  # set by a lesson's step or for another model: within this model's heads
            st.session_state["k"] = min(max(int(st.session_state["k"]), 0), total)
        start = {} if "k" in st.session_state else {"value": 0}
        k = col.slider("Heads pruned (k)", 0, total, key="k", bind="query-params", help=captions.K_HELP, **start)
    return cached.mask(shape, "importance" if p.strategy == "learned" else p.strategy, k, ranking=ranking,
                       seed=p.seed, part=p.part, custom=custom)


def learned_config(ft, target: float):
    """The learned-pruning run (one epoch with hard-concrete gates) that continues ``ft`` to remove ``target``
    of the heads."""
    return ft.replace(l0=l0_pairs({"target": target, "epochs": 1.0}))


def ranking_choices(sel: S.Selection) -> tuple[list[str], int]:
    """Languages whose ranking can order the heads, and the default's index.

    Cross-lingual (zero-shot): the target has no labels, so the default is the source language's ranking
    (Ma et al.'s protocol); the target's own ranking is the comparison. Multilingual: the model saw every
    language's labels, so the target's own ranking is the default."""
    options = list(dict.fromkeys([*sel.langs, sel.source] if sel.setting == "cross" else sel.langs))
    default = sel.source if sel.setting == "cross" and sel.source in options else sel.lang
    return options, options.index(default) if default in options else 0


def rank_label(sel: S.Selection, lang: str) -> str:
    parts = []
    if sel.setting == "cross" and lang == sel.source:
        parts.append("source, default")
    if lang == sel.lang:
        parts.append("own" + (": needs target labels" if sel.setting == "cross" and lang != sel.source else ""))
    return f"{lang} ({', '.join(parts)})" if parts else lang


def mask_label(strategy: str, k: int, *, rank_lang: str, seed: int, part: str, target: float = 0.5) -> str:
    return {"importance": f"{k} least important ({rank_lang} ranking)",
            "reverse": f"{k} most important ({rank_lang} ranking)", "random": f"{k} random (seed {seed})",
            "layers": f"{part} third of the layers ({k} heads)",
            "learned": f"{k} with the lowest learned gates (L0 run removing {target:.0%})",
            "custom": f"{k} chosen by hand"}[strategy]


def mask_payload(mask: np.ndarray, sel: S.Selection, *, strategy: str, label: str, finetune_key: str) -> dict:
    """The downloadable description of a mask (1 = keep, 0 = pruned)."""
    return {"mask": mask.astype(int).tolist(), "shape": list(mask.shape), "convention": "1 = keep, 0 = pruned",
            "strategy": strategy, "k": int((mask == 0).sum()), "label": label, "model": sel.model,
            "task": sel.task, "finetune_key": finetune_key, "normalize": sel.normalize, "method": sel.method}


def change(base: dict, now: dict) -> dict:
    """The masked evaluation against the unpruned one on the same sentences: paired bootstrap difference."""
    return paired_bootstrap(base["units"], now["units"])


def apply_grid_click() -> None:
    """Apply what a click on the mask grid asked for (a custom mask), before the widgets it changes are drawn."""
    ss = st.session_state
    for name in PENDING:
        if f"_pending_{name}" in ss:
            ss[name] = ss.pop(f"_pending_{name}")


def metrics(sel: S.Selection, k: int, total: int, base: dict, now: dict, change: dict) -> None:
    """The metric with ``k`` of ``total`` heads pruned (its change vs unpruned), the unpruned metric, and what
    they are evaluated on."""
    m1, m2, m3 = st.columns(3)
    m1.metric(f"{now['metric']}, {k} of {total} heads pruned", f"{now['score']:.2f}",
              delta=f"{diff_text(change, digits=2)} vs unpruned",
              delta_color="normal" if change["distinguishable"] else "off", help=captions.CHANGE_HELP)
    m2.metric(f"{base['metric']}, unpruned", f"{base['score']:.2f}", delta=describe_ci(base, digits=2),
              delta_color="off", help="95% bootstrap interval over the test sentences.")
    m3.metric("evaluated on", f"{now['n']} {'tokens' if now['metric'] == 'accuracy' else 'gold tokens'}",
              help=f"test split of {sel.lang}, first {sel.plan.eval_sentences} sentences")


def learned_model_panel(study, sel: S.Selection, ft, p: Params, learned, base: dict) -> None:
    """The learned-pruning model's own score (trained with its gates, He & Choi's protocol) against the
    unpruned model; offered when not cached."""
    own_cfg = study.eval_config(learned_config(ft, p.target), sel.task, sel.lang,
                                max_sentences=sel.plan.eval_sentences)
    own = cached.read(study, own_cfg)
    if own is None:
        panels.offer_compute(study, [(f"the learned-pruning model on {sel.lang}", own_cfg)],
                             key=f"learned-eval:{p.target}",
                             note="the model trained with its gates (He & Choi's protocol)")
        return
    text = captions.learned_model_note(int(learned.kept.sum()), describe_ci(own["result"], digits=2),
                                       describe_diff(change(base, own["result"])))
    st.info(text, icon=":material/school:")


def mask_grid(mask: np.ndarray, ranking) -> None:
    """The mask as a grid of heads. A click toggles that head: the page reruns with a custom mask that starts
    from this one (applied by :func:`apply_grid_click`)."""
    ss = st.session_state
    event = figures.show(mask_figure(mask, ranking), name="mask", title="The mask: kept and pruned heads",
                         key=f"grid:{ss.get('grid_version', 0)}", on_select="rerun", selection_mode="points")
    clicked = figures.clicked_heads(event)
    if clicked:
        ss["_pending_strategy"] = "custom"
        ss["_pending_custom_heads"] = list(state.pruned_heads(figures.toggle(mask, clicked)))
        ss["grid_version"] = ss.get("grid_version", 0) + 1  # a new chart: its selection is spent
        st.rerun()
    st.caption(captions.GRID)


def curves_panel(study, sel: S.Selection, p: Params, k: int, now: dict) -> None:
    """Every cached curve of this language with the current mask on it; offers the curve of the strategy shown
    when it is not cached."""
    curves, configs = cached.curves(study, sel, sel.lang)
    figures.show(curves_chart(curves, current_k=k, current_score=now["score"], metric=now["metric"]),
                 name=f"curves_{sel.task}_{sel.lang}", key="curves",
                 title=f"{S.task_label(sel.task)} in {S.lang_label(sel.lang)}: the metric as heads are pruned",
                 caption=f"{sel.model}; the marker is the current mask ({k} heads pruned).")
    wanted = {"importance": S.importance_curve_name(sel, p.rank_lang), "reverse": "most important first",
              "random": "random order", "layers": "whole layers"}.get(p.strategy)
    if wanted and wanted in configs and wanted not in {c["name"] for c in curves}:
        panels.offer_compute(study, [(f"curve: {wanted}", configs[wanted])], key="curve")
    if not curves:
        st.caption("No curve is cached for this language yet.")
    else:
        st.caption(captions.curves_caption(len(sel.plan.random_seeds)))


def measure_panel(study, sel: S.Selection, ft, mask: np.ndarray) -> None:
    """On a click (then for as long as the mask stays): size and latency of the physically pruned model."""
    ss = st.session_state
    speed_key = (ft.key(), tuple(map(tuple, mask.astype(int).tolist())))
    if not roles.is_teacher():
        roles.student_note("timing the pruned model (it takes the machine alone)")
        return
    if st.button("Measure size and latency", key="measure") or ss.get("measured") == speed_key:
        ss["measured"] = speed_key
        with st.spinner("Pruning a copy and timing both models ..."):
            sp = cached.measure(study, ft, mask, sel.task, sel.lang)
        speed_panel(sp)
    else:
        st.caption(captions.MEASURE)


def downloads(study, sel: S.Selection, ft, mask: np.ndarray, *, strategy: str, label: str) -> None:
    """Download buttons: the mask as JSON, and the physically pruned model as a zip (built on the click)."""
    k = int((mask == 0).sum())
    payload = mask_payload(mask, sel, strategy=strategy, label=label, finetune_key=ft.key())
    d1, d2 = st.columns(2)
    d1.download_button("Download mask (JSON)", json.dumps(payload, indent=1),
                       file_name=safe_filename(f"mask_{sel.task}_{k}.json"), mime="application/json", key="dl_mask")
    if not roles.is_teacher():
        with d2:
            roles.student_note("building the pruned model")
        return
    d2.download_button("Download pruned model (zip)", exports.pruned_zip(study, ft, mask, {"mask_label": label}),
                       file_name=safe_filename(f"pruned_{sel.task}_{k}.zip"), mime="application/zip", key="dl_model",
                       help=captions.PRUNED_ZIP_HELP)


def speed_panel(sp: dict) -> None:
    """Parameters, latency and speed-up of the physically pruned model; green when pruning made it faster in
    more than three rounds of four, red when slower."""
    p1, p2, p3 = st.columns(3)
    p1.metric("parameters", f"{sp['params_pruned'] / 1e6:.2f} M",
              delta=f"{100 * (sp['params_pruned'] / sp['params_full'] - 1):.1f}% of {sp['params_full'] / 1e6:.2f} M",
              delta_color="inverse")
    lo, hi = sp["latency_pruned_iqr_ms"]
    faster, slower = sp["speedup_q25"] > 1, sp["speedup_q75"] < 1
    change = round(sp["latency_pruned_ms"] - sp["latency_full_ms"], 1)  # as shown
    # coloured when the rounds agree and the medians point the same way (the medians of the two latencies can
    # differ in sign from the median of the per-round ratios when the rounds are noisy)
    agree = (faster and change < 0) or (slower and change > 0)
    p2.metric(f"latency (median of {sp['repeats']})", f"{sp['latency_pruned_ms']:.1f} ms",
              delta=f"{change:+.1f} ms vs full {sp['latency_full_ms']:.1f} ms",
              delta_color="inverse" if agree else "off",
              help=f"Pruned model: quartiles {lo:.1f} to {hi:.1f} ms. Both models timed in alternation, round by "
                   "round, after a warm-up. Green: faster in more than three rounds of four; red: slower; grey: "
                   "cannot tell.")
    p3.metric("speed-up", f"{sp['speedup']:.2f}x",
              delta=f"{sp['speedup_q25']:.2f} to {sp['speedup_q75']:.2f} (quartiles)",
              delta_color="normal" if faster else ("inverse" if slower else "off"),
              help="Median of the per-round ratios full / pruned, with their quartiles.")
    st.caption(captions.speed_caption(sp["batch_shape"], sp["device"], sp["flop_limit"]))
    if sp["speedup_q25"] > sp["flop_limit"]:
        st.caption(captions.ABOVE_FLOP_LIMIT)
