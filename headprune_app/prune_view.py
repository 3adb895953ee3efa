"""App-side logic of the Prune & evaluate page: which ranking prunes by default, the mask's label and download,
and the size/latency panel. Strategies and masks are the core's (``config.STRATEGIES``, ``strategy_mask``)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from headprune_app import selection as S
from headprune_core.base.choices import STRATEGIES as CORE_STRATEGIES
from headprune_core.methods.uncertainty import paired_bootstrap
from headprune_core.runs.config import l0_pairs

STRATEGIES = (*CORE_STRATEGIES[:-1], "learned", CORE_STRATEGIES[-1])
"""The core's strategies, and ``learned``: heads ordered by the hard-concrete gates of a learned-pruning run of
this fine-tune (the pruned set at the learned size is the set learned pruning kept)."""
LEARNED_TARGETS = (0.25, 0.5, 0.75)

__all__ = ["STRATEGIES", "LEARNED_TARGETS", "learned_config", "ranking_choices", "rank_label", "mask_label",
           "mask_payload", "change", "interval_text", "speed_panel"]


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


def interval_text(ev: dict) -> str:
    low, high = ev["ci"]
    return f"95% CI {low:.2f}-{high:.2f}"


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
    limit = sp["flop_limit"]
    st.caption(f"One forward pass of a batch of shape {sp['batch_shape']} on {sp['device']}, measured now on this "
               f"machine. FLOP limit for this mask at {sp['batch_shape'][1]} tokens: {limit:.2f}x (removing heads "
               "removes their projections and attention scores only; embeddings and FFN stay, and embeddings hold "
               "most of a multilingual model's parameters).")
    if sp["speedup_q25"] > limit:
        st.caption("Measured above the FLOP limit: the heads' reshapes, softmax and memory traffic take a larger "
                   "share of the time than of the FLOPs at this size (see bench/RESULTS.md, 'Physical pruning').")
