"""Where a page's main figure starts on the first screen (issue 46): the first chart or table of the page's main
area (a collapsed "About this view", the sidebar and popovers left out), as a projector shows it."""

from __future__ import annotations

FIGURE = ('[data-testid="stPlotlyChart"], [data-testid="stDataFrame"], [data-testid="stTable"], '
          '[data-testid="stMarkdownContainer"] table')
# pages whose view is a form or a list, not a chart or a table: their first control or step
MAIN = {"add_data": '[data-testid="stFileUploader"], ' + FIGURE,
        "lessons": '[class*="st-key-lesson_step_"]'}  # the lesson's steps
MIN_VISIBLE = 300  # px of the figure on the first screen (all of it when it is shorter)

_JS = """(sel) => {
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const ok = e => e.getBoundingClientRect().height > 0 && !e.closest('[data-testid="stSidebar"]')
    && !e.closest('[data-testid="stPopoverBody"]') && !e.closest('[data-testid="stVerticalBlockBorderWrapper"]'
    + '[data-lesson-bar]');
  const els = [...main.querySelectorAll(sel)].filter(ok);
  if (!els.length) return null;
  const r = els[0].getBoundingClientRect();
  return {top: Math.round(r.top), height: Math.round(r.height), what: els[0].dataset.testid || els[0].tagName};
}"""


def first_figure(page, name: str) -> dict | None:
    """The page's main figure on the first screen: its top (px from the window's top), height, visible part and
    kind; None when the page shows none."""
    page.evaluate("() => { for (const e of document.querySelectorAll('*')) if (e.scrollTop) e.scrollTop = 0; }")
    got = page.evaluate(_JS, MAIN.get(name, FIGURE))
    if got is None:
        return None
    height = page.viewport_size["height"]
    got["visible"] = max(0, min(got["height"], height - got["top"]))
    got["ok"] = got["top"] >= 0 and got["visible"] >= min(MIN_VISIBLE, got["height"])
    return got
