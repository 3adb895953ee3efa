"""The command line on a tiny model and generated corpora: runs, lists, exports, prunes, clear errors."""

from __future__ import annotations

import json
import os

from headprune_core.cli.main import main
from headprune_core.encoders.heads import present_mask
from headprune_core.encoders.pruned import load_pruned
from tests.helpers.fixture_cache import write_small_plan


def _run(capsys, *args) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in args])
    except SystemExit as exit_:  # argparse refuses an option value before any work
        code = exit_.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_score_curve_ls_show_export_prune(tiny_cache, capsys, monkeypatch, tmp_path):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    common = ["--model", model, "--task", "pos", "--train-langs", "en", "--max-train", "100", "--epochs", "2",
              "--lr", "1e-3"]
    code, out, _ = _run(capsys, "score", *common, "--lang", "de", "--sentences", "40")
    assert code == 0 and "importance (gate_grad, layer_sum, min-max) of pos/de" in out
    assert len(out.strip().splitlines()) == 2 + 3  # title, header, 3 layers
    code, out, _ = _run(capsys, "curve", *common, "--lang", "en", "--strategy", "random", "--seeds", "0,1",
                        "--sentences", "40")
    assert code == 0 and "k=  0" in out and "k= 12" in out
    code, out, _ = _run(capsys, "ls")
    assert code == 0 and "finetune" in out and "score" in out and "curve" in out
    score_key = next(line.split()[0] for line in out.splitlines() if " score " in line)
    code, out, _ = _run(capsys, "show", score_key)
    assert json.loads(out)["config"]["lang"] == "de"
    code, out, _ = _run(capsys, "export", score_key, "--format", "csv")
    assert out.splitlines()[0] == "layer,head,score" and len(out.splitlines()) == 1 + 12
    # --out=~/... reaches us unexpanded (no shell expands it after '='): it means the home folder, not './~'
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "home").mkdir()
    code, _, err = _run(capsys, "export", score_key, "--format", "csv", "--out=~/scores.csv")
    assert code == 0, err
    assert (tmp_path / "home" / "scores.csv").read_text().splitlines()[0] == "layer,head,score"
    assert not (tmp_path / "~").exists()
    mask = tmp_path / "mask.json"
    mask.write_text(json.dumps([[1, 0, 1, 1], [1, 1, 1, 1], [0, 0, 0, 0]]))
    code, out, _ = _run(capsys, "evaluate", *common, "--lang", "en", "--mask", mask, "--sentences", "40")
    assert code == 0 and "pos/en: accuracy" in out
    code, out, _ = _run(capsys, "prune", *common, "--lang", "en", "--k", "5", "--out", tmp_path / "pruned")
    assert code == 0 and "5 heads removed" in out
    assert int(present_mask(load_pruned(tmp_path / "pruned")).sum()) == 12 - 5
    meta = json.loads((tmp_path / "pruned" / "headprune_pruned.json").read_text())
    assert len(meta["heads_removed"]) == 5 and (tmp_path / "pruned" / "tokenizer.json").exists()
    code, out, _ = _run(capsys, "rm", score_key)
    assert code == 0 and "deleted score" in out


def test_clear_errors(tiny_cache, capsys, monkeypatch, tmp_path):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    code, _, err = _run(capsys, "score", "--model", model, "--task", "nope")
    assert code == 2 and "unknown task 'nope'; known: pos, name" in err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([[1, 1], [1, 1]]))
    code, _, err = _run(capsys, "evaluate", "--model", model, "--mask", bad, "--max-train", "50")
    assert code == 2 and f"{bad}: mask has shape (2, 2), the model has (3, 4) (layers, heads)" in err
    code, _, err = _run(capsys, "curve", "--model", model, "--strategy", "best", "--max-train", "50")
    assert code == 2 and "argument --strategy: unknown strategy 'best'; known: importance, reverse, random, layers" \
        in err
    code, _, err = _run(capsys, "show", "zzzz")
    assert code == 2 and "0 cache entries match 'zzzz'" in err
    code, _, err = _run(capsys, "prune", "--model", model, "--out", tmp_path / "x", "--max-train", "50")
    assert code == 2 and "--k N" in err


def test_refinetune_prints_estimate_then_tables_with_intervals(tiny_cache, capsys, monkeypatch):
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    common = ["--model", model, "--task", "pos", "--train-langs", "en", "--max-train", "60", "--epochs", "1",
              "--lr", "1e-3", "--sentences", "30"]
    code, out, err = _run(capsys, "refinetune", *common, "--strategy", "layers", "--train-seeds", "1,2",
                          "--eval-langs", "en,de")
    assert code == 0 and "8 fine-tunings (levels x seeds)" in err  # 4 levels x 2 seeds
    lines = out.splitlines()
    assert lines[0].startswith("pruned by layers, re-fine-tuned (cross), seeds [1, 2]")
    assert sum("heads):" in line and "(95% CI " in line for line in lines) == 4
    assert sum(line.strip().startswith("test ") and "distinguishable from 0" in line for line in lines) == 2
    code, again, err = _run(capsys, "refinetune", *common, "--strategy", "layers", "--train-seeds", "1,2",
                            "--eval-langs", "en,de")
    assert code == 0 and again == out and "fine-tunings" not in err  # cached: no estimate, same tables
    code, _, err = _run(capsys, "refinetune", *common, "--levels", "99")
    assert code != 0 and "cannot prune 99 heads: the model has 12" in err


