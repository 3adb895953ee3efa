"""The dashboard's tables (pandas, for ``st.dataframe`` and CSV downloads): a map's heads with their ranks, the
per-label report under a mask, a sentence's tags, a plan's cache status, and the GradTS, bandit and stem-cell
tables. The figures beside them are :mod:`headprune_core.figures`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from headprune_core.figures.affinity import aux_text
from headprune_core.figures.heads import ranks
from headprune_core.methods.uncertainty import ci_text, diff_text


def importance_table(maps: dict[str, np.ndarray], raws: dict[str, np.ndarray]) -> pd.DataFrame:
    """Long table: language, layer, head, raw score, shown score, rank (for CSV download)."""
    rows = []
    for name, scores in maps.items():
        rk = ranks(scores)
        for (layer, head), value in np.ndenumerate(scores):
            rows.append({"language": name, "layer": layer, "head": head, "raw": float(raws[name][layer, head]),
                         "score": float(value), "rank": int(rk[layer, head])})
    return pd.DataFrame(rows)


def top_heads(maps: dict[str, np.ndarray], lang: str, n: int = 15) -> pd.DataFrame:
    """The ``n`` most important heads of ``lang`` with their rank in every other language."""
    rk = {name: ranks(m) for name, m in maps.items()}
    scores = maps[lang]
    order = np.argsort(rk[lang], axis=None)[:n]
    rows = []
    for flat in order:
        layer, head = np.unravel_index(flat, scores.shape)
        row = {"rank": int(rk[lang][layer, head]), "layer": int(layer), "head": int(head),
               "score": float(scores[layer, head])}
        row.update({f"rank in {name}": int(r[layer, head]) for name, r in rk.items() if name != lang})
        rows.append(row)
    return pd.DataFrame(rows)


def report_table(masked: dict, full: dict | None = None) -> pd.DataFrame:
    """Per-tag (accuracy) or per-type (seqeval) report under the mask, beside the unpruned model's."""
    rows = []
    for label, stats in masked.get("report", {}).items():
        row = {"label": label}
        if "accuracy" in stats:
            row.update({"accuracy": stats["accuracy"], "support": stats.get("support")})
            if full and label in full.get("report", {}):
                row["unpruned"] = full["report"][label]["accuracy"]
                row["change"] = stats["accuracy"] - row["unpruned"]
        else:
            row.update({k: 100 * v if k != "support" else int(v) for k, v in stats.items()})
            if full and label in full.get("report", {}) and "f1-score" in stats:
                row["unpruned f1"] = 100 * full["report"][label]["f1-score"]
                row["change"] = row["f1-score"] - row["unpruned f1"]
        rows.append(row)
    return pd.DataFrame(rows).round(2)


def tag_table(words: Sequence[str], full: dict, masked: dict | None = None) -> pd.DataFrame:
    """A token task's labels of ``words`` by the full model (with its confidence) and, given ``masked``, under
    the mask, with the words whose label changes."""
    table = pd.DataFrame({"word": list(words), "full model": full["labels"],
                          "confidence": [None if p is None else round(p, 3) for p in full["probs"]]})
    if masked is not None:
        table["with mask"] = masked["labels"]
        table["changed"] = [a != b for a, b in zip(full["labels"], masked["labels"])]
    return table


def plan_table(rows: Sequence[dict]) -> pd.DataFrame:
    """Every result of a plan with its cache status (``cached.plan_status`` rows)."""
    return pd.DataFrame([{"result": r["job"], "kind": r["kind"], "status": r["status"]} for r in rows],
                        columns=["result", "kind", "status"])


