"""Links that reopen a view. Every choice of the sidebar and of the pages is a widget bound to the URL
(Streamlit's ``bind="query-params"``: the widget's key is the parameter's name, a value equal to the default is
left out), so the address bar always holds the view and opening it in a new browser restores it.

A link's parameter that this server cannot honour (an unknown task, k above the head count, a plan that is
gone) falls back to the widget's default, and the page says so at the top; nothing raises. ``share`` offers the
link with a copy button.
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

SNAPSHOT = "_link_params"  # the parameters the session was opened with
PENDING = "_link_pending"  # set until the first run has checked them
NOTES = "_link_notes"
REFUSED = "_link_refused"  # parameters this session may not use, with the reason (class mode)
IGNORED = {"present"}  # presentation mode: applied by the frame, not a view choice


def remember() -> None:
    """Keep the parameters of the URL a session was opened with (once per session)."""
    ss = st.session_state
    if SNAPSHOT not in ss:
        ss[SNAPSHOT] = {k: st.query_params.get_all(k) for k in st.query_params}
        ss[PENDING] = True


def _text(value) -> list[str]:
    if isinstance(value, (list, tuple)) and not (len(value) == 2 and all(isinstance(v, int) for v in value)):
        return [str(v) for v in value]
    return [str(value)]


def _same(asked: list[str], value) -> bool:
    """Whether a widget's value is what the link asked for (numbers numerically, words in any case)."""
    got = _text(value)
    if len(got) != len(asked):
        return False
    for a, g in zip(asked, got):
        try:
            if float(a) == float(g):
                continue
        except ValueError:
            pass
        if a.strip().lower() != g.strip().lower():
            return False
    return True


def check() -> list[str]:
    """After the first run of a session opened from a link: a note for each parameter that was not applied as
    given (dropped because it is unknown or out of range here, or for a widget this page did not draw)."""
    ss = st.session_state
    if not ss.pop(PENDING, False):
        return ss.get(NOTES, [])
    notes = []
    refused = ss.get(REFUSED, {})
    for key, asked in ss.get(SNAPSHOT, {}).items():
        if key in refused:
            notes.append(f"The link's **{key}** = `{', '.join(asked) or '(empty)'}` was not used: {refused[key]}.")
            continue
        if key in IGNORED or key.startswith("_") or st.query_params.get_all(key) == asked:
            continue  # applied as given (a bound widget keeps a valid value in the URL)
        shown = ", ".join(asked) or "(empty)"
        if key not in ss:
            notes.append(f"The link's **{key}** = `{shown}` was not used: this page has no such choice here (its "
                         "results may be missing).")
        elif not _same(asked, ss[key]):
            notes.append(f"The link's **{key}** = `{shown}` is not available here (unknown, out of range or gone): "
                         f"showing the default, `{', '.join(_text(ss[key])) or '(none)'}`.")
    ss[NOTES] = notes
    return notes


def refuse(key: str, why: str) -> None:
    """Drop the link's parameter ``key`` (nothing reads it) and say ``why`` in the link's notes."""
    if key in st.query_params:
        del st.query_params[key]
    st.session_state.setdefault(REFUSED, {})[key] = why


def link() -> str:
    """The URL of this view: this page's address with every bound choice that differs from its default."""
    pairs = [(k, v) for k in st.query_params for v in st.query_params.get_all(k)]
    base = (st.context.url or "").split("?")[0]
    return f"{base}?{urlencode(pairs)}" if pairs else base or "?"


def top(where) -> None:
    """In ``where`` (a container at the top of the page): the notes about the link the session was opened with,
    and a button that shows this view's link with a copy icon."""
    notes = check()
    with where:
        for note in notes:
            st.warning(note, icon=":material/link_off:")
        if notes and st.button("Dismiss", key="dismiss_link_notes"):
            st.session_state[NOTES] = []
            st.rerun()
        with st.popover("Copy link", icon=":material/link:"):
            st.caption("This view's link: it reopens the same page with the same choices (copy it with the "
                       "icon at the right).")
            st.code(link(), language=None, wrap_lines=True)
