"""Turn untrusted strings (transcripts, tool payloads, error text) into inert Rich Text.

Everything that came from the network is shown literally: Rich markup is never parsed
(we build ``Text`` objects, never markup strings), terminal escape sequences and control
characters are made visible instead of reaching the terminal, and bidi override controls
are shown as code points so they cannot reorder the surrounding UI. Printable Unicode
(emoji, combining marks, right-to-left scripts) passes through untouched.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Final

from rich.style import Style
from rich.text import Text

_TAB_WIDTH: Final = 4

# Explicit directional formatting characters (embeddings, overrides, isolates). Natural
# RTL text does not need them; shown raw they can visually reorder neighbouring text.
_BIDI_CONTROLS: Final = frozenset(
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
)

_CONTROL_RE: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\ufff9-\ufffb]"
)


def _visible(char: str) -> str:
    code = ord(char)
    if code == 0x1B:
        return "␛"
    if code < 0x20:
        # Unicode "control pictures" block mirrors C0 at U+2400.
        return chr(0x2400 + code)
    if code == 0x7F:
        return "␡"
    return f"<U+{code:04X}>"


def clean(value: str) -> str:
    """Return ``value`` with every control character made visible (newlines kept).

    Carriage returns and form feeds become visible too: they would move the cursor.
    Tabs become spaces so cell widths stay predictable.
    """
    if "\t" in value:
        value = value.replace("\t", " " * _TAB_WIDTH)
    if "\r\n" in value:
        value = value.replace("\r\n", "\n")
    return _CONTROL_RE.sub(lambda m: _visible(m.group(0)), value)


def safe_text(value: str, style: str | Style = "", *, end: str = "") -> Text:
    """Build an inert, wrappable ``Text`` from an untrusted string.

    Long tokens fold instead of overflowing the layout.
    """
    return Text(clean(value), style=style, end=end, overflow="fold", no_wrap=False)


def is_clean(value: str) -> bool:
    """Whether ``value`` contains nothing :func:`clean` would change (used by tests)."""
    return clean(value) == value and not any(
        unicodedata.category(c) == "Cc" and c != "\n" for c in value
    )


def pretty_payload(raw: str | None) -> str:
    """Pretty-print a JSON-serialised tool payload; return non-JSON (or truncated) text as is."""
    if raw is None:
        return ""
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return raw
    try:
        return json.dumps(parsed, indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):  # pragma: no cover - parsed JSON always re-dumps
        return raw


def pretty_value(value: object) -> str:
    """Pretty-print any JSON-like Python value (e.g. a client tool's local result)."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=repr)
    except (ValueError, RecursionError):
        return repr(value)


__all__ = ["clean", "is_clean", "pretty_payload", "pretty_value", "safe_text"]
