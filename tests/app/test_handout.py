"""A lesson's handout (``headprune report lesson NAME``): each step's notes and the figure its view shows, read from
the cache with the step's choices (never computed); a missing result or a live-only view is a line; HTML in the
notes is text. Opening it offline in a real browser is in test_browser.py."""

from __future__ import annotations

import json
import re

import pytest

from headprune_core.cli.main import main
from tests.helpers.app import cache_with_lessons, plotly_array

LESSON = """---
title: The fixture's heads
plan: fixture
---

## Heads in German
view: importance?task=pos&lang=de

Look at **layer 2**. <script>window.hacked = 1</script>

## Taking heads away
view: prune?task=pos&lang=es&strategy=importance&k=4

The dashed line is k.

## Tasks
view: task_affinity

The preset's model is not here.

## One head's attention
view: inspector?task=pos

Live only.

## Broken
view: nowhere

A step that cannot be shown.
"""


def _figures(text: str) -> dict:
    return json.loads(re.search(r"const FIGURES = (\{.*?\});\n", text, re.S).group(1))


@pytest.fixture
def lesson_cache(fixture_cache, tmp_path, monkeypatch):
    cache = cache_with_lessons(fixture_cache, tmp_path / "cache", {"mine": LESSON})
    monkeypatch.setenv("HEADPRUNE_CACHE", str(cache))
    return cache


def test_the_handout_has_each_steps_notes_and_figure(lesson_cache, tmp_path, capsys):
    out = tmp_path / "handout.html"
    assert main(["report", "lesson", "mine", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    text = out.read_text()
    figures = _figures(text)
    # step 1: the German map (3 layers x 4 heads) and the languages' Spearman matrix (en, de, es, clustered)
    heat, rho = figures["step-1-0"], figures["step-1-1"]
    assert "in de (German)" in heat["layout"]["title"]["text"]
    assert plotly_array(heat["data"][0]["z"]).shape == (3, 4) and sorted(rho["data"][0]["x"]) == ["de", "en", "es"]
    # step 2: the cached curve(s) of es, k = 4 marked
    curve = figures["step-2-0"]
    assert curve["data"] and curve["layout"]["shapes"][0]["x0"] == 4
    assert "The dashed line: 4 heads pruned" in text
    # the others say why they have no figure; nothing else is drawn
    assert set(figures) == {"step-1-0", "step-1-1", "step-2-0"}
    # the GradTS preset's model is not prepared in the fixture cache: said, and the other steps drawn
    assert "This step&#x27;s figure cannot be drawn here: embedded model &#x27;me5-small&#x27; is not prepared" in text
    # the command line reads the lesson without the dashboard's page list (the app hands it; the core keeps none):
    # a page no handout draws, known or not, is live only (the dashboard's Lessons page names an unknown one)
    assert "The inspector view is live only" in text and "The nowhere view is live only" in text
    # the notes are Markdown with their HTML shown as text, and each step's link is there
    assert "<strong>layer 2</strong>" in text and "<script>window.hacked" not in text
    assert "&lt;script&gt;window.hacked" in text
    assert "/prune?task=pos&amp;lang=es&amp;strategy=importance&amp;k=4&amp;lesson=mine&amp;step=2" in text


def test_an_unknown_lesson_or_markdown_format_is_a_clear_error(lesson_cache, tmp_path, capsys):
    assert main(["report", "lesson", "nope", "--out", str(tmp_path / "x.html")]) != 0
    assert "no lesson 'nope' here (lessons: " in capsys.readouterr().err
    assert main(["report", "lesson", "mine", "--format", "md", "--out", str(tmp_path / "x.md")]) != 0
    assert "a lesson's handout is HTML" in capsys.readouterr().err
    assert not list(tmp_path.glob("x.*"))
