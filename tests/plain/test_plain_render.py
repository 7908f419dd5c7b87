"""The plain front end's rendering (pure: reducer states in, text out) and the session's
behaviour before any network (commands before run, bad settings)."""

from __future__ import annotations

import asyncio
import io

from fishtalk.cli.exits import exit_code_for, exit_code_of
from fishtalk.cli.launch import build_session
from fishtalk.cli.settings import Settings
from fishtalk.core import conversation as conv
from fishtalk.core import protocol as p
from fishtalk.plain.chat import PlainChat, _answered
from fishtalk.plain.render import PlainRenderer, stripped


def test_stripped_strips_escapes_and_controls() -> None:
    nasty = (
        "a\x1b[31mred\x1b[0m b\x1b]0;title\x07c \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ "
        "d\x9b2Je\x07f\rg\nh\u202eevil\x00"
    )
    out = stripped(nasty)
    assert "\x1b" not in out
    assert "\x9b" not in out
    assert all(ch.isprintable() for ch in out)
    assert "red" in out
    assert "link" in out
    assert "title" not in out
    assert "evil" in out


class _Script:
    """Feeds inputs to the reducer and the renderer, like the session does."""

    def __init__(self, *, stream: bool) -> None:
        self.out = io.StringIO()
        self.renderer = PlainRenderer(self.out, stream_agent=stream)
        self.state = conv.initial_state()
        self.at = 0.0

    def feed(self, inp: conv.Input) -> None:
        previous = self.state
        self.state, _ = conv.reduce(previous, inp)
        self.renderer.render(self.state, conv.changes(previous, self.state))

    def t(self) -> float:
        self.at += 0.1
        return self.at

    def connect(self) -> None:
        self.feed(conv.Connected(local_identity="user-1", at=self.t()))
        self.feed(
            conv.ParticipantJoined(
                identity="agent", at=self.t(), attributes={p.ATTR_AGENT_STATE: "listening"}
            )
        )

    def reply(self, seg: str, chunks: list[str]) -> None:
        self.feed(conv.TranscriptStreamOpened("s-" + seg, seg, "agent", final=False, at=self.t()))
        for chunk in chunks:
            self.feed(conv.TranscriptStreamChunk("s-" + seg, seg, chunk, at=self.t()))
        self.feed(conv.TranscriptStreamClosed("s-" + seg, seg, at=self.t()))


def test_pipe_output_has_only_finished_lines() -> None:
    script = _Script(stream=False)
    script.connect()
    script.feed(conv.SendText("hi\x1b[2J", at=script.t()))
    script.reply("a1", ["Hello ", "there", "\x1b[31m!"])
    lines = script.out.getvalue().splitlines()
    assert lines == [
        "* connected",
        "* agent listening",
        "you> hi",
        "agent: Hello there!",
    ]


def test_terminal_output_streams_the_agent_line() -> None:
    script = _Script(stream=True)
    script.connect()
    script.reply("a1", ["Hello ", "there."])
    assert script.out.getvalue().endswith("agent: Hello there.\n")
    assert script.out.getvalue().count("agent:") == 1


def test_a_line_during_streaming_does_not_lose_the_reply() -> None:
    script = _Script(stream=True)
    script.connect()
    script.feed(conv.TranscriptStreamOpened("s", "a1", "agent", final=False, at=script.t()))
    script.feed(conv.TranscriptStreamChunk("s", "a1", "Part one, ", at=script.t()))
    script.feed(conv.AgentEventReceived(p.AgentError(code="provider_error"), at=script.t()))
    script.feed(conv.TranscriptStreamChunk("s", "a1", "part two.", at=script.t()))
    script.feed(conv.TranscriptStreamClosed("s", "a1", at=script.t()))
    text = script.out.getvalue()
    assert "agent: Part one,  …\n! An upstream model" in text
    assert text.endswith("agent: Part one, part two.\n")


