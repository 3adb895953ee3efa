"""Figures for slides: every chart of the dashboard can be downloaded as PNG (1600 px wide) and SVG with its title,
axis labels and caption baked in, through Plotly's static export (kaleido, which drives a local Chromium: the one
``scripts/install.sh --browser`` installs, or any Chrome it finds; ``BROWSER_PATH`` names another). The images
are made only when a button is clicked.

Presentation mode (``?present=true`` or the sidebar's toggle) hides the sidebar and enlarges fonts, for a
projector.

The figures themselves are built by :mod:`headprune_core.figures` (the views, the report, the handout and a
notebook draw the same ones); this module is the Streamlit side: drawing them, their export buttons, and the
clicks on the mask grid.
"""

from __future__ import annotations

import copy
import functools
import re
import textwrap
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from headprune_app import exports
from headprune_core.base.files import safe_filename

WIDTH = 1600  # px of a downloaded PNG (and of the SVG's canvas)
FORMATS = {"png": "image/png", "svg": "image/svg+xml"}
CAPTION_CHARS = 150  # a caption line at 16 px across 1600 px
PRESENT_KEY = "present"
PNG_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def png_config(filename: str) -> dict:
    """``st.plotly_chart`` config whose camera button saves a PNG named ``filename``."""
    return {**PNG_CONFIG, "toImageButtonOptions": {**PNG_CONFIG["toImageButtonOptions"], "filename": filename}}


def clicked_heads(selection) -> list[tuple[int, int]]:
    """(layer, head) of the points in a ``st.plotly_chart`` selection state (empty if none)."""
    try:
        points = selection["selection"]["points"]
    except (KeyError, TypeError):
        return []
    out = []
    for p in points or []:
        try:
            data = p.get("customdata")
            if isinstance(data, dict):  # Streamlit sends array customdata as {"0": layer, "1": head}
                data = [data[k] for k in sorted(data, key=lambda k: int(k))]
            if data is not None and len(data) >= 2:
                out.append((int(data[0]), int(data[1])))
            elif "x" in p and "y" in p:
                out.append((int(round(p["y"])), int(round(p["x"]))))
        except (TypeError, ValueError, KeyError, AttributeError):
            continue  # a point we cannot read is ignored, never a traceback
    return out


def toggle(mask: np.ndarray, heads: Sequence[tuple[int, int]]) -> np.ndarray:
    """A copy of ``mask`` with each (layer, head) flipped between kept (1) and pruned (0)."""
    out = np.array(mask, dtype=np.float32, copy=True)
    for layer, head in heads:
        out[layer, head] = 0.0 if out[layer, head] else 1.0
    return out


@functools.lru_cache(maxsize=1)
def export_problem() -> str | None:
    """Why charts cannot be exported as images here (None when they can): kaleido or a Chromium is missing."""
    try:
        import kaleido  # noqa: F401 -- here: only to know it is installed
        from choreographer.browsers.chromium import Chromium
    except ImportError:
        return "PNG/SVG export needs kaleido (pip install -r requirements.txt)"
    try:
        found = Chromium.find_browser(skip_local=False)
    except Exception:  # noqa: BLE001 -- any failure to look means none is usable
        found = None
    if not found:
        return ("PNG/SVG export needs Chromium or Chrome (bash scripts/install.sh --browser installs Debian's "
                "chromium; BROWSER_PATH names another)")
    return None


def _plain(text: str) -> str:
    """Markdown and HTML of a caption as plain text for an image."""
    text = re.sub(r"\*\*|__|`", "", str(text))
    text = re.sub(r":[a-z]+\[([^\]]*)\]", r"\1", text)  # Streamlit colour spans
    return re.sub(r"<[^>]+>", "", text).strip()


def slide_figure(fig: go.Figure, *, title: str, caption: str = "", width: int = WIDTH) -> go.Figure:
    """A copy of ``fig`` sized for a slide: its title (the figure's own, else ``title``) at the top, larger
    fonts, and ``caption`` wrapped under the plot (markdown stripped)."""
    out = go.Figure(copy.deepcopy(fig.to_dict()))
    own = out.layout.title.text if out.layout.title and out.layout.title.text else ""
    lines = textwrap.wrap(_plain(caption), CAPTION_CHARS) if caption else []
    height = int(max(600, (out.layout.height or 450) * 1.5))
    margin = out.layout.margin
    below = max(85, margin.b if margin and margin.b is not None else 0)  # tick labels and the x-axis title
    left = max(80, margin.l if margin and margin.l is not None else 0)  # the y-axis labels and title
    bottom = below + 20 + 24 * len(lines)
    out.update_layout(title={"text": own or _plain(title), "x": 0.01, "xanchor": "left", "font": {"size": 26}},
                      font={"size": 17}, width=width, height=height + 24 * len(lines),
                      margin={"t": max(90, (margin.t or 0) if margin else 0), "b": bottom, "l": left,
                              "r": max(40, margin.r if margin and margin.r is not None else 0)})
    if lines:
        out.add_annotation(text="<br>".join(lines), xref="paper", yref="paper", x=0, y=0, xanchor="left",
                           yanchor="top", yshift=-below, showarrow=False, align="left",
                           font={"size": 15, "color": "#444"})
    return out


