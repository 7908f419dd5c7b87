"""The HTML page shell: escaping, the Content-Security-Policy, and the document template.

Every string that came from outside fishtalk (transcripts, tool payloads, error text, test
names) goes through :func:`esc`: dangerous code points (controls, bidi overrides) become
visible stand-ins, then :func:`html.escape` with ``quote=True`` makes it inert in text and
in attribute values alike. The page's one style sheet and one script are inline and named
in the policy by their SHA-256 hash; nothing else may run, and nothing may be fetched
(``default-src 'none'``; audio only from ``data:`` URLs).
"""

from __future__ import annotations

import base64
import hashlib
import html
from pathlib import Path
from typing import Final
from urllib.parse import quote

from fishtalk._version import __version__
from fishtalk.core.text import make_visible
from fishtalk.workbench.reports.assets import SCRIPT, STYLE


def esc(value: object) -> str:
    """``value`` as inert HTML text (also safe inside a quoted attribute value)."""
    return html.escape(make_visible(str(value), multiline=True), quote=True)


LONG: Final = 1_000
"""Characters of a long text shown before the rest is folded away (laying out a megabyte
of one unbroken word takes a browser many seconds; a closed ``<details>`` is not laid out)."""


def long_text(value: str, tag: str = "p") -> str:
    """``value`` escaped in a ``<tag class="text">``; past :data:`LONG` characters the
    whole text sits in a closed ``<details>`` under the first part."""
    if len(value) <= LONG:
        return f'<{tag} class="text">{esc(value)}</{tag}>'
    return (
        f'<{tag} class="text">{esc(value[:LONG])}…</{tag}><details class="more"><summary>'
        f'All {len(value):,} characters</summary><{tag} class="text">{esc(value)}</{tag}>'
        "</details>"
    )


def source_hash(text: str) -> str:
    """The CSP source expression naming an inline element whose content is ``text``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


CSP: Final = (
    "default-src 'none'; "
    f"script-src {source_hash(SCRIPT)}; "
    f"style-src {source_hash(STYLE)}; "
    "media-src data:; img-src data:; base-uri 'none'; form-action 'none'"
)
"""The page's policy: no request leaves it, and only its own script and style apply."""


def file_href(path: str, relative_to: Path | None = None) -> str:
    """An escaped ``href`` for a local file: relative to the page when it can be, else a
    ``file:`` URL. Never a remote or ``javascript:`` URL: the path is percent-encoded."""
    target = Path(path)
    if relative_to is not None and target.is_absolute():
        try:
            rel = target.resolve().relative_to(relative_to.resolve())
            return esc(quote(rel.as_posix()))
        except ValueError:
            pass
    if target.is_absolute():
        return esc(target.as_uri())
    return esc(quote(target.as_posix()))


def document(title: str, body: str) -> str:
    """The whole page: ``title`` is escaped here; ``body`` is markup built by this package
    (every remote string in it already passed through :func:`esc`)."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="color-scheme" content="light dark">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="fishtalk {esc(__version__)}">\n'
        f"<title>{esc(title)}</title>\n"
        f"<style>{STYLE}</style>\n</head>\n<body>\n{body}\n"
        f"<footer>Made by fishtalk {esc(__version__)}. This page needs no network.</footer>\n"
        f"<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )


def facts(rows: list[tuple[str, str]]) -> str:
    """A definition list of (label, already-escaped value) rows."""
    items = "".join(f"<div><dt>{esc(k)}</dt><dd>{v}</dd></div>" for k, v in rows)
    return f'<dl class="facts">{items}</dl>'


def filters(kinds: list[tuple[str, str]], placeholder: str) -> str:
    """The search box and one checkbox per kind of item (``data-kind``) the script filters."""
    boxes = "".join(
        f'<label><input type="checkbox" data-kind="{esc(kind)}" checked> {esc(label)}</label>'
        for kind, label in kinds
    )
    return (
        '<div class="filters" role="search">'
        f'<input id="q" type="search" placeholder="{esc(placeholder)}" '
        f'aria-label="{esc(placeholder)}">{boxes}<span id="count"></span></div>'
    )


def ms(value: float | None) -> str:
    """Milliseconds for people: ``540 ms``, ``1.25 s``, or an en dash when unknown."""
    if value is None:
        return "–"
    return f"{value:.0f} ms" if value < 1000 else f"{value / 1000:.2f} s"


__all__ = [
    "CSP",
    "document",
    "esc",
    "facts",
    "file_href",
    "filters",
    "long_text",
    "ms",
    "source_hash",
]
