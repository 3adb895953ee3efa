"""AppTest of the Add data page: upload files, preview them, register, see the heatmap; bad files, Hub names
offline and unknown models get clear errors; a registered corpus is a task on every page."""

from __future__ import annotations

import pytest

from tests.helpers.app import make_app
from tests.helpers.own_data import token_files


def run(at):
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def app(cache_copy, monkeypatch):
    at = make_app(cache_copy, monkeypatch)
    run(at)
    at.switch_page("headprune_app/pages/add_data.py")
    return run(at)


def _upload(at, paths):
    at.file_uploader(key="uploads").set_value([(p.name, p.read_bytes(), "text/plain") for p in paths])
    return run(at)


def test_upload_preview_register_and_heatmap(app, tmp_path, cache_copy):
    files = token_files(tmp_path / "mine", "conll")
    files = [files[2], files[0], files[1]]  # test, train, validation: the page tells them apart by name
    _upload(app, files)
    assert [app.selectbox(key=f"split:{s}").value for s in ("train", "validation", "test")] == \
        ["train.conll", "validation.conll", "test.conll"]
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Kind"] == "token task" and metrics["Sentences"] == "120 / 24 / 24"
    assert "Words lost to truncation" in metrics
    assert {"NOUN", "VERB", "DET"} <= set(app.dataframe[-1].value["label"])
    assert app.button(key="register").disabled  # no name and language yet
    app.text_input(key="add_name").set_value("mytags")
    app.text_input(key="add_lang").set_value("sw")
    run(app)
    app.button(key="register").click()
    run(app)
    assert any("Registered mytags/sw: 120 / 24 / 24 sentences" in s.value for s in app.success)
    assert (cache_copy / "data" / "mytags" / "sw" / "meta.json").is_file()
    # its heatmap: offered, computed with a progress bar, then drawn
    compute = [b for b in app.button if b.key and b.key.startswith("compute:own:mytags:sw")]
    assert compute, [b.key for b in app.button]
    compute[0].click()
    run(app)
    run(app)
    assert len(app.get("plotly_chart")) == 1
    # and it is a task in the sidebar, with its language
    assert "mytags" in app.sidebar.selectbox(key="task").options
    app.sidebar.selectbox(key="task").set_value("mytags")
    run(app)
    assert app.sidebar.multiselect(key="langs:fixture:mytags").value == ["sw"]
    app.switch_page("headprune_app/pages/importance.py")
    run(app)
    assert not app.warning, [w.value for w in app.warning]  # the heatmap computed above is what it shows
    assert len(app.get("plotly_chart")) >= 1


def test_a_bad_file_is_refused_with_its_line_and_nothing_is_touched(app, tmp_path, cache_copy):
    good = token_files(tmp_path / "good", "conll", three=False)
    _upload(app, good)
    app.text_input(key="add_name").set_value("mytags")
    app.text_input(key="add_lang").set_value("sw")
    run(app)
    app.button(key="register").click()
    run(app)
    before = (cache_copy / "data" / "mytags" / "sw" / "train.jsonl").read_bytes()
    bad = tmp_path / "bad.conll"
    bad.write_text("the\tDET\ndog\tNOUN\n\nbroken\n\n" + "a\tDET\n\n" * 30)
    _upload(app, [bad])
    assert any(e.value.endswith("used as it is: bad.conll:4: expected 'token<TAB>tag', got 'broken'")
               for e in app.error), [e.value for e in app.error]  # the file by its own name
    assert (cache_copy / "data" / "mytags" / "sw" / "train.jsonl").read_bytes() == before


def test_wrong_number_of_files_and_offline_hub_and_unknown_model(app, tmp_path):
    files = token_files(tmp_path / "two", "jsonl")[:2]
    _upload(app, files)
    assert any("2 files: upload one file" in e.value for e in app.error)
    app.text_input(key="hub_ref").set_value("someone/not-here-offline")
    app.text_input(key="hub_name").set_value("x")
    app.text_input(key="hub_lang").set_value("en")
    run(app)
    app.button(key="hub_register").click()
    run(app)
    assert any("could not load someone/not-here-offline" in e.value for e in app.error), [e.value for e in app.error]
    app.sidebar.text_input(key="other_model").set_value(str(tmp_path / "no-model"))
    run(app)
    assert any("no such model folder" in e.value for e in app.sidebar.error)


def test_a_local_model_folder_from_the_text_box(app, fixture_cache):
    app.sidebar.text_input(key="other_model").set_value(str(fixture_cache["model"]))
    run(app)
    assert not app.sidebar.error
    assert app.sidebar.checkbox(key="finetuned").value is False
