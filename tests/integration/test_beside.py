"""A paper's numbers beside ours (findings/beside.py) on a paper plan computed end to end without the Hub: Ma et
al.'s Table 5 (NER) at its smallest size, on a tiny mBERT-shaped model cached under the paper's model id and WikiANN
rows in the Hub's schema in a mirror, every job run as a sweep's worker runs it. Before any job every cell is
missing and says which job it needs; after, the cells of the languages computed hold our estimate with its
interval, and the rest are named."""

from __future__ import annotations

import math

import pytest

from headprune_core.findings.beside import beside_markdown, beside_rows
from headprune_core.plans.papers import PAPER_PLANS
from headprune_core.plans.sweep import SweepSpec, build_graph
from headprune_core.runs.store import Store
from tests.helpers.hub_world import hub_world, provide, run_offline

pytestmark = [pytest.mark.slow, pytest.mark.parallel]


def test_table5_beside_ours_on_a_plan_computed_without_the_hub(tmp_path, monkeypatch):
    hf_cache, mirror = hub_world(tmp_path, monkeypatch)
    spec = SweepSpec.from_dict(PAPER_PLANS["ma2021-table5-ner"].smallest(targets=1))
    assert spec.plans()[0].langs == ("en", "zh")
    provide(spec, hf_cache, mirror)
    store = Store(tmp_path / "cache" / "runs")
    before = beside_rows("ma2021-table5-ner", store, spec=spec)
    table5 = [r for r in before if r.number.where == "Table 5" and "->" in r.number.column]
    assert len(table5) == 32 and all(r.status.startswith("missing: prune") for r in table5)
    means = [r for r in before if r.number.quantity.startswith("mean over the row's 8 target")]
    assert len(means) == 4 and all(r.status.startswith("missing: prune") for r in means)

    run_offline(spec, store, tmp_path / "markers")
    assert build_graph(spec, store=store).counts()["todo"] == 0
    rows = {(r.number.row, r.number.setting, r.number.column): r for r in beside_rows("ma2021-table5-ner", store,
                                                                                      spec=spec)
            if r.number.where == "Table 5" and "->" in r.number.column}
    done = {k for k, r in rows.items() if r.status == "computed"}
    assert done == {(row, setting, f"EN->{t}") for row in ("Max-Pruning", "Rand-Pruning")
                    for setting in ("cross-lingual", "multilingual") for t in ("ZH",)}
    for key in done:
        r = rows[key]
        low, high = r.interval
        assert r.ours.n_runs == 2 and low <= r.ours.diff <= high and math.isfinite(r.diff)
        assert r.inside == (low <= r.number.value <= high)
    # ours is the cards' own reading: the dev-picked pruned level minus the unpruned model, per run, on the target
    ex = _retrain(spec, store)
    per_run = [ex.result["test"]["zh"]["levels"][ex.best_pruned(s)]["per_seed"][i]
               - ex.result["test"]["zh"]["levels"]["0"]["per_seed"][i] for i, s in enumerate(ex.seeds)]
    assert rows[("Max-Pruning", "cross-lingual", "EN->ZH")].ours.diff == pytest.approx(sum(per_run) / 2)
    assert all("WikiANN" in rows[k].note and "stands in" in rows[k].note for k in done)  # the substitute is said
    assert rows[("Max-Pruning", "cross-lingual", "EN->DE")].status == "not in this plan"
    assert "de not among its languages" in rows[("Max-Pruning", "cross-lingual", "EN->DE")].note
    text = beside_markdown(list(rows.values()))
    assert "4 of 32 reported numbers computed" in text and "| Table 5 | bert-base-multilingual-cased |" in text
    # a mean over all 8 targets needs all 8: the smallest plan has 2, and says which are absent
    mean = next(r for r in beside_rows("ma2021-table5-ner", store, spec=spec)
                if r.number.quantity.startswith("mean over the row's 8 target"))
    assert mean.status == "not in this plan" and "ar, de, nl, fa, he, ja, ur not among its languages" in mean.note
    # the Findings page's section reads the sweep as it ran (its record) and shows the same rows, and card b2's
    # verdict on the plan's one grid point
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_function(_section, args=(str(store.root),))
    at.run()
    assert not at.dataframe and not at.exception  # closed until the reader opens it
    at.toggle(key="papers_on").set_value(True).run(timeout=120)
    at.selectbox(key="paper_plan").set_value("ma2021-table5-ner").run(timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    beside, verdicts = at.dataframe
    shown = beside.value
    done = shown["status"].str.startswith("computed; ner: WikiANN")  # the substitute said on each
    assert len(shown) == 39 and done.sum() == 4 and set(shown.loc[done, "paper inside ours"]) <= {"yes", "no"}
    assert list(verdicts.value["card"]) == ["b2"] and verdicts.value["verdict"][0] != "not computed yet"
    assert any("4 of 39 reported numbers computed" in c.value for c in at.caption)
    at.selectbox(key="paper_plan").set_value("budhraja2020-glue").run(timeout=60)
    assert any("Nothing of `sweeps/budhraja2020-glue.json` is computed in this cache" in i.value for i in at.info)


def _section(root: str) -> None:
    from headprune_app.papers_view import section
    from headprune_core.runs.store import Store
    section(Store(root))


def _retrain(spec, store):
    """The cross-lingual Max-Pruning experiment's results, as the cards read them."""
    from headprune_core.findings.evidence import Evidence
    plan = spec.plans()[0]
    return Evidence(plan.study(store=store, progress=False), plan, task="ner").retrain("reverse", setting="cross")
