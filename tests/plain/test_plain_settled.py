"""Line mode shows settled facts: ``* connected`` first, agent states once they hold, and a
client tool's outcome once (pure: reducer states in, text out; the live hold on a loop)."""

from __future__ import annotations

import asyncio
import io

from fishtalk.core import conversation as conv
from fishtalk.core import protocol as p
from fishtalk.plain.render import STATE_SETTLE, PlainRenderer


class _Out(io.StringIO):
    """An output that says when a line was written (the live test waits on it)."""

    def __init__(self) -> None:
        super().__init__()
        self.wrote = asyncio.Event()

    def write(self, text: str) -> int:
        self.wrote.set()
        return super().write(text)


class _Feed:
    def __init__(self, *, settle: float = STATE_SETTLE) -> None:
        self.out = _Out()
        self.renderer = PlainRenderer(self.out, stream_agent=False, settle=settle)
        self.state = conv.initial_state()

    def __call__(self, inp: conv.Input) -> None:
        previous = self.state
        self.state, _ = conv.reduce(previous, inp)
        self.renderer.render(self.state, conv.changes(previous, self.state))

    def agent_state(self, value: str, at: float) -> None:
        self(conv.AttributesChanged("agent", {p.ATTR_AGENT_STATE: value}, at=at))

    @property
    def lines(self) -> list[str]:
        return self.out.getvalue().splitlines()


def test_a_start_flicker_prints_one_settled_state_after_connected() -> None:
    """The agent's speaking/listening/speaking at the start, and its states arriving
    before the connection is reported: `* connected` first, then one `* agent speaking`."""
    feed = _Feed()
    feed(conv.ParticipantJoined("agent", at=0.0, attributes={p.ATTR_AGENT_STATE: "speaking"}))
    feed.agent_state("listening", 0.01)
    feed.agent_state("speaking", 0.02)
    assert feed.lines == []
    feed(conv.Connected(local_identity="user-1", at=0.03))
    assert feed.lines == ["* connected"]
    feed.agent_state("listening", 0.04)
    feed.agent_state("speaking", 0.05)
    assert feed.lines == ["* connected"]  # nothing has held yet
    feed(conv.TranscriptStreamOpened("s", "g", "agent", final=False, at=1.0))
    feed(conv.TranscriptStreamChunk("s", "g", "Hi!", at=1.1))
    feed(conv.TranscriptStreamClosed("s", "g", at=1.2))
    # Between two lines of one answer: listening for 10 ms is no news.
    feed.agent_state("listening", 1.21)
    feed.agent_state("speaking", 1.22)
    feed(conv.TranscriptStreamOpened("s2", "g2", "agent", final=False, at=3.0))
    feed(conv.TranscriptStreamChunk("s2", "g2", "More.", at=3.1))
    feed(conv.TranscriptStreamClosed("s2", "g2", at=3.2))
    feed.agent_state("listening", 3.3)
    feed(conv.Hangup(at=5.0))
    assert feed.lines[:5] == [
        "* connected",
        "* agent speaking",
        "agent: Hi!",
        "agent: More.",
        "* agent listening",
    ]


async def test_live_a_state_that_holds_is_printed_by_the_loop() -> None:
    """On the event loop, a state that holds is printed without waiting for more input."""
    feed = _Feed(settle=0.05)
    feed(conv.Connected(local_identity="user-1", at=0.0))
    feed(conv.ParticipantJoined("agent", at=0.0, attributes={p.ATTR_AGENT_STATE: "speaking"}))
    feed.agent_state("listening", 0.001)
    feed.agent_state("speaking", 0.002)
    assert feed.lines == ["* connected"]
    feed.out.wrote.clear()
    await asyncio.wait_for(feed.out.wrote.wait(), 10)
    assert feed.lines == ["* connected", "* agent speaking"]


def test_a_client_tool_result_prints_once() -> None:
    """The client's own result, then the agent's completion repeating it: one line."""
    feed = _Feed(settle=0)
    feed(conv.Connected(local_identity="user-1", at=0.0))
    call = p.ClientToolCall(call_id="k1", tool_name="get_time", expects_response=True)
    feed(conv.AgentEventReceived(call, at=0.1))
    feed(conv.ClientToolFinished("k1", "ok", at=0.2, result_preview='{"time":"18:36"}'))
    done = p.ToolCompleted(
        call_id="k1", tool_name="get_time", tool_source="client", output='{"time":"18:36"}'
    )
    feed(conv.AgentEventReceived(done, at=0.6))
    tool_lines = [line for line in feed.lines if line.startswith("[tool]")]
    assert tool_lines == [
        "[tool] get_time (client) running",
        '[tool] get_time (client) ok in 0.1 s: {"time":"18:36"}',
    ]


def test_an_agent_outcome_that_differs_is_still_printed() -> None:
    feed = _Feed(settle=0)
    feed(conv.Connected(local_identity="user-1", at=0.0))
    call = p.ClientToolCall(call_id="k1", tool_name="t", expects_response=True)
    feed(conv.AgentEventReceived(call, at=0.1))
    feed(conv.ClientToolFinished("k1", "ok", at=0.2, result_preview="fine"))
    failed = p.ToolFailed(call_id="k1", tool_name="t", tool_source="client", error="rejected")
    feed(conv.AgentEventReceived(failed, at=0.6))
    assert [line for line in feed.lines if line.startswith("[tool]")][-1].endswith(": rejected")
