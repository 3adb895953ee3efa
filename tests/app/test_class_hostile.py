"""A hostile student against a real class-mode server (issue 43): what one student can send with a raw client or
by typing, and what it must not do to the rest of the class.

- Streamlit's ``clear_cache`` message sent from a raw websocket (the viewer toolbar only hides the menu item):
  the student's lockout holds, and the teacher still unlocks in their own session.
- Five wrong keys from one student never block the teacher's right key in another session.
- Uploads to Streamlit's upload endpoint beyond the class's 1 MB are refused, twenty in a row, and the server does
  not grow by them.
- A 100,000-word sentence in a link (Chromium sends no longer address): cut before any work, the server's memory
  stays within 200 MB.
- A phishing link (``?task=`` with a backtick, bold text and a link) renders as literal text: no link to it.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request

from tests.helpers import browser, hostile

KEY = "the teacher's class key"
CLASS = {"HEADPRUNE_CLASS": "1", "HEADPRUNE_TEACHER_KEY": KEY}
PHISH = "x`**Session expired: re-enter the teacher key at [the teacher page](http://evil.example/unlock)**"

pytestmark = browser.browser_marks()






def test_a_raw_clear_cache_resets_neither_the_lockout_nor_locks_out_the_teacher(cache_copy):
    """Five wrong keys lock the student's session; a raw client's clear_cache (which rebuilds every
    st.cache_resource) leaves that lockout in place, so the student's right key is still refused, while the
    teacher's right key in another session unlocks (fails on the guard before issue 43: server-wide and cached)."""
    from playwright.sync_api import sync_playwright
    with browser.streamlit_server(cache_copy, env=CLASS) as url, sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, args=browser.CHROMIUM_ARGS, headless=True)
        student, teacher = (chromium.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                            for _ in range(2))
        browser.open_page(student, url, "home")
        hostile.wrong_keys(student, 5)
        assert student.get_by_text("no key is taken from here").count() >= 1
        ws, _ = hostile.raw_session(url)
        hostile.send_clear_cache(ws)
        ws.close()
        student.get_by_label("Teacher's key").fill(KEY)
        student.get_by_role("button", name="Unlock").click()
        browser.wait_idle(student)
        assert student.get_by_text("Teacher's session").count() == 0
        assert student.get_by_text("no key is taken from here").count() >= 1
        browser.open_page(teacher, url, "home")
        browser.unlock(teacher, KEY)  # waits for "Teacher's session"
        chromium.close()




def _phishing_renders_as_text(url: str) -> None:
    """``?task=`` carrying a backtick, bold text and a link: the page's note shows the characters, and no link to
    the attacker's address exists anywhere on the page (fails before issue 43: it rendered a bold, clickable
    line)."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser.CHROMIUM, args=browser.CHROMIUM_ARGS, headless=True)
        page = chromium.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.goto(f"{url}/{browser.PAGES['prune']}?{urllib.parse.urlencode({'task': PHISH})}",
                  wait_until="domcontentloaded")
        page.wait_for_selector("h1", timeout=180_000)
        browser.wait_idle(page)
        assert page.locator("a[href*='evil.example']").count() == 0
        note = page.get_by_text("Session expired: re-enter the teacher key").first
        assert note.count() == 1 and note.locator("strong").count() == 0
        # the browser holds the XSRF cookie that makes its tabs one place in the compute queue
        assert [c for c in page.context.cookies() if c["name"] == "_streamlit_xsrf"]
        chromium.close()


def test_uploads_refused_a_huge_sentence_cut_and_a_phishing_link_is_text(cache_copy):
    """Twenty 20 MB uploads to Streamlit's upload endpoint (with a valid session and XSRF token, as a student's
    script would send them) are each refused (413, or the connection cut while the body streams), a 100 KB one is
    taken (the endpoint works: the refusal is the limit's); the server grows by less than 200 MB after them and a
    1,000,000-word sentence in the address a raw client sends (the inspector's run finishes); then a phishing link
    on the same server (:func:`_phishing_renders_as_text`)."""
    procs = []
    with browser.streamlit_server(cache_copy, env=CLASS, on_start=procs.append) as url:
        ws, session = hostile.raw_session(url)
        cookie, token = hostile.xsrf(url)
        assert hostile.upload(url, session, 100_000, cookie, token) == 204
        codes = [hostile.upload(url, session, 20 * 1024 * 1024, cookie, token) for _ in range(20)]
        assert codes == [413] * 20, codes
        # the server refuses so long an address over HTTP (and Chromium sends none past 2 MB); a raw client puts it
        # in its first message instead, asking for the inspector. Measured against a short sentence's run first
        # (which loads the model: a cost any student's first visit pays)
        warm, _ = hostile.raw_session(url, query="sentence:en=Anna+sees+the+dog", page="inspector",
                                      until="script_finished")
        warm.close()
        before = hostile.rss_mb(procs[0].pid)
        query = urllib.parse.urlencode({"sentence:en": "dog " * 1_000_000})
        big, _ = hostile.raw_session(url, query=query, page="inspector", until="script_finished")
        big.close()
        grown = hostile.rss_mb(procs[0].pid) - before
        ws.close()
        _phishing_renders_as_text(url)
    assert grown < 200, f"the server grew by {grown:.0f} MB"
