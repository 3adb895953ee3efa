"""headprune_app.resident: one value per key for the whole server, built once under concurrent callers, kept
through Streamlit's cache clearing (the clear_cache message), least recently used out first."""

import threading
import time

import pytest
import streamlit as st

from headprune_app.resident import resident


def test_one_build_per_key_even_when_sessions_ask_at_once():
    calls = []

    @resident()
    def build(key):
        calls.append(key)
        time.sleep(0.2)  # long enough that every thread asks while the first builds
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(build("m"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["m"] and len({id(g) for g in got}) == 1
    assert build("other") is not got[0] and calls == ["m", "other"]


def test_clearing_streamlits_caches_keeps_what_is_resident():
    @resident()
    def kept(key):
        return object()

    @st.cache_resource
    def streamlit_kept(key):
        return object()

    a, b = kept("x"), streamlit_kept("x")
    st.cache_resource.clear()  # what the server does on a clear_cache message
    st.cache_data.clear()
    assert kept("x") is a
    assert streamlit_kept("x") is not b  # the control: Streamlit's own cache was emptied


def test_least_recently_used_leaves_first_and_a_failed_build_is_retried():
    tries = []

    @resident(max_entries=2)
    def build(key):
        tries.append(key)
        if key == "bad" and tries.count("bad") == 1:
            raise RuntimeError("first try fails")
        return [key]

    one, two = build(1), build(2)
    assert build(1) is one  # 1 is now the most recent
    build(3)  # pushes out 2, the least recently used
    assert list(k[0][0] for k in build.kept) == [1, 3]
    assert build(2) is not two
    with pytest.raises(RuntimeError, match="first try fails"):
        build("bad")
    assert build("bad") == ["bad"] and tries.count("bad") == 2
