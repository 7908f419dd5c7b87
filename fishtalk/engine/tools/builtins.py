"""Built-in client tools, each enabled only by ``[tools.NAME] builtin = true``.

* ``open_url`` {url}: opens an http(s) link in the user's browser. Asks first by default.
* ``copy_to_clipboard`` {text}: sets the clipboard with an OSC 52 escape written to the
  controlling terminal, so it works over SSH (the terminal must allow OSC 52).
* ``notify`` {message?, title?}: rings the terminal bell; front ends add a toast through
  :attr:`BuiltinOptions.on_notify`.
* ``get_local_context`` {}: local time, time zone, locale and terminal size.

Params are untrusted model output: each handler validates its own.
"""

from __future__ import annotations

import base64
import contextlib
import locale
import os
import shutil
import webbrowser
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from pydantic import JsonValue

from fishtalk.engine.aio import in_daemon_thread
from fishtalk.engine.system import O_NOCTTY, TTY_PATH
from fishtalk.engine.tools.approval import ApproveMode, printable, require_approval
from fishtalk.engine.tools.registry import ToolContext, ToolError

MAX_CLIPBOARD_BYTES: Final = 74_000
"""OSC 52 payloads beyond ~100 KB of base64 are dropped by many terminals."""
MAX_URL_CHARS: Final = 4096


class BuiltinToolError(ToolError):
    """A built-in tool refused bad params or could not act."""


@dataclass(frozen=True, slots=True)
class BuiltinOptions:
    """How built-ins reach the outside world; front ends and tests adjust these."""

    tty_path: str = TTY_PATH
    """Where OSC 52 and the bell are written (the controlling terminal)."""
    opener: Callable[[str], bool] | None = None
    """Opens a URL; default :func:`webbrowser.open` (honours ``$BROWSER``)."""
    on_notify: Callable[[str, str], None] | None = None
    """Called with (title, message) on the event loop, e.g. to show a TUI toast."""
    clipboard: Callable[[str], None] | None = None
    """Replaces the OSC 52 write (e.g. Textual's ``App.copy_to_clipboard``)."""


@dataclass(frozen=True, slots=True)
class BuiltinInfo:
    """A built-in tool's fixed facts."""

    name: str
    description: str
    default_approve: ApproveMode


BUILTINS: Final[Mapping[str, BuiltinInfo]] = {
    info.name: info
    for info in (
        BuiltinInfo("open_url", "Open an http(s) link in the browser", "ask"),
        BuiltinInfo("copy_to_clipboard", "Copy text to the clipboard (OSC 52)", "always"),
        BuiltinInfo("notify", "Ring the terminal bell and show a notification", "always"),
        BuiltinInfo(
            "get_local_context", "Local time, time zone, locale and terminal size", "always"
        ),
    )
}


def _string_param(params: Mapping[str, JsonValue], key: str, *, required: bool) -> str:
    value = params.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise BuiltinToolError(f"parameter {key!r} must be a string")
    return value


def _write_tty(options: BuiltinOptions, data: bytes) -> None:
    try:
        # O_APPEND: no effect on a terminal, but a file standing in for one (a log, a
        # test) keeps every write instead of each overwriting the first bytes.
        fd = os.open(options.tty_path, os.O_WRONLY | O_NOCTTY | os.O_APPEND)
    except OSError as exc:
        raise BuiltinToolError(f"no terminal to write to ({exc.strerror or exc})") from None
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def check_url(url: str) -> str:
    """Return ``url`` if it is a plain http(s) URL with a host; raise BuiltinToolError."""
    if len(url) > MAX_URL_CHARS:
        raise BuiltinToolError("url is too long")
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        raise BuiltinToolError("url must not contain spaces or control characters")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise BuiltinToolError("only http:// and https:// URLs can be opened")
    if not parts.hostname:
        raise BuiltinToolError("url has no host")
    return url


