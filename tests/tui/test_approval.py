"""Client tools configured with ``approve = "ask"`` ask through a modal screen.

No key typed before the question was seen may answer it: the dialog is disarmed for a
moment, answers only with its buttons (Deny focused), and whatever the user was typing
goes on into the message box.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from support.scripted import ScriptedSession
from textual import events
from textual.pilot import Pilot
from textual.widgets import Button

from fishtalk.engine.host import HostLink
from fishtalk.engine.tools.registry import ApprovalRequest
from fishtalk.tui.run import TuiHost
from fishtalk.tui.screens.approve import ApprovalScreen
from fishtalk.tui.widgets.message_input import MessageInput
from fishtalk.tui.widgets.tools import ToolPanel

from .helpers import FishtalkApp, client_call, connected, drawn, make_app

REQUEST = ApprovalRequest(
    call_id="c1",
    tool_name="open_url",
    params={"url": "https://example.com/[bold]x[/]\x1b[31m"},
    summary="open https://example.com in the browser",
)


async def until(pilot: Pilot[int], condition: Callable[[], bool], what: str) -> None:
    """Wait (bounded) until ``condition`` holds."""
    for _ in range(500):
        if condition():
            return
        await pilot.pause(0.01)
    raise AssertionError(f"never happened: {what}")


def linked(app: FishtalkApp) -> HostLink:
    return HostLink(TuiHost(app))


async def armed_dialog(pilot: Pilot[int]) -> ApprovalScreen:
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the dialog opened")
    screen = app.screen
    assert isinstance(screen, ApprovalScreen)
    await until(pilot, lambda: screen.armed, "the dialog armed")
    await pilot.pause()
    return screen


async def _ask(key: str) -> tuple[bool, str]:
    """Open the question, wait until it takes answers, then press ``key`` (or a button)."""
    app = make_app(ScriptedSession())
    link = linked(app)
    async with app.run_test(size=(80, 24)) as pilot:
        task = asyncio.ensure_future(link.approve(REQUEST))
        screen = await armed_dialog(pilot)
        shown = "\n".join(s.text for s in screen._compositor.render_strips())
        if key.startswith("#"):
            await pilot.click(key)
        else:
            await pilot.press(key)
        answer = await asyncio.wait_for(task, 10)
        assert not isinstance(app.screen, ApprovalScreen)
    return answer, shown


async def test_yes_runs_the_tool() -> None:
    answer, shown = await _ask("#approve-allow")
    assert answer is True
    assert "open_url" in shown
    assert "[bold]x[/]" in shown
    assert "\\u001b[31m" in shown  # JSON-escaped, inert
    assert "\x1b" not in shown
    assert "Allow" in shown
    assert "Deny" in shown


async def test_no_and_escape_decline() -> None:
    assert (await _ask("#approve-deny"))[0] is False
    assert (await _ask("escape"))[0] is False
    # Deny has the focus: a stray Enter declines, it never allows.
    assert (await _ask("enter"))[0] is False


async def test_allow_by_keyboard_takes_a_deliberate_move() -> None:
    app = make_app(ScriptedSession())
    async with app.run_test(size=(80, 24)) as pilot:
        task = asyncio.ensure_future(linked(app).approve(REQUEST))
        screen = await armed_dialog(pilot)
        assert screen.focused is screen.query_one("#approve-deny", Button)
        await pilot.press("left")
        assert screen.focused is screen.query_one("#approve-allow", Button)
        await pilot.press("enter")
        assert await asyncio.wait_for(task, 10) is True


async def test_typing_when_the_question_opens_neither_answers_nor_is_lost() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected())
        box = app.query_one(MessageInput)
        await pilot.press(*"yes")
        # The agent asks right then; the user's fingers are already further on.
        task = asyncio.ensure_future(linked(app).approve(REQUEST))
        for char in " please y":
            app.post_message(events.Key("space" if char == " " else char, char))
        app.post_message(events.Key("enter", "\r"))
        app.post_message(events.Key("escape", None))
        screen = await armed_dialog(pilot)
        # Nothing typed so far answered the question, and every letter is in the box.
        assert not task.done()
        assert isinstance(app.screen, ApprovalScreen)
        await until(pilot, lambda: box.value == "yes please y", "the typing reached the box")
        # Armed now: letters and pastes still go to the box, never to the dialog.
        await pilot.press("y", "backspace", "!", "space")
        app.post_message(events.Paste(" and\nmore"))
        await until(
            pilot, lambda: box.value == "yes please y!  and⏎more", "more typing reached the box"
        )
        assert not task.done()
        assert app.screen is screen
        # Nothing was sent on the user's behalf either.
        assert session.commands.count("send_text") == 0
        await pilot.click("#approve-allow")
        assert await asyncio.wait_for(task, 10) is True
        # Back at the chat, the sentence is there to finish and send.
        await until(pilot, lambda: box.has_focus, "the message box has the focus again")
        await pilot.press("enter")
        await drawn(pilot, session)
        typed = [seg.text for seg in session.state.transcript if seg.typed]
        assert typed == ["yes please y!  and\nmore"]


async def test_a_timed_out_question_goes_away() -> None:
    app = make_app(ScriptedSession())
    async with app.run_test(size=(80, 24)) as pilot:
        task = asyncio.ensure_future(asyncio.wait_for(linked(app).approve(REQUEST), 0.3))
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the dialog opened")
        try:
            await asyncio.wait_for(task, 10)
        except TimeoutError:
            pass
        else:
            raise AssertionError("the question was answered")
        await until(pilot, lambda: not isinstance(app.screen, ApprovalScreen), "it went away")


async def test_hanging_up_during_a_question_closes_it_and_ends_the_card() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected(), client_call("c1", "open_url", 2.0, {"url": "x"}))
        await drawn(pilot, session)
        task = asyncio.ensure_future(linked(app).approve(REQUEST))
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), "the dialog opened")
        await pilot.press("ctrl+x")
        assert await asyncio.wait_for(task, 10) is False
        await drawn(pilot, session)
        assert session.state.ended
        assert not any(isinstance(s, ApprovalScreen) for s in app.screen_stack)
        view = app.query_one(ToolPanel).view("c1")
        assert view is not None
        text = str(view.render())
        assert "running" not in text
        assert "cancelled" in text
        assert not view.has_class("-running")


async def test_without_an_app_nothing_runs() -> None:
    link = HostLink()
    request = ApprovalRequest(call_id="c", tool_name="t", params={})
    assert await link.approve(request) is False
