"""Pilot tests of the TUI against the pure scripted driver (the real reducer, no network)."""

from __future__ import annotations

import itertools

import pytest
from rich.color import Color
from rich.style import Style
from rich.text import Text
from support.scripted import ScriptedSession

from fishtalk.cli.exits import exit_code_of
from fishtalk.core import conversation as c
from fishtalk.core.protocol import UserHangup, UserInterrupt, UserMessage
from fishtalk.tui.screens.ended import EndedScreen
from fishtalk.tui.screens.help import HelpScreen
from fishtalk.tui.widgets.status import AgentIndicator, ConnectionStatus, ModeFlags
from fishtalk.tui.widgets.tools import ToolPanel
from fishtalk.tui.widgets.transcript import Transcript, render_segment

from .helpers import (
    FakeDevices,
    Recorder,
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


def sent(session: ScriptedSession) -> list[object]:
    return [e.event for e in session.effects if isinstance(e, c.SendClientEvent)]


async def test_connecting_then_connected_and_agent_states() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        status = app.query_one(ConnectionStatus)
        indicator = app.query_one(AgentIndicator)
        assert status.has_class("-connecting")
        assert indicator.has_class("-state-initializing")
        session.feed(*connected())
        await drawn(pilot, session)
        assert status.has_class("-connected")
        assert indicator.has_class("-state-listening")
        seen = []
        for value in ("thinking", "speaking", "idle", "listening", "initializing", "dreaming"):
            session.feed(agent_state(value, 5.0))
            await drawn(pilot, session)
            classes = [n for n in indicator.classes if n.startswith("-state-")]
            assert len(classes) == 1
            seen.append(classes[0])
        assert seen == [
            "-state-thinking",
            "-state-speaking",
            "-state-idle",
            "-state-listening",
            "-state-initializing",
            "-state-unknown",
        ]
        assert "dreaming" in str(indicator.render())


async def test_agent_text_streams_in_place() -> None:
    session = ScriptedSession()
    recorder = Recorder()
    app = make_app(session)
    async with app.run_test(size=(100, 30), message_hook=recorder) as pilot:
        session.feed(*connected())
        transcript = app.query_one(Transcript)
        inputs = agent_says("a1", ["Hello", " there,", " friend."], 2.0, close=False)
        session.feed(inputs[0])
        await drawn(pilot, session)
        assert app.query_one(AgentIndicator).has_class("-state-speaking")
        for chunk in inputs[1:]:
            session.feed(chunk)
            await drawn(pilot, session)
        assert transcript.item_count == 1
        assert transcript.plain_items() == ["agent ▸ Hello there, friend. ▍"]
        session.feed(c.TranscriptStreamClosed("stream-a1", "a1", 3.0))
        await drawn(pilot, session)
        assert transcript.plain_items() == ["agent ▸ Hello there, friend."]
    # Every reduction was announced; the texts grow monotonically in one segment.
    texts = [s.transcript[0].text for s in recorder.states() if s.transcript]
    assert texts[-1] == "Hello there, friend."
    assert all(b.startswith(a) for a, b in itertools.pairwise(texts))


async def test_user_interim_is_replaced_then_final() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        transcript = app.query_one(Transcript)
        session.feed(*user_interim("u1", 1, "what is", 2.0))
        await drawn(pilot, session)
        segment = session.state.transcript[0]
        assert not segment.final
        rendered = render_segment(segment)
        assert rendered.plain == "you ▸ what is …"
        assert any("italic" in str(span.style) for span in rendered.spans)
        session.feed(*user_interim("u1", 2, "what is the wea", 2.5))
        await drawn(pilot, session)
        assert transcript.plain_items() == ["you ▸ what is the wea …"]
        session.feed(*user_interim("u1", 3, "What is the weather?", 3.0, final=True))
        await drawn(pilot, session)
        assert transcript.plain_items() == ["you ▸ What is the weather?"]
        assert not any(
            "italic" in str(s.style) for s in render_segment(session.state.transcript[0]).spans
        )


async def test_typed_turn_shows_at_once_and_is_sent() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"hi")
        await pilot.press("enter")
        await drawn(pilot, session)
        transcript = app.query_one(Transcript)
        # Not connected yet: shown at once, marked queued, not sent.
        assert transcript.plain_items() == ["you ⌨ hi  (queued)  ·text reply"]
        assert UserMessage(text="hi", audio=False) not in sent(session)
        session.feed(*connected())
        await drawn(pilot, session)
        assert transcript.plain_items() == ["you ⌨ hi  ·text reply"]
        assert UserMessage(text="hi", audio=False) in sent(session)
        assert app.query_one("#input").value == ""  # type: ignore[attr-defined]
        # Blank input sends nothing.
        await pilot.press("space", "enter")
        assert session.commands.count("send_text") == 1


