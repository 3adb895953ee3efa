"""Ending a page early while the frame still closes the run.

``st.stop()`` ends the whole script run: once it is called, every later Streamlit call of that run (even in a
``finally``) raises again, so the frame's closing parts (the link bar, Add to a lesson, the page log of
:mod:`headprune_app.timing`) were never drawn on a page that stopped. A page that has drawn all it can (a result is
missing, a choice is invalid, the queue refused) calls :func:`end_page` instead. Inside :func:`framed` (``app.py``
runs each page in it) that ends the page and the frame goes on with its closing parts; a page run on its own (an
AppTest of one page file) is stopped as before. Not for a fragment's body (Streamlit shows an exception raised
there): those keep ``st.stop()``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NoReturn

_FRAMED: ContextVar[bool] = ContextVar("headprune_page_framed", default=False)


class PageEnd(Exception):  # noqa: N818 (a signal, not an error)
    """The page has drawn all it can; the frame ends the run normally."""


@contextmanager
def framed() -> Iterator[None]:
    """Run a page: an :func:`end_page` inside ends the page here, not the script run."""
    token = _FRAMED.set(True)
    try:
        yield
    except PageEnd:
        pass
    finally:
        _FRAMED.reset(token)


def end_page() -> NoReturn:
    """End the page here: the frame (:func:`framed`) draws its closing parts; outside a frame, ``st.stop()``."""
    if _FRAMED.get():
        raise PageEnd
    import streamlit as st

    st.stop()
    raise AssertionError("st.stop() returned")  # it raises; this line tells type checkers so
