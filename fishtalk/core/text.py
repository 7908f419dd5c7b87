"""The one place that makes remote or user text safe for a terminal.

Transcripts, tool payloads, server error bodies and config values can carry code points
that drive or deceive a terminal: C0 and C1 controls (escape sequences, cursor moves, bells),
DEL, the explicit bidi controls (embeddings, overrides, isolates, LRM/RLM/ALM) that visually
reorder the text around them, the interlinear annotation controls, and lone surrogates
(which cannot even be encoded for output). Two functions deal with them, with one rule set:

* :func:`strip` for plain lines (line mode, CLI messages, API error text, approval prompts):
  escape sequences vanish whole (an OSC title payload is not shown), every other dangerous
  code point becomes a space.
* :func:`make_visible` where the user should see what was sent (the TUI): every dangerous
  code point is shown as a visible stand-in: C0 as its control picture (``\\x1b`` as ``␛``),
  DEL as ``␡``, everything else as ``<U+XXXX>``.

Both keep newlines only when asked for multi-line output (tabs become spaces, ``\\r\\n``
becomes ``\\n``). Printable Unicode (emoji, combining marks, right-to-left scripts) passes
through untouched. :func:`json_escape` applies the same rule set to JSON text.
"""

from __future__ import annotations

import re
from typing import Final

TAB_WIDTH: Final = 4
"""Spaces a tab becomes, so cell widths stay predictable."""

DANGEROUS_RANGES: Final[tuple[tuple[int, int], ...]] = (
    (0x00, 0x1F),  # C0 controls (ESC, BEL, BS, CR, LF, TAB...)
    (0x7F, 0x9F),  # DEL and the C1 controls (8-bit CSI U+009B...)
    (0x061C, 0x061C),  # ARABIC LETTER MARK
    (0x200E, 0x200F),  # LEFT-TO-RIGHT / RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2066, 0x2069),  # bidi isolates
    (0xD800, 0xDFFF),  # surrogates (only ever lone in a Python str)
    (0xFFF9, 0xFFFB),  # interlinear annotation controls
)
"""Every code point that never reaches a terminal as is (inclusive ranges)."""

_CLASS: Final = "".join(
    f"\\U{low:08x}" if low == high else f"\\U{low:08x}-\\U{high:08x}"
    for low, high in DANGEROUS_RANGES
)
_DANGEROUS: Final = re.compile(f"[{_CLASS}]")
_DANGEROUS_EXCEPT_NEWLINE: Final = re.compile(f"(?!\n)[{_CLASS}]")
_DANGEROUS_EXCEPT_JSON_SPACE: Final = re.compile(f"(?![\t\n\r])[{_CLASS}]")

_ESCAPE_SEQUENCE: Final = re.compile(
    "\x1b\\[[0-?]*[ -/]*[@-~]"  # CSI
    "|\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)?"  # OSC (title, hyperlinks...)
    "|\x1b[PX^_][^\x1b]*(?:\x1b\\\\)?"  # DCS, SOS, PM, APC
    "|\x1b[@-Z\\\\-_]?"  # other two-byte escapes, or a lone ESC
    "|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)


def is_dangerous(char: str) -> bool:
    """Whether the single code point ``char`` is one this module never lets through."""
    return _DANGEROUS.fullmatch(char) is not None


def _normalise(text: str, multiline: bool) -> str:
    if "\t" in text:
        text = text.replace("\t", " " * TAB_WIDTH)
    if multiline and "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text


def strip(text: str, *, multiline: bool = False) -> str:
    """``text`` with escape sequences removed and every other dangerous code point a space.

    With ``multiline`` newlines are kept (``\\r\\n`` becomes ``\\n``); otherwise the result
    is one line.
    """
    text = _ESCAPE_SEQUENCE.sub("", _normalise(text, multiline))
    pattern = _DANGEROUS_EXCEPT_NEWLINE if multiline else _DANGEROUS
    return pattern.sub(" ", text)


def _stand_in(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code == 0x1B:
        return "␛"
    if code < 0x20:
        # The Unicode "control pictures" block mirrors C0 at U+2400.
        return chr(0x2400 + code)
    if code == 0x7F:
        return "␡"
    return f"<U+{code:04X}>"


def make_visible(text: str, *, multiline: bool = True) -> str:
    """``text`` with every dangerous code point shown as a visible, inert stand-in.

    Escape sequences stay readable (``␛[31m``) but can no longer act. With ``multiline``
    (the default) newlines are kept; otherwise they are shown as ``␊``.
    """
    text = _normalise(text, multiline)
    pattern = _DANGEROUS_EXCEPT_NEWLINE if multiline else _DANGEROUS
    return pattern.sub(_stand_in, text)


def json_escape(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with every dangerous code point
    written as a ``\\uXXXX`` escape: still the same JSON, now inert on a terminal.

    Valid only for JSON text, where such code points can only occur inside strings (raw tab,
    newline and carriage return cannot: outside strings they are JSON's own whitespace, as in
    ``indent=2`` output, and are kept).
    """
    return _DANGEROUS_EXCEPT_JSON_SPACE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


__all__ = ["DANGEROUS_RANGES", "TAB_WIDTH", "is_dangerous", "json_escape", "make_visible", "strip"]
