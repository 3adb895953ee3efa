"""Where a page's main figure starts on the first screen (issue 46): the first chart or table of the page's main
area (the sidebar and popovers left out), as a projector shows it.

``python -m tests.helpers.layout --cache DIR`` measures every page in presentation mode and every step of the
shipped lesson (presenting, and as a plain step) at 1280 x 720 and 1920 x 1080 on a cache, one line each."""

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
    && !e.closest('[data-testid="stPopoverBody"]');
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


def views(url: str, lesson: str, steps, *, plain: bool = True, skip=()) -> list[tuple[str, str, str, str]]:
    """(name, page, address, text to wait for) of each view measured: every page in presentation mode, every step
    of ``lesson`` presenting and (``plain``) as a plain step; pages in ``skip`` left out."""
    from tests.helpers import browser
    out = [(f"{name} presenting", name, f"{url}/{path}?present=true", "") for name, path in browser.PAGES.items()
           if name not in skip]
    for k, s in enumerate(steps, 1):
        if s.page in skip:
            continue
        link = f"{url}/?lesson={lesson}&step={k}"
        out.append((f"step {k} presenting", s.page, f"{link}&present=true", f"step {k} of {len(steps)}"))
        if plain:
            out.append((f"step {k}", s.page, link, f"step {k} of {len(steps)}"))
    return out


def measure(page, address: str, page_name: str, wait: str) -> dict | None:
    """Open ``address`` in ``page`` (its step's line shown, when ``wait`` names it) and measure its figure."""
    from tests.helpers import browser
    page.goto(address, wait_until="domcontentloaded")
    page.wait_for_selector("h1", timeout=180_000)
    if wait:
        page.wait_for_function("w => document.body.innerText.includes(w)", arg=wait, timeout=180_000)
    browser.wait_idle(page, 300_000)
    return first_figure(page, page_name)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from playwright.sync_api import sync_playwright

    from headprune_core.plans.lessons import available
    from tests.helpers import browser
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True)
    ap.add_argument("--lesson", default="attention-heads-across-languages")
    args = ap.parse_args(argv)
    steps = available()[0][args.lesson].steps
    bad = 0
    with browser.streamlit_server(args.cache, timeout=180) as url, sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, args=browser.CHROMIUM_ARGS, headless=True)
        for width, height in ((1280, 720), (1920, 1080)):
            page = chromium.new_context(viewport={"width": width, "height": height}).new_page()
            for name, page_name, address, wait in views(url, args.lesson, steps):
                got = measure(page, address, page_name, wait)
                bad += not (got or {}).get("ok")
                print(f"{width}x{height} {name:24s} {got}", flush=True)
            page.context.close()
        chromium.close()
    print(f"{bad} view(s) without {MIN_VISIBLE} px of their figure on the first screen")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
