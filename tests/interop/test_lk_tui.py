"""The TUI under Pilot joins a livekit-agents agent's room directly (``[livekit]``, as
``fishtalk chat --livekit-url ... --room ...`` sets it): the greeting, a typed turn on
``lk.chat`` and its reply, then Ctrl+X hangs up."""

from __future__ import annotations

import secrets
from collections.abc import Callable

import pytest
from support.lk_agent import GREETING, TABLE
from textual.pilot import Pilot

from fishtalk.cli.config import load_settings
from fishtalk.cli.launch import build_session
from fishtalk.engine.paths import CONFIG_PATH_ENV
from fishtalk.tui.app import FishtalkApp

from .conftest import RoomHost

pytestmark = pytest.mark.webrtc


async def until(pilot: Pilot[int], what: str, condition: Callable[[], bool]) -> None:
    """Wait (bounded: 30 s) until ``condition`` holds."""
    for _ in range(3000):
        if condition():
            return
        await pilot.pause(0.01)
    raise AssertionError(f"never happened: {what}")


async def test_the_tui_talks_to_livekit_agents_in_any_room(lk_host: RoomHost) -> None:
    room = "lk-" + secrets.token_hex(4)
    lk_host.agent(room)
    settings = load_settings(
        env={CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"},
        overrides={
            "livekit.url": lk_host.url,
            "livekit.api_key": lk_host.server.api_key,
            "livekit.api_secret": lk_host.server.api_secret,
            "livekit.room": room,
            "session.text_only": True,
        },
    )
    session = build_session(settings)
    app = FishtalkApp(session, title="livekit-agents", ended_linger=None)

    def said(text: str) -> Callable[[], bool]:
        return lambda: any(s.final and s.text == text for s in session.state.transcript)

    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, "the greeting", said(GREETING))
        assert session.protocol == "livekit-agents"
        await pilot.press(*"hello", "enter")
        await until(pilot, "the reply", said(str(TABLE["hello"])))
        await pilot.press("ctrl+x")
        await until(pilot, "the end", lambda: app.finished is not None)
    assert session.end_result() is not None