async def test_typing_sends_throttled_activity() -> None:
    session = ScriptedSession()
    session.feed(*connected())
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"hello there")
        assert session.commands.count("activity") == 1
        assert sent(session).count(c.UserActivity()) == 1


async def test_interrupt_marks_segment_and_drops_late_words() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected(), *agent_says("a1", ["One", " two"], 2.0, close=False))
        await drawn(pilot, session)
        await pilot.press("escape")
        session.feed(c.TranscriptStreamChunk("stream-a1", "a1", " three", 3.0))
        await drawn(pilot, session)
        assert "interrupt" in session.commands
        assert UserInterrupt() in sent(session)
        items = app.query_one(Transcript).plain_items()
        assert items == ["agent ▸ One two  ⏹ interrupted"]


async def test_tool_cards_lifecycle() -> None:
    session = ScriptedSession()
    app = make_app(session, clock=lambda: 4.5)
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(ToolPanel)
        session.feed(*connected())
        session.feed(tool_started("t1", "get_weather", 3.0, input='{"city": "Paris"}'))
        await drawn(pilot, session)
        view = panel.view("t1")
        assert view is not None
        assert view.running
        assert view.has_class("-running")
        text = str(view.render())
        assert "get_weather" in text
        assert "webhook" in text
        assert "1.5s" in text
        assert "running" in text
        session.feed(
            tool_completed("t1", "get_weather", 4.0, output='{"temp": 21}', output_truncated=True)
        )
        session.feed(tool_failed("t2", "lookup", 4.2, source="mcp", error="upstream 500"))
        await drawn(pilot, session)
        assert [v.card.call_id for v in panel.card_views] == ["t1", "t2"]
        done = str(panel.view("t1").render())  # type: ignore[union-attr]
        assert "completed" in done
        assert "[truncated]" in done
        assert "1.0s" in done
        failed = panel.view("t2")
        assert failed is not None
        assert failed.has_class("-failed")
        assert "upstream 500" in str(failed.render())
        # Client tool: our local handler's outcome shows on the card.
        session.feed(client_call("t3", "open_url", 5.0, {"url": "https://example.com"}))
        session.feed(c.ClientToolFinished("t3", "ok", 5.5, result_preview='{"opened": true}'))
        await drawn(pilot, session)
        local = str(panel.view("t3").render())  # type: ignore[union-attr]
        assert "open_url" in local
        assert "client" in local
        assert "local ✓ ok" in local
        assert '{"opened": true}' in local
        # Keyboard: focus the panel, expand the newest card: payloads pretty-printed.
        panel.focus()
        await pilot.press("up")
        await pilot.press("up")
        await pilot.press("up")
        await pilot.press("enter")
        first = panel.view("t1")
        assert first is not None
        assert first.expanded
        assert '"temp": 21' in str(first.render())


async def test_tool_failure_toast() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected(), client_call("t1", "nope", 2.0, {}))
        session.feed(c.ClientToolFinished("t1", "unknown", 2.1, error="no tool named nope"))
        await drawn(pilot, session)
        messages = [n.message for n in app._notifications]
        assert any("client tool failed" in m.lower() for m in messages), messages


async def test_mute_and_spoken_toggles() -> None:
    session = ScriptedSession(audio=FakeDevices())  # a microphone to mute
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        session.feed(*connected())
        flags = app.query_one(ModeFlags)
        await pilot.press("ctrl+o")
        await drawn(pilot, session)
        assert session.state.muted
        assert flags.has_class("-muted")
        await pilot.press("ctrl+t")
        await drawn(pilot, session)
        assert session.state.spoken
        assert "replies: spoken" in str(flags.render())
        await pilot.press("ctrl+o", "ctrl+t")
        await drawn(pilot, session)
        assert not session.state.muted
        assert not session.state.spoken


