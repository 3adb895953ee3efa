"""Where things live in the app, as docs/developing.md says: Streamlit caches in cached.py (the uploaded-corpus
preview aside), and no st.cache_resource (Streamlit's clear_cache message would empty it)."""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "headprune_app"


def _streamlit_caches(path: Path) -> list[str]:
    """The ``st.cache_*`` decorators and calls in one module (docstrings and comments aside)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("cache_") and \
                isinstance(node.value, ast.Name) and node.value.id == "st":
            found.append(node.attr)
    return found


def test_streamlit_caches_live_in_cached_py_and_none_is_a_cache_resource():
    where = {p.relative_to(APP).as_posix(): _streamlit_caches(p) for p in APP.rglob("*.py")}
    where = {k: v for k, v in where.items() if v}
    assert set(where) == {"cached.py", "add_data_view.py"}, where
    assert all(kind == "cache_data" for kinds in where.values() for kind in kinds), where
    assert where["add_data_view.py"] == ["cache_data"]

