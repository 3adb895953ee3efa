"""Fixtures for the dashboard tests, on the session's fixture cache (tests/conftest.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.fixture_cache import build_fixture_cache


@pytest.fixture(scope="session")
def no_runs_cache(tmp_path_factory) -> dict:
    """Model, corpora and plan, but no results at all."""
    return build_fixture_cache(tmp_path_factory.mktemp("hp-noruns"), with_runs=False)


@pytest.fixture
def cache_copy(fixture_cache, tmp_path) -> Path:
    """A private copy of the fixture cache's results, plans and corpora (the model folder is shared)."""
    root = tmp_path / "cache"
    for part in ("runs", "plans", "corpora"):
        shutil.copytree(fixture_cache["root"] / part, root / part)
    return root


@pytest.fixture
def class_settings():
    """Streamlit's options as ``headprune serve --class`` sets them (restored after the test)."""
    from streamlit import config

    from headprune_core.base.defaults import CLASS_STREAMLIT, CLASS_UPLOAD_MB
    wanted = {**CLASS_STREAMLIT, "server.maxUploadSize": CLASS_UPLOAD_MB}
    before = {name: config.get_option(name) for name in wanted}
    for name, value in wanted.items():
        config.set_option(name, {"true": True, "false": False}.get(value, value))
    yield
    for name, value in before.items():
        config.set_option(name, value)