async def test_reconnecting_and_back() -> None:
    session = ScriptedSession()
    recorder = Recorder()
    app = make_app(session)
    async with app.run_test(size=(100, 30), message_hook=recorder) as pilot:
        session.feed(*connected())
        status = app.query_one(ConnectionStatus)
        session.feed(c.Reconnecting(3.0))
        await drawn(pilot, session)
        assert status.has_class("-reconnecting")
        assert "reconnecting" in str(status.render())
        session.feed(c.Reconnected(4.0, ("agent",)))
        await drawn(pilot, session)
        assert status.has_class("-connected")
    statuses = [s.status for s in recorder.states()]
    assert statuses.index("reconnecting") < len(statuses) - statuses[::-1].index("connected")


async def test_hangup_shows_ended_screen_then_exits() -> None:
    session = ScriptedSession()
    recorder = Recorder()
    app = make_app(session)
    async with app.run_test(size=(100, 30), message_hook=recorder) as pilot:
        session.feed(
            *connected(), *agent_says("a1", ["Hi"], 2.0), *user_interim("u", 1, "yo", 3, final=True)
        )
        session.feed(tool_started("t1", "x", 3.5), tool_completed("t1", "x", 3.6))
        await drawn(pilot, session)
        await pilot.press("ctrl+x")
        for _ in range(100):
            if isinstance(app.screen, EndedScreen):
                break
            await pilot.pause(0.01)
        screen = app.screen
        assert isinstance(screen, EndedScreen)
        assert UserHangup() in sent(session)
        summary = screen.summary
        assert (summary.reason, summary.turns, summary.tools) == ("user_hangup", 2, 1)
        assert summary.reason_text == "You hung up."
        await pilot.press("q")
        await pilot.pause()
    assert exit_code_of(app.outcome) == 0
    assert [m.reason for m in recorder.finished()] == ["user_hangup"]


async def test_connection_lost_exit_code() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected(), c.Disconnected(5.0, "UNKNOWN_REASON"))
        for _ in range(100):
            if isinstance(app.screen, EndedScreen):
                break
            await pilot.pause(0.01)
        assert isinstance(app.screen, EndedScreen)
        assert app.screen.summary.reason == "connection_lost"
        assert app.query_one(ConnectionStatus).has_class("-ended")
        await pilot.press("enter")
        await pilot.pause()
    assert exit_code_of(app.outcome) == 7


async def test_session_error_before_connect() -> None:
    from fishtalk.core.errors import AuthenticationError

    class Refused(AuthenticationError):  # exits 3, by the CLI's table
        def __init__(self, message: str) -> None:
            super().__init__(message, status=401)

    class Failing(ScriptedSession):
        async def run(self):  # type: ignore[override]
            raise Refused("the API key was rejected (401)")

    session = Failing()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(100):
            if isinstance(app.screen, EndedScreen):
                break
            await pilot.pause(0.01)
        assert isinstance(app.screen, EndedScreen)
        assert app.screen.summary.reason_text == "the API key was rejected (401)"
        await pilot.press("q")
        await pilot.pause()
    assert exit_code_of(app.outcome) == 3


async def test_quit_hangs_up_and_exits_without_summary() -> None:
    session = ScriptedSession()
    session.feed(*connected())
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+q")
        await pilot.pause()
        await pilot.pause(0.05)
    assert UserHangup() in sent(session)
    assert exit_code_of(app.outcome) == 0


async def test_help_screen_and_question_mark_in_input() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("?")
        assert app.query_one("#input").value == "?"  # type: ignore[attr-defined]
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        app.query_one(Transcript).focus()
        await pilot.press("?")
        assert isinstance(app.screen, HelpScreen)


async def test_keys_rebind_from_config() -> None:
    session = ScriptedSession(audio=FakeDevices())  # a microphone to mute
    session.feed(*connected())
    app = make_app(session, keymap={"hangup": "f10", "mute": "f4"})
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+x")  # no longer bound: the input's own "cut"
        await pilot.pause()
        assert not session.state.ended
        await pilot.press("f4")
        assert session.state.muted
        await pilot.press("f10")
        await pilot.pause()
        assert session.state.ended
        assert session.state.end_reason == "user_hangup"


