"""Links that reopen a view. Every choice of the sidebar and of the pages is a widget bound to the URL
(Streamlit's ``bind="query-params"``: the widget's key is the parameter's name, a value equal to the default is
left out), so the address bar always holds the view and opening it in a new browser restores it.

A link's parameter that this server cannot honour (an unknown task, k above the head count, a plan that is
gone) falls back to the widget's default, and the page says so at the top; nothing raises. ``share`` offers the
link with a copy button.

Choices shown with a label (a task's description, a language's name, a percentage) are bound by their *value*
instead (:func:`selectbox`, :func:`multiselect`, :func:`select_slider` here): Streamlit's own binding would write
the label into the URL, so ``task=name`` would not open and a reworded label would break every shared link.
A link in the older label form is still read (the label is mapped to its value).
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from headprune_core.base.text import md_code, md_text

SNAPSHOT = "_link_params"  # the parameters the session was opened with
PENDING = "_link_pending"  # set until the first run has checked them
NOTES = "_link_notes"
REFUSED = "_link_refused"  # parameters this session may not use, with the reason (class mode)
SEEN = "_link_seen"  # per value-bound choice: the URL's text it last read or wrote
APPLIED = "_link_applied"  # value-bound choices set from the link (a label mapped to its value counts)
IGNORED = {"present", "lesson", "step", "unlock", "follow", "presenter"}  # applied by the frame


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
    applied = ss.get(APPLIED, set())
    for key, asked in ss.get(SNAPSHOT, {}).items():
        if key in applied:
            continue
        if key in refused:
            notes.append(f"The link's **{md_text(key)}** = {md_code(', '.join(asked) or '(empty)')} was not used: "
                         f"{refused[key]}.")
            continue
        if key in IGNORED or key.startswith("_") or st.query_params.get_all(key) == asked:
            continue  # applied as given (a bound widget keeps a valid value in the URL)
        shown = md_code(", ".join(asked) or "(empty)")
        if key not in ss:
            notes.append(f"The link's **{md_text(key)}** = {shown} was not used: this page has no such choice here "
                         "(its results may be missing).")
        elif not _same(asked, ss[key]):
            notes.append(f"The link's **{md_text(key)}** = {shown} is not available here (unknown, out of range or "
                         f"gone): showing the default, {md_code(', '.join(_text(ss[key])) or '(none)')}.")
    ss[NOTES] = notes
    return notes


def _texts(value, multi: bool) -> list[str]:
    return [_value_text(v) for v in value] if multi else [_value_text(value)]


def _value_text(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _seed(key: str, options: list, format_func, multi: bool) -> None:
    """Before the widget: when the URL's value for ``key`` is new to this session (a link just opened), put the
    option it names (by value, or by its label in an older link) into the widget's state."""
    ss = st.session_state
    raw = st.query_params.get_all(key)
    seen = ss.setdefault(SEEN, {})
    if not raw or seen.get(key) == raw:
        return
    seen[key] = raw
    by_text: dict[str, object] = {}
    for option in options:
        for text in (_value_text(option), str(format_func(option))):
            by_text.setdefault(text.strip().lower(), option)
    picked = [by_text[r.strip().lower()] for r in raw if r.strip().lower() in by_text]
    if multi and picked:
        ss[key] = list(dict.fromkeys(picked))
    elif not multi and len(raw) == 1 and picked:
        ss[key] = picked[0]
    else:
        return  # nothing usable: the widget keeps its value, and the link's notes say so
    ss.setdefault(APPLIED, set()).add(key)


def forget(key: str) -> None:
    """Read ``key`` from the URL again on the next run, even if it holds the text this session last saw (a
    lesson's step sets its choices through the URL)."""
    st.session_state.get(SEEN, {}).pop(key, None)


def _write(key: str, value, default, multi: bool) -> None:
    """After the widget: its value (never its label) in the URL, or no parameter when it is the default."""
    texts = _texts(value, multi)
    if texts == _texts(default, multi):
        if key in st.query_params:
            del st.query_params[key]
    elif st.query_params.get_all(key) != texts:
        st.query_params[key] = texts if multi else texts[0]
    st.session_state.setdefault(SEEN, {})[key] = st.query_params.get_all(key)


def _bound(widget, label: str, options, *, key: str, default, multi: bool, seed_arg: str, format_func=str,
           **kwargs):
    options = list(options)
    _seed(key, options, format_func, multi)
    if key not in st.session_state and (multi or default in options):  # else the session's (or link's) value
        kwargs[seed_arg] = options.index(default) if seed_arg == "index" else default
    value = widget(label, options, format_func=format_func, key=key, **kwargs)
    _write(key, value, default, multi)
    return value


def selectbox(label: str, options, *, key: str, index: int = 0, where=None, **kwargs):
    """``st.selectbox`` bound to the URL by the chosen option's value (``where``: a column or container)."""
    options = list(options)
    default = options[index] if options else None
    return _bound((where or st).selectbox, label, options, key=key, default=default, multi=False,
                  seed_arg="index", **kwargs)


def radio(label: str, options, *, key: str, index: int = 0, where=None, **kwargs):
    """``st.radio`` bound to the URL by the chosen option's value."""
    options = list(options)
    return _bound((where or st).radio, label, options, key=key, default=options[index], multi=False,
                  seed_arg="index", **kwargs)


def multiselect(label: str, options, *, key: str, default=(), where=None, **kwargs):
    """``st.multiselect`` bound to the URL by the chosen options' values (one parameter per option)."""
    return _bound((where or st).multiselect, label, options, key=key, default=list(default), multi=True,
                  seed_arg="default", **kwargs)


def select_slider(label: str, options, *, key: str, value, where=None, **kwargs):
    """``st.select_slider`` bound to the URL by the chosen option's value (``0.5``, not ``50%``)."""
    return _bound((where or st).select_slider, label, options, key=key, default=value, multi=False,
                  seed_arg="value", **kwargs)


def refuse(key: str, why: str) -> None:
    """Drop the link's parameter ``key`` (nothing reads it) and say ``why`` in the link's notes."""
    if key in st.query_params:
        del st.query_params[key]
    st.session_state.setdefault(REFUSED, {})[key] = why


def query() -> str:
    """This view's choices as its link carries them (every bound choice that differs from its default)."""
    return urlencode([(k, v) for k in st.query_params for v in st.query_params.get_all(k)])


def link() -> str:
    """The URL of this view: this page's address with every bound choice that differs from its default."""
    base = (st.context.url or "").split("?")[0]
    return f"{base}?{query()}" if query() else base or "?"


def top(where, menu=None) -> None:
    """In ``where`` (a container at the top of the page): the notes about the link the session was opened with,
    and a button that shows this view's link with a copy icon (or, given a ``menu``, the link in it: a focused
    page keeps its first screen for the figure)."""
    notes = check()
    with where:
        for note in notes:
            st.warning(note, icon=":material/link_off:")
        if notes and st.button("Dismiss", key="dismiss_link_notes"):
            st.session_state[NOTES] = []
            st.rerun()
        with menu if menu is not None else st.popover("Copy link", icon=":material/link:"):
            st.caption("This view's link: it reopens the same page with the same choices (copy it with the "
                       "icon at the right).")
            st.code(link(), language=None, wrap_lines=True)
