"""Shared helpers for the TUI tests: scripted inputs and waiting for a drawn frame."""

from __future__ import annotations

from dataclasses import replace

from support.scripted import ScriptedSession
from textual.message import Message
from textual.pilot import Pilot

from fishtalk.core import conversation as c
from fishtalk.core.conversation.latency import Incomplete
from fishtalk.core.protocol import (
    ATTR_AGENT_STATE,
    ClientToolCall,
    ToolCompleted,
    ToolFailed,
    ToolStarted,
)
from fishtalk.engine.audio.base import NullAudio
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.messages import CallEnded, StateChanged

AGENT = "agent"
USER = "user-1a2b3c4d"


def connected(at: float = 1.0, state: str = "listening") -> list[c.Input]:
    """The room connects and the agent is there with a published state."""
    return [
        c.Connected(USER, at),
        c.ParticipantJoined(AGENT, at + 0.1, attributes={ATTR_AGENT_STATE: state}),
    ]


def agent_state(value: str, at: float) -> c.Input:
    """The agent's sticky state attribute changes."""
    return c.AttributesChanged(AGENT, {ATTR_AGENT_STATE: value}, at)


def agent_says(seg: str, words: list[str], at: float, *, close: bool = True) -> list[c.Input]:
    """An agent transcript stream: open, one chunk per word, close."""
    stream = f"stream-{seg}"
    inputs: list[c.Input] = [c.TranscriptStreamOpened(stream, seg, AGENT, False, at)]
    for i, word in enumerate(words):
        inputs.append(c.TranscriptStreamChunk(stream, seg, word, at + 0.1 * (i + 1)))
    if close:
        inputs.append(c.TranscriptStreamClosed(stream, seg, at + 0.1 * (len(words) + 1)))
    return inputs


def user_interim(seg: str, n: int, text: str, at: float, *, final: bool = False) -> list[c.Input]:
    """One user transcript stream carrying the whole (interim or final) text."""
    stream = f"user-{seg}-{n}"
    return [
        c.TranscriptStreamOpened(stream, seg, USER, final, at),
        c.TranscriptStreamChunk(stream, seg, text, at + 0.01),
        c.TranscriptStreamClosed(stream, seg, at + 0.02, final),
    ]


def tool_started(call: str, name: str, at: float, source: str = "webhook", **kw: object) -> c.Input:
    return c.AgentEventReceived(
        ToolStarted(call_id=call, tool_name=name, tool_source=source, **kw),
        at,
    )


def tool_completed(
    call: str, name: str, at: float, source: str = "webhook", **kw: object
) -> c.Input:
    return c.AgentEventReceived(
        ToolCompleted(call_id=call, tool_name=name, tool_source=source, **kw),
        at,
    )


def tool_failed(call: str, name: str, at: float, source: str = "webhook", **kw: object) -> c.Input:
    return c.AgentEventReceived(
        ToolFailed(call_id=call, tool_name=name, tool_source=source, **kw),
        at,
    )


def client_call(call: str, name: str, at: float, params: dict[str, object]) -> c.Input:
    return c.AgentEventReceived(
        ClientToolCall(call_id=call, tool_name=name, params=params, expects_response=True),
        at,
    )


class FakeDevices(NullAudio):
    """Stands in for real devices in widget tests: the UI shows meters, not "text-only"."""

    @property
    def description(self) -> str:
        return "mic: test, speaker: test"

    @property
    def has_input(self) -> bool:
        return True


async def drawn(pilot: Pilot[int], session: ScriptedSession) -> None:
    """Wait (bounded) until the app has drawn the session's newest state."""
    app = pilot.app
    assert isinstance(app, FishtalkApp)
    for _ in range(200):
        await pilot.pause()
        if app.drawn_state is session.state:
            await pilot.pause()
            return
        await pilot.pause(0.01)
    raise AssertionError("the app never drew the newest state")


class Recorder:
    """A ``message_hook`` keeping the app's session messages in order."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def __call__(self, message: Message) -> None:
        if isinstance(message, StateChanged | CallEnded):
            self.messages.append(message)

    def states(self) -> list[c.State]:
        return [m.state for m in self.messages if isinstance(m, StateChanged)]

    def finished(self) -> list[CallEnded]:
        return [m for m in self.messages if isinstance(m, CallEnded)]


def make_app(session: ScriptedSession, **kw: object) -> FishtalkApp:
    """An app with frozen clocks and no live timers (deterministic)."""
    options: dict[str, object] = {
        "title": "test agent",
        "clock": lambda: 10.0,
        "live_timers": False,
        "ended_linger": None,
    }
    options.update(kw)
    return FishtalkApp(session, **options)


class LatencySession(ScriptedSession):
    """The scripted session, plus a way to put a synthetic ``State.latency`` in place (the
    TUI's latency tests draw given waterfalls, whatever the reducer would measure)."""

    def set_latency(self, latency: c.Latency) -> c.State:
        """Replace the state's latency part and notify the listeners, as a reduction does."""
        self._state = replace(self._state, latency=latency)
        for listener in list(self._listeners):
            listener(self._state, ())
        return self._state


def measured(turn: int, segment: str, heard: float, *, at: float = 10.0) -> c.Waterfall:
    """A closed typed turn whose agent reply (``segment``) was heard ``heard`` s after."""
    return c.Waterfall(
        turn=turn,
        kind="typed",
        user_ended_at=at,
        segment_id=segment,
        thinking_at=at + 0.05,
        first_text_at=at + heard / 2,
        audio_received_at=at + heard - 0.03,
        audio_handed_at=at + heard - 0.02,
        output_latency=0.02,
    )


def unmeasured(turn: int, segment: str, reason: Incomplete, *, at: float = 20.0) -> c.Waterfall:
    """A closed turn without a heard figure, and why."""
    return c.Waterfall(
        turn=turn,
        kind="typed",
        user_ended_at=at,
        segment_id=segment,
        first_text_at=at + 0.3,
        incomplete=reason,
    )
