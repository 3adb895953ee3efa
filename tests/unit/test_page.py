"""The Findings page as a whole: Holm's procedure per statement over every card's one-sided tests, the headline
verdicts it gives, and the page-wide error rates, simulated, with and without the control."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from headprune_core.findings import staged
from headprune_core.findings.page import (
    ALPHA_PAGE,
    NOT_REPRODUCED,
    build_tests,
    headlines,
    holm_adjusted,
    holm_reject,
    look_weight,
    page_control,
    page_rates,
)
from headprune_core.methods.inference import OTHER_WAY, REPRODUCED, SMALLER, Estimate
from tests.helpers.findings_cards import constructed_cards


@pytest.mark.parametrize("seed", range(3))
def test_holm_is_statsmodels_holm(seed):
    rng = np.random.default_rng(seed)  # statsmodels takes 50 ms a page: 30 pages of 12
    pages = np.where(rng.random((30, 12)) < 0.3, rng.random((30, 12)) * 0.01, rng.random((30, 12)))
    ours = holm_reject(pages, 0.025)
    for p, rej in zip(pages, ours):
        reject, adjusted, *_ = multipletests(p, alpha=0.025, method="holm")
        assert list(rej) == list(reject)
        assert holm_adjusted(p) == pytest.approx(adjusted)


def test_headlines_read_each_statement_from_its_own_family():
    """Three cards: b3's interval far below 0 (the other way), a1's below the paper's effect but not below 0
    (smaller here), b1 well inside its margin (reproduced); then the same a1 with fifteen cards beside it that
    show nothing: its p no longer survives Holm's first step."""
    rows = [{"key": "b3", "parts": [(-5.0, 0.5, 50.0)]}, {"key": "a1", "parts": [(0.2, 0.3, 50.0)]},
            {"key": "b1", "parts": [(0.0, 0.1, 50.0)]}]
    assert list(headlines(build_tests(rows))[0]) == [OTHER_WAY, SMALLER, REPRODUCED]
    crowd = rows[1:2] + [{"key": "a2", "parts": [(0.0, 10.0, 50.0)]}] * 15
    t = build_tests(crowd)
    assert t.against[0, 0] < ALPHA_PAGE / 2 and headlines(t)[0, 0] == "inconclusive"  # the card alone: smaller


def test_a_staged_card_pays_for_its_looks():
    assert look_weight(None, 0) == 1.0
    assert look_weight(staged.LOOKS, 0) == pytest.approx(0.035 / 0.025)
    assert look_weight(staged.LOOKS, 2) == pytest.approx(0.035 / 0.005)


def test_no_headline_is_bolder_than_the_card_alone():
    """On random pages: reproduced on the page only where the card alone says so; the other way only where the
    card alone does; smaller here only where the card alone rejects the paper's effect."""
    from headprune_core.findings.hypotheses import BY_ID
    from headprune_core.methods.inference import decide

    rng = np.random.default_rng(2)
    keys = ["a1", "b1", "b3", "c", "d", "e1", "g", "i"]
    for _ in range(200):
        rows = [{"key": k, "parts": [(rng.normal(0, 2), rng.uniform(0.05, 1.0), 4.0)]} for k in keys]
        heads = headlines(build_tests(rows))[0]
        for row, head in zip(rows, heads):
            own = decide(BY_ID[row["key"]].rule, *row["parts"][0], n_runs=3)
            if head in (REPRODUCED, OTHER_WAY):
                assert own == head, (row, head, own)
            if head == SMALLER:
                assert own in (SMALLER, OTHER_WAY, REPRODUCED), (row, head, own)


@pytest.fixture(scope="module")
def design_cards():
    """Every card decided on planted runs, then given the design file's sizes to be simulated around."""
    sizes = staged.design()
    cards = constructed_cards()
    for card in cards:
        if card.calibration is not None:
            card.calibration["sizes"] = sizes[card.key]
    return cards


