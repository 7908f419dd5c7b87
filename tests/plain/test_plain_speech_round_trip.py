"""Speech both ways through the virtual PulseAudio chain (issue 25): a phrase synthesised
from text (espeak-ng) plays into the virtual microphone of a real ``fishtalk chat --plain``; the sim
agent's speech-to-text hears it (the user's transcript holds its words) and answers it; the
agent's spoken answer, played through the virtual speaker and recorded there, says the
words of its transcript (the speech layer's forced alignment), and a text it did not say
is not found in it.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import audio_chain
import numpy as np
import pytest
from line_mode import chat_env, start_chat
from support.virtual_audio import MIC, SPEAKER, VirtualAudio
from test_plain_commands import Chat

from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle, run_sim
from fishtalk.speech import stt
from fishtalk.speech.tts import Espeak

pytestmark = [
    pytest.mark.webrtc,
    pytest.mark.audio,
    pytest.mark.timeout(180),
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng (apt)"),
    pytest.mark.skipif(not stt.available(), reason="needs the speech extra"),
]

RATE = 48_000
"""The virtual devices' rate."""

# The agent speaks with the real offline voice (espeak-ng), listens with the speech layer.
_LISTENER = parse_scenario(
    """
    name = "listener"
    then = "converse"
    [agent]
    greeting = ""
    voice = "espeak"
    idle_seconds = 0
    think_seconds = 0
    listen = "speech"
    """,
    name="listener",
)

CONFIG = f"""
[audio]
talk_mode = "always"
input_device = "{MIC}"
output_device = "{SPEAKER}"
"""
"""The virtual devices, the microphone open all the time (hands-free)."""


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    async with run_sim(scenarios={"listener": _LISTENER}) as handle:
        yield handle
        for session_id, agent in handle.agents.items():
            print(f"agent journal for {session_id}:", *agent.journal, sep="\n  ")


@pytest.fixture
def audio() -> Iterator[VirtualAudio]:
    with audio_chain.for_a_child() as va:
        yield va


async def test_a_spoken_goodbye_goes_both_ways_through_the_devices(
    sim: SimHandle, audio: VirtualAudio, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(CONFIG, encoding="utf-8")
    env = chat_env(sim, extra={**audio.env, "FISHTALK_CONFIG": str(config)})
    chat = Chat(await start_chat(sim, "--agent", "listener", "--plain", env=env))
    speech = Espeak.find(voice="en-us").synthesize("goodbye", RATE)
    quiet = np.zeros(RATE // 2, dtype=np.int16)
    recording = audio.record_speaker()
    feeder = None
    try:
        await chat.expect("* connected")
        # A person says it again when it was not heard (a loaded host can split a word).
        for _attempt in range(3):
            feeder = audio.feed_mic(np.concatenate([quiet, speech, quiet]).tobytes())
            await asyncio.to_thread(feeder.wait, 20)
            try:
                farewell = await chat.expect("agent: Goodbye!", within=15)
                break
            except pytest.fail.Exception:
                continue
        else:
            pytest.fail(f"the spoken goodbye was never answered: {chat.lines}")
        code = await asyncio.wait_for(chat.proc.wait(), 30)
    finally:
        if feeder is not None and feeder.poll() is None:
            feeder.terminate()
        if chat.proc.returncode is None:
            chat.proc.kill()
    # Give the speaker's last block time to reach the monitor, then stop recording.
    await asyncio.sleep(0.3)
    played = np.frombuffer(recording.stop(), dtype=np.int16)
    assert code == 0, chat.lines  # the agent hung up after its goodbye
    assert farewell == "agent: Goodbye!"
    # The user's words are the sim's speech-to-text of what the microphone carried.
    heard = [line for line in chat.lines if line.lower().startswith("you: goodbye")]
    assert heard, chat.lines
    # The speaker played the agent's voice, and it says what its transcript says.
    recognizer = stt.load()
    said = recognizer.cover(played, RATE, "Goodbye!")
    assert said.covered == ("goodbye",), said
    other = recognizer.cover(played, RATE, "the weather is sunny today")
    assert other.covered == (), other  # a text it did not say aligns nowhere