def test_findings_prints_the_cards_of_the_cache_as_text_or_json(tiny_cache, capsys, monkeypatch, tmp_path):
    from headprune_core.findings.hypotheses import HYPOTHESES
    root, model = tiny_cache
    monkeypatch.setenv("HEADPRUNE_CACHE", str(root))
    plan = write_small_plan(tmp_path / "p.json", model)
    code, out, _ = _run(capsys, "findings", plan, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["plan"] == "p-findings" and doc["missing_jobs"] > 0
    assert [c["id"] for c in doc["cards"]] == [h.id for h in HYPOTHESES]
    for card in doc["cards"]:  # nothing computed: every card says so, with what it needs
        assert {"id", "claim", "paper", "hypothesis", "statistic", "control", "margin", "mde", "verdict", "numbers",
                "calibration"} <= set(card)
        assert card["verdict"] == "not computed yet" and card["missing"] and card["calibration"] is None
    page = doc["family"]  # nothing decided yet: nothing tested on the page, nothing to be wrong about
    assert page["cards"] == {} and page["tested"] == 0 and page["rates"]["claims_true"]["any_false_against"] == 0.0
    assert page["bound"] == {"false_reproduced": 0.025, "false_not_reproduced": 0.025, "false_other_way": 0.025}
    assert all(c["verdict_unadjusted"] == c["verdict"] for c in doc["cards"])
    code, out, _ = _run(capsys, "findings", plan, "--card", "a1", "--card", "e1")
    assert code == 0 and "(a1) " in out and "(e1) " in out and "(b1) " not in out and "NOT COMPUTED YET" in out
    assert "reproduced when it lies inside +-1 points" in " ".join(out.split())  # e1's rule, in words
    code, _, err = _run(capsys, "findings", plan, "--card", "zz")
    assert code == 2 and "unknown findings card 'zz'; known: a1, a2" in err
    code, _, err = _run(capsys, "findings", plan, "--format", "yaml")
    assert code == 2 and "yaml" in err
    # the staged reading of a cache with nothing computed: look 1 (the plan itself) is what comes next
    assert doc["staged"]["next_look"] == 0 and doc["staged"]["next_jobs"] == doc["missing_jobs"]
    # --plan: per card not decided, the design file's projection and the minutes of each later look here
    code, out, _ = _run(capsys, "findings", plan, "--plan", "--format", "json")
    proj = json.loads(out)
    assert code == 0 and {r["card"] for r in proj["cards"]} == {h.id for h in HYPOTHESES}
    for r in proj["cards"]:
        assert set(r["power"]) == {3, 5, 8} or set(r["power"]) == {"3", "5", "8"}
        assert all(0 <= p <= 1 for p in r["power"].values()) and all(m >= 0 for m in r["minutes"].values())
        assert abs(r["page_alpha"] - 2 * 0.025 / len(HYPOTHESES)) < 1e-12  # on the page: Holm's first step
        need, page_need = r["runs_needed"], r["runs_needed_page"]
        assert page_need is None or (need is not None and page_need >= need)
    code, out, _ = _run(capsys, "findings", plan, "--plan")
    assert code == 0 and "power 3 runs" in out and "(b2) " in out
    code, _, err = _run(capsys, "findings", plan, "--budget", "0")
    assert code == 2 and "--budget" in err
    code, _, err = _run(capsys, "findings", plan, "--plan", "--budget", "30")
    assert code == 2 and "--plan" in err and "--budget" in err


def test_cache_option_holds_for_its_command_only(tmp_path, monkeypatch, capsys):
    """--cache points the command (and what it starts) at a folder, and the process's environment is as before
    afterwards: a second command in the same process does not inherit it."""
    monkeypatch.setenv("HEADPRUNE_CACHE", str(tmp_path / "mine"))
    assert main(["cache", "du", "--cache", str(tmp_path / "other")]) == 0
    assert str(tmp_path / "other") in capsys.readouterr().out
    assert os.environ["HEADPRUNE_CACHE"] == str(tmp_path / "mine")
    monkeypatch.delenv("HEADPRUNE_CACHE")
    assert main(["cache", "du", "--cache", str(tmp_path / "other")]) == 0
    assert "HEADPRUNE_CACHE" not in os.environ
