"""Built-in client tools against a real pseudo-terminal, run through the real ToolRunner."""

from __future__ import annotations

import base64
import fcntl
import os
import select
import struct
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import JsonValue

from fishtalk.core.protocol import ClientToolCall
from fishtalk.engine.tools.builtins import BUILTINS, BuiltinOptions, make_builtin
from fishtalk.engine.tools.registry import ApprovalRequest, Approver, ToolRegistry
from fishtalk.engine.tools.runner import ToolOutcome, ToolRunner


@pytest.fixture
def pty_pair() -> Iterator[tuple[int, str]]:
    """(master fd, slave path) of a fresh pseudo-terminal, 100x30."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # raw output: what the tool writes is what we read
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    try:
        yield master, os.ttyname(slave)
    finally:
        os.close(slave)
        os.close(master)


def read_all(master: int) -> bytes:
    data = b""
    while select.select([master], [], [], 0.5)[0]:
        chunk = os.read(master, 65536)
        if not chunk:
            break
        data += chunk
    return data


async def call(
    name: str,
    params: dict[str, JsonValue],
    options: BuiltinOptions,
    *,
    approver: Approver | None = None,
    approve: str | None = None,
) -> ToolOutcome:
    registry = ToolRegistry()
    registry.register(name, make_builtin(name, options, approve), source="builtin")  # type: ignore[arg-type]
    runner = ToolRunner(registry, default_timeout=10, approver=approver)
    return await runner.run(
        ClientToolCall(call_id="c1", tool_name=name, params=params, expects_response=True)
    )


def test_builtin_defaults() -> None:
    assert set(BUILTINS) == {"open_url", "copy_to_clipboard", "notify", "get_local_context"}
    assert BUILTINS["open_url"].default_approve == "ask"


async def test_copy_to_clipboard_writes_osc52(pty_pair: tuple[int, str]) -> None:
    master, tty = pty_pair
    text = "héllo \x1b]0;evil\x07 world\n"
    outcome = await call("copy_to_clipboard", {"text": text}, BuiltinOptions(tty_path=tty))
    assert outcome.status == "ok", outcome.error
    expected = b"\x1b]52;c;" + base64.b64encode(text.encode("utf-8")) + b"\x07"
    assert read_all(master) == expected  # the text travels base64-encoded, inert


async def test_copy_without_terminal_fails_cleanly(tmp_path: Path) -> None:
    options = BuiltinOptions(tty_path=str(tmp_path / "no-tty"))
    outcome = await call("copy_to_clipboard", {"text": "x"}, options)
    assert outcome.status == "error"
    assert outcome.error is not None
    assert "no terminal" in outcome.error
    bad = await call("copy_to_clipboard", {"text": 42}, options)
    assert bad.error is not None
    assert "'text' must be a string" in bad.error


async def test_notify_bell_and_toast_hook(pty_pair: tuple[int, str]) -> None:
    master, tty = pty_pair
    toasts: list[tuple[str, str]] = []
    options = BuiltinOptions(tty_path=tty, on_notify=lambda t, m: toasts.append((t, m)))
    outcome = await call("notify", {"title": "Done", "message": "\x1b[2Jbuild ok"}, options)
    assert outcome.status == "ok", outcome.error
    assert read_all(master) == b"\x07"
    assert toasts == [("Done", "build ok")]  # escape sequences removed whole (fishtalk.core.text)


async def test_get_local_context(
    pty_pair: tuple[int, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, tty = pty_pair
    monkeypatch.setenv("TZ", "Europe/Berlin")
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    outcome = await call("get_local_context", {}, BuiltinOptions(tty_path=tty))
    assert outcome.status == "ok", outcome.error
    result = outcome.result
    assert isinstance(result, dict)
    assert result["timezone"] == "Europe/Berlin"
    assert result["locale"] == "de_DE.UTF-8"
    assert result["terminal"] == {"columns": 100, "lines": 30}
    assert isinstance(result["local_time"], str)
    assert "T" in result["local_time"]


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "ftp://example.com/x",
        "https://",
        "https://exa mple.com",
        "https://example.com/\x1b[31m",
        "-h",
    ],
)
async def test_open_url_rejects_non_http(url: str) -> None:
    opened: list[str] = []

    async def allow(request: ApprovalRequest) -> bool:
        return True

    options = BuiltinOptions(opener=lambda u: opened.append(u) is None)
    outcome = await call("open_url", {"url": url}, options, approver=allow)
    assert outcome.status == "error"
    assert opened == []


async def test_open_url_asks_first() -> None:
    opened: list[str] = []
    asked: list[ApprovalRequest] = []
    answer = False

    async def approver(request: ApprovalRequest) -> bool:
        asked.append(request)
        return answer

    options = BuiltinOptions(opener=lambda u: opened.append(u) is None)
    url = "https://example.com/docs?q=1"
    denied = await call("open_url", {"url": url}, options, approver=approver)
    assert denied.status == "declined"
    assert opened == []
    assert url in asked[0].summary

    answer = True
    allowed = await call("open_url", {"url": url}, options, approver=approver)
    assert allowed.status == "ok", allowed.error
    assert allowed.result == {"opened": url}
    assert opened == [url]

    nobody = await call("open_url", {"url": url}, options)
    assert nobody.status == "declined"
    assert opened == [url]
