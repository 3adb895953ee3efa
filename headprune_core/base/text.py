"""Text from outside (a link's values, a lesson's name, a user's file name) made safe to put into Markdown.

Streamlit renders Markdown in warnings, captions and ``st.markdown``: a backtick closes a code span, ``**`` makes
bold text, ``[text](url)`` a link, ``:red[...]`` a colour and ``:material/...:`` an icon, ``$`` starts LaTeX, a
bare ``http://...`` or ``www....`` becomes a link, and a newline can start a list or a heading. :func:`md_text`
escapes every one of them and :func:`md_code` puts the text in a code span it cannot close, so what a link
carries is shown as the characters it is, never as formatting or a clickable link.

>>> md_code("x` **bold**")
'`` x` **bold** ``'
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"([\\`*_\[\]()<>|~#$:!{}+\-.=^&])")
_SPACE = re.compile(r"\s+")
_AUTOLINK = re.compile(r"(?i)(://|www\.|@)")
_ZWSP = "\u200b"  # a zero-width space: breaks a bare address so it is not made a link


def _plain(value, limit: int) -> str:
    text = _SPACE.sub(" ", str(value)).strip()
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return _AUTOLINK.sub(lambda m: m.group(1)[0] + _ZWSP + m.group(1)[1:], text)


def md_text(value, *, limit: int = 200) -> str:
    """``value`` as literal text inside Markdown (bold or plain): whitespace runs, newlines included, as one space,
    at most ``limit`` characters (longer ends with an ellipsis), every Markdown or Streamlit special character
    escaped, and bare web or mail addresses broken so they are not made links."""
    return _SPECIAL.sub(r"\\\1", _plain(value, limit))


def md_code(value, *, limit: int = 200) -> str:
    """``value`` in an inline code span that nothing inside it can close: fenced by one backtick more than its
    longest run of backticks (CommonMark), with spaces inside the fence."""
    text = _plain(value, limit) or " "
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def md_cell(value) -> str:
    """``value`` in a Markdown table cell or paragraph of a report: pipes escaped, line breaks as spaces (the
    report's own formatting, e.g. a code span, is kept)."""
    return str(value).replace("|", "\\|").replace("\n", " ")
