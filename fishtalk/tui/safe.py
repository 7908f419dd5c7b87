"""Turn untrusted strings (transcripts, tool payloads, error text) into inert Rich Text.

Everything that came from the network is shown literally: Rich markup is never parsed
(we build ``Text`` objects, never markup strings), terminal escape sequences and control
characters are made visible instead of reaching the terminal, and bidi override controls
are shown as code points so they cannot reorder the surrounding UI (the code-point rules
are :mod:`fishtalk.core.text`'s). Printable Unicode (emoji, combining marks, right-to-left
scripts) passes through untouched.
"""

from __future__ import annotations

import json

from rich.style import Style
from rich.text import Text

from fishtalk.core.text import make_visible


def visible(value: str) -> str:
    """Return ``value`` with every dangerous code point made visible (newlines kept).

    The rules live in :func:`fishtalk.core.text.make_visible`; this is its TUI spelling.
    """
    return make_visible(value)


def safe_text(value: str, style: str | Style = "", *, end: str = "") -> Text:
    """Build an inert, wrappable ``Text`` from an untrusted string.

    Long tokens fold instead of overflowing the layout.
    """
    return Text(visible(value), style=style, end=end, overflow="fold", no_wrap=False)


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


__all__ = ["pretty_payload", "pretty_value", "safe_text", "visible"]
