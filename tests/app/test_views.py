"""The view modules' plain helpers (no Streamlit run): parsers of typed lists, the tables and texts they build,
and the one format of intervals (``uncertainty.ci_text`` / ``diff_text``) in the app's tables."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from headprune_app import (
    add_data_view,
    affinity_view,
    captions,
    prune_view,
    retrain_view,
    runs_view,
    shared_view,
    tables,
)
from headprune_core.figures.affinity import validation_chart
from headprune_core.multitask.affinity import primary_order


def test_levels_and_seeds_are_typed_as_comma_separated_whole_numbers():
    assert retrain_view.int_list("6, 12") == (6, 12)
    assert retrain_view.int_list(" 1,2,, 3 ,") == (1, 2, 3)
    assert retrain_view.int_list("") == ()
    with pytest.raises(ValueError, match="'1 2' is not a whole number"):
        retrain_view.int_list("1 2, 3")  # not silently read as 12
    with pytest.raises(ValueError, match="'x' is not a whole number"):
        retrain_view.int_list("13, x")


def test_upload_options_as_the_core_takes_them():
    assert add_data_view.column_names(" tokens, ner_tags ,") == ("tokens", "ner_tags")
    assert add_data_view.read_options("from the suffix", "", "no") == {"fmt": None, "columns": (), "tagset": None}
    assert add_data_view.read_options("conll", "words,tags", "penn") == {"fmt": "conll", "columns": ("words", "tags"),
                                                                         "tagset": "penn"}


def test_primaries_first_and_off_diagonal_statistics():
    assert primary_order(["pos/de", "gone/xx"], ["pos/en", "pos/de"]) == ["pos/de", "pos/en"]
    off = affinity_view.off_diagonal(np.array([[1.0, 0.2, -0.4], [0.2, 1.0, 0.8], [-0.4, 0.8, 1.0]]))
    assert off == pytest.approx({"min": -0.4, "mean": 0.2, "max": 0.8})
    with pytest.raises(ValueError):
        affinity_view.off_diagonal(np.ones((1, 1)))


def test_the_validation_of_a_primary_is_found_in_a_cached_result():
    res = {"result": {"validation": [{"primary": "pos/de", "trial": {"selected": ["pos/en"]}}]}}
    assert affinity_view.validated(res, "pos/de")["trial"]["selected"] == ["pos/en"]
    assert affinity_view.validated(res, "name/es") is None and affinity_view.validated(None, "pos/de") is None


def test_top_set_size_and_who_owns_each_head():
    assert shared_view.top_set_size(12, 10) == 1 and shared_view.top_set_size(12, 50) == 6
    assert shared_view.top_set_size(144, 10) == 14 and shared_view.top_set_size(3, 1) == 1  # never empty
    kept = {"a": [[1, 0], [0, 0]], "b": [[1, 1], [0, 0]]}
    sets = shared_view.kept_sets(kept)
    assert sets == {"a": {(0, 0)}, "b": {(0, 0), (0, 1)}}
    owners = shared_view.owners((2, 2), sets)
    assert owners == {(0, 0): ["a", "b"], (0, 1): ["b"], (1, 0): [], (1, 1): []}


def test_sweep_progress_text_and_job_rows():
    rec = {"name": "demo", "running_now": [{"what": "curve en", "host": "h1", "attempt": 1, "started": 100.0}],
           "jobs": [{"what": "eval de", "host": "h2", "attempts": 2, "state": "failed", "error": "OOM"},
                    {"what": "eval fr", "host": "h2", "attempts": 1, "state": "done", "error": None},
                    {"what": "fine-tune en", "host": "h1", "attempts": 2, "state": "done", "error": None,
                     "retries": [{"attempt": 1, "node": "worker-b (190fbf8b)", "reason": "lost with its node",
                                  "lost": True}]}]}
    s = {"state": "running", "finished": 3, "total": 8, "failed": 1, "skipped": 0, "running": 1, "eta": None}
    assert runs_view.sweep_text(rec, s) == ("**demo**: running, 3 of 8 jobs finished (1 failed, 0 skipped, "
                                            "1 running)")
    rows = runs_view.sweep_rows(rec, now=130.4)
    assert rows == [{"job": "curve en", "host": "h1", "attempt": 1, "running for (s)": 30},
                    {"job": "eval de", "host": "h2", "attempt": 2, "error": "OOM"},
                    {"job": "fine-tune en", "host": "worker-b (190fbf8b)", "attempt": 1,
                     "retried": "attempt 1 lost with its node on worker-b (190fbf8b); then done"}]


def test_a_launched_study_with_fewer_sentences_is_a_plan_of_its_own():
    from headprune_core.plans.presets import PRESETS
    plan = PRESETS["demo"]
    same = runs_view.launch_plan(plan, tasks=[], langs=[], cap=0)
    assert same.name == plan.name and same.langs == plan.langs
    small = runs_view.launch_plan(plan, tasks=[plan.tasks[0]], langs=list(plan.langs[:2]), cap=40)
    assert small.name == f"{plan.name}-40" and small.langs == plan.langs[:2] and small.tasks == (plan.tasks[0],)


def test_tag_table_marks_the_words_a_mask_changes():
    full = {"labels": ["NOUN", "VERB"], "probs": [0.91234, None]}
    table = tables.tag_table(["dog", "runs"], full)
    assert list(table.columns) == ["word", "full model", "confidence"] and table["confidence"][0] == 0.912
    table = tables.tag_table(["dog", "runs"], full, {"labels": ["NOUN", "NOUN"]})
    assert table["changed"].tolist() == [False, True] and table["with mask"].tolist() == ["NOUN", "NOUN"]
    plan = tables.plan_table([{"job": "fine-tune", "kind": "finetune", "status": "ok", "lang": None}])
    assert plan.to_dict("records") == [{"result": "fine-tune", "kind": "finetune", "status": "ok"}]


def test_mask_labels_follow_the_strategy_parameters():
    p = prune_view.Params("importance", "es")
    assert p.label(4) == "4 least important (es ranking)"
    assert prune_view.Params("random", "en", seed=3).label(2) == "2 random (seed 3)"
    assert prune_view.Params("learned", "en", target=0.25).label(3) == \
        "3 with the lowest learned gates (L0 run removing 25%)"


INTERVAL = r"\d+\.\d \[\d+\.\d, \d+\.\d\]"  # ci_text: "96.1 [95.2, 96.9]"
DIFF = r"[+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\]( \*)?"  # diff_text: "+1.2 [-0.3, +2.6] *"


def test_affinity_tables_write_intervals_one_way():
    d = {"diff": 1.234, "low": 0.2, "high": 2.6, "distinguishable": True}
    line = {"primary": "pos/de", "row": "thres", "label": "+ GradTS-thres", "metric": "accuracy", "test": 96.12,
            "low": 95.2, "high": 96.9, "min": 95.8, "max": 96.4, "values": [95.8, 96.4], "vs_alone": d,
            "dev": 95.0, "aux": ["pos/en"], "examples": {}, "selection_seconds": 3.0, "train_seconds": 10.0,
            "train_min": 9.0, "train_max": 11.0, "total_seconds": 13.0}
    row = tables.validation_frame([line]).iloc[0]
    assert row["95% CI"] == "96.1 [95.2, 96.9]" and row["vs alone"] == "+1.2 [+0.2, +2.6] *"
    hover = validation_chart([line]).data[0].hovertemplate
    assert "test accuracy 96.12 [95.20, 96.90] over 2 seed(s)" in hover and "vs alone +1.23 [+0.20, +2.60] *" in hover
    r = {"score": 90.0, "low": 89.0, "high": 91.0}
    summary = {"per_task": [{"unit": "pos/en", "metric": "accuracy", "kept": 6, "overlap_gradient": 0.5,
                             "overlap_chance": 0.5, "single": r, "single_learned": r, "multi_learned": r,
                             "multi_vs_single": {**d, "diff": -0.4, "low": -1.0, "high": 0.3,
                                                 "distinguishable": False},
                             "jaccard_multi": 0.333}]}
    stem = tables.stem_table(summary).iloc[0]
    assert all(re.fullmatch(INTERVAL, stem[c]) for c in ("alone, all heads", "alone, learned pruning",
                                                           "multi-task, learned pruning"))
    assert stem["multi - alone (learned)"] == "-0.4 [-1.0, +0.3]" and re.fullmatch(DIFF, row["vs alone"])


def test_captions_carry_the_numbers_they_are_given():
    plan = SimpleNamespace(max_trial=None, threshold=0.3, fg_threshold=0.2, train_seeds=(13, 14), note="Tiny.")
    text = captions.validation_caption(plan)
    assert "tau > 0.3" in text and "adding every candidate" in text and "trained with 2 seed(s)" in text
    assert text.endswith(" Tiny.")
    assert "up to 2 candidates" in captions.validation_caption(SimpleNamespace(**{**vars(plan), "max_trial": 2}))
    assert captions.selection_text(0.5, [], 4) == ("**GradTS-thres at 0.50** selects 0 of 4: none (the primary is "
                                                   "trained alone)")
    assert "**GradTS-trial** chose: none (alone was best on dev)" in captions.selection_text(0.5, ["a"], 4, [])
    assert "by all 3 with probability" in captions.count_caption("tasks", 10, 2, 3, 12)
    assert "rho within ±0.58" in captions.spearman_caption(12, 0.58)
