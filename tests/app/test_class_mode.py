"""Class mode (``headprune serve --class``): a student's session reads the cache and changes nothing in it, even
with forged widget state or a crafted link; the teacher's key unlocks the owner's controls, a wrong one does not.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.app import make_app

KEY = "correct horse battery staple"
OWNER_KEYS = {"delete", "gc", "launch", "register", "hub_register", "compute_missing", "measure", "prepare_all"}


@pytest.fixture
def class_mode(monkeypatch):
    from headprune_app import roles

    monkeypatch.setenv("HEADPRUNE_CLASS", "1")
    monkeypatch.setenv("HEADPRUNE_TEACHER_KEY", KEY)
    roles.key_guard.clear()  # a fresh server's guard: no wrong tries left over from another test
    yield
    roles.key_guard.clear()


def _listing(root: Path) -> dict[str, int]:
    """Every file under the cache with its size and modification time: what a student must not change."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def _page(at, page: str):
    at.switch_page(f"headprune_app/pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _keys(at) -> set[str]:
    """Keys of every button and uploader on the page."""
    keys = {b.key for b in at.button} | {b.key for b in at.get("download_button")}
    return keys | {u.proto.id for u in at.get("file_uploader")}


def _text(at) -> str:
    return "\n".join(m.value for m in [*at.markdown, *at.caption, *at.info, *at.warning, *at.error])


def test_a_student_gets_no_owner_control_and_a_note_why(no_runs_cache, monkeypatch, class_mode):
    at = make_app(no_runs_cache["root"], monkeypatch)
    at.run()
    assert not at.exception
    for page in ("home", "runs", "add_data", "findings"):
        _page(at, page)
        assert not (_keys(at) & OWNER_KEYS), (page, _keys(at) & OWNER_KEYS)
        assert not [b for b in at.button if b.key and b.key.startswith("compute")], page
        assert "Class mode: students read the teacher's results" in _text(at), page
    assert not at.get("file_uploader")  # the Add data page shows no uploader to a student
    # and the sidebar: no free-form model, no checkpoint switch; the unlock form is there
    assert "other_model" not in [t.key for t in at.text_input]
    assert "teacher_key_input" in [t.key for t in at.text_input]


def test_forged_widget_state_changes_nothing_in_the_cache(cache_copy, monkeypatch, class_mode):
    before = _listing(cache_copy)
    at = make_app(cache_copy, monkeypatch)
    at.run()
    _page(at, "runs")
    labels = [o for o in at.selectbox(key="show_entry").options]
    assert labels  # the cache has entries to delete
    # what the Delete, gc, launch and upload controls would read, set by hand
    for key, value in {"doomed": labels[:3], "sure": True, "gc_sure": True, "launch_cap": 10,
                       "add_name": "evil", "add_lang": "xx", "add_replace": True, "measured": ("x", ())}.items():
        at.session_state[key] = value
    for page in ("runs", "add_data", "home", "prune", "runs"):
        _page(at, page)
    assert _listing(cache_copy) == before


def test_a_link_cannot_load_another_model(fixture_cache, monkeypatch, class_mode, tmp_path):
    at = make_app(fixture_cache["root"], monkeypatch)
    at.query_params["other_model"] = "/etc"
    at.run()
    assert not at.exception
    sel = at.session_state["selection"]
    assert sel.model == fixture_cache["plan"].model  # the plan's model, not /etc
    assert any("other_model" in w.value for w in at.warning)  # the link's parameter is said to be unused


def test_the_teachers_key_unlocks_and_a_wrong_one_does_not(cache_copy, monkeypatch, class_mode):
    at = make_app(cache_copy, monkeypatch)
    at.run()
    _page(at, "runs")
    assert "delete" not in _keys(at)
    at.text_input(key="teacher_key_input").input("not the key")
    [b for b in at.button if b.label == "Unlock"][0].click()
    at.run()
    assert any("Wrong key" in e.value for e in at.error)
    assert "_teacher" not in at.session_state or at.session_state["_teacher"] is not True
    assert "delete" not in _keys(at)
    at.text_input(key="teacher_key_input").input(KEY)
    [b for b in at.button if b.label == "Unlock"][0].click()
    at.run()
    assert at.session_state["_teacher"] is True
    _page(at, "runs")
    assert {"delete", "launch"} <= _keys(at)
    # the key is nowhere a student or a link could see it
    assert KEY not in _text(at) and all(KEY not in str(v) for v in at.query_params.values())
    # the form cleared it, and the unlocked session no longer draws it
    assert "teacher_key_input" not in [t.key for t in at.text_input]
    assert "teacher_key_input" not in at.session_state or at.session_state["teacher_key_input"] == ""


def test_outside_class_mode_every_session_is_the_owners(cache_copy, monkeypatch):
    monkeypatch.delenv("HEADPRUNE_CLASS", raising=False)
    at = make_app(cache_copy, monkeypatch)
    at.run()
    _page(at, "runs")
    assert {"delete", "launch"} <= _keys(at)
    assert "teacher_key_input" not in [t.key for t in at.text_input]
    assert os.environ.get("HEADPRUNE_CLASS") is None
