"""End to end with real audio: virtual mic -> fishtalk -> sim agent -> virtual speaker.

Needs the network namespace (WebRTC) and PulseAudio::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/audio -q
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable

import numpy as np
import pytest
from audio_signals import dominant_frequency, loud_samples, steady_frequency, tone
from support.virtual_audio import MIC, SPEAKER, VirtualAudio

from fishtalk.cli.config import load_settings
from fishtalk.cli.exits import exit_code_of
from fishtalk.cli.launch import build_session
from fishtalk.core.conversation import State
from fishtalk.engine.paths import CONFIG_PATH_ENV
from fishtalk.engine.session import Session
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.fish.voice import ToneVoice
from fishtalk.sim.runner import run_sim

pytestmark = [pytest.mark.webrtc, pytest.mark.audio, pytest.mark.timeout(90)]

_LISTENER = parse_scenario(
    """
    then = "converse"
    [agent]
    greeting = "Hello"
    voice = "tones"
    idle_seconds = 0
    """,
    name="listener",
)


async def _until(session: Session, what: str, predicate: Callable[[State], bool]) -> State:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while not predicate(session.state):
        if loop.time() > deadline:
            pytest.fail(f"timed out waiting for {what}; state: {session.state}", pytrace=False)
        await asyncio.sleep(0.02)
    return session.state


def _agent_said(state: State, text: str) -> bool:
    return any(
        s.role == "agent" and s.final and not s.open and text in s.text for s in state.transcript
    )


def _user_heard(state: State) -> str | None:
    for segment in state.transcript:
        if segment.role == "user" and segment.final and "mostly around" in segment.text:
            return segment.text
    return None


async def test_tone_reaches_the_agent_and_its_voice_the_speaker(vaudio: VirtualAudio) -> None:
    expected_greeting_hz = dominant_frequency(ToneVoice().word_audio("Hello"))
    async with run_sim(scenarios={"listener": _LISTENER}) as sim:
        settings = load_settings(
            env={CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"},
            overrides={
                "api.url": sim.api_url,
                "api.api_key": sim.dev_key,
                "session.agent_id": "listener",
                "audio.input_device": MIC,
                "audio.output_device": SPEAKER,
            },
        )
        session = build_session(settings)
        recording = vaudio.record_speaker()
        run = asyncio.create_task(session.run())
        try:
            # The agent's greeting, spoken as one tone, comes out of the virtual speaker.
            await _until(session, "the greeting", lambda s: _agent_said(s, "Hello"))
            await asyncio.sleep(0.5)  # the audio trails the transcript
            speaker = np.frombuffer(await asyncio.to_thread(recording.stop), dtype=np.int16)
            greeting = loud_samples(speaker)
            assert greeting.size >= 0.1 * 48_000
            assert abs(steady_frequency(greeting) - expected_greeting_hz) < 3

            # A 440 Hz tone into the virtual mic reaches the agent, which says what it heard.
            feeder = vaudio.feed_mic(tone(440, 1.2, amplitude=0.3).tobytes())
            try:
                state = await _until(session, "the agent hearing the tone", _user_heard)
            finally:
                await asyncio.to_thread(feeder.wait, 10)
            heard = _user_heard(state)
            assert heard is not None
            match = re.search(r"mostly around (\d+) Hz", heard)
            assert match is not None, heard
            assert abs(int(match.group(1)) - 440) <= 3, heard
            await _until(session, "the agent's answer", lambda s: _agent_said(s, "hertz"))
            session.hangup()
            result = await asyncio.wait_for(run, 15)
            assert exit_code_of(result) == 0
        finally:
            recording.stop()
            if not run.done():
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await run
