"""The session has one way out: only the outbox module calls ``publish_data``, and nothing
steps coroutines by hand or reaches for asyncio's private API (a second send path, a
trampoline, or an early publish must not come back). The behaviour side (turns arrive in
order, once each, as the reducer's effect) is in ``test_send_path.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SESSION = Path(__file__).resolve().parents[2] / "fishtalk" / "engine" / "session"
SOURCES = sorted(SESSION.glob("*.py"))


def _calls(path: Path) -> set[str]:
    """The attribute and function names ``path`` calls or refers to."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Name):
            names.add(node.id)
    return names


def test_the_session_package_is_there() -> None:
    assert {p.name for p in SOURCES} >= {"outbox.py", "commands.py", "room.py", "media.py"}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_only_the_outbox_publishes(path: Path) -> None:
    publishes = "publish_data" in _calls(path)
    assert publishes is (path.name == "outbox.py"), f"{path.name}: a second way out"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_no_trampoline_nor_private_asyncio(path: Path) -> None:
    names = _calls(path)
    assert "_get_running_loop" not in names
    # Stepping a coroutine by hand (coro.send/throw, a custom __await__) is a trampoline.
    assert not {"__await__", "send", "throw"} & names, path.name
    # The reducer decides once: no peeking at what it would send before reducing.
    assert "sends_at_once" not in names
