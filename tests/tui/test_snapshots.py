"""SVG snapshots of the key screens (deterministic: frozen clock, no live timers).

Regenerate after an intended visual change with ``pytest tests/tui --snapshot-update``.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.scripted import ScriptedSession
from textual.pilot import Pilot
from textual.widgets import Input

from fishtalk.core import conversation as c
from fishtalk.engine.audio.base import AudioLevels
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.screens.ended import EndedScreen

from .helpers import (
    FakeDevices,
    agent_says,
    agent_state,
    client_call,
    connected,
    drawn,
    make_app,
    tool_completed,
    tool_failed,
    tool_started,
    user_interim,
)

SIZES = [(100, 30), (80, 24)]


def mid_conversation(session: ScriptedSession) -> None:
    session.feed(
        *connected(),
        *agent_says("a1", ["Hi!", " I can look things up", " for you."], 2.0),
        *user_interim("u1", 1, "what's the weather", 3.0, final=True),
        agent_state("thinking", 3.5),
        tool_started("t1", "lookup_weather", 4.0, input='{"city": "Lisbon"}'),
        tool_completed("t1", "lookup_weather", 5.2, output='{"forecast": "sunny", "high_c": 24}'),
        tool_started(
            "t2", "search_docs", 5.3, source="mcp", input='{"q": "long', input_truncated=True
        ),
        tool_failed("t2", "search_docs", 6.1, source="mcp", error="upstream timed out"),
        client_call("t3", "get_local_context", 6.5, {}),
        c.ClientToolFinished("t3", "ok", 6.6, result_preview='{"timezone": "Europe/Lisbon"}'),
        agent_state("speaking", 7.0),
        *agent_says("a2", ["It is sunny in Lisbon,", " 24 degrees"], 7.0, close=False),
        *user_interim("u2", 1, "and tomor", 8.0),
    )


async def calm(pilot: Pilot[Any]) -> None:
    """No toasts in a snapshot: they come and go with timing, not with state."""
    for _ in range(3):
        pilot.app.clear_notifications()
        await pilot.pause()


async def quiet(pilot: Pilot[Any]) -> None:
    pilot.app.query_one(Input).cursor_blink = False
    await pilot.pause()


async def still(pilot: Pilot[Any], session: ScriptedSession) -> None:
    """A still frame: the session's newest state drawn, the meters read once, no toasts."""
    await drawn(pilot, session)
    app = pilot.app
    assert isinstance(app, FishtalkApp)
    app.refresh_levels()
    await calm(pilot)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_connecting(snap_compare: Any, size: tuple[int, int]) -> None:
    session = ScriptedSession()
    assert snap_compare(make_app(session), terminal_size=size, run_before=quiet)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_mid_conversation_with_tools(snap_compare: Any, size: tuple[int, int]) -> None:
    session = ScriptedSession(
        c.initial_state(max_duration_seconds=1800),
        levels=AudioLevels(mic_rms=0.05, agent_rms=0.3),
        audio=FakeDevices(),
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        await quiet(pilot)
        mid_conversation(session)
        await still(pilot, session)

    assert snap_compare(make_app(session), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_help(snap_compare: Any, size: tuple[int, int]) -> None:
    session = ScriptedSession()

    async def run_before(pilot: Pilot[Any]) -> None:
        await quiet(pilot)
        await pilot.press("f1")
        await pilot.pause()

    assert snap_compare(make_app(session), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_ended(snap_compare: Any, size: tuple[int, int]) -> None:
    session = ScriptedSession(c.initial_state(max_duration_seconds=1800))

    async def run_before(pilot: Pilot[Any]) -> None:
        await quiet(pilot)
        mid_conversation(session)
        # Toasts go before the modal opens: the chat screen under it keeps whatever
        # toasts it last drew, so clearing them only afterwards depends on timing.
        await drawn(pilot, session)
        await calm(pilot)
        session.feed(c.Hangup(75.0))
        for _ in range(500):
            if isinstance(pilot.app.screen, EndedScreen):
                break
            await pilot.pause(0.01)
        assert isinstance(pilot.app.screen, EndedScreen)
        await drawn(pilot, session)
        await calm(pilot)

    assert snap_compare(make_app(session), terminal_size=size, run_before=run_before)