def test_tool_cards_and_interrupted_segments() -> None:
    script = _Script(stream=False)
    script.connect()
    script.feed(
        conv.AgentEventReceived(
            p.ToolCompleted(
                call_id="c1",
                tool_name="look\x1b[1mup",
                tool_source="webhook",
                output='{"a":1}',
                output_truncated=True,
            ),
            at=script.t(),
        )
    )
    script.feed(conv.TranscriptStreamOpened("s", "a1", "agent", final=False, at=script.t()))
    script.feed(conv.TranscriptStreamChunk("s", "a1", "I was say", at=script.t()))
    script.feed(conv.Interrupt(at=script.t()))
    script.feed(conv.TranscriptStreamChunk("s", "a1", "ing more", at=script.t()))
    script.feed(conv.TranscriptStreamClosed("s", "a1", at=script.t()))
    lines = script.out.getvalue().splitlines()
    assert '[tool] lookup (webhook) completed: {"a":1}…' in lines
    assert "agent: I was say [interrupted]" in lines


def test_end_of_input_waits_for_a_reply_after_the_last_turn() -> None:
    script = _Script(stream=False)
    script.connect()
    script.reply("greeting", ["Hi!"])
    script.feed(conv.SendText("question", at=script.t()))
    sent_at = script.state.clock.now
    assert not _answered(script.state, sent_at)
    script.reply("answer", ["An answer."])
    assert _answered(script.state, sent_at)


def test_exit_codes_per_reason() -> None:
    assert [
        exit_code_for(r)
        for r in (
            "user_hangup",
            "agent_hangup",
            "conversation_timeout",
            "escalated",
            "connection_lost",
            "connection_failed",
            "session_expired",
            "some_new_reason",
        )
    ] == [0, 0, 0, 0, 7, 7, 6, 0]


async def test_hangup_before_run_ends_at_once_without_network() -> None:
    session = build_session(
        Settings.model_validate({"session": {"agent_id": "x", "text_only": True}})
    )
    session.send_text("queued")
    session.hangup()
    session.hangup()
    result = await asyncio.wait_for(session.run(), 5)
    assert (result.reason, exit_code_of(result)) == ("user_hangup", 0)
    assert [seg.queued for seg in session.state.transcript] == [True]


async def test_missing_agent_id_is_a_usage_error() -> None:
    session = build_session(Settings.model_validate({"session": {"text_only": True}}))
    result = await asyncio.wait_for(session.run(), 5)
    assert exit_code_of(result) == 2
    assert "agent" in result.message


async def test_unreachable_api_is_exit_5() -> None:
    settings = Settings.model_validate(
        {
            "api": {"url": "http://127.0.0.1:9", "api_key": "k", "timeout": 2},
            "session": {"agent_id": "x", "text_only": True},
        }
    )
    result = await asyncio.wait_for(build_session(settings).run(), 30)
    assert exit_code_of(result) == 5
    assert result.reason == "session_request_failed"


# --- one line per fact, in the order things happened (issue 11 outcomes 5 and 8) -----------


def test_a_typed_line_prints_when_sent_never_before_connected() -> None:
    script = _Script(stream=False)
    script.feed(conv.SendText("early bird", at=script.t()))
    assert script.out.getvalue() == ""  # queued: nothing has happened yet
    script.connect()
    assert script.out.getvalue().splitlines() == [
        "* connected",
        "* agent listening",
        "you> early bird",
    ]


def test_a_typed_line_waits_for_the_greeting_then_follows_it() -> None:
    script = _Script(stream=False)
    script.feed(conv.SendText("hello", at=script.t()))
    script.feed(conv.Connected(local_identity="user-1", at=script.t()))
    script.feed(
        conv.ParticipantJoined(
            identity="agent", at=script.t(), attributes={p.ATTR_AGENT_STATE: "speaking"}
        )
    )
    script.reply("greeting", ["Welcome!"])
    script.feed(conv.AttributesChanged("agent", {p.ATTR_AGENT_STATE: "listening"}, at=script.t()))
    lines = script.out.getvalue().splitlines()
    assert lines.index("agent: Welcome!") < lines.index("you> hello")
    assert lines.index("* connected") < lines.index("you> hello")
    assert lines.count("you> hello") == 1


