"""Every paper plan end to end without the Hub (issue 45): the plan at its smallest size (PaperPlan.smallest: every
model, task, setting and strategy; 6 sentences, 1 epoch, k in 1..2, 2 training seeds) with tiny random models of
the paper's families cached under the paper's model ids, and data sets in the exact schemas of the Hub's in a
mirror folder, read through the same loading code as the Hub (only the download replaced), every job run as a
sweep's worker runs it; then the paper's numbers beside ours fill every cell the plan computes."""

from __future__ import annotations

import pytest

from headprune_core.findings.beside import beside_rows
from headprune_core.plans.papers import PAPER_PLANS
from headprune_core.plans.sweep import SweepSpec, build_graph
from headprune_core.runs.store import Store
from tests.helpers.hub_world import hub_world, provide, run_offline

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", sorted(PAPER_PLANS))
def test_a_paper_plan_runs_end_to_end_on_local_hub_copies(name, tmp_path, monkeypatch):
    hf_cache, mirror = hub_world(tmp_path, monkeypatch)
    spec = SweepSpec.from_dict(PAPER_PLANS[name].smallest())
    provide(spec, hf_cache, mirror)
    store = Store(tmp_path / "cache" / "runs")
    done = run_offline(spec, store, tmp_path / "markers")
    again = build_graph(spec, store=store)  # a second look: everything cached, the re-fine-tunings' parts too
    assert done == len(again.jobs) and again.counts()["cached"] == len(again.jobs) > 0
    assert all(n.expanded for n in again.jobs.values())
    fts = store.entries("finetune")  # the models came from the Hub cache under the paper's ids
    assert {e.config["model"] for e in fts} == set(spec.models)
    assert all(not e.config["model_fp"].startswith("planned") for e in fts)
    # beside ours: nothing the plan computed is left missing (what it lacks is named, never dropped)
    rows = beside_rows(name, store, spec=spec)
    assert bool(rows) == bool(PAPER_PLANS[name].cells)  # Budhraja et al. report no numbers we could read
    assert not [r for r in rows if r.status.startswith("missing")]
    assert all(r.ours is not None and r.interval is not None for r in rows if r.status == "computed")