def status_matrix(rows: Sequence[dict]) -> pd.DataFrame:
    """Cache status at a glance: one row per language, one column per kind of result.

    ``rows`` hold ``kind``, ``status`` and ``lang`` (None for the fine-tuned model); a cell reads "ok",
    "missing", "corrupt" or, for several curves, "2/3 ok".
    """
    names = {"finetune": "fine-tuned model", "score": "head scores", "eval": "evaluation", "curve": "curves"}
    cells: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        lang = r.get("lang") or "(all)"
        cells.setdefault(lang, {}).setdefault(names.get(r["kind"], r["kind"]), []).append(r["status"])
    out = []
    for lang, kinds in cells.items():
        row = {"language": lang}
        for kind, states in kinds.items():
            ok = sum(s == "ok" for s in states)
            if len(states) == 1:
                row[kind] = states[0]
            else:
                row[kind] = f"{ok}/{len(states)} ok" + (" (corrupt)" if "corrupt" in states else "")
        out.append(row)
    cols = ["language"] + [n for n in names.values() if any(n in r for r in out)]
    return pd.DataFrame(out, columns=cols).fillna("")



def _test_interval(line: dict) -> dict:
    """A validation line's test metric (mean over seeds) with its 95% interval, as ``ci_text`` reads it."""
    return {"score": line["test"], "low": line["low"], "high": line["high"]}


def validation_frame(table: Sequence[dict]) -> pd.DataFrame:
    """The validation table for display/download: metric with interval and seeds, change vs alone, costs."""
    rows = []
    for line in table:
        d = line["vs_alone"]
        rows.append({"primary": line["primary"], "method": line["label"], "metric": line["metric"],
                     "test": round(line["test"], 2),
                     "95% CI": "" if line["low"] is None else ci_text(_test_interval(line)),
                     "seeds (min-max)": f"{line['min']:.1f}-{line['max']:.1f} ({len(line['values'])})",
                     "vs alone": "" if d is None else diff_text(d),
                     "dev": round(line["dev"], 2), "auxiliary units": aux_text(line)
                     + ("" if not line["examples"] else " (" + ", ".join(f"{u}: {n} examples" for u, n in
                                                                            line["examples"].items()) + ")"),
                     "choose (s)": line["selection_seconds"], "train (s)": line["train_seconds"],
                     "total (s)": line["total_seconds"]})
    return pd.DataFrame(rows)


def claimed_table(heads: Sequence[tuple], n_maps: int, *, limit: int = 20) -> pd.DataFrame:
    """The heads most maps claim: layer, head, count, share, which maps."""
    rows = [{"layer": l, "head": h, "claimed by": c, "share": f"{100 * c / n_maps:.0f}%", "maps": ", ".join(o)}
            for l, h, c, o in list(heads)[:limit]]
    return pd.DataFrame(rows, columns=["layer", "head", "claimed by", "share", "maps"])


def bandit_frame(bandit: dict) -> pd.DataFrame:
    """Per training seed and unit: posterior mean, rounds chosen, selected or not."""
    rows = []
    for seed, b in bandit.items():
        for unit, mean in sorted(b["means"].items(), key=lambda kv: -kv[1]):
            rows.append({"seed": seed, "unit": unit, "posterior mean": round(mean, 3),
                         "rounds chosen": b["chosen"].get(unit, 0), "selected": unit in b["selected"],
                         "search (s)": round(b["seconds"], 1)})
    return pd.DataFrame(rows)


def stem_table(summary: dict) -> pd.DataFrame:
    """Per task: kept heads, overlap with the gradient top set (and chance), metrics single / learned / MTL."""
    rows = []
    for r in summary["per_task"]:
        d = r["multi_vs_single"]
        rows.append({"task": r["unit"], "metric": r["metric"], "heads kept": r["kept"],
                     "also gradient top": f"{r['overlap_gradient']:.0%} (chance {r['overlap_chance']:.0%})",
                     "alone, all heads": ci_text(r["single"]),
                     "alone, learned pruning": ci_text(r["single_learned"]),
                     "multi-task, learned pruning": ci_text(r["multi_learned"]),
                     "multi - alone (learned)": diff_text(d),
                     "Jaccard with multi-task set": round(r["jaccard_multi"], 2)})
    return pd.DataFrame(rows)