def test_the_end_prints_every_finished_line_and_no_empty_one() -> None:
    script = _Script(stream=False)
    script.connect()
    script.feed(conv.TranscriptStreamOpened("s1", "a1", "agent", final=False, at=script.t()))
    script.feed(conv.TranscriptStreamChunk("s1", "a1", "Last words", at=script.t()))
    script.feed(conv.TranscriptStreamOpened("s2", "a2", "agent", final=False, at=script.t()))
    script.feed(conv.Hangup(at=script.t()))
    lines = script.out.getvalue().splitlines()
    assert "agent: Last words" in lines
    assert "agent: " not in lines
    assert not [line for line in lines if line.strip() == "agent:"]


def test_the_agent_hangup_is_left_to_the_closing_line() -> None:
    """``The agent ended the call.`` is the caller's closing line; the renderer does not
    print it too (it used to appear twice)."""
    script = _Script(stream=False)
    script.connect()
    script.feed(conv.AgentEventReceived(p.SessionEnded(reason="agent_hangup"), at=script.t()))
    script.feed(conv.Disconnected(at=script.t()))
    assert "ended the call" not in script.out.getvalue()
    assert script.state.end_reason == "agent_hangup"


def test_a_failure_before_connecting_is_left_to_the_cli() -> None:
    """The CLI prints why the session could not start, once, on stderr; plain mode does not
    repeat it as a ``!`` line on stdout."""
    script = _Script(stream=False)
    script.feed(conv.ConnectFailed(at=script.t(), code="session_request_failed", detail="HTTP 404"))
    assert script.out.getvalue() == ""
    script = _Script(stream=False)
    script.feed(conv.Connected(local_identity="user-1", at=script.t()))
    script.feed(conv.TimerFired(conv.TIMER_AGENT_JOIN, at=script.t() + 20))
    assert "!" not in script.out.getvalue()
    assert script.state.end_reason == "connection_failed"


def test_an_error_during_the_call_is_printed() -> None:
    script = _Script(stream=False)
    script.connect()
    script.feed(conv.LocalError("tool_failed", at=script.t(), detail="boom"))
    assert "! A client tool failed. (boom)" in script.out.getvalue().splitlines()


def test_a_tool_event_renders_only_that_card() -> None:
    """1,000 tool cards: one more event writes one line and looks at nothing else."""
    script = _Script(stream=False)
    script.connect()
    for n in range(1000):
        script.feed(
            conv.AgentEventReceived(
                p.ToolCompleted(call_id=f"c{n}", tool_name="t", tool_source="webhook"),
                at=script.t(),
            )
        )
    before = script.out.getvalue().count("\n")
    script.feed(
        conv.AgentEventReceived(
            p.ToolStarted(call_id="new", tool_name="t", tool_source="webhook"), at=script.t()
        )
    )
    assert script.out.getvalue().count("\n") == before + 1
    assert script.state.tool_log._items is None  # no tuple of every card was built


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_output_is_reported_once_not_raised() -> None:
    closed: list[bool] = []
    renderer = PlainRenderer(
        _ClosedPipe(), stream_agent=False, on_closed=lambda: closed.append(True)
    )
    previous = conv.initial_state()
    state, _ = conv.reduce(previous, conv.Connected(local_identity="u", at=1.0))
    renderer.render(state, conv.changes(previous, state))
    renderer.line("more")
    renderer.flush()
    assert renderer.closed
    assert closed == [True]


async def test_a_closed_output_hangs_up_the_call() -> None:
    session = build_session(
        Settings.model_validate({"session": {"agent_id": "x", "text_only": True}})
    )
    chat = PlainChat(session, stdin=io.StringIO(), stdout=_ClosedPipe(), stream_agent=False)
    chat._note("hello")
    assert chat.output_closed
    assert session.state.ended
    assert session.state.end_reason == "user_hangup"
    result = await asyncio.wait_for(session.run(), 5)
    assert exit_code_of(result) == 0
