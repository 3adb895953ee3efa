"""Each card's rule meets its error goals after its gates, measured with enough simulated draws to tell 5% from 10%
(20,000: the standard error of a 5% rate is 0.15 points), with the per-sentence data-generating model (run,
sentence and run-by-sentence effects, heavy tails, true sizes drawn 0.5x to 3x around the recorded ones): at a
size where the data can tell, at a size where it cannot (there the rule must say inconclusive, not be wrong),
and around the sizes the findings preset measured (the design file headprune_core/findings/design.json, from `headprune
findings --format json` on its cache: each card's ``calibration.sizes``), where a card whose rule misses a goal must say
so. A second data-generating model, not the rule's own (tokens drawn per sentence from logit-normal run and sentence
effects, through the real per-sentence code path), checks the same goals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headprune_core.findings import staged
from headprune_core.findings.calibration import GOAL, calibrate
from headprune_core.findings.hypotheses import BY_ID, HYPOTHESES
from headprune_core.findings.staged import DESIGN
from headprune_core.methods.inference import AGAINST, REPRODUCED, Rule
from headprune_core.methods.uncertainty import run_estimate

pytestmark = pytest.mark.slow

DRAWS = 20_000
SIZES = DESIGN


def _size(se: float, runs: int, *, run_share: float = 0.5, n_sentences: int | None = 300) -> dict:
    """A size whose standard error is ``se``: ``run_share`` of the variance from the runs, the rest split between
    sentences and run by sentence."""
    v = se ** 2
    if n_sentences is None:
        return {"n_runs": runs, "n_sentences": None, "run": v, "sentences": 0.0, "residual": 0.0}
    return {"n_runs": runs, "n_sentences": n_sentences, "run": run_share * v, "sentences": (1 - run_share) * v / 2,
            "residual": (1 - run_share) * v / 2}


@pytest.mark.parametrize("runs", [3, 5])
@pytest.mark.parametrize("h", HYPOTHESES, ids=lambda h: h.id)
def test_goals_at_a_size_that_can_tell(h, runs):
    """Standard error an eighth of the paper's effect (or margin): both goals after the gates, and power."""
    parts = [_size(h.rule.target / 8, runs)] * max(1, len(h.parts))
    cal = calibrate(h, parts, draws=DRAWS, seed=7)
    assert cal["false_reproduced_given_gate"] <= GOAL and cal["false_not_reproduced_given_gate"] <= GOAL, cal
    assert cal["power"] >= 0.6, cal


@pytest.mark.parametrize("h", HYPOTHESES, ids=lambda h: h.id)
def test_hopeless_sizes_are_inconclusive_not_wrong(h):
    """Standard error as large as the paper's effect: the interval holds both, the rule is rarely wrong."""
    parts = [_size(h.rule.target, 3, n_sentences=None)] * max(1, len(h.parts))
    cal = calibrate(h, parts, draws=DRAWS)
    assert cal["false_reproduced_given_gate"] <= GOAL and cal["false_not_reproduced_given_gate"] <= GOAL
    assert cal["rates"]["paper"]["inconclusive"] > 0.6, cal["rates"]["paper"]


EXPECTED_MISSES: dict[str, list[str]] = {}
"""Cards whose rule is known to miss a goal at the design file's sizes, with the goal it misses; written by hand
when the design file is updated (none today), so a new miss fails this test until someone looks at it."""


@pytest.mark.parametrize("looks", [None, staged.LOOKS], ids=["one look", "staged"])
def test_around_the_design_sizes_each_card_meets_its_goals_after_its_gates(looks):
    """Both rates after the gates at most 5% for every card around the design file's sizes, as one look and as
    the staged design (every extra look counted); a card listed in EXPECTED_MISSES must miss exactly that goal
    and say so in ``goals_missed``."""
    measured = json.loads(SIZES.read_text())
    assert set(measured["cards"]) == {h.id for h in HYPOTHESES}, "the design file lacks cards"
    for card_id, sizes in measured["cards"].items():
        cal = calibrate(BY_ID[card_id], sizes, draws=DRAWS, seed=11, looks=looks)
        rates = {"false reproduced <= 5%": cal["false_reproduced_given_gate"],
                 "false not reproduced <= 5%": cal["false_not_reproduced_given_gate"]}
        expected = EXPECTED_MISSES.get(card_id, [])
        for goal, rate in rates.items():
            if goal in expected:
                assert rate > GOAL and goal in cal["goals_missed"], (card_id, goal, rate)
            else:
                assert rate <= GOAL, (card_id, goal, rate, looks)
        # no rule has a gate that depends on the data: the rates a reader sees are the unconditional ones
        assert cal["false_reproduced_given_gate"] == pytest.approx(cal["false_reproduced"], abs=0.002), card_id


def _token_draws(rng, delta_logit: float, *, runs: int, n: int) -> list[dict]:
    """One experiment drawn token by token, not by the rule's additive model: per sentence a token count and a
    base logit, per run a logit shift, per (run, sentence) a logit wobble, per arm B a logit shift
    ``delta_logit``; tokens correct ~ Binomial(count, p)."""
    total = rng.integers(4, 30, n)
    base = rng.normal(2.0, 1.2, n)
    out = []
    for _ in range(runs):
        shift = rng.normal(0, 0.15)
        arm_a = base + shift + rng.normal(0, 0.3, n)
        arm_b = base + shift + delta_logit + rng.normal(0, 0.05) + rng.normal(0, 0.3, n)
        ca = rng.binomial(total, 1 / (1 + np.exp(-arm_a)))
        cb = rng.binomial(total, 1 / (1 + np.exp(-arm_b)))
        out.append({"a": ("t", {"correct": ca.tolist(), "total": total.tolist()}),
                    "b": ("t", {"correct": cb.tolist(), "total": total.tolist()})})
    return out


def test_a_data_generating_model_not_the_rules_own_meets_the_goals():
    """Accuracy difference B - A through run_estimate, with a superiority rule whose effect is what a logit shift
    of 0.1 gives here (about 1 point): under no shift, false 'reproduced' <= 5%; under the shift, false 'not
    reproduced' <= 5% (1,000 experiments each; the standard error of a 5% rate is 0.7 points)."""
    rng = np.random.default_rng(21)
    probe = [run_estimate(_token_draws(rng, 0.1, runs=3, n=200), lambda m: m["b"] - m["a"]).diff for _ in range(200)]
    rule = Rule("superiority", effect=float(np.mean(probe)))
    verdicts = {}
    for name, delta in (("null", 0.0), ("paper", 0.1)):
        verdicts[name] = [rule.decide(run_estimate(_token_draws(rng, delta, runs=3, n=200),
                                                   lambda m: m["b"] - m["a"])) for _ in range(1000)]
    assert np.mean([v == REPRODUCED for v in verdicts["null"]]) <= GOAL
    assert np.mean([v in AGAINST for v in verdicts["paper"]]) <= GOAL
    assert np.mean([v == REPRODUCED for v in verdicts["paper"]]) > 0.2  # the rule can see the effect at all