def test_unknown_key_action_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown key action"):
        make_app(ScriptedSession(), keymap={"explode": "f9"})


async def test_every_action_is_in_the_command_palette() -> None:
    app = make_app(ScriptedSession())
    async with app.run_test(size=(100, 30)):
        titles = {cmd.title for cmd in app.get_system_commands(app.screen)}
    for title in ("Interrupt", "Mute", "Spoken/text", "Hang up", "Help", "Quit"):
        assert title in titles
    assert {"Focus transcript", "Focus tools", "Focus input"} <= titles


async def test_focus_cycles_input_transcript_tools() -> None:
    app = make_app(ScriptedSession())
    async with app.run_test(size=(100, 30)) as pilot:
        order = []
        for _ in range(3):
            order.append(app.focused.id if app.focused else None)
            await pilot.press("tab")
        assert order == ["input", "transcript", "tools"]
        assert app.focused is not None
        assert app.focused.id == "input"


async def test_follow_mode_and_scrollback() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected())
        for i in range(40):
            session.feed(*agent_says(f"a{i}", [f"line {i}"], 2.0 + i))
        await drawn(pilot, session)
        transcript = app.query_one(Transcript)
        assert transcript.max_scroll_y > 0
        assert transcript.scroll_y == transcript.max_scroll_y  # following
        transcript.focus()
        await pilot.press("home")
        await pilot.pause()
        assert transcript.scroll_y == 0
        session.feed(*agent_says("more", ["new words"], 50.0))
        await drawn(pilot, session)
        assert transcript.scroll_y == 0  # reading scrollback: not yanked down
        await pilot.press("end")
        await pilot.pause()
        session.feed(*agent_says("more2", ["newer"], 51.0))
        await drawn(pilot, session)
        assert transcript.scroll_y == transcript.max_scroll_y


async def test_transcript_is_bounded_and_rerenders_only_changes() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        transcript.max_items = 50
        session.feed(*connected())
        for i in range(120):
            session.feed(*agent_says(f"a{i}", [f"segment {i}"], 2.0 + i))
        await drawn(pilot, session)
        assert transcript.item_count == 50
        assert transcript.hidden_count == 70
        assert transcript.text_lines()[0] == "… 70 earlier segments not shown"
        before = transcript.renders
        session.feed(*agent_says("last", ["a", "b", "c"], 500.0, close=False))
        await drawn(pilot, session)
        # Only the new (streaming) segment was wrapped again, not the other 49.
        assert transcript.renders - before <= 4


async def test_small_terminal_and_resize() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected(), *agent_says("a", ["word " * 60], 2.0))
        await drawn(pilot, session)
        transcript = app.query_one(Transcript)
        narrow = transcript.line_count
        await pilot.resize_terminal(140, 40)
        await pilot.pause()
        assert transcript.line_count < narrow
        assert all(len(line) <= transcript.size.width for line in transcript.text_lines())


def _luminance(color: Color | None) -> float:
    assert color is not None
    assert color.triplet is not None, color
    red, green, blue = color.triplet
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


async def test_no_color_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    session = ScriptedSession()
    app = make_app(session)
    assert app.no_color
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected(), *agent_says("a1", ["Hello"], 2.0))
        await pilot.press(*"hi", "enter")
        await drawn(pilot, session)
        # What reaches the terminal: the labels stand out by weight and reverse video,
        # not by a colour the monochrome filter turns into grey on grey.
        strips = app.screen._compositor.render_strips()
        labels: dict[str, list[Style]] = {}
        for strip in strips:
            for segment in strip:
                for label in ("agent ▸", "you ⌨"):
                    if label in segment.text:
                        assert segment.style is not None
                        labels.setdefault(label, []).append(segment.style)
        assert set(labels) == {"agent ▸", "you ⌨"}, labels
        for label, styles in labels.items():
            for style in styles:
                assert style.bold, (label, style)
                fg, bg = _luminance(style.color), _luminance(style.bgcolor)
                assert abs(fg - bg) >= 0.4, (label, style)
                for color in (style.color, style.bgcolor):
                    assert color is not None
                    assert color.triplet is not None
                    assert len(set(color.triplet)) == 1, (label, style)  # grey: no colour
        assert all(style.reverse for style in labels["agent ▸"])


