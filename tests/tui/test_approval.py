"""Client tools configured with ``approve = "ask"`` ask through a modal screen."""

from __future__ import annotations

import asyncio

from fishtalk.host import HostLink
from fishtalk.testing.scripted import ScriptedSession
from fishtalk.tools.registry import ApprovalRequest
from fishtalk.tui.run import TuiHost
from fishtalk.tui.screens.approve import ApprovalScreen

from .helpers import make_app


async def _ask(key: str) -> tuple[bool, str]:
    app = make_app(ScriptedSession())
    link = HostLink(TuiHost(app))
    request = ApprovalRequest(
        call_id="c1",
        tool_name="open_url",
        params={"url": "https://example.com/[bold]x[/]\x1b[31m"},
        summary="open https://example.com in the browser",
    )
    async with app.run_test(size=(80, 24)) as pilot:
        task = asyncio.ensure_future(link.approve(request))
        for _ in range(100):
            if isinstance(app.screen, ApprovalScreen):
                break
            await pilot.pause(0.01)
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.pause()
        shown = "\n".join(s.text for s in app.screen._compositor.render_strips())
        await pilot.press(key)
        answer = await asyncio.wait_for(task, 10)
        assert not isinstance(app.screen, ApprovalScreen)
    return answer, shown


async def test_yes_runs_the_tool() -> None:
    answer, shown = await _ask("y")
    assert answer is True
    assert "open_url" in shown
    assert "[bold]x[/]" in shown
    assert "\\u001b[31m" in shown  # JSON-escaped, inert
    assert "\x1b" not in shown


async def test_no_and_escape_decline() -> None:
    assert (await _ask("n"))[0] is False
    assert (await _ask("escape"))[0] is False


async def test_without_an_app_nothing_runs() -> None:
    link = HostLink()
    request = ApprovalRequest(call_id="c", tool_name="t", params={})
    assert await link.approve(request) is False
