"""The TUI's ended screen as text, and the line left on the terminal after it, for tests
that read what they say."""

from __future__ import annotations

import io

from textual.pilot import Pilot
from textual.screen import Screen

from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.run import report_end
from fishtalk.tui.screens.ended import EndedScreen

WAIT = 30.0


def ended_box(screen: Screen[object]) -> str:
    """The ended box's text as drawn, one table row a line (a value wrapped onto the next
    lines is joined back), its spaces collapsed: ``audio worst: reply 2: ...``."""
    drawn = [strip.text for strip in screen._compositor.render_strips()]
    inside = [line.split("█")[1] for line in drawn if line.count("█") >= 2]
    rows: list[str] = []
    for line in inside:
        if rows and rows[-1] and line.startswith("    ") and line.strip():
            rows[-1] += " " + line.strip()
        else:
            rows.append(" ".join(line.split()))
    return "\n".join(rows)


async def leave_ended(pilot: Pilot[int]) -> tuple[EndedScreen, str, str]:
    """Wait (bounded) for the ended screen, read it, leave with ``q``: the screen, its box
    (:func:`ended_box`) and the line the app leaves on stdout once it has exited."""
    app = pilot.app
    assert isinstance(app, FishtalkApp)
    for _ in range(int(WAIT / 0.02)):
        if isinstance(app.screen, EndedScreen):
            break
        await pilot.pause(0.02)
    screen = app.screen
    assert isinstance(screen, EndedScreen), f"no ended screen within {WAIT:g} s"
    await pilot.pause()
    shown = ended_box(screen)
    await pilot.press("q")
    await pilot.pause()
    out = io.StringIO()
    report_end(app, stdout=out, stderr=io.StringIO())
    return screen, shown, out.getvalue().splitlines()[0]
