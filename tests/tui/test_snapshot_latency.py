"""SVG snapshots of heard latency in the TUI: the per-turn badges, the status bar's rolling
p50, and the ended screen's p50/p95/worst (synthetic waterfalls; frozen clock).

Regenerate after an intended visual change with ``pytest tests/tui --snapshot-update``.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from fishtalk.core import conversation as c
from fishtalk.engine.audio.base import AudioLevels
from fishtalk.tui.screens.ended import EndedScreen

from .helpers import (
    FakeDevices,
    LatencySession,
    agent_says,
    agent_state,
    connected,
    drawn,
    make_app,
    measured,
    unmeasured,
    user_interim,
)
from .test_snapshots import SIZES, calm, quiet, still

TURNS = (
    measured(1, "a2", 0.42),
    unmeasured(2, "a3", "text-only"),
    measured(3, "a4", 1.27),
)


def measured_conversation(session: LatencySession) -> None:
    session.feed(
        *connected(),
        *agent_says("a1", ["Hi! How can I help?"], 2.0),
        *user_interim("u1", 1, "where is my order", 3.0, final=True),
        *agent_says("a2", ["It shipped", " yesterday."], 4.0),
        c.SendText("and the invoice?", 6.0, False),
        *agent_says("a3", ["I have sent it", " by email."], 7.0),
        *user_interim("u3", 1, "thanks, bye", 9.0, final=True),
        agent_state("speaking", 10.0),
        *agent_says("a4", ["You are welcome.", " Goodbye!"], 10.0),
    )
    session.set_latency(c.Latency(turns=TURNS))


def new_session() -> LatencySession:
    return LatencySession(
        c.initial_state(max_duration_seconds=1800),
        levels=AudioLevels(mic_rms=0.05, agent_rms=0.3),
        audio=FakeDevices(),
    )


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_badges_and_rolling_p50(snap_compare: Any, size: tuple[int, int]) -> None:
    session = new_session()

    async def run_before(pilot: Pilot[Any]) -> None:
        await quiet(pilot)
        measured_conversation(session)
        await still(pilot, session)

    assert snap_compare(make_app(session), terminal_size=size, run_before=run_before)


def test_badges_no_color(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    session = new_session()

    async def run_before(pilot: Pilot[Any]) -> None:
        assert pilot.app.no_color
        await quiet(pilot)
        measured_conversation(session)
        await still(pilot, session)

    assert snap_compare(make_app(session), terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_ended_with_heard_latency(snap_compare: Any, size: tuple[int, int]) -> None:
    session = new_session()

    async def run_before(pilot: Pilot[Any]) -> None:
        await quiet(pilot)
        measured_conversation(session)
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
