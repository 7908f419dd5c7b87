"""``AgentSession`` with named audio devices (the virtual PulseAudio ones): the streams are
open during the call and none is left once ``close()`` returns.

Needs the network namespace (WebRTC) and PulseAudio.
"""

from __future__ import annotations

from collections.abc import Iterator

import audio_chain
import pytest
from support.virtual_audio import MIC, SPEAKER, VirtualAudio

from fishtalk import AgentSession, AudioDevices
from fishtalk.sim.runner import SimInfo

from .conftest import WAIT, options, our_tasks, our_threads

pytestmark = [pytest.mark.webrtc, pytest.mark.audio]


@pytest.fixture(scope="module")
def vaudio() -> Iterator[VirtualAudio]:
    """A private PulseAudio server with the virtual devices, for this module only."""
    with audio_chain.for_this_process() as va:
        yield va


def _streams(va: VirtualAudio) -> tuple[int, int]:
    """How many capture and playback streams the sound server has open."""
    capture = va.pactl("list", "short", "source-outputs").strip().splitlines()
    playback = va.pactl("list", "short", "sink-inputs").strip().splitlines()
    return len(capture), len(playback)


@pytest.mark.parametrize(
    "devices",
    [AudioDevices(input=MIC, output=SPEAKER), True],
    ids=["named devices", "default devices"],
)
async def test_audio_devices_are_used_and_released(
    sim: SimInfo, vaudio: VirtualAudio, devices: AudioDevices | bool
) -> None:
    before_streams = _streams(vaudio)
    threads, tasks = our_threads(), our_tasks()
    for _ in range(2):  # one after another: nothing accumulates
        async with AgentSession(**options(sim, text_only=False), audio=devices) as session:
            await session.wait_for_reply(WAIT)
            levels = session.audio_levels()
            assert 0.0 <= levels.agent_peak <= 1.0
            assert 0.0 <= levels.mic_peak <= 1.0
            capture, playback = _streams(vaudio)
            assert capture > before_streams[0]  # our microphone
            assert playback > before_streams[1]  # our speaker
            assert all("text-only" not in n.text for n in session.state.notices)
        assert _streams(vaudio) == before_streams
        assert our_tasks() <= tasks
        assert our_threads() <= threads
