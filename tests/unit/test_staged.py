"""The staged Findings design: looks judged in turn at their own alpha, the extra looks paid for, more runs only
where a card is open, and the projection's power checked against statsmodels."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headprune_core.findings import staged
from headprune_core.findings.calibration import calibrate, goal
from headprune_core.findings.hypotheses import BY_ID, HYPOTHESES
from headprune_core.methods.inference import (
    INCONCLUSIVE,
    OTHER_WAY,
    REPRODUCED,
    SMALLER,
    Rule,
    draw_verdicts,
    rates,
    sequential,
)
from headprune_core.plans.presets import find_plan


def test_the_first_look_that_decides_gives_the_verdict():
    by_look = np.array([[INCONCLUSIVE, REPRODUCED, INCONCLUSIVE, SMALLER, INCONCLUSIVE],
                        [REPRODUCED, OTHER_WAY, INCONCLUSIVE, REPRODUCED, INCONCLUSIVE],
                        [INCONCLUSIVE, INCONCLUSIVE, OTHER_WAY, INCONCLUSIVE, INCONCLUSIVE]], dtype=object)
    verdict, look = sequential(by_look)
    assert list(verdict) == [REPRODUCED, REPRODUCED, OTHER_WAY, SMALLER, INCONCLUSIVE]
    assert list(look) == [1, 0, 2, 0, 2]


def test_one_look_is_the_plain_rule():
    rule = Rule("superiority", effect=1.0)
    size = {"n_runs": 3, "n_sentences": 120, "run": 0.1, "sentences": 0.05, "residual": 0.01}
    plain = draw_verdicts(rule, 0.4, size, draws=500, rng=np.random.default_rng(3))
    one = draw_verdicts(rule, 0.4, size, draws=500, rng=np.random.default_rng(3), looks=((3, rule.alpha),))
    assert list(plain["verdict"]) == list(one["verdict"])


def test_extra_looks_are_paid_for():
    """Looking again at 5 and 8 runs at the full 5% raises the false 'reproduced' rate; the staged design's
    alpha spending keeps it under the goal, while power rises over the single look."""
    rule = Rule("superiority", effect=1.0)
    size = {"n_runs": 3, "n_sentences": 200, "run": 0.1, "sentences": 0.05, "residual": 0.01}

    def rate(delta, looks, seed):
        v = draw_verdicts(rule, delta, size, draws=8000, rng=np.random.default_rng(seed), looks=looks)["verdict"]
        return rates(v)[REPRODUCED]

    naive = ((3, 0.05), (5, 0.05), (8, 0.05))
    single, spent, greedy = (rate(0.0, looks, 1) for looks in (None, staged.LOOKS, naive))
    assert greedy > single + 0.01  # looking again without paying inflates the error
    assert spent <= goal(staged.LOOKS) and spent < greedy
    assert rate(1.0, staged.LOOKS, 2) > rate(1.0, None, 2) + 0.05  # and more runs buy power


@pytest.mark.parametrize("card_id", ["b2", "e1", "f4"])
def test_the_staged_rates_at_the_design_sizes_meet_the_goals(card_id):
    sizes = staged.design()[card_id]
    cal = calibrate(BY_ID[card_id], sizes, draws=3000, seed=5, looks=staged.LOOKS)
    assert cal["goal"] == pytest.approx(0.035) and not cal["goals_missed"], cal
    assert cal["looks"] == [list(x) for x in staged.LOOKS]


@pytest.mark.parametrize("runs,alpha", [(3, 0.05), (5, 0.01), (8, 0.01)])
def test_projected_power_is_the_t_tests_for_runs_alone(runs, alpha):
    """For a card measured in runs alone, the projection is exactly the one-sample t-test's power
    (statsmodels), one-sided at alpha / 2 as the interval's lower end decides."""
    from statsmodels.stats.power import TTestPower

    per_run = 4.0  # the variance of one run's value
    size = {"n_runs": 3, "n_sentences": None, "run": per_run / 3, "sentences": 0.0, "residual": 0.0}
    h = BY_ID["f4"]
    expected = TTestPower().power(effect_size=h.rule.effect / np.sqrt(per_run), nobs=runs, alpha=alpha / 2,
                                  alternative="larger")
    assert staged.power("f4", [size], runs, alpha=alpha) == pytest.approx(expected, rel=1e-6)


def test_a_sentence_part_that_binds_caps_power_until_more_sentences():
    size = {"n_runs": 3, "n_sentences": 200, "run": 0.2, "sentences": 1.0, "residual": 0.05}
    sizes = {"d": [size]}
    assert staged.sentence_binds("d", sizes) and not staged.sentence_binds("e2", {"e2": [size]})  # e2: English
    assert staged.runs_needed("d", [size]) is None  # the sentence part alone holds the interval above 2 points
    assert staged.runs_needed("d", [size], sentences=staged.MORE_SENTENCES) is not None


