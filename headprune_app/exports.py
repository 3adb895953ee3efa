"""Files built on a click (a chart's PNG or SVG, the findings report, the pruned model's zip), one at a time per
server.

Each chart export starts a headless Chromium (through kaleido) and a report draws every card's chart: a class
clicking at once would start dozens. :func:`one_at_a_time` runs one build at a time on this server (the others
wait their turn) and serves a repeat of the same build from the last :data:`KEEP` results, so a second click costs
nothing. The gate lives at module level: Streamlit's ``clear_cache`` message does not reset it.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import torch

from headprune_app import roles
from headprune_app.cached import mask_key
from headprune_app.queue_slots import compute_queue
from headprune_core.encoders.pruned import save_pruned
from headprune_core.runs.study import Study

KEEP = 32
"""How many finished builds are kept for repeat clicks (the newest)."""

_GATE = threading.Lock()
_DONE: OrderedDict[str, bytes | str] = OrderedDict()


def build_key(*parts) -> str:
    """A short key of what a build reads (a chart's JSON and format, the report's cards ...): each part a string,
    or a callable giving one."""
    h = hashlib.sha256()
    for part in parts:
        h.update((part() if callable(part) else str(part)).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def one_at_a_time(key: str, build: Callable[[], bytes | str]) -> bytes | str:
    """``build()``'s result, built alone on this server (a build waits for the one before it), or the kept result
    of the same ``key``."""
    with _GATE:
        if key in _DONE:
            _DONE.move_to_end(key)
            return _DONE[key]
        out = build()
        _DONE[key] = out
        while len(_DONE) > KEEP:
            _DONE.popitem(last=False)
        return out


def deferred(key: Callable[[], str], build: Callable[[], bytes | str]) -> Callable[[], bytes | str]:
    """For ``st.download_button``'s deferred data: the build, gated by :func:`one_at_a_time` (its ``key()`` too is
    worked out only on the click)."""
    return lambda: one_at_a_time(key(), build)


def pruned_zip(study: Study, ft, mask, meta: dict) -> Callable[[], bytes]:
    """A callable building the pruned model folder as a zip (for ``st.download_button``'s deferred data)."""
    roles.require("Building a pruned model")
    key = mask_key(mask)
    queue = compute_queue()  # fetched here: the callable runs on another thread, outside the script run

    def build() -> bytes:
        with queue.slot("build a pruned model", priority=0), tempfile.TemporaryDirectory() as tmp:  # teacher's
            out = save_pruned(study.finetuned(ft), torch.tensor(key, dtype=torch.float32),
                              Path(tmp) / "pruned", tokenizer=study.loaded.tokenizer, meta=meta)
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                for f in sorted(out.iterdir()):
                    zf.write(f, f"pruned/{f.name}")
            return buf.getvalue()
    return build
