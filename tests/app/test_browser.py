"""The real app in headless Chromium: load, move the slider, see the metric change, save screenshots."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import browser

ARTIFACTS = Path(os.environ.get("HEADPRUNE_ARTIFACTS", browser.REPO / "artifacts")) / "browser"

pytestmark = browser.browser_marks()


@pytest.fixture(scope="module")
def server(fixture_cache):
    pytest.importorskip("playwright", reason="playwright is not installed (pip install playwright==1.65.2)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with browser.streamlit_server(fixture_cache["root"], log=ARTIFACTS / "streamlit.log") as url:
        yield url


def test_slider_changes_the_metric_in_a_real_browser(server):
    with browser.browser_page() as page:
        browser.open_page(page, server, "home")
        assert "headprune" in page.locator("h1").first.inner_text()
        browser.goto_nav(page, "prune")
        assert page.locator('[data-testid="stException"]').count() == 0
        browser.move_slider(page, "Home")  # k = 0: the unpruned model
        unpruned = browser.metric_text(page)
        assert unpruned == browser.metric_text(page, 1)
        k, seconds = browser.timed_slider_press(page, "End", 12)  # k = every head: a new evaluation
        (ARTIFACTS / "slider_timing.json").write_text(json.dumps(
            {"what": "key press to the new metric on screen, fixture model (3x4 heads)", "k": k,
             "seconds": seconds}))
        pruned = browser.metric_text(page)
        assert k == 12 and seconds > 0  # the time is the benchmark's to judge (bench demo), not the test's
        assert pruned != unpruned
        assert "12 of 12 heads pruned" in page.locator('[data-testid="stMetric"]').first.inner_text()
        browser.full_screenshot(page, ARTIFACTS / "prune_all_heads.png")
        assert page.locator('[data-testid="stException"]').count() == 0


def test_clicking_a_head_toggles_it(server):
    with browser.browser_page() as page:
        browser.open_page(page, server, "prune")
        assert "0 of 12 heads pruned" in page.locator('[data-testid="stMetric"]').first.inner_text()
        browser.click_head(page, 1, 2, (3, 4))  # prune layer 1, head 2 by hand
        page.wait_for_function("() => document.body.innerText.includes('1 of 12 heads pruned')", timeout=60_000)
        assert "L1H2" in page.locator('[data-testid="stMultiSelect"]').last.inner_text()
        assert "Mask: 1 chosen by hand." in page.locator("body").inner_text()  # the strategy became custom
        browser.click_head(page, 1, 2, (3, 4))  # and back
        page.wait_for_function("() => document.body.innerText.includes('0 of 12 heads pruned')", timeout=60_000)
        assert page.locator('[data-testid="stException"]').count() == 0


def test_every_page_renders_in_a_real_browser(server):
    boxes: dict[str, list[str]] = {}
    times = browser.tour(server, ARTIFACTS, rounds=1, exceptions=boxes)
    assert set(times) == set(browser.PAGES) == set(boxes)
    assert {name: found for name, found in boxes.items() if found} == {}  # no page shows an exception
    for name in browser.PAGES:
        assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000


def test_upload_a_conll_file_and_see_its_heatmap(cache_copy):
    """A user's own CoNLL file, uploaded in the browser, registered, fine-tuned and scored: its heatmap appears."""
    from tests.helpers.own_data import token_files
    pytest.importorskip("playwright", reason="playwright is not installed (pip install playwright==1.65.2)")
    conll = token_files(cache_copy.parent / "upload", "conll", three=False)[0]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with browser.streamlit_server(cache_copy, log=ARTIFACTS / "streamlit-upload.log") as url, \
            browser.browser_page() as page:
        browser.open_page(page, url, "add_data")
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(conll))
        page.wait_for_function("() => document.body.innerText.includes('First sentences')", timeout=120_000)
        browser.wait_idle(page)
        page.get_by_role("textbox", name="Task name").first.fill("mytags")
        page.get_by_role("textbox", name="Language code").fill("sw")
        page.get_by_role("textbox", name="Language code").press("Enter")
        browser.wait_idle(page)
        page.get_by_role("button", name="Register").click()
        page.wait_for_function("() => document.body.innerText.includes('Registered mytags/sw')", timeout=60_000)
        browser.wait_idle(page)
        page.get_by_role("button", name="Compute 1 missing result(s)").click()
        page.wait_for_selector('[data-testid="stPlotlyChart"]', timeout=300_000)
        browser.wait_idle(page)
        assert page.locator('[data-testid="stException"]').count() == 0
        assert "Head importance on mytags/sw" in page.locator("body").inner_text()
        browser.full_screenshot(page, ARTIFACTS / "add_data.png")