def test_extend_adds_runs_only_to_what_the_open_cards_read():
    plan = find_plan("findings")
    sizes = staged.design()
    p = staged.extend(plan, ["b2"], 5, sizes=sizes)
    by = {(e.get("strategy", "importance"), bool(e.get("shares")), (e.get("settings") or ["cross"])[0]): e
          for e in p.refinetune}
    old = {(e.get("strategy", "importance"), bool(e.get("shares")), (e.get("settings") or ["cross"])[0]): e
           for e in plan.refinetune}
    for key, exp in by.items():
        grown = key in {("importance", False, "cross"), ("reverse", False, "cross")}
        assert exp["seeds"] == ([13, 14, 15, 16, 17] if grown else old[key]["seeds"]), key
    assert p.ranking_seeds == plan.ranking_seeds and p.gradts == plan.gradts and p.affinity == plan.affinity
    assert staged.extend(plan, ["c"], 5).ranking_seeds == (14, 15, 16, 17)
    (g,) = staged.extend(plan, ["f1"], 5).gradts
    assert g["train_seeds"] == [13, 14, 15, 16, 17] or tuple(g["train_seeds"]) == (13, 14, 15, 16, 17)
    aff = staged.extend(plan, ["g"], 8).affinity
    assert aff[0] == "gradts-demo" and tuple(aff[1]["map_seeds"]) == (14, 15, 16, 17, 18, 19, 20)
    layers = next(e for e in staged.extend(plan, ["d"], 5, sizes=sizes).refinetune if e.get("strategy") == "layers")
    assert layers["target_sentences"] == staged.MORE_SENTENCES and layers["seeds"] == [13, 14, 15, 16, 17]
    # every extended plan is a valid plan whose old runs keep their seeds
    for card in ("a1", "a2", "b1", "e1", "h", "i", "j"):
        staged.extend(plan, [card], 8, sizes=sizes)


def test_the_design_file_covers_every_card_and_a_bad_one_fails_clearly(tmp_path):
    sizes = staged.design()
    assert set(sizes) == {h.id for h in HYPOTHESES}
    bad = tmp_path / "design.json"
    bad.write_text(json.dumps({"cards": {"a1": [{"n_runs": 3}]}}))
    with pytest.raises(ValueError, match="design file .*design.json.*a1"):
        staged.design(bad)
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="cannot be read"):
        staged.design(bad)


def test_cards_without_a_chance_get_no_more_runs():
    sizes = staged.design()
    assert staged.worth_more_runs("b2", sizes)
    assert not staged.worth_more_runs("f1", sizes)  # 80% power would take hundreds of runs
    assert staged.worth_more_runs("a1", {})  # a card the design file does not list is tried


def test_the_calibration_makes_the_staged_choice_on_each_draw():
    """Which open cards get more runs reads their look-1 estimates, so the simulation makes the same choice on
    each draw from its own look 1: at a size where no draw projects the power, every verdict stays at look 1;
    at one where every draw does, later looks decide some; the choice off (select=False), later looks count."""
    from headprune_core.findings.calibration import staged_verdicts

    h = BY_ID["b2"]
    rule = h.rule
    for sd, expect_later in ((50.0, False), (0.3, True)):
        size = {"n_runs": 3, "n_sentences": None, "run": sd ** 2, "sentences": 0.0, "residual": 0.0}
        out = draw_verdicts(rule, 0.5, size, draws=400, rng=np.random.default_rng(1), looks=staged.LOOKS)
        first = out["by_look"][0]
        chosen, _ = staged_verdicts(h, [out], [size], select=True)
        assert (chosen != first).any() == expect_later, sd  # a later look decided some draws
        free, _ = staged_verdicts(h, [out], [size], select=False)
        assert (free != first).any()



def test_a_projection_keeps_the_runs_df_where_the_run_part_was_set_to_0():
    """As the interval does: a card whose run part is recorded at 0 (b1, i) is projected with R - 1 degrees of
    freedom, not the sentences' (it projected 3 runs enough where its 3 runs were inconclusive on the page)."""
    from headprune_core.findings.power import variance_at

    size = {"n_runs": 3, "n_sentences": 100, "run": 0.0, "sentences": 0.01, "residual": 0.01}
    assert variance_at(size, 5, None)[1] == 4.0
    assert variance_at({**size, "run": 0.01}, 5, None)[1] > 4.0  # both parts measured: Satterthwaite's
