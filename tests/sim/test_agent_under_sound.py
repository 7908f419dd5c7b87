"""The simulated agent under a continuous sound on the microphone: heard sound is
activity (no "are you still there?" while the user is audibly talking), and a segment
that never falls quiet is finalised at the agent's maximum utterance length."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import pytest

from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle

from .sim_user import UserClient, tone_sim

pytestmark = pytest.mark.webrtc

IDLE = """
    then = "listen"
    [agent]
    greeting = "Hi."
    greeting_audio = false
    idle_seconds = 1.5
"""


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    scenarios = {"idle": parse_scenario(IDLE, name="idle")}
    async with tone_sim(scenarios) as handle:
        yield handle


async def test_a_continuous_tone_is_activity_and_is_endpointed(
    sim: SimHandle, user: UserClient
) -> None:
    await user.start("idle")
    await user.final_agent_segment("Hi.")
    agent = await sim.agent(user.session_id)
    agent.max_utterance = 2.0
    # 6 s of tone, four times the idle time and three times the longest segment.
    playing = asyncio.ensure_future(user.publish_tone(440.0, 6.0, before=0.0, after=0.0))
    try:
        finals = await user.until(
            lambda: [s for s in user.user_streams() if s.header_final and s.closed][1:] or None,
            within=20.0,
        )
        # The first segment was cut once 2 s of audio had come in (the agent's journal,
        # checked last, says the cut was made there and while the sound went on). Of those
        # 2 s, a jitter burst can add a frame or two of sound, and a loaded host can take
        # some away: frames that came too late are concealed by the receiver, and what it
        # conceals is not sound. So only that bound from above is asserted, and not the
        # order of the transcript's arrival against the tone's end.
        heard = re.match(r"\(heard (\d+\.\d) s of sound", finals[0].text)
        assert heard is not None, finals
        assert 0 < float(heard.group(1)) <= 2.1, finals
        await playing
    finally:
        playing.cancel()
    assert not any("still there" in s.text for s in user.agent_segments())
    assert "finalised a segment at 2 s" in agent.journal
