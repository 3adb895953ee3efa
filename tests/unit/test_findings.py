"""Findings cards on a tiny model: missing before the plan runs, a verdict with numbers after, from the cache."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from headprune_core.findings.calibration import calibrate, combine
from headprune_core.findings.cards import MISSING, ONE_RUN, SAME, VERDICTS, Findings, model_label
from headprune_core.findings.hypotheses import HYPOTHESES
from headprune_core.methods.inference import OTHER_WAY, REPRODUCED, SMALLER, Estimate, truths
from headprune_core.methods.uncertainty import metric_of
from headprune_core.plans.plan import StudyPlan, run_plan
from headprune_core.runs.config import nested_configs
from headprune_core.runs.store import Store
from headprune_core.runs.study import Study


@pytest.fixture()
def small_findings(tiny_cache, tmp_path, monkeypatch):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    gplan = {"name": "g", "description": "tiny", "model": model, "units": ["pos/en", "name/en", "pos/de"],
             "primaries": ["pos/en"], "max_trial": 1, "random_seeds": [0], "score_sentences": 20,
             "eval_sentences": 20, "train": {"max_train_sentences": 40, "epochs": 1.0, "lr": 1e-3},
             "train_seeds": [13], "map_seeds": [14], "bandit": {"rounds": 3, "round_steps": 2, "dev_sentences": 10}}
    (tmp_path / "g.json").write_text(json.dumps(gplan))
    retrain = {"max_train_sentences": 40, "epochs": 1.0, "lr": 1e-3}
    plan = StudyPlan(name="f", description="tiny findings", model=model, tasks=("pos", "name"), langs=("en", "de"),
                     random_seeds=(0, 1), curve_step=4, score_sentences=30, eval_sentences=30,
                     train={"max_train_sentences": 80, "epochs": 1.0, "lr": 1e-3},
                     refinetune=({"tasks": ["pos"], "levels": [1, 2], "seeds": [1, 2], "train": retrain},
                                 {"tasks": ["pos"], "strategy": "reverse", "levels": [1, 2], "seeds": [1, 2],
                                  "train": retrain},
                                 {"tasks": ["pos"], "strategy": "random", "levels": [1, 2], "seeds": [1, 2],
                                  "train": retrain},
                                 {"tasks": ["pos"], "strategy": "layers", "seeds": [1, 2], "train": retrain},
                                 {"tasks": ["pos"], "shares": [0.25, 0.5], "seeds": [1, 2], "train": retrain},
                                 {"tasks": ["pos"], "strategy": "random", "shares": [0.25, 0.5], "seeds": [1, 2],
                                  "train": retrain},
                                 {"tasks": ["pos"], "settings": ["multi"], "levels": [1], "seeds": [1, 2],
                                  "train": retrain}),
                     ranking_seeds=(14,),
                     gradts=(str(tmp_path / "g.json"),))
    return Study(model, store=Store(tmp_path / "runs"), progress=False), plan


def test_cards_are_missing_then_computed_from_the_cache(small_findings):
    study, plan = small_findings
    before = Findings(study, plan)
    cards = before.cards()
    assert [c.key for c in cards] == [h.id for h in HYPOTHESES]
    assert all(c.verdict == MISSING and c.missing for c in cards)
    assert len(before.missing()) == len(before.jobs)

    run_plan(study, plan)
    found = Findings(study, plan)
    assert not found.missing()
    cards = {c.key: c for c in found.cards()}
    # what this small plan cannot give, its cards say: no layer pairs (3 layers), no SVO target or Turkish (en,
    # de only), two distinct GradTS tasks
    needs = {"i": "layer_pairs", "d": "Turkish", "g": "at least 5 distinct tasks"}
    for key, text in needs.items():
        assert cards[key].verdict == MISSING and text in cards[key].missing[0], key
    for key, c in cards.items():
        if key in needs:
            continue
        assert c.verdict in VERDICTS and c.verdict != MISSING and not c.missing and c.measured and c.protocol, key
        if c.verdict == SAME:  # one result shown twice is shown once: on the card it names, which has numbers
            assert c.same_as in cards and cards[c.same_as].estimates and not c.estimates, key
            continue
        assert c.estimates and c.calibration is not None, key
        # the verdict is the rule's on the estimate; fewer than 3 runs can only be "one training run"
        rule = c.hypothesis.rule
        assert c.verdict == str(combine([np.array([rule.decide(e)], dtype=object) for e in c.estimates.values()])[0])
        if min(e.n_runs for e in c.estimates.values()) < 3:
            assert c.verdict == ONE_RUN, key
        json.dumps(c.to_dict())  # every card serialises

    # (a1): per seed, the mean over target languages of (dev-picked k) - (unpruned), from the cached evaluations
    ex = found.retrain("importance")
    assert ex.seeds == [1, 2] and ex.levels == ["0", "1", "2"] and ex.targets == ["de"]
    # k is picked on dev among the pruned levels only (Ma et al.: 1..12), never the unpruned model itself
    assert all(ex.best_pruned(s) in ("1", "2") for s in ex.seeds)
    by_hand = [metric_of(ex.units(ex.best_pruned(s), s, "de")) - metric_of(ex.units("0", s, "de")) for s in ex.seeds]
    assert cards["a1"].estimates[""].runs == pytest.approx(tuple(by_hand))
    assert {r["language"] for r in cards["a1"].rows} == {"en (source)", "de"}
    # (a2): the multilingual experiment runs without the plan's other jobs in that setting
    assert found.retrain("importance", setting="multi").langs == ["en", "de"]
    assert not [j for j in found.jobs if j.cfg.kind == "curve" and j.cfg.finetune.setting == "multi"]
    # (b1): masking replicated over the fine-tuning runs (seed 13 and the ranking seed 14)
    assert [r["fine-tuning seed"] for r in cards["b1"].rows] == [13, 14] and cards["b1"].estimates[""].n_runs == 2
    # (c): two training seeds of the rankings (13 and the plan's ranking seed 14), and the ceiling between them
    assert [r["training seed"] for r in cards["c"].rows] == [13, 14] and cards["c"].estimates[""].n_runs == 2
    # per seed: each language pair's rho over the ceiling of their split-half reliabilities (Spearman-Brown),
    # minus the paper's low end 0.67, by hand with scipy on the cached maps of each task in two languages
    from scipy.stats import spearmanr

    def rho(a, b):
        return spearmanr(a.ravel(), b.ravel()).statistic

    def half_raw(task, lang, seed, half):
        (cfg,) = [j.cfg for j in found.jobs if j.cfg.kind == "score" and (j.cfg.task, j.cfg.lang, j.cfg.half) ==
                  (task, lang, half) and j.cfg.resample is not None and j.cfg.finetune.seed == seed]
        assert cfg.resample == seed  # each run draws its own sentences and split, seeded by its training seed
        got = study.scores(cfg)
        return np.asarray(got["raw"]), got["meta"]["n_tokens"]

    from headprune_core.methods.importance import normalise
    for i, seed in enumerate([13, 14]):
        per_task = []
        for task in ("pos", "name"):
            full, rel = {}, {}
            for g in ("en", "de"):
                (r1, n1), (r2, n2) = half_raw(task, g, seed, 1), half_raw(task, g, seed, 2)
                full[g] = normalise((r1 * n1 + r2 * n2) / (n1 + n2), normalize="layer_sum")  # the halves pooled
                r = rho(normalise(r1, normalize="layer_sum"), normalise(r2, normalize="layer_sum"))
                rel[g] = 2 * r / (1 + r)
            ceiling = np.sqrt(max(0.0, rel["en"] * rel["de"]))
            if ceiling > 0:  # a pair whose halves do not agree at all has no ceiling to correct by
                per_task.append(rho(full["en"], full["de"]) / ceiling)
        assert cards["c"].estimates[""].runs[i] == pytest.approx(np.mean(per_task) - 0.67)
    # (g): each task's map (one unit per task) under the GradTS maps' seed and the plan's map seed
    gts, tops, missing = found.task_tops(10.0)
    assert not missing and gts.task_units() == ("pos/en", "name/en") and gts.map_seeds() == (13, 14)
    assert {u: sorted(t) for u, t in tops.items()} == {"pos/en": [13, 14], "name/en": [13, 14]}
    assert all(t.shape == study.head_shape and t.sum() == 1 for by_seed in tops.values() for t in by_seed.values())
    assert "head map pos/en (kv_grad, GradTS g, seed 14)" in [j.what for j in found.jobs]
    # (e2): two parts, middle - bottom and middle - top, on the source language
    assert set(cards["e2"].estimates) == {"middle - bottom", "middle - top"}
    # (f4): time saved per training seed against the bandit
    assert cards["f4"].rows and cards["f4"].rows[0]["seed"] == "13"
    # beside the steps, the wall time of choosing and training (one torch thread), as the paper measured it
    assert cards["f4"].rows[0]["GradTS-trial (s)"] > 0 and cards["f4"].rows[0]["bandit (s)"] > 0
    assert "rounds" in cards["f4"].protocol and "first stage" in cards["f4"].protocol
    doc = cards["a1"].to_dict()
    assert {"id", "claim", "paper", "hypothesis", "statistic", "control", "margin", "mde", "verdict", "numbers",
            "calibration"} <= set(doc)
    assert set(doc["calibration"]) >= {"false_reproduced", "false_not_reproduced", "false_other_way", "power",
                                       "goal", "goals_missed"}
    assert not any(k.endswith("_given_gate") for k in doc["calibration"])  # no figure equal to another by design
    assert doc["model"] == model_label(study.model_id) and doc["model"] in doc["verdict_text"] + doc["protocol"] \
        or doc["verdict"] == ONE_RUN

    # a fine-tune whose readers are all cached is not needed (a bundle imported without the weights); once one of
    # its readers is gone, it is again
    ft = next(j for j in found.jobs if j.cfg.kind == "finetune")
    shutil.rmtree(study.store.path_for(ft.cfg))
    assert not Findings(study, plan).missing() and [c.verdict for c in Findings(study, plan).cards()] == \
        [c.verdict for c in cards.values()]
    reader = next(j for j in found.jobs if ft.cfg.key() in {c.key() for c in nested_configs(j.cfg)})
    shutil.rmtree(study.store.path_for(reader.cfg))
    assert {j.cfg.key() for j in Findings(study, plan).missing()} == {ft.cfg.key(), reader.cfg.key()}


@pytest.mark.parametrize("h", HYPOTHESES, ids=lambda h: h.id)
def test_each_rule_on_constructed_null_true_and_opposite_cases(h):
    """Three precise training runs at the planted truth: the paper's effect is reproduced, the null is smaller
    here (superiority) or beyond the margin (equivalence: the other way), the opposite is the other way; one run
    of the same is only ever 'one training run'."""
    rule = h.rule
    truth = truths(rule)
    tiny = rule.target / 20

    def runs(delta):
        return Estimate((delta - tiny, delta, delta + tiny), se_sentences=tiny)

    assert rule.decide(runs(truth["paper"])) == REPRODUCED
    if rule.kind == "superiority":
        assert rule.decide(runs(truth["null"])) == SMALLER
    else:
        assert rule.decide(runs(2 * rule.margin)) == OTHER_WAY
    assert rule.decide(runs(truth["opposite"])) == OTHER_WAY
    assert rule.decide(Estimate((truth["paper"],), se_sentences=tiny)) == ONE_RUN


@pytest.mark.parametrize("h", HYPOTHESES, ids=lambda h: h.id)
def test_each_card_rule_meets_its_error_goals_at_an_adequate_size(h):
    """At 3 runs and a standard error an eighth of the paper's effect (or margin), each card's rule, with all its
    parts, says 'reproduced' under the null, 'not reproduced' under the paper's effect and 'the other way' at a
    true 0 at most 2.5% of the time, each one-sided (2,000 draws here: within 3 Monte Carlo standard errors; the
    slow test uses 20,000)."""
    sd = h.rule.target / 8 * np.sqrt(3) / np.sqrt(2)
    parts = [Estimate((0.0, sd, -sd), se_sentences=h.rule.target / 16, n_sentences=200)] * max(1, len(h.parts))
    cal = calibrate(h, parts, draws=2000)
    assert cal["goal"] == 0.025 and not cal["goals_missed"], cal  # each one-sided, within 3 MC standard errors
    assert cal["power"] >= 0.5


def test_findings_plan_of_a_plan(tiny_cache, monkeypatch):
    from dataclasses import replace

    from headprune_core.findings.plan import findings_plan
    from headprune_core.plans.presets import find_plan
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    assert findings_plan(find_plan("demo"), (12, 12)) == find_plan("findings")
    assert findings_plan(find_plan("findings"), (12, 12)) is find_plan("findings")
    other = findings_plan(replace(find_plan("demo"), model="x"), (12, 12))
    assert other.model == "x" and other.gradts[0]["model"] == "x"
    assert other.refinetune == find_plan("findings").refinetune
    plan = StudyPlan(name="p", description="", model=model, tasks=("pos", "name"), langs=("en", "de"),
                     settings=("multi",), train={"max_train_sentences": 50, "epochs": 1.0, "seed": 3})
    f = findings_plan(plan, (3, 4))
    assert f.name == "p-findings" and f.settings == ("cross", "multi")
    assert f.refinetune[0]["levels"] == [2, 4] and all(e["seeds"] == [3, 4, 5] for e in f.refinetune)
    assert [e["settings"] for e in f.refinetune][-1] == ["multi"]  # Ma et al.'s multilingual setting too
    assert f.ranking_seeds == (4, 5)  # the rankings replicated over training runs (cards b1 and c)
    (g,) = f.gradts
    assert g["units"] == ["pos/en", "pos/de", "name/en", "name/de"] and g["primaries"] == ["name/de"]
    assert g["map_seeds"] == []  # two tasks: no stem-cell card to replicate maps for
    assert [p.name for p in f.gradts_plans()] == ["p-gradts"]


def _stem_cells(small_findings, monkeypatch, tops: dict[str, dict[int, np.ndarray]],
                controls: dict[str, dict[int, np.ndarray]] | None = None):
    """Card g on planted top-head sets (task unit -> training seed -> layers x heads), as the cache would give,
    and the shuffled-label controls' (None: each task's own sets rolled along each layer, so they do not meet,
    and in the even runs one head all claim)."""
    from types import SimpleNamespace
    study, plan = small_findings
    seeds = tuple(next(iter(tops.values())))
    gts = SimpleNamespace(task_units=lambda: tuple(tops), map_seeds=lambda: seeds,
                          plan=SimpleNamespace(method="kv_grad", name="planted"))
    if controls is None:
        # task i of run r has seed index (r + i) % len(seeds): every task of the even runs claims the last head
        controls = {u: {s: np.roll(t, 1 + i, axis=1) | (_top(t.shape, [(0, t.shape[1] - 1)])
                                                        & (((seeds.index(s) - i) % len(seeds)) % 2 == 0))
                        for s, t in by_seed.items()} for i, (u, by_seed) in enumerate(tops.items())}
    monkeypatch.setattr(Findings, "task_tops", lambda self, top_percent, control=False:
                        (gts, controls if control else tops, []))
    return Findings(study, plan).card_g(draws=500)


def _top(shape, heads):
    out = np.zeros(shape, dtype=bool)
    for layer, head in heads:
        out[layer, head] = True
    return out


def test_stem_cells_on_planted_maps(small_findings, monkeypatch):
    """Five tasks that share their top heads in every run: reproduced; tasks whose top heads never meet (each
    layer's share kept, so the null expects some overlap): the other way; one run: 'one training run'; fewer
    than five distinct tasks: not computed (with three, 'most' would be two)."""
    shape = (6, 10)
    units = ("pos/en", "name/en", "sent/en", "unc/en", "emo/pt")
    seeds = (13, 14, 15, 16, 17)
    shared = [(1, 2), (3, 5), (4, 0)]
    same = {u: {s: _top(shape, shared + [(5, i)]) for s in seeds} for i, u in enumerate(units)}
    card = _stem_cells(small_findings, monkeypatch, same)
    assert card.verdict == REPRODUCED, card.measured
    assert card.numbers["claimed"] == [3] * 5 and card.numbers["ceiling"] == {u: 4 for u in units}
    assert card.numbers["run_to_run_overlap"] == {u: 4.0 for u in units}
    assert [r["seeds"] for r in card.rows][0] == "pos/en: 13, name/en: 14, sent/en: 15, unc/en: 16, emo/pt: 17"
    assert "card j" in card.notes[-1]
    assert set(card.estimates) == {"beyond the layer null", "beyond the shuffled-label control"}
    assert card.numbers["control"] == [1, 0, 1, 0, 1]  # the rolled sets meet only where planted

    # the same tasks trained on shuffled labels claim the shared heads as well (with one head more or less from run
    # to run): the encoder's own shape, not the tasks; beating the layer null alone is not enough
    encoder = {u: {s: _top(shape, shared + [(5, i)] + ([(0, 9)] if (seeds.index(s) - i) % 5 % 2 == 0 else []))
                   for s in seeds} for i, u in enumerate(units)}
    card = _stem_cells(small_findings, monkeypatch, same, encoder)
    assert card.numbers["control"] == [4, 3, 4, 3, 4] and card.verdict != REPRODUCED, card.measured
    assert card.estimates["beyond the layer null"].diff > 2
    assert card.estimates["beyond the shuffled-label control"].diff == pytest.approx(-0.6)
    assert card.verdict == SMALLER and "shuffled-label control: the 97.5% interval" in card.reason, card.reason

    apart = {u: {s: _top(shape, [(layer, 2 * i + (s - 13) % 2) for layer in range(6)]) for s in seeds}
             for i, u in enumerate(units)}
    card = _stem_cells(small_findings, monkeypatch, apart)
    assert card.numbers["claimed"] == [0] * 5 and card.verdict == OTHER_WAY, card.measured

    one = {u: {13: by_seed[13]} for u, by_seed in same.items()}
    card = _stem_cells(small_findings, monkeypatch, one)
    assert card.verdict == ONE_RUN and card.numbers["ceiling"] == {}

    three = {u: same[u] for u in units[:3]}
    card = _stem_cells(small_findings, monkeypatch, three)
    assert card.verdict == MISSING and "at least 5 distinct tasks" in card.missing[0]


def test_the_staged_reading_of_an_empty_cache_asks_for_the_first_look(small_findings, monkeypatch):
    from headprune_core.findings import staged
    from headprune_core.findings.staged import read_staged
    study, plan = small_findings

    def gone(*_a, **_k):  # the staged choice reads the cards' own look 1 (simulated so), never the design file
        raise AssertionError("the staged reading opened the design file")

    monkeypatch.setattr(staged, "design", gone)
    state = read_staged(study, plan, draws=50)
    assert state.next_look == 0 and state.next_plan == plan
    assert {j.cfg.key() for j in state.next_jobs} == {j.cfg.key() for j in Findings(study, plan).missing()}
    assert all(c.verdict == MISSING for c in state.cards) and state.looks[0]["decided"] == []


def test_one_claim_on_two_scales_is_decided_only_where_they_agree():
    """Card d: points and % of the gap to chance. Both above 0: reproduced; both wholly below 0: the other way;
    one reproduced and one not: inconclusive, saying the scales disagree (no alpha split: both must hold)."""
    from headprune_core.findings.calibration import combine
    from headprune_core.findings.cards import Card
    from headprune_core.findings.hypotheses import BY_ID
    from headprune_core.methods.inference import INCONCLUSIVE

    v = lambda *xs: [np.array([x], dtype=object) for x in xs]  # noqa: E731
    assert combine(v(REPRODUCED, REPRODUCED), scales=True)[0] == REPRODUCED
    assert combine(v(OTHER_WAY, OTHER_WAY), scales=True)[0] == OTHER_WAY
    assert combine(v(OTHER_WAY, SMALLER), scales=True)[0] == SMALLER
    assert combine(v(REPRODUCED, INCONCLUSIVE), scales=True)[0] == INCONCLUSIVE
    assert combine(v(REPRODUCED, OTHER_WAY), scales=True)[0] == INCONCLUSIVE
    assert combine(v(REPRODUCED, OTHER_WAY))[0] == OTHER_WAY  # parts that must all hold: any part fails it

    h = BY_ID["d"]
    assert h.scales and h.split(2) == 1 and BY_ID["e2"].split(2) == 2
    high = Estimate((5.0, 5.5, 6.0), se_sentences=0.05, n_sentences=200)
    low = Estimate((-6.0, -5.5, -5.0), se_sentences=0.05, n_sentences=200)
    card = Card(h, draws=50)
    card.decide({"points": high, "% of the gap to chance": high})
    assert card.verdict == REPRODUCED
    card.decide({"points": low, "% of the gap to chance": high})
    assert card.verdict == INCONCLUSIVE and card.reason.startswith("the scales disagree")
