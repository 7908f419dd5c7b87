"""The level meters on real audio: the virtual PulseAudio chain, the real Session, the sim.

Needs both the network namespace (WebRTC) and PulseAudio::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/tui -q
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import audio_chain
import numpy as np
import pytest
from support.virtual_audio import MIC, SPEAKER, VirtualAudio

from fishtalk.cli.config import load_settings
from fishtalk.cli.launch import build_session
from fishtalk.engine.paths import CONFIG_PATH_ENV
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle, run_sim
from fishtalk.tui.app import FishtalkApp
from fishtalk.tui.widgets.meters import LevelMeters
from fishtalk.tui.widgets.status import ModeFlags

from .test_sim import until

pytestmark = [pytest.mark.webrtc, pytest.mark.audio, pytest.mark.timeout(90)]

_TALKER = parse_scenario(
    """
    then = "listen"
    [agent]
    greeting = "Hello, can you hear these tones while I keep talking for a little while?"
    voice = "tones"
    idle_seconds = 0
    """,
    name="talker",
)


@pytest.fixture(scope="module")
def vaudio() -> Iterator[VirtualAudio]:
    with audio_chain.for_this_process() as va:
        yield va


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    async with run_sim(scenarios={"talker": _TALKER}) as handle:
        yield handle


async def test_meters_move_with_real_audio(vaudio: VirtualAudio, sim: SimHandle) -> None:
    settings = load_settings(
        env={CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"},
        overrides={
            "api.url": sim.api_url,
            "api.api_key": sim.dev_key,
            "session.agent_id": "talker",
            "audio.input_device": MIC,
            "audio.output_device": SPEAKER,
        },
    )
    session = build_session(settings)
    app = FishtalkApp(session, title="audio", ended_linger=None)
    async with app.run_test(size=(100, 30)) as pilot:
        meters = app.query_one(LevelMeters)
        await until(pilot, "real audio devices", lambda: app.has_audio and meters.audio)
        # The microphone opens last of all (until then the flags say there is none).
        flags = app.query_one(ModeFlags)
        await until(pilot, "the live microphone", lambda: "mic: live" in str(flags.render()))
        assert app.has_mic
        assert "mic: live" in str(flags.render())
        await until(pilot, "the agent's voice on the meter", lambda: meters.levels.agent_rms > 0.01)
        assert "█" in str(meters.render()).split("\n")[1]
        rate = 48_000
        t = np.arange(rate * 3) / rate
        feeder = vaudio.feed_mic(
            (np.sin(2 * np.pi * 440 * t) * 0.3 * 32767).astype(np.int16).tobytes()
        )
        try:
            await until(pilot, "the mic on the meter", lambda: meters.levels.mic_rms > 0.01)
            assert "█" in str(meters.render()).split("\n")[0]
        finally:
            feeder.kill()
            feeder.wait()
        await pilot.press("ctrl+o")
        await until(pilot, "mute", lambda: session.state.muted)
        await pilot.pause(0.2)
        assert "mic ✕" in str(meters.render())
        await pilot.press("ctrl+x")
        await until(pilot, "the end", lambda: app.finished is not None)