def test_findings_page_in_a_real_browser(server):
    """The Findings page in Chromium: every card with its hypothesis and verdict badge, all offered with an
    estimate and a compute button (the click itself is tested with AppTest: in the browser it would retrain the
    fixture model dozens of times)."""
    from headprune_core.findings.hypotheses import HYPOTHESES
    with browser.browser_page() as page:
        browser.open_page(page, server, "findings")
        body = page.locator("body").inner_text()
        assert all(f"({h.id}) {h.title}" in body for h in HYPOTHESES), body[:2000]
        assert "Hypothesis." in body and "Statistic." in body and "Control." in body
        assert page.locator('[data-testid="stException"]').count() == 0
        # it opens with one table, a row per card, each card's id a link to its card
        rows = page.locator('[data-testid="stMarkdown"] table tbody tr').all_inner_texts()
        assert len(rows) == len(HYPOTHESES) and all("not computed yet" in r for r in rows), rows
        assert page.locator('[data-testid="stMarkdown"] table a[href="#card-a1"]').count() == 1
        assert page.get_by_role("button", name="Compute the findings").count() == 1
        browser.full_screenshot(page, ARTIFACTS / "findings_offered.png")
        with page.expect_download() as download:  # the report to hand out, as the page's button gives it
            page.get_by_role("button", name="Download the report (HTML)").click()
        saved = ARTIFACTS / "findings-report-page.html"
        download.value.save_as(saved)
        text = saved.read_text()
        assert download.value.suggested_filename.endswith(".html") and text.startswith("<!DOCTYPE html>")
        assert all(f'id="card-{h.id}" data-verdict="not computed yet"' in text for h in HYPOTHESES)


def test_findings_report_opens_from_disk_offline(tmp_path):
    """The HTML report opened from a file with every network request refused: each card is there, each card with
    results draws its interactive chart, and the page's chart of every card opens it (plotly.js travels inside the
    file)."""
    pytest.importorskip("playwright", reason="playwright is not installed (pip install playwright==1.65.2)")
    from headprune_core.reports.report import write_report
    from tests.helpers.findings_cards import constructed_cards

    cards = constructed_cards()
    out = write_report(cards, tmp_path / "findings.html", fmt="html", title="Findings (test)")
    ready = "document.querySelectorAll('.chart .main-svg').length > 0"
    with browser.offline_page(out, ready) as (page, errors, requests):
        drawn = page.locator(".chart.js-plotly-plot").count()
        overview = page.locator("#chart-page.js-plotly-plot").count()
        ids = page.locator("section.card").evaluate_all("els => els.map(e => e.id)")
        text = page.locator("body").inner_text()
        page.screenshot(path=str(ARTIFACTS / "findings-report.png"), full_page=False)
    assert not errors and all(u.startswith("file://") for u in requests), (errors, requests)
    assert ids == [f"card-{c.key}" for c in cards]
    # one chart per card with results, and the page's chart of every card at the top
    assert overview == 1 and drawn == sum(1 for c in cards if c.estimates) + 1 == len(cards)
    assert all(f"({c.key}) {c.title}" in text for c in cards) and "Not computed yet" in text