def image(fig: go.Figure, fmt: str, *, title: str, caption: str = "") -> bytes:
    """``fig`` as a slide image (``png`` or ``svg``), ``WIDTH`` px wide, title and caption baked in."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown image format {fmt!r}; known: {', '.join(FORMATS)}")
    slide = slide_figure(fig, title=title, caption=caption)
    return slide.to_image(format=fmt, width=slide.layout.width, height=slide.layout.height, scale=1)


def presenting() -> bool:
    """Presentation mode: the toggle's state, or on a session's first run the link's ``present=true``."""
    if PRESENT_KEY in st.session_state:
        return bool(st.session_state[PRESENT_KEY])
    return st.query_params.get(PRESENT_KEY, "").lower() == "true"


def focused() -> bool:
    """Presentation mode, or a lesson's step: the view's main figure first, its prose folded away."""
    return presenting() or bool(st.query_params.get("lesson"))


def heading(title: str):
    """The page's title, and where its prose goes (the model caveat, language notes, what the view shows): under
    the title as it is, or, in presentation mode and in a lesson step, in the popover of an "About this view"
    button on the title's line, so the view's figure starts on a projector's first screen. A page may write more
    into it later (:func:`aside`)."""
    if not focused():
        st.title(title)
        return st.container()
    row = st.container(horizontal=True, vertical_alignment="center", gap="medium")
    row.title(title, width="content")
    return row.popover("About this view", icon=":material/info:")


def figure_first():
    """Two places, (for what usually comes first: counts, captions, what is missing; for the view's figure), in
    that order on the page, or the figure's first in presentation mode and in a lesson step."""
    first, second = st.container(), st.container()
    return (second, first) if focused() else (first, second)


def aside(about_box):
    """Where prose that sits between a view's controls and its figure goes: here, as it is, or (focused) into the
    page's "About this view" drawn earlier, so the figure keeps the first screen."""
    return about_box if focused() else st.container()


def show(fig: go.Figure, *, name: str, title: str, caption: str = "", key: str, show_caption: bool = True,
         **kwargs):
    """Draw ``fig`` (as ``st.plotly_chart``; its return value, e.g. a selection), its caption (unless
    ``show_caption`` is False: the page writes it once for several charts), and two buttons that download it
    for slides (PNG and SVG, made on click, the caption baked in either way)."""
    if presenting():
        fig = go.Figure(fig)  # a copy: the figure may be shared by every session (findings_view.chart)
        fig.update_layout(font={"size": 18})
    event = st.plotly_chart(fig, config=png_config(name), key=key, **kwargs)
    if caption and show_caption:
        st.caption(caption)
    problem = export_problem()
    if problem:
        st.caption(f":gray[{problem}.]")
        return event
    png, svg, _ = st.columns([1, 1, 4])
    for col, fmt in ((png, "png"), (svg, "svg")):
        build = functools.partial(image, fig, fmt, title=title, caption=caption)
        key_of = functools.partial(exports.build_key, fig.to_json, fmt, title, caption)
        col.download_button(fmt.upper(), exports.deferred(key_of, build),
                            file_name=safe_filename(f"{name}.{fmt}"), mime=FORMATS[fmt], on_click="ignore",
                            icon=":material/download:", key=f"{key}_{fmt}",
                            help=f"This chart for a slide: {WIDTH} px wide" + (" (vector)" if fmt == "svg" else "")
                                 + ", with its title and caption")
    return event


PRESENT_CSS = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
html, body, [data-testid="stAppViewContainer"] { font-size: 20px; }
[data-testid="stMarkdownContainer"] p, [data-testid="stCaptionContainer"] { font-size: 1.1rem; }
h1 { font-size: 2.6rem !important; }
</style>
"""


FOCUS_CSS = """
<style>
[data-testid="stMainBlockContainer"] { padding-top: 4rem; }
</style>
"""
MENU_KEY = "present_menu"  # presenting without a lesson: the menu's container, kept out of the page's flow
PRESENT_FOCUS_CSS = """
<style>
[data-testid="stAppHeader"] { display: none; }
[data-testid="stMainBlockContainer"] { padding-top: 1rem; }
h1 { font-size: 2.2rem !important; padding-top: 0.25rem !important; }
h3 { font-size: 1.5rem !important; padding: 0.25rem 0 0.25rem !important; }
[data-testid="stMain"] [data-testid="stVerticalBlock"] { gap: 0.75rem; }
.st-key-present_menu { position: fixed; top: 0.5rem; right: 1rem; z-index: 999990; width: auto !important; }
</style>
"""


def focus_css() -> None:
    """A lesson step or presentation mode: the page starts right under the top (Streamlit's header, with its
    menu, is hidden while presenting; the sidebar too), so the step's line and the view's figure come first."""
    st.html(PRESENT_FOCUS_CSS if presenting() else FOCUS_CSS)


def leave_presentation(where) -> None:
    """While presenting (the toggle on, or a link with ``?present=true`` opening), a button in ``where`` leaves:
    the sidebar with its toggle is hidden meanwhile. Called before the toggle is drawn, as it sets its state."""
    if presenting() and where.button("Leave presentation mode", icon=":material/close_fullscreen:",
                                     key="leave_present"):
        st.session_state[PRESENT_KEY] = False
        st.rerun()


def presentation_toggle() -> None:
    """The sidebar's toggle, bound to the URL (``present=true``); its CSS once it is on."""
    if st.toggle("Presentation mode", key=PRESENT_KEY, bind="query-params",
                 help="Larger fonts and no sidebar, for a projector (a link with ?present=true opens in it)."):
        st.markdown(PRESENT_CSS, unsafe_allow_html=True)
