"""Each reply's received audio (issue 29): the agent's frames, as the client received them,
bound to the reply they belong to by the one rule, against the sim agent."""

from __future__ import annotations

import numpy as np
import pytest

from fishtalk import AgentSession
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import run_sim
from fishtalk.workbench.agenttest.wavmic import WavMicrophone

pytestmark = pytest.mark.webrtc

_TALKER = parse_scenario(
    """
    then = "converse"
    [agent]
    greeting = "Hello there friend."
    voice = "tones"
    idle_seconds = 0
    think_seconds = 0.1
    """,
    name="talker",
)


async def test_each_reply_holds_its_own_lines_audio_in_arrival_order() -> None:
    async with (
        run_sim(scenarios={"talker": _TALKER}) as sim,
        AgentSession(
            "talker",
            api_url=sim.api_url,
            api_key=sim.dev_key,
            audio=WavMicrophone(),
            reply_audio=True,
        ) as session,
    ):
        greeting = await session.wait_for_reply(30)
        reply = await session.ask("how are you", 30)
        capture = session.reply_audio
        assert capture is not None
        clips = capture.replies()
    assert [c.turn for c in clips] == [None, 1]
    assert clips[0].segment_ids == [greeting.segment_id]
    assert clips[1].segment_ids == [reply.segment_id]
    assert capture.reply(1) is not None
    assert capture.reply(1).segment_ids == [reply.segment_id]  # type: ignore[union-attr]
    for clip in clips:
        times = [f.at for f in clip.frames]
        assert times == sorted(times)
        assert any(f.audible for f in clip.frames)
        assert all(f.played for f in clip.frames)
        samples = clip.samples()
        assert samples.dtype == np.int16
        assert samples.size == sum(len(f.data) for f in clip.frames) // 2
        assert clip.started_at is not None
        assert clip.ended_at is not None
        assert clip.started_at < clip.ended_at
    # The agent said its greeting before it heard the turn: its audio came first.
    last_greeting = max(f.at for f in clips[0].frames if f.audible)
    assert last_greeting < next(f.at for f in clips[1].frames if f.audible)
    assert capture.dropped_frames == 0
    assert capture.user_speech == []  # the WAV microphone sent silence only


async def test_without_reply_audio_nothing_is_kept() -> None:
    session = AgentSession("talker", api_url="http://127.0.0.1:9", api_key="k")
    assert session.reply_audio is None
