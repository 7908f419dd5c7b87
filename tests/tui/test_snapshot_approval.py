"""SVG snapshot of the approval dialog, armed (see test_snapshots.py for the others).

Regenerate after an intended visual change with ``pytest tests/tui --snapshot-update``.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from fishtalk.engine.tools.registry import ApprovalRequest
from fishtalk.tui.screens.approve import ApprovalScreen

from .helpers import FakeDevices, ScriptedSession, client_call, connected, drawn, make_app
from .test_snapshots import SIZES, calm, quiet


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_approval_armed(snap_compare: Any, size: tuple[int, int]) -> None:
    """The tool question once armed: Allow and Deny buttons, Deny focused."""
    session = ScriptedSession(audio=FakeDevices())
    request = ApprovalRequest(
        call_id="t9",
        tool_name="open_url",
        params={"url": "https://example.com/docs"},
        summary="open https://example.com/docs in the browser",
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        await quiet(pilot)
        session.feed(*connected(), client_call("t9", "open_url", 2.0, dict(request.params)))
        await drawn(pilot, session)
        await calm(pilot)
        screen = ApprovalScreen(request, arm_delay=0.05)
        pilot.app.push_screen(screen)
        for _ in range(500):
            if screen.armed:
                break
            await pilot.pause(0.01)
        assert screen.armed
        await pilot.pause()

    assert snap_compare(make_app(session), terminal_size=size, run_before=run_before)
