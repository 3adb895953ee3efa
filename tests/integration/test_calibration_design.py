"""Each card's rule meets its one-sided error goals around the sizes the findings preset measured (the design file
headprune_core/findings/design.json), as one look and as the staged design, with the per-sentence data-generating
model of test_calibration.py (its other checks)."""

from __future__ import annotations

import json

import pytest

from headprune_core.findings import staged
from headprune_core.findings.calibration import calibrate, goal
from headprune_core.findings.hypotheses import BY_ID, HYPOTHESES
from headprune_core.findings.staged import DESIGN
from tests.integration.test_calibration import DRAWS

pytestmark = [pytest.mark.slow, pytest.mark.parallel]
SIZES = DESIGN


@pytest.mark.parametrize("looks", [None, staged.LOOKS], ids=["one look", "staged"])
def test_around_the_design_sizes_each_card_meets_its_goals(looks):
    """Every one-sided rate at most its goal (2.5%, or 3.5% staged) within 3 Monte Carlo standard errors for every
    card around the design file's sizes, as one look and as the staged design (every extra look counted)."""
    measured = json.loads(SIZES.read_text())
    assert set(measured["cards"]) == {h.id for h in HYPOTHESES}, "the design file lacks cards"
    for card_id, sizes in measured["cards"].items():
        cal = calibrate(BY_ID[card_id], sizes, draws=DRAWS, seed=11, looks=looks)
        assert cal["goal"] == pytest.approx(goal(looks))
        assert not cal["goals_missed"], (card_id, looks, {k: cal[k] for k in (
            "false_reproduced", "false_not_reproduced", "false_other_way")})