def test_render_segment_marks() -> None:
    seg = c.Segment(1, "s", "agent", "agent", "cut", final=False, open=True, interrupted=True)
    assert isinstance(render_segment(seg), Text)
    assert render_segment(seg).plain == "agent ▸ cut  ⏹ interrupted"


async def test_ended_screen_shows_reason_and_summary_text() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected(), *agent_says("a1", ["Bye"], 2.0), c.Hangup(3.0))
        for _ in range(100):
            if isinstance(app.screen, EndedScreen):
                break
            await pilot.pause(0.01)
        await pilot.pause()
        screen_text = "\n".join(s.text for s in app.screen._compositor.render_strips())
        assert "Session ended" in screen_text
        assert "You hung up." in screen_text
        assert "1 (0 you, 1 agent)" in screen_text
        assert app.query_one(AgentIndicator).has_class("-state-ended")


async def test_tiny_terminal_does_not_crash() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(40, 12)) as pilot:
        session.feed(*connected(), *agent_says("a", ["tiny " * 30], 2.0))
        session.feed(tool_started("t1", "x" * 60, 3.0, input='{"a": 1}'))
        await drawn(pilot, session)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.resize_terminal(20, 8)
        await pilot.pause()
        assert app.is_running


async def test_actions_run_from_the_command_palette() -> None:
    session = ScriptedSession(audio=FakeDevices())  # a microphone to mute
    session.feed(*connected())
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Mute")
        for _ in range(100):
            await pilot.pause(0.02)
            if app.screen.query("CommandList Option"):
                break
        await pilot.press("enter")
        for _ in range(100):
            if session.state.muted:
                break
            await pilot.pause(0.02)
        assert session.state.muted


async def test_a_burst_of_updates_is_coalesced_into_few_frames() -> None:
    session = ScriptedSession()
    recorder = Recorder()
    app = make_app(session)
    async with app.run_test(size=(100, 30), message_hook=recorder) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        frames = app.renders
        handled = len(recorder.states())
        # 300 reductions without yielding to the app: queued snapshots replace each other.
        session.feed(*agent_says("a1", [f" w{i}" for i in range(300)], 2.0, close=False))
        await drawn(pilot, session)
        assert len(recorder.states()) - handled <= 3
        assert app.renders - frames <= 3
        assert app.query_one(Transcript).plain_items()[0].endswith("w299 ▍")


async def test_message_sequence_ends_with_the_session_finishing() -> None:
    session = ScriptedSession()
    recorder = Recorder()
    app = make_app(session)
    async with app.run_test(size=(100, 30), message_hook=recorder) as pilot:
        session.feed(*connected())
        await drawn(pilot, session)
        await pilot.press("ctrl+x")
        for _ in range(200):
            if recorder.finished():
                break
            await pilot.pause(0.01)
        await pilot.pause()
    kinds = [type(m).__name__ for m in recorder.messages]
    assert kinds[-1] == "CallEnded"
    assert kinds.count("CallEnded") == 1
    states = recorder.states()
    assert states[-1].status == "ended"
    assert [s.status for s in states].index("connected") < len(states) - 1


async def test_queued_turn_reads_not_sent_after_the_end() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"lost", "enter")
        await drawn(pilot, session)
        transcript = app.query_one(Transcript)
        assert transcript.plain_items() == ["you ⌨ lost  (queued)  ·text reply"]
        session.feed(c.ConnectFailed(2.0, detail="no network"))
        await drawn(pilot, session)
        assert transcript.plain_items() == [
            "you ⌨ lost  (not sent)  ·text reply",
            "⚠ error: Could not establish the realtime session. — no network",
        ]


async def test_input_history_recalls_sent_messages() -> None:
    session = ScriptedSession()
    session.feed(*connected())
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        box = app.query_one("#input")
        await pilot.press(*"first", "enter", *"second", "enter", *"dra")
        await pilot.press("up")
        assert box.value == "second"  # type: ignore[attr-defined]
        await pilot.press("up", "up")
        assert box.value == "first"  # type: ignore[attr-defined]
        await pilot.press("down", "down")
        assert box.value == "dra"  # type: ignore[attr-defined]
        await pilot.press("up", "enter")
        assert session.commands.count("send_text") == 3
        assert [s.text for s in session.state.transcript] == ["first", "second", "second"]