def test_a_chart_downloads_as_a_slide_png_and_svg(server):
    """Under the head importance map, the PNG and SVG buttons give the chart for a slide: 1600 px wide, with its
    title and caption."""
    import struct

    from headprune_app import figures

    if figures.export_problem():
        pytest.skip(figures.export_problem())
    with browser.browser_page() as page:
        browser.open_page(page, server, "importance")
        got = {}
        for fmt in ("PNG", "SVG"):
            with page.expect_download(timeout=120_000) as download:
                page.get_by_role("button", name=fmt, exact=True).first.click()
            saved = ARTIFACTS / f"slide.{fmt.lower()}"
            download.value.save_as(saved)
            got[fmt] = saved.read_bytes()
            assert download.value.suggested_filename.startswith("importance_") and \
                download.value.suggested_filename.endswith(f".{fmt.lower()}")
    png = got["PNG"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24])[0] == 1600
    svg = got["SVG"].decode()
    assert svg.startswith("<svg") and 'width="1600"' in svg and "Head importance" in svg and "layer 0" in svg


def test_presentation_mode_hides_the_sidebar_and_can_be_left(server):
    with browser.browser_page() as page:
        page.goto(f"{server}/importance?present=true", wait_until="domcontentloaded")
        page.wait_for_selector("h1", timeout=180_000)
        browser.wait_idle(page, 180_000)
        assert not page.locator('[data-testid="stSidebar"]').first.is_visible()
        assert page.locator('[data-testid="stException"]').count() == 0
        page.locator(".st-key-present_menu button").first.click()  # the menu at the top right corner
        page.get_by_role("button", name="Leave presentation mode").click()
        page.wait_for_function("() => !location.search.includes('present')", timeout=60_000)
        browser.wait_idle(page, 180_000)
        assert page.locator('[data-testid="stSidebar"]').first.is_visible()
        assert page.get_by_role("button", name="Leave presentation mode").count() == 0


def _view(page) -> dict:
    """What the prune page shows: the metrics, the mask's caption, the slider's k and the chosen strategy."""
    return {"metrics": page.locator('[data-testid="stMetricValue"]').all_inner_texts(),
            "mask": page.get_by_text("Mask:").first.inner_text(),
            "k": page.locator('[data-testid="stSlider"] input[type="range"]').first.get_attribute("value"),
            "strategy": page.locator('[data-testid="stSelectbox"]', has_text="Strategy").first.inner_text()}


def test_a_link_reopens_the_view_in_a_fresh_browser(server):
    """Set a view on Prune & evaluate (strategy, k), take the URL and the copy-link text, open that URL in a new
    browser: the same strategy, k, mask and metrics; a link with an unknown task and k above the head count falls
    back to the defaults with notes, never an exception."""
    with browser.browser_page() as page:
        browser.open_page(page, server, "prune")
        page.locator('[data-testid="stSelectbox"]', has_text="Strategy").first.click()
        page.get_by_role("option", name="random").first.click()
        browser.wait_idle(page)
        for _ in range(5):
            browser.move_slider(page, "ArrowRight")
        page.wait_for_function("() => location.search.includes('k=5') && location.search.includes('strategy=')")
        url, shown = page.url, _view(page)
        page.get_by_role("button", name="Copy link").click()
        copied = page.locator('[data-testid="stPopoverBody"] code').first.inner_text()
    assert "k=5" in url and "strategy=random" in url and shown["k"] == "5" and "random" in shown["mask"].lower()
    assert copied.replace("\n", "") == url
    with browser.browser_page() as fresh:  # a new browser: nothing but the URL
        fresh.goto(url, wait_until="domcontentloaded")
        fresh.wait_for_selector("h1", timeout=180_000)
        browser.wait_idle(fresh)
        again = _view(fresh)
        assert fresh.locator('[data-testid="stException"]').count() == 0
    assert again == shown
    with browser.browser_page() as stale:
        stale.goto(f"{server}/prune?task=nope&k=999&strategy=best", wait_until="domcontentloaded")
        stale.wait_for_selector("h1", timeout=180_000)
        browser.wait_idle(stale)
        text = stale.locator("body").inner_text()
        assert stale.locator('[data-testid="stException"]').count() == 0
        assert "The link's task = nope is not available here" in text
        assert "The link's strategy = best is not available here" in text
        assert "k = 999" in text and "0 of 12 heads pruned" in text
