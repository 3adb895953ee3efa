"""One self-contained HTML page around figures: the house style, tables, and the page itself with plotly.js
inline and a script that draws each figure into its ``<div class="chart">``, so it opens from disk with no
server and no network. The report and the handout are written with it.

>>> page = document("A title", ["<p>text</p>"], {})
>>> page.startswith("<!DOCTYPE html>") and "<script>" not in page  # no figure: no plotly.js either
True
"""

from __future__ import annotations

import html
from datetime import datetime
from typing import TYPE_CHECKING

from headprune_core.figures.embed import figures_script, plotly_js
from headprune_core.findings.report import cell_text

if TYPE_CHECKING:  # only a hint: the figures are drawn by headprune_core.figures, the one layer importing plotly
    import plotly.graph_objects as go

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1000px; margin: 2em auto;
       padding: 0 1em; color: #24292f; line-height: 1.45; }
h1 { font-size: 1.8em; } h2 { font-size: 1.25em; margin-top: 0; }
.card { border: 1px solid #d0d7de; border-radius: 8px; padding: 1em 1.2em; margin: 1.2em 0; }
.badge { color: white; border-radius: 1em; padding: 0.1em 0.7em; font-size: 0.8em; vertical-align: middle; }
.note, .missing { color: #57606a; font-size: 0.95em; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.6em 0; }
th, td { border: 1px solid #d0d7de; padding: 0.25em 0.6em; text-align: left; }
th { background: #f6f8fa; }
.chart { width: 100%; min-height: 260px; }
"""


def esc(text) -> str:
    """``text`` (anything) as HTML text: markup in it is shown, never read."""
    return html.escape(str(text))


def chart_div(figure_id: str) -> str:
    """The element a figure of :func:`document` is drawn into."""
    return f'<div class="chart" id="{figure_id}"></div>'


def table_html(rows: list[dict], *, link: str = "") -> str:
    """A table; with ``link``, that column's cells link to ``#card-<value>``."""
    if not rows:
        return ""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)

    def td(r, c):
        text = esc(cell_text(r.get(c, "")))
        return f'<td><a href="#card-{text}">{text}</a></td>' if c == link else f"<td>{text}</td>"

    body = "".join("<tr>" + "".join(td(r, c) for c in cols) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def written(created: datetime) -> str:
    """When and by what a page was written, for its first lines."""
    return f"Written {created:%Y-%m-%d %H:%M} UTC by headprune"


def document(title: str, body: list[str], figures: dict[str, go.Figure]) -> str:
    """The page: ``body``'s HTML parts in order, each figure drawn into the element of its id (see
    :func:`chart_div`); plotly.js is inline only when there is a figure."""
    head = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{esc(title)}</title>"
            f"<style>{STYLE}</style>")
    if figures:
        head += f"<script>{plotly_js()}</script>"
    script = f"\n<script>{figures_script(figures)}</script>" if figures else ""
    return head + "</head><body>\n" + "\n".join(body) + script + "\n</body></html>\n"
