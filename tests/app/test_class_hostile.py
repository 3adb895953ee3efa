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

import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from tests.helpers import browser

KEY = "the teacher's class key"
CLASS = {"HEADPRUNE_CLASS": "1", "HEADPRUNE_TEACHER_KEY": KEY}
PHISH = "x`**Session expired: re-enter the teacher key at [the teacher page](http://evil.example/unlock)**"

pytestmark = browser.browser_marks()


def _rss_mb(pid: int) -> float:
    """Resident memory of a process, MB (Linux's /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def _raw_session(url: str, *, query: str = "", page: str = "", until: str = "new_session"):
    """A raw websocket client of the server, as a student's script would open one, asking for ``page`` with the
    address's ``query``: (socket, its session id), once the server sent ``until`` (a ForwardMsg type)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.sync.client import connect
    ws = connect(url.replace("http://", "ws://") + "/_stcore/stream", subprotocols=["streamlit"], origin=url,
                 max_size=None)
    hello = BackMsg()
    hello.rerun_script.query_string = query
    hello.rerun_script.page_name = page
    ws.send(hello.SerializeToString())
    session, deadline = None, time.time() + 300
    while time.time() < deadline:
        msg = ForwardMsg()
        msg.ParseFromString(ws.recv(timeout=300))
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            session = msg.new_session.initialize.session_id
        if kind == until:
            return ws, session
    raise RuntimeError(f"the server never sent {until} to the raw client")


def _send_clear_cache(ws) -> None:
    from streamlit.proto.BackMsg_pb2 import BackMsg
    msg = BackMsg()
    msg.clear_cache = True
    ws.send(msg.SerializeToString())
    time.sleep(1.0)  # handled on the server's event loop


def _wrong_keys(page, n: int) -> None:
    page.get_by_text("Class mode: teacher").first.click()
    for _ in range(n):
        page.get_by_label("Teacher's key").fill("a guess")
        page.get_by_role("button", name="Unlock").click()
        browser.wait_idle(page)


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
        _wrong_keys(student, 5)
        assert student.get_by_text("no key is taken from here").count() >= 1
        ws, _ = _raw_session(url)
        _send_clear_cache(ws)
        ws.close()
        student.get_by_label("Teacher's key").fill(KEY)
        student.get_by_role("button", name="Unlock").click()
        browser.wait_idle(student)
        assert student.get_by_text("Teacher's session").count() == 0
        assert student.get_by_text("no key is taken from here").count() >= 1
        browser.open_page(teacher, url, "home")
        browser.unlock(teacher, KEY)  # waits for "Teacher's session"
        chromium.close()


def _xsrf(url: str) -> tuple[str, str]:
    """The XSRF cookie the server hands any visitor (its health page), as (cookie header, token header)."""
    with urllib.request.urlopen(f"{url}/_stcore/health") as resp:
        cookies = resp.headers.get_all("Set-Cookie") or []
    value = next(c.split(";", 1)[0].split("=", 1)[1] for c in cookies if c.startswith("_streamlit_xsrf="))
    return f"_streamlit_xsrf={value}", value


def _upload(url: str, session: str, size: int, cookie: str, token: str) -> int:
    boundary = uuid.uuid4().hex
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.bin\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode()
    body = head + b"\0" * size + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(f"{url}/_stcore/upload_file/{session}/{uuid.uuid4().hex}", data=body, method="PUT",
                                 headers={"Content-Type": f"multipart/form-data; boundary={boundary}",
                                          "Cookie": cookie, "X-Xsrftoken": token, "Origin": url})
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code
    except (urllib.error.URLError, ConnectionError):  # refused while the body was still streaming
        return 413


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
        ws, session = _raw_session(url)
        cookie, token = _xsrf(url)
        assert _upload(url, session, 100_000, cookie, token) == 204
        codes = [_upload(url, session, 20 * 1024 * 1024, cookie, token) for _ in range(20)]
        assert codes == [413] * 20, codes
        # the server refuses so long an address over HTTP (and Chromium sends none past 2 MB); a raw client puts it
        # in its first message instead, asking for the inspector. Measured against a short sentence's run first
        # (which loads the model: a cost any student's first visit pays)
        warm, _ = _raw_session(url, query="sentence:en=Anna+sees+the+dog", page="inspector", until="script_finished")
        warm.close()
        before = _rss_mb(procs[0].pid)
        query = urllib.parse.urlencode({"sentence:en": "dog " * 1_000_000})
        hostile, _ = _raw_session(url, query=query, page="inspector", until="script_finished")
        hostile.close()
        grown = _rss_mb(procs[0].pid) - before
        ws.close()
        _phishing_renders_as_text(url)
    assert grown < 200, f"the server grew by {grown:.0f} MB"
