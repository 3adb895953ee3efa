"""What a hostile student sends to a class-mode server, as a script would (no browser needed but for the wrong
keys): a raw websocket session, Streamlit's ``clear_cache`` message, uploads with a valid session and XSRF token;
and the server's memory. Used by tests/app/test_class_hostile.py and bench/hostile.py."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from tests.helpers import browser


def rss_mb(pid: int) -> float:
    """Resident memory of a process, MB (Linux's /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")

def stream_url(url: str) -> str:
    """The server's websocket address (Streamlit's protocol) for its base URL."""
    return url.replace("http://", "ws://") + "/_stcore/stream"


def rerun_message(query: str, *, page: str = "", page_hash: str = "", fragment: str = "") -> bytes:
    """Streamlit's request for a script run, as its browser code sends one: the page (by name or by its script's
    hash) with the address's ``query``; with ``fragment``, a timed rerun of that fragment alone."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    msg = BackMsg()
    msg.rerun_script.query_string, msg.rerun_script.page_name = query, page
    msg.rerun_script.page_script_hash = page_hash
    if fragment:
        msg.rerun_script.fragment_id, msg.rerun_script.is_auto_rerun = fragment, True
    return msg.SerializeToString()


def raw_session(url: str, *, query: str = "", page: str = "", until: str = "new_session"):
    """A raw websocket client of the server, as a student's script would open one, asking for ``page`` with the
    address's ``query``: (socket, its session id), once the server sent ``until`` (a ForwardMsg type)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.sync.client import connect
    ws = connect(stream_url(url), subprotocols=["streamlit"], origin=url, max_size=None)
    ws.send(rerun_message(query, page=page))
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

def send_clear_cache(ws) -> None:
    from streamlit.proto.BackMsg_pb2 import BackMsg
    msg = BackMsg()
    msg.clear_cache = True
    ws.send(msg.SerializeToString())
    time.sleep(1.0)  # handled on the server's event loop

def wrong_keys(page, n: int) -> None:
    page.get_by_text("Class mode: teacher").first.click()
    for _ in range(n):
        page.get_by_label("Teacher's key").fill("a guess")
        page.get_by_role("button", name="Unlock").click()
        browser.wait_idle(page)

def xsrf(url: str) -> tuple[str, str]:
    """The XSRF cookie the server hands any visitor (its health page), as (cookie header, token header)."""
    with urllib.request.urlopen(f"{url}/_stcore/health") as resp:
        cookies = resp.headers.get_all("Set-Cookie") or []
    value = next(c.split(";", 1)[0].split("=", 1)[1] for c in cookies if c.startswith("_streamlit_xsrf="))
    return f"_streamlit_xsrf={value}", value

def upload(url: str, session: str, size: int, cookie: str, token: str) -> int:
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
