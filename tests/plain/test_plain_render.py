"""The plain front end's rendering (pure: reducer states in, text out) and the session's
behaviour before any network (commands before run, bad settings)."""

from __future__ import annotations

import asyncio
import io

from fishtalk import conversation as conv
from fishtalk import protocol as p
from fishtalk.config import Settings
from fishtalk.errors import exit_code_for
from fishtalk.launch import build_session, exit_code
from fishtalk.plain import PlainRenderer, _answered, clean


def test_clean_strips_escapes_and_controls() -> None:
    nasty = (
        "a\x1b[31mred\x1b[0m b\x1b]0;title\x07c \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ "
        "d\x9b2Je\x07f\rg\nh\u202eevil\x00"
    )
    out = clean(nasty)
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
        self.state, _ = conv.reduce(self.state, inp)
        self.renderer.render(self.state)

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
    assert (result.reason, exit_code(result)) == ("user_hangup", 0)
    assert [seg.queued for seg in session.state.transcript] == [True]


async def test_missing_agent_id_is_a_usage_error() -> None:
    session = build_session(Settings.model_validate({"session": {"text_only": True}}))
    result = await asyncio.wait_for(session.run(), 5)
    assert exit_code(result) == 2
    assert "agent" in result.message


async def test_unreachable_api_is_exit_5() -> None:
    settings = Settings.model_validate(
        {
            "api": {"url": "http://127.0.0.1:9", "api_key": "k", "timeout": 2},
            "session": {"agent_id": "x", "text_only": True},
        }
    )
    result = await asyncio.wait_for(build_session(settings).run(), 30)
    assert exit_code(result) == 5
    assert result.reason == "session_request_failed"