class OpenUrl:
    """``open_url``: validate, ask (by default), then open in the browser."""

    def __init__(self, options: BuiltinOptions, approve: ApproveMode) -> None:
        self.options = options
        self.approve = approve

    async def __call__(self, params: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
        url = check_url(_string_param(params, "url", required=True))
        await require_approval(self.approve, ctx, params, f"open {printable(url)}")
        opener = self.options.opener or webbrowser.open
        opened = await in_daemon_thread(lambda: opener(url))
        if not opened:
            raise BuiltinToolError("no browser could be started")
        return {"opened": url}


class CopyToClipboard:
    """``copy_to_clipboard``: OSC 52 to the terminal (base64, so the text cannot escape)."""

    def __init__(self, options: BuiltinOptions, approve: ApproveMode) -> None:
        self.options = options
        self.approve = approve

    async def __call__(self, params: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
        text = _string_param(params, "text", required=True)
        size = len(text.encode("utf-8"))
        if size > MAX_CLIPBOARD_BYTES:
            raise BuiltinToolError(f"text is too long for the clipboard ({size} bytes)")
        preview = printable(text, 80)
        await require_approval(self.approve, ctx, params, f"copy {preview!r} to the clipboard")
        if self.options.clipboard is not None:
            self.options.clipboard(text)
        else:
            encoded = base64.b64encode(text.encode("utf-8"))
            _write_tty(self.options, b"\x1b]52;c;" + encoded + b"\x07")
        return {"copied": True, "characters": len(text)}


class Notify:
    """``notify``: the terminal bell, plus the front end's toast if it has one."""

    def __init__(self, options: BuiltinOptions, approve: ApproveMode) -> None:
        self.options = options
        self.approve = approve

    async def __call__(self, params: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
        message = printable(_string_param(params, "message", required=False), 300)
        title = printable(_string_param(params, "title", required=False), 100)
        await require_approval(self.approve, ctx, params, f"notify: {title} {message}".strip())
        bell = True
        try:
            _write_tty(self.options, b"\x07")
        except BuiltinToolError:
            bell = False
        if self.options.on_notify is not None:
            self.options.on_notify(title, message)
        elif not bell:
            raise BuiltinToolError("no terminal to notify")
        return {"notified": True}


class GetLocalContext:
    """``get_local_context``: facts about where the user is sitting."""

    def __init__(self, options: BuiltinOptions, approve: ApproveMode) -> None:
        self.options = options
        self.approve = approve

    async def __call__(self, params: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
        await require_approval(self.approve, ctx, params, "share local time, locale, terminal")
        return local_context(self.options.tty_path)


def local_context(tty_path: str = TTY_PATH) -> dict[str, JsonValue]:
    """Local time, IANA time zone (when known), locale and terminal size."""
    now = datetime.now().astimezone()
    offset = now.strftime("%z")
    columns, lines = _terminal_size(tty_path)
    return {
        "local_time": now.isoformat(timespec="seconds"),
        "timezone": _iana_zone(),
        "timezone_abbreviation": now.tzname(),
        "utc_offset": f"{offset[:3]}:{offset[3:]}" if offset else None,
        "locale": _locale_name(),
        "terminal": {"columns": columns, "lines": lines},
    }


def _iana_zone() -> str | None:
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and "/" in tz and not tz.startswith("/"):
        return tz
    with contextlib.suppress(OSError):
        target = str(Path("/etc/localtime").resolve())
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    with contextlib.suppress(OSError):
        text = Path("/etc/timezone").read_text(encoding="utf-8").strip()
        if text:
            return text
    return None


def _locale_name() -> str | None:
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name)
        if value:
            return value
    language, encoding = locale.getlocale()
    if language is None:
        return None
    return f"{language}.{encoding}" if encoding else language


def _terminal_size(tty_path: str) -> tuple[int, int]:
    with contextlib.suppress(OSError):
        fd = os.open(tty_path, os.O_RDONLY | O_NOCTTY)
        try:
            size = os.get_terminal_size(fd)
            return size.columns, size.lines
        finally:
            os.close(fd)
    size = shutil.get_terminal_size()
    return size.columns, size.lines


_FACTORIES: Final[
    Mapping[str, type[OpenUrl] | type[CopyToClipboard] | type[Notify] | type[GetLocalContext]]
] = {
    "open_url": OpenUrl,
    "copy_to_clipboard": CopyToClipboard,
    "notify": Notify,
    "get_local_context": GetLocalContext,
}


def make_builtin(
    name: str, options: BuiltinOptions, approve: ApproveMode | None = None
) -> OpenUrl | CopyToClipboard | Notify | GetLocalContext:
    """The handler for built-in ``name``; KeyError if there is no such built-in."""
    factory = _FACTORIES[name]
    return factory(options, approve or BUILTINS[name].default_approve)
