"""Two browser sessions at once, each with its own mask on the one shared model: each sees its own heads.

Each setting is first run alone (in a session of its own, on a fresh copy of the cache, so the evaluation is
computed), then both at the same time in two sessions of one server process (another fresh copy, so both
compute while the other is running). The numbers must be the same.
"""

from __future__ import annotations

import shutil
import threading

from tests.helpers.app import make_app, metric_value, run_page

SETTINGS = [("importance", 9), ("reverse", 9)]  # 99.57 vs 98.72 on the fixture


def _fresh_copy(fixture_cache, path):
    for part in ("runs", "plans", "corpora"):
        shutil.copytree(fixture_cache["root"] / part, path / part)
    return path


def _drive(at, strategy: str, k: int) -> float:
    run_page(at, "prune")
    at.selectbox(key="strategy").set_value(strategy).run()
    at.slider(key="k").set_value(k).run()
    assert not at.exception, [e.value for e in at.exception]
    return metric_value(at, f"accuracy, {k} of")


def test_two_sessions_with_different_masks_at_once(fixture_cache, tmp_path, monkeypatch):
    alone = []
    for i, (strategy, k) in enumerate(SETTINGS):
        at = make_app(_fresh_copy(fixture_cache, tmp_path / f"alone{i}"), monkeypatch)
        at.run()
        alone.append(_drive(at, strategy, k))
    assert alone[0] != alone[1]  # the two masks do give different results

    shared = _fresh_copy(fixture_cache, tmp_path / "shared")
    apps = [make_app(shared, monkeypatch) for _ in SETTINGS]
    for at in apps:
        at.run()
    together: dict[int, float] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(apps))

    def session(i: int) -> None:
        try:
            start.wait(60)
            together[i] = _drive(apps[i], *SETTINGS[i])
        except BaseException as err:  # reported below, with the thread's error
            errors.append(err)

    threads = [threading.Thread(target=session, args=(i,)) for i in range(len(apps))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors, errors
    assert [together[i] for i in range(len(apps))] == alone
