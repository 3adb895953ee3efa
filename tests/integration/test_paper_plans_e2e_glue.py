"""The paper plans on GLUE and XNLI (Budhraja et al. 2020 and 2021, GradTS) end to end without the Hub, as
test_paper_plans_e2e.py runs Ma et al.'s (its docstring says how): a file of its own so that CI's parallel phase
runs the two halves side by side."""

from __future__ import annotations

import pytest

from headprune_core.plans.papers import PAPER_PLANS
from tests.integration.test_paper_plans_e2e import MA, check_end_to_end

pytestmark = [pytest.mark.slow, pytest.mark.parallel]


@pytest.mark.parametrize("name", sorted(set(PAPER_PLANS) - set(MA)))
def test_a_paper_plan_runs_end_to_end_on_local_hub_copies(name, tmp_path, monkeypatch):
    check_end_to_end(name, tmp_path, monkeypatch)
