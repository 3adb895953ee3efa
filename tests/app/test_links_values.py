"""Links carry values: every choice bound by its value opens from a hand-typed link (``task=name``, ``lang=es``,
``method=kv_grad``...) with no note, the address keeps values (never labels), and a link in the older label form
still opens (the label is read as its value)."""

from __future__ import annotations

import json
import shutil

from headprune_core.plans import selection as S
from tests.helpers.app import make_app

LINK_NOTE = "The link's"


def _open(at, params: dict, page: str):
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(f"headprune_app/pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _notes(at) -> list[str]:
    return [w.value for w in at.warning if w.value.startswith(LINK_NOTE)]


VALUE_LINKS = [  # (page, the link's parameters, each bound choice's value the page must show)
    ("prune", {"task": "name", "lang": "es", "method": "kv_grad", "normalize": "none", "strategy": "random"},
     {"task": "name", "lang": "es", "method": "kv_grad", "normalize": "none", "strategy": "random"}),
    ("prune", {"strategy": "importance", "ranking": "de", "source": "en"},
     {"strategy": "importance", "ranking": "de", "source": "en"}),
    ("prune", {"strategy": "learned", "learned_target": "0.25"}, {"strategy": "learned", "learned_target": 0.25}),
    ("importance", {"langs:fixture:pos": ["de", "es"], "lang": "de"}, {"langs:fixture:pos": ["de", "es"]}),
]


def test_hand_typed_value_links_open_their_view_with_no_note(fixture_cache, monkeypatch):
    plan = fixture_cache["plan"].name
    for page, params, expected in VALUE_LINKS:
        # the languages' choice is keyed by plan and task: the fixture plan's name
        params = {k.replace(":fixture:", f":{plan}:"): v for k, v in params.items()}
        expected = {k.replace(":fixture:", f":{plan}:"): v for k, v in expected.items()}
        at = _open(make_app(fixture_cache["root"], monkeypatch), params, page)
        assert _notes(at) == [], (params, _notes(at))
        for k, v in expected.items():
            assert at.session_state[k] == v, (k, at.session_state[k], v)
        # the address holds the values as typed (or nothing, for a default)
        for k, v in params.items():
            assert at.query_params.get(k) in (None, v, [v] if isinstance(v, str) else v), (k, at.query_params.get(k))


def test_the_address_holds_values_never_labels(fixture_cache, monkeypatch):
    at = make_app(fixture_cache["root"], monkeypatch)
    at.switch_page("headprune_app/pages/prune.py")
    at.run()
    at.selectbox(key="task").set_value("name")
    at.selectbox(key="method").set_value("taylor")
    at.run()
    assert at.query_params["task"] == "name" and at.query_params["method"] == "taylor"
    assert S.task_label("name") != "name"  # a label would have been another text


def test_older_label_links_still_open(fixture_cache, monkeypatch):
    labels = {"task": S.task_label("name"), "lang": S.lang_label("es"), "strategy": S.STRATEGY_LABELS["random"]}
    at = _open(make_app(fixture_cache["root"], monkeypatch), labels, "prune")
    assert _notes(at) == []
    assert (at.session_state["task"], at.session_state["lang"], at.session_state["strategy"]) == \
        ("name", "es", "random")
    assert at.query_params["task"] == "name" and at.query_params["lang"] == "es"  # rewritten as values


def test_an_unknown_value_falls_back_with_a_note(fixture_cache, monkeypatch):
    at = _open(make_app(fixture_cache["root"], monkeypatch), {"task": "klingon"}, "prune")
    assert at.session_state["task"] != "klingon"
    assert any("task" in n and "klingon" in n for n in _notes(at))


def test_a_handout_reads_a_link_as_the_sidebar_does(fixture_cache, tmp_path, monkeypatch):
    """The handout (no Streamlit) and the sidebar start from the same defaults: for a bare link and for links
    that set some choices, on the fixture plan and on one that names fewer languages and another source, the
    handout's selection equals the one the dashboard shows."""
    from dataclasses import replace

    from headprune_core.reports.handout import view_selection
    cache = tmp_path / "cache"
    cache.mkdir()
    for part in ("runs", "corpora", "models"):
        (cache / part).symlink_to(fixture_cache["root"] / part)
    shutil.copytree(fixture_cache["root"] / "plans", cache / "plans")
    base = fixture_cache["plan"]
    sub = replace(base, name="sub", langs=("de", "es"), source_langs=("es",))
    (cache / "plans" / "sub.json").write_text(json.dumps(sub.to_dict()))
    for plan in (base, sub):
        for params in ({}, {"task": "name", "lang": "es"},
                       {f"langs:{plan.name}:pos": ["de", "es"], "method": "taylor", "normalize": "none",
                        "minmax": "false"}):
            at = _open(make_app(cache, monkeypatch), {"plan": plan.name, **params}, "importance")
            shown = {k: at.session_state[k] for k in ("task", "setting", "source", "lang", "method", "normalize",
                                                       "minmax")}
            shown["langs"] = tuple(at.session_state[f"langs:{plan.name}:{shown['task']}"])
            sel = view_selection(plan, {k: v if isinstance(v, list) else [v] for k, v in params.items()})
            assert {k: getattr(sel, k) for k in shown} == shown, (plan.name, params)


PAYLOADS = [
    "x`**Session expired: re-enter the teacher key at [the teacher page](http://evil.example/unlock)**",
    "<b>bold</b><script>alert(1)</script>",
    "a\n# heading\n- item\n\n[ref]: http://evil.example",
    ":red[alert] :material/lock: $x^2$ www.evil.example ~~gone~~ ``` fence",
]


def _html(note: str) -> str:
    """The note as CommonMark renders it (GFM-like: tables and strikethrough on)."""
    from markdown_it import MarkdownIt
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(note)


def test_text_from_a_link_stays_text(fixture_cache, monkeypatch):
    """A link's value, an unknown key and a lesson's name reach the page's notes as literal characters: no link,
    no bold, no heading, no HTML of theirs, however they try to close the code span or the bold around them."""
    import re

    from headprune_core.base.text import md_code, md_text
    for payload in PAYLOADS:
        for shown in (md_text(payload), md_code(payload)):
            html = _html(f"The link's **task** = {shown} was not used.")
            assert "<a " not in html and "<h1" not in html and "<li" not in html and "<script" not in html, html
            assert "<del" not in html and html.count("<strong>") == 1, html  # only the page's own bold
            text = re.sub(r"<[^>]+>", "", html).replace("\u200b", "")
            import html as html_lib
            assert " ".join(payload.split()) in " ".join(html_lib.unescape(text).split()), (payload, html)
    at = _open(make_app(fixture_cache["root"], monkeypatch), {"task": PAYLOADS[0]}, "prune")
    notes = _notes(at)
    assert len(notes) == 1 and all("<a " not in _html(n) and _html(n).count("<strong>") == 1 for n in notes), notes
    at = _open(make_app(fixture_cache["root"], monkeypatch), {"lesson": PAYLOADS[0]}, "prune")
    (warning,) = [w.value for w in at.warning if "is not on this server" in w.value]
    assert "<a " not in _html(warning) and _html(warning).count("<strong>") == 1, warning
