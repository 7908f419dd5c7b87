"""Heard latency in the TUI on the real Session against the simulated agent: the badge lands
on the reply the reducer measured (placed by its segment id), says why a text-only turn has
no figure, and the ended screen sums it up.

Run inside the network namespace (marker ``webrtc``).
"""

from __future__ import annotations

import pytest

from fishtalk.sim.runner import SimHandle
from fishtalk.tui.screens.ended import EndedScreen
from fishtalk.tui.widgets.latency import HeardP50
from fishtalk.tui.widgets.transcript import BADGE_GLYPH, Transcript

from .test_sim import app_for, session_for, sim, until

pytestmark = pytest.mark.webrtc

__all__ = ["sim"]  # the fixture, shared with test_sim


async def test_a_text_only_reply_says_why_it_has_no_figure(sim: SimHandle) -> None:
    session = session_for(sim, "echo")
    app = app_for(session)
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        await until(pilot, "the connection", lambda: session.state.status == "connected")
        await pilot.press(*"hello sim", "enter")
        badge = f"  {BADGE_GLYPH} text-only"
        await until(
            pilot,
            "the reply's badge",
            lambda: any(
                t.startswith("agent ▸ You said: hello sim") and t.endswith(badge)
                for t in transcript.plain_items()
            ),
        )
        (turn,) = [t for t in session.state.latency.turns if t.kind == "typed"]
        reply = next(s for s in session.state.transcript if s.segment_id == turn.segment_id)
        assert reply.text.startswith("You said: hello sim")
        assert [t for t in transcript.plain_items() if t.endswith(badge)] == [
            f"agent ▸ {reply.text}{badge}"
        ]
        # Nothing measured: the status bar shows no p50.
        assert app.query_one(HeardP50).text is None
        await pilot.press("ctrl+x")
        await until(pilot, "the ended screen", lambda: isinstance(app.screen, EndedScreen))
        screen = app.screen
        assert isinstance(screen, EndedScreen)
        assert screen.summary.latency_line() == "latency: no measured turns"
        await pilot.press("q")
