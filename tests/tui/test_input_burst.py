"""Typed lines reach the session exactly once each, in order, whatever the typing speed."""

from __future__ import annotations

from textual import events

from fishtalk.core import conversation as c
from fishtalk.core.protocol import UserMessage
from fishtalk.tui.widgets.message_input import NEWLINE_MARK, MessageInput
from fishtalk.tui.widgets.transcript import Transcript

from .helpers import ScriptedSession, connected, drawn, make_app


def typed_texts(session: ScriptedSession) -> list[str]:
    """Every typed turn the session was given, in order."""
    return [seg.text for seg in session.state.transcript if seg.typed]


async def test_fast_typed_lines_each_reach_the_session_once_in_order() -> None:
    session = ScriptedSession()
    app = make_app(session)
    lines = [f"{n} y" for n in range(20)]
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        for line in lines:
            await pilot.press(*line, "enter")
        await drawn(pilot, session)
        assert typed_texts(session) == lines
        assert app.query_one(MessageInput).value == ""


async def test_a_burst_of_keys_faster_than_the_app_each_line_once_in_order() -> None:
    # A paste tool or a fast typist: every key is queued before the app handles any.
    session = ScriptedSession()
    app = make_app(session)
    lines = [f"burst {n} yes" for n in range(50)]
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        box = app.query_one(MessageInput)
        for line in lines:
            for char in line:
                key = "space" if char == " " else char
                app.post_message(events.Key(key, char))
            app.post_message(events.Key("enter", "\r"))
        for _ in range(500):
            if len(typed_texts(session)) >= len(lines) and box.value == "":
                break
            await pilot.pause(0.01)
        await drawn(pilot, session)
        assert typed_texts(session) == lines
        assert session.commands.count("send_text") == len(lines)
        assert box.value == ""


def sent_messages(session: ScriptedSession) -> list[str]:
    """The text of every ``user.message`` the session published."""
    return [
        e.event.text
        for e in session.effects
        if isinstance(e, c.SendClientEvent) and isinstance(e.event, UserMessage)
    ]


async def test_a_multi_line_paste_is_sent_as_one_turn_with_its_newlines() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        box = app.query_one(MessageInput)
        box.post_message(events.Paste("first line\r\nsecond line\nthird [b]line[/b]\n"))
        for _ in range(200):
            if box.value:
                break
            await pilot.pause(0.01)
        # One line in the box, the breaks visible.
        assert box.value == f"first line{NEWLINE_MARK}second line{NEWLINE_MARK}third [b]line[/b]"
        await pilot.press("enter")
        await drawn(pilot, session)
        expected = "first line\nsecond line\nthird [b]line[/b]"
        assert typed_texts(session) == [expected]
        assert sent_messages(session) == [expected]
        assert box.value == ""
        # Shown as sent, on three lines, literally.
        lines = app.query_one(Transcript).text_lines()
        assert lines[0].startswith("you ⌨ first line")
        assert lines[1].strip() == "second line"
        assert lines[2].strip().startswith("third [b]line[/b]")


async def test_a_paste_between_typed_lines_keeps_every_line_in_order() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        box = app.query_one(MessageInput)
        await pilot.press(*"before", "enter")
        app.post_message(events.Paste("a\nb"))
        app.post_message(events.Key("enter", "\r"))
        for char in "after":
            app.post_message(events.Key(char, char))
        app.post_message(events.Key("enter", "\r"))
        for _ in range(300):
            if len(typed_texts(session)) >= 3:
                break
            await pilot.pause(0.01)
        assert typed_texts(session) == ["before", "a\nb", "after"]
        assert box.value == ""