def test_the_page_wide_rates_meet_their_bound_and_the_cards_alone_do_not(design_cards):
    """Simulated around the design file's sizes (2,000 pages a scenario): all claims true, some card reads
    'not reproduced' or 'the other way' on at most 2.5% of pages (3 Monte Carlo standard errors allowed); all
    claims false, some card reads 'reproduced' on at most 2.5%; the cards alone, uncontrolled, miss both: the
    check fails on a page without the control."""
    rates = page_rates(design_cards, draws=2000, seed=3)
    mc = 3 * np.sqrt(ALPHA_PAGE * (1 - ALPHA_PAGE) / 2000)
    true, false = rates["claims_true"], rates["claims_false"]
    assert rates["cards"] == 16 and true["any_false_against"] <= ALPHA_PAGE + mc, rates
    assert false["any_false_reproduced"] <= ALPHA_PAGE + mc and false["any_false_other_way"] <= ALPHA_PAGE + mc
    assert true["any_false_against_unadjusted"] > 0.05 and false["any_false_reproduced_unadjusted"] > 0.05, rates


def test_page_control_sets_every_headline_and_states_its_bounds(design_cards):
    page = page_control(design_cards, draws=200)
    tested = [c for c in design_cards if c.estimates]
    assert page["tested"] == len(tested) == 16 and set(page["cards"]) == {c.key for c in tested}
    assert page["bound"] == {"false_reproduced": 0.025, "false_not_reproduced": 0.025, "false_other_way": 0.025}
    assert all(c.headline for c in design_cards) and design_cards[-1].headline == "not computed yet"
    for c in tested:
        row = page["cards"][c.key]
        assert row["headline"] == c.headline and row["verdict"] == c.verdict
        assert row["p_holm"][REPRODUCED] >= row["p"][REPRODUCED] and NOT_REPRODUCED in row["p"]
        assert bool(c.page_note) == (c.headline != c.verdict)
        assert c.to_dict()["verdict"] == c.headline and c.to_dict()["verdict_unadjusted"] == c.verdict
    assert page["decided"] < page["decided_unadjusted"]


def test_a_card_of_parts_is_reproduced_only_when_every_part_is():
    """e2's two parts: one far above the paper's effect, one at 0: the card's p is the larger, and it is not
    reproduced on the page."""
    strong = Estimate((9.0, 10.0, 11.0), se_sentences=0.1, n_sentences=200)
    null = Estimate((-1.0, 0.0, 1.0), se_sentences=0.1, n_sentences=200)
    cards = constructed_cards()
    e2 = next(c for c in cards if c.key == "e2")
    e2.decide({"middle - bottom": strong, "middle - top": null})
    page_control(cards, draws=50)
    assert e2.verdict != REPRODUCED and e2.headline != REPRODUCED


def test_a_card_seen_at_several_looks_takes_each_statements_smallest_weighted_p():
    """The union over the looks: each look's p times 3.5% / its one-sided alpha, the smallest of them; a look
    with more runs can decide on the page what the first could not."""
    from headprune_core.findings.hypotheses import BY_ID
    from headprune_core.methods.inference import statement_p

    first, later = (0.5, 0.3, 2.0), (0.5, 0.08, 4.0)
    row = {"key": "b2", "looks": [{"parts": [first], "weight": look_weight(staged.LOOKS, 0)},
                                  {"parts": [later], "weight": look_weight(staged.LOOKS, 1)}]}
    t = build_tests([row])
    p = [statement_p(BY_ID["b2"].rule, *x)[REPRODUCED] for x in (first, later)]
    assert t.rep[0, 0] == pytest.approx(min(1.4 * p[0], 7 * p[1]))
    assert headlines(build_tests([{"key": "b2", "parts": [first], "weight": 1.4}]))[0, 0] == "inconclusive"
    assert headlines(t)[0, 0] == REPRODUCED
