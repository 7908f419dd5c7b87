"""The session against the simulated Fish agent playing scenarios (fishtalk.sim.runner.run_sim),
including the audio path: the agent's track to the backend, the microphone to the agent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
from livekit import rtc
from session_harness import WAIT, exit_code, until

from fishtalk.cli.launch import build_session
from fishtalk.cli.settings import Settings
from fishtalk.engine.audio.base import SAMPLES_PER_FRAME, AudioLevels, NoticeCallback
from fishtalk.engine.tools import ToolContext, ToolRegistry, ToolRunner
from fishtalk.sim.fish.scenario import Scenario, parse_scenario
from fishtalk.sim.runner import SimHandle, run_sim

pytestmark = pytest.mark.webrtc


def _scenario(name: str, body: str) -> Scenario:
    return parse_scenario(f'name = "{name}"\n' + body, name=name)


EVERYTHING = _scenario(
    "everything",
    """
then = "listen"
[agent]
greeting = ""
voice = "tones"

[[steps]]
do = "user_transcript"
interim = ["book a", "book a table"]
final = "Book a table for two."
interval = 0.1

[[steps]]
do = "state"
value = "thinking"

[[steps]]
do = "tool"
name = "find_table"
source = "webhook"
input = { people = 2 }
output = { table = 7 }
duration = 0.1

[[steps]]
do = "tool"
name = "big_search"
source = "mcp"
pad_input_bytes = 6000
error = "upstream timed out"
duration = 0.1

[[steps]]
do = "client_tool"
name = "confirm"
params = { table = 7 }
announce = false

[[steps]]
do = "client_tool"
name = "confirm"
params = { table = 8 }
expects_response = false
announce = false

[[steps]]
do = "error"
code = "provider_error"

[[steps]]
do = "raw"
payload = "{not json"

[[steps]]
do = "raw"
json = { type = "agent.mood", mood = "happy" }

[[steps]]
do = "say"
text = "Table seven is yours."
audio = false

[[steps]]
do = "end"
reason = "agent_hangup"
""",
)

FAULTS = _scenario(
    "faults",
    """
then = "converse"
[agent]
greeting = ""
voice = "tones"

[[steps]]
do = "wait_for"
event = "user.message"
timeout = 20

[[steps]]
do = "drop_signalling"

[[steps]]
do = "sleep"
seconds = 6

[[steps]]
do = "reconnect"

[[steps]]
do = "wait_for"
event = "user.message"
timeout = 40

[[steps]]
do = "say"
text = "Still here after two reconnects."
audio = false
""",
)

VOICE = _scenario(
    "voice",
    """
then = "listen"
[agent]
greeting = "Hello, this greeting is spoken aloud with tones."
voice = "tones"
""",
)


SHORT = _scenario(
    "short",
    """
