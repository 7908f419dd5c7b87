"""Pilot tests for what a person sees at the edges: narrow status bars, Ctrl+C, the
summary left on the normal screen after the app exits."""

from __future__ import annotations

import pytest
from textual.geometry import Region

from fishtalk.tui.driver import ScriptedSession
from fishtalk.tui.widgets.meters import NO_AUDIO, LevelMeters

from .helpers import connected, drawn, make_app

SIZES = [(100, 30), (80, 24)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_no_audio_notice_stays_on_one_line(size: tuple[int, int]) -> None:
    session = ScriptedSession()  # NullAudio: no devices
    app = make_app(session)
    async with app.run_test(size=size) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        meters = app.query_one(LevelMeters)
        width, height = meters.size
        lines = [strip.text for strip in meters.render_lines(Region(0, 0, width, height))]
        assert lines[0].strip() == NO_AUDIO
        assert all(not line.strip() for line in lines[1:])
