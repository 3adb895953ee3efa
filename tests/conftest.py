"""Shared fixtures: every RNG seeded, tiny random encoders of each supported family."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # two pytest-xdist workers on two cores: one torch thread each, or they fight over the cores (the fast tier
    # took 581 s with two threads per worker, 78 s with one, 120 s in one process)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")

import torch  # noqa: E402 (after the thread settings above)

if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def _seed_everything():
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    yield


@pytest.fixture(scope="module")
def tiny_cache(tmp_path_factory):
    """Per test module: a cache folder with a tiny random BERT (real tokenizer) and generated en/de POS and NAME
    corpora in the embedded format. Yields ``(root, model_path)``; tests set HEADPRUNE_CACHE to ``root``."""
    from tests.helpers.fixture_cache import write_corpora, write_model

    root = tmp_path_factory.mktemp("tiny_cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("HEADPRUNE_CACHE", str(root))
    write_corpora(("en", "de"))
    model = write_model(root / "models" / "tiny-bert")
    yield root, str(model)
    mp.undo()


@pytest.fixture(scope="session")
def fixture_cache(tmp_path_factory) -> dict:
    """A complete fixture cache (model, corpora, plan, all results), built once per session through the real
    pipeline and shared by the dashboard tests and the quick bench. Tests only add evaluations under new masks
    to it (as the app does); use ``cache_copy`` (tests/app) to delete or break entries."""
    from tests.helpers.fixture_cache import build_fixture_cache

    return build_fixture_cache(tmp_path_factory.mktemp("hp-fixture"))


CI_KINDS = ("parallel", "beside", "alone")
"""How CI runs a slow or browser test beside others (pytest.ini, scripts/test.sh): at most one of these marks."""


def pytest_collection_modifyitems(config, items):
    """A test marked with one of :data:`CI_KINDS` must be slow or browser (else the fast tier runs it too) and
    carry one of them at most (else two phases run it, or, with the phases' selections, none): a mistake in the
    marks fails the collection, naming the tests, rather than leaving a test out of CI."""
    wrong = []
    for item in items:
        kinds = [k for k in CI_KINDS if item.get_closest_marker(k)]
        if kinds and (len(kinds) > 1 or not (item.get_closest_marker("slow") or item.get_closest_marker("browser"))):
            wrong.append(f"{item.nodeid} ({', '.join(kinds)})")
    if wrong:
        raise pytest.UsageError("marked for a CI phase but not slow or browser, or for two phases: "
                                + "; ".join(wrong))