then = "listen"
[agent]
greeting = ""
voice = "tones"
max_duration_seconds = 2
""",
)


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    """The in-process sim; agent ids name the scenarios above."""
    scenarios = {"everything": EVERYTHING, "faults": FAULTS, "voice": VOICE, "short": SHORT}
    async with run_sim(scenarios=scenarios) as handle:
        yield handle


def _settings(sim: SimHandle, agent_id: str, **session: Any) -> Settings:
    values: dict[str, Any] = {"agent_id": agent_id, "text_only": True, **session}
    return Settings.model_validate(
        {"api": {"url": sim.api_url, "api_key": sim.dev_key}, "session": values}
    )


async def test_scenario_with_every_agent_event(sim: SimHandle) -> None:
    confirmed: list[Any] = []

    def confirm(params: dict[str, Any], ctx: ToolContext) -> object:
        confirmed.append(params["table"])
        return {"confirmed": params["table"]}

    registry = ToolRegistry()
    registry.register("confirm", confirm)
    session = build_session(_settings(sim, "everything"), tools=ToolRunner(registry))
    result = await asyncio.wait_for(session.run(), 60)
    assert (result.reason, exit_code(result)) == ("agent_hangup", 0)
    state = session.state

    user = [seg for seg in state.transcript if seg.role == "user"]
    assert [(seg.text, seg.final) for seg in user] == [("Book a table for two.", True)]
    agent_lines = [seg.text for seg in state.transcript if seg.role == "agent"]
    assert "Table seven is yours." in agent_lines

    cards = {card.tool_name: card for card in state.tools}
    assert cards["find_table"].status == "completed"
    assert cards["find_table"].output == '{"table":7}'
    assert cards["big_search"].status == "failed"
    assert cards["big_search"].input_truncated
    assert sorted(confirmed) == [7, 8]
    client_cards = [c for c in state.tools if c.client is not None]
    assert len(client_cards) == 2
    assert all(c.client is not None and c.client.status == "ok" for c in client_cards)
    agent = await sim.agent(next(iter(sim.endpoint.sessions)))
    assert any(entry.startswith("received client_tool.result") for entry in agent.journal)

    assert "provider_error" in [e.code for e in state.errors]
    assert state.debug.malformed_events == 1
    assert state.debug.recent_unknown_types == ("agent.mood",)


async def test_scenario_signalling_drop_and_full_reconnect(sim: SimHandle) -> None:
    session = build_session(_settings(sim, "faults"))
    statuses: list[str] = []
    session.add_listener(
        lambda s, _e: (
            statuses.append(s.status) if not statuses or statuses[-1] != s.status else None
        )
    )
    run = asyncio.ensure_future(session.run())
    try:
        await until(session, lambda s: s.agent_ready and s.status == "connected", 20)
        session.send_text("go")
        await until(
            session,
            lambda _s: statuses.count("reconnecting") >= 2 and statuses[-1] == "connected",
            60,
        )
        session.send_text("after")
        await until(
            session,
            lambda s: any(seg.text.startswith("Still here") for seg in s.transcript),
            30,
        )
        # The listener may or may not see the initial "connecting" (a state published while
        # joining, say a notice, shows it); after it, the call was connected first.
        joined = statuses[1:] if statuses[:1] == ["connecting"] else statuses
        assert joined[:1] == ["connected"]
        assert session.state.status == "connected"
        session.hangup()
        result = await asyncio.wait_for(run, WAIT)
    finally:
        if not run.done():
            run.cancel()
    assert result.reason == "user_hangup"


async def test_scenario_conversation_timeout(sim: SimHandle) -> None:
    session = build_session(_settings(sim, "short"))
    result = await asyncio.wait_for(session.run(), 30)
    assert (result.reason, exit_code(result)) == ("conversation_timeout", 0)
    assert session.state.clock.max_duration_seconds == 2


class RecordingAudio:
    """An audio backend without devices: records agent frames, plays a tone as the mic."""

    def __init__(self) -> None:
        self.frames: list[rtc.AudioFrame] = []
        self.flushes = 0
        self.muted: list[bool] = []
        self.mic_frames_sent = 0
        self.started = False
        self.closed = False
        self.loud = asyncio.Event()

    @property
    def description(self) -> str:
        return "recording test backend"

    @property
    def has_input(self) -> bool:
        return True

    def set_notice_callback(self, callback: NoticeCallback | None) -> None:
        del callback

    async def start(self) -> None:
        self.started = True

    async def mic_frames(self) -> AsyncIterator[rtc.AudioFrame]:
        t = np.arange(SAMPLES_PER_FRAME) / 48_000
        tone = (0.3 * 32767 * np.sin(2 * np.pi * 440 * t)).astype(np.int16)
        while True:
            await asyncio.sleep(0.01)
            self.mic_frames_sent += 1
            yield rtc.AudioFrame(tone.tobytes(), 48_000, 1, SAMPLES_PER_FRAME)

    def play(self, frame: rtc.AudioFrame) -> None:
        self.frames.append(frame)
        if _loud([frame]):
            self.loud.set()

    def flush_playback(self) -> None:
        self.flushes += 1

    def set_muted(self, muted: bool) -> None:
        self.muted.append(muted)

    def levels(self) -> AudioLevels:
        return AudioLevels()

    async def aclose(self) -> None:
        self.closed = True


async def test_agent_audio_reaches_the_backend_and_the_mic_reaches_the_agent(
    sim: SimHandle,
) -> None:
    audio = RecordingAudio()
    session = build_session(_settings(sim, "voice", text_only=False), audio=audio)
    run = asyncio.ensure_future(session.run())
    try:
        await until(session, lambda s: s.status == "connected", 20)
        agent = await sim.agent(next(iter(sim.endpoint.sessions)))
        await agent.wait_note("listening to", within=20)
        await asyncio.wait_for(audio.loud.wait(), 20)
        assert {f.samples_per_channel for f in audio.frames} == {SAMPLES_PER_FRAME}
        assert {(f.sample_rate, f.num_channels) for f in audio.frames} == {(48_000, 1)}
        assert audio.mic_frames_sent > 0

        session.interrupt()
        assert audio.flushes == 1  # local playback is cut at once, before any round trip
        session.set_muted(True)
        await until(session, lambda s: s.muted)
        assert audio.muted == [True]
        session.hangup()
        result = await asyncio.wait_for(run, WAIT)
    finally:
        if not run.done():
            run.cancel()
    assert result.reason == "user_hangup"
    assert audio.started
    assert audio.closed


def _loud(frames: list[rtc.AudioFrame]) -> bool:
    for frame in frames[-50:]:
        samples = np.frombuffer(frame.data, dtype=np.int16)
        if samples.size and int(np.abs(samples).max()) > 1000:
            return True
    return False
