"""The simulated agent hears speech: espeak-ng audio of a command, published as the user's
microphone, comes back as the user's transcript (interim, then final) and is answered as
the typed command would be: "call get time" runs the client tool."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator

import pytest
from sim.sim_user import UserClient

from fishtalk.core import protocol as p
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.fish.voice import SAMPLE_RATE, ToneVoice
from fishtalk.sim.runner import SimHandle, run_sim
from fishtalk.speech import stt
from fishtalk.speech.tts import Espeak

pytestmark = [
    pytest.mark.webrtc,
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng (apt)"),
    pytest.mark.skipif(not stt.available(), reason="needs the speech extra"),
]

LISTENER = """
    then = "converse"
    [agent]
    greeting = "Hi."
    greeting_audio = false
    idle_seconds = 0
    think_seconds = 0
    listen = "speech"
"""


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    scenarios = {"listener": parse_scenario(LISTENER, name="listener")}
    async with run_sim(scenarios=scenarios, voice=ToneVoice()) as handle:
        yield handle
        for session_id, agent in handle.agents.items():
            print(f"agent journal for {session_id}:", *agent.journal, sep="\n  ")


@pytest.fixture
async def user(sim: SimHandle) -> AsyncIterator[UserClient]:
    client = UserClient(sim)
    yield client
    await client.close()


async def test_a_spoken_command_runs_the_tool(sim: SimHandle, user: UserClient) -> None:
    await user.start("listener")
    await user.final_agent_segment("Hi.")
    audio = Espeak.find(voice="en-us").synthesize("call get time", SAMPLE_RATE)
    # On a loaded host the sim (same process and loop as this publisher) can fall behind,
    # and a gap splits the phrase; then the user says it again, as a person would.
    for _attempt in range(3):
        await user.publish_audio(audio)
        with contextlib.suppress(TimeoutError):
            call = await user.event(p.ClientToolCall, tool_name="get_time", within=15.0)
            break
    else:
        pytest.fail("the spoken command was never understood")
    finals = [s for s in user.user_streams() if s.header_final and s.closed]
    assert "call get time" in [s.text for s in finals]
    assert all(s.identity == user.identity for s in user.user_streams())
    await user.send(p.ClientToolResult(call_id=call.call_id, result="12:00"))
    said = await user.final_agent_segment("get_time tool returned", within=20.0)
    assert "12:00" in said.text
    agent = await sim.agent(user.session_id)
    assert any('speech-to-text: grammar heard "call get time"' in n for n in agent.journal)


async def test_other_speech_is_answered_with_what_was_understood(
    sim: SimHandle, user: UserClient
) -> None:
    await user.start("listener")
    await user.final_agent_segment("Hi.")
    audio = Espeak.find(voice="en-us").synthesize("what is my balance", SAMPLE_RATE)
    await user.publish_audio(audio)
    final = await user.until(
        lambda: next((s for s in user.user_streams() if s.header_final and s.closed), None),
        within=30.0,
    )
    said = await user.final_agent_segment("You said:", within=20.0)
    assert final.text
    assert said.text.startswith(f"You said: {final.text}")
    agent = await sim.agent(user.session_id)
    assert any("speech-to-text: free decoding heard" in n for n in agent.journal)
