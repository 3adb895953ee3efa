"""Fixtures for the dashboard tests: a fixture cache built once per session through the real pipeline."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.app.fixture_cache import build_fixture_cache

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
TIMEOUT = 180  # seconds per script run; the first one loads torch and transformers


@pytest.fixture(scope="session")
def fixture_cache(tmp_path_factory) -> dict:
    """A complete fixture cache (model, corpora, plan, all results). Tests only add evaluations under new
    masks to it (as the app does); use ``cache_copy`` to delete or break entries."""
    return build_fixture_cache(tmp_path_factory.mktemp("hp-fixture"))


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


def make_app(cache: Path, monkeypatch):
    """An AppTest of app.py reading ``cache``."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("HEADPRUNE_CACHE", str(cache))
    return AppTest.from_file(APP, default_timeout=TIMEOUT)


def plan_size(plan, **restrict) -> int:
    """How many jobs the plan has for the dashboard's default choices (task pos), as the core expands it."""
    from dataclasses import replace

    from headprune_core.plans.plan import plan_jobs
    from headprune_core.runs.study import Study
    plan = replace(plan, tasks=("pos",), **restrict)
    return len(plan_jobs(Study(plan.model, progress=False), plan))
