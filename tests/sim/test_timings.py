"""The sim agent's settable timings (think time, first-audio delay, audio pacing), checked
from a raw ``livekit.rtc.Room`` user.

What the heard-latency tests (tests/latency) inject has to be what the sim does, so each
setting is measured here on the user's side of the wire, with the user's own clock:

* every figure is measured from a cause on the user's side (the moment just before the
  user sent its turn) to an effect that arrives: the agent cannot answer before it was
  asked, so the injected time is a lower bound that physics guarantees, and that is the
  only bound asserted. A setting that is ignored comes out short (each test picks values
  that the default would undercut). How much later than the injected time an effect
  arrives is the sim's own work plus scheduling on a shared host (on a loaded 2-core CI
  host, 1.7 s above and more): a performance figure, measured in bench/, never asserted;
* no figure is the difference of two arrivals (say, the ``thinking`` state and the first
  transcript chunk): each arrival is late by its own delivery delay, so such a gap has no
  bound. What the agent scheduled (its think time, its pacing) is read from the sim
  agent's journal, on the agent's side of the wire.

Run: ``.venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/sim/test_timings.py -q``
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, cast

import pytest

from fishtalk.core import protocol as p
from fishtalk.core.errors import ScenarioError
from fishtalk.sim.fish.endpoint import DEFAULT_DEV_KEY
from fishtalk.sim.fish.scenario import (
    AgentSettings,
    builtin_scenario,
    check_agent_overrides,
    parse_agent_setting,
    parse_scenario,
)
from fishtalk.sim.fish.speech import FEED_LEAD
from fishtalk.sim.fish.voice import SAMPLE_RATE, ToneVoice, split_words
from fishtalk.sim.runner import SimHandle, run_sim

from .sim_user import UserClient

# --- parsing and validation (no network) --------------------------------------------


def test_timings_default_to_the_old_behaviour() -> None:
    agent = AgentSettings()
    assert agent.think_seconds == 0.4
    assert agent.first_audio_delay_seconds == 0.0
    assert agent.audio_chunk_ms == 20
    assert agent.audio_realtime_factor == 1.0


def test_timings_parse_from_the_agent_table() -> None:
    scenario = parse_scenario(
        """
        [agent]
        think_seconds = 0.8
        first_audio_delay_seconds = 0.25
        audio_chunk_ms = 60
        audio_realtime_factor = 1.5
        """
    )
    assert scenario.agent.think_seconds == 0.8
    assert scenario.agent.first_audio_delay_seconds == 0.25
    assert scenario.agent.audio_chunk_ms == 60
    assert scenario.agent.audio_realtime_factor == 1.5


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("think_seconds = -0.1", "agent.think_seconds: must be at least 0"),
        ("think_seconds = 61", "agent.think_seconds: must be at most 60"),
        ("think_seconds = 'slow'", "agent.think_seconds: must be a number"),
        ("first_audio_delay_seconds = -1", "agent.first_audio_delay_seconds: must be"),
        ("audio_chunk_ms = 15", "agent.audio_chunk_ms: must be a multiple of 10"),
        ("audio_chunk_ms = 0", "agent.audio_chunk_ms: must be at least"),
        ("audio_chunk_ms = 400", "agent.audio_chunk_ms: must be at most"),
        ("audio_realtime_factor = 0.5", "agent.audio_realtime_factor: must be"),
        ("audio_realtime_factor = 11", "agent.audio_realtime_factor: must be at most"),
    ],
)
def test_bad_timings_are_one_line_errors(line: str, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(f"[agent]\n{line}\n", source="t.toml")
    text = str(caught.value)
    assert text.startswith("scenario t.toml: ")
    assert message in text
    assert "\n" not in text


def test_builtin_scenarios_take_timing_overrides() -> None:
    converse = builtin_scenario("converse")
    slow = converse.with_agent({"think_seconds": 0.8, "audio_chunk_ms": 40})
    assert slow.agent.think_seconds == 0.8
    assert slow.agent.audio_chunk_ms == 40
    assert slow.name == "converse"
    assert slow.then == converse.then
    assert converse.agent.think_seconds == 0.4  # the original is left alone
    # The demo's own [agent] settings survive an override of another one.
    demo = builtin_scenario("demo").with_agent({"think_seconds": 0.0})
    assert demo.agent.answer_during_steps
    assert demo.agent.idle_seconds == 25.0
    assert demo.agent.think_seconds == 0.0


def test_bad_overrides_are_one_line_errors() -> None:
    with pytest.raises(ScenarioError, match=r"^scenario converse: agent\.think_seconds: "):
        builtin_scenario("converse").with_agent({"think_seconds": -1})
    with pytest.raises(ScenarioError, match=r"^agent override thinking: is not a known setting"):
        check_agent_overrides({"thinking": 1})
    with pytest.raises(ScenarioError, match=r"^agent override audio_chunk_ms: .*multiple of 10"):
        check_agent_overrides({"audio_chunk_ms": 25})


def test_agent_settings_from_the_command_line() -> None:
    assert parse_agent_setting("think_seconds=0.8") == ("think_seconds", 0.8)
    assert parse_agent_setting(" audio_chunk_ms = 40 ") == ("audio_chunk_ms", 40)
    assert parse_agent_setting("greeting=") == ("greeting", "")
    assert parse_agent_setting("greeting=Hello there") == ("greeting", "Hello there")
    assert parse_agent_setting('greeting="Hi = hello"') == ("greeting", "Hi = hello")
    with pytest.raises(ScenarioError, match="expected KEY=VALUE"):
        parse_agent_setting("think_seconds")


async def test_run_sim_refuses_bad_overrides_before_listening() -> None:
    with pytest.raises(ScenarioError, match="agent override think_seconds"):
        async with run_sim(agent_overrides={"think_seconds": -2}):
            pytest.fail("the sim started with a bad override")


# --- measured from a raw SDK client ---------------------------------------------------

QUIET: dict[str, Any] = {"greeting": "", "idle_seconds": 0, "voice": "tones"}
"""Overrides that keep the agent quiet until asked: no greeting, no nudges."""


async def _ready(user: UserClient) -> None:
    """Wait for the agent to listen, and open the user's publishing side: a client's first
    data packet waits for that negotiation (0.3-0.6 s, more under load), which is not what
    the tests time."""
    await user.until(lambda: user.states[-1:] == ["listening"])
    await user.send(p.UserActivity())


async def _ask(user: UserClient, text: str, *, audio: bool = True) -> tuple[float, Any]:
    """Send a typed turn; return the time just before sending and its reply's stream."""
    asked = time.monotonic()
    await user.send(p.UserMessage(text=text, audio=audio))
    reply = await user.final_agent_segment(f"You said: {text}", within=30.0)
    return asked, reply


def _journal(sim: SimHandle) -> None:
    for session_id, agent in sim.agents.items():
        print(f"agent journal for {session_id}:", *agent.journal, sep="\n  ")  # on failure


@pytest.mark.webrtc
async def test_think_time_of_a_builtin_scenario() -> None:
    """The built-in ``converse`` with ``think_seconds`` overridden: the agent thinks that
    long (its journal), and neither ``speaking`` nor the reply's first chunk comes sooner
    after the turn was sent."""
    think = 0.8
    overrides = {**QUIET, "think_seconds": think}
    async with run_sim(voice=ToneVoice(), agent_overrides=overrides) as sim:
        user = UserClient(sim)
        try:
            await user.start("converse")
            await _ready(user)
            asked, reply = await _ask(user, "ping")
            first_text = reply.chunk_times[0]
            assert think <= first_text - asked
            after = [(s, t) for s, t in user.state_times if t >= asked]
            thinking = next(t for s, t in after if s == "thinking")
            speaking = next(t for s, t in after if s == "speaking")
            assert asked <= thinking < speaking  # one ordered channel carries both states
            assert think <= speaking - asked
            agent = await sim.agent(user.session_id)
            assert f"thinking for {think:g} s" in agent.journal
            await user.until(lambda: any(t > first_text for t in user.loud_times))
        finally:
            _journal(sim)
            await user.close()


@pytest.mark.webrtc
async def test_zero_think_time_answers_at_once() -> None:
    """``think_seconds = 0``: the default 0.4 s pause is gone. The agent's journal says
    so; the reply's arrival is not timed against the default (that would bound a
    delivery from above, which a loaded host breaks)."""
    async with run_sim(voice=ToneVoice(), agent_overrides={**QUIET, "think_seconds": 0}) as sim:
        user = UserClient(sim)
        try:
            await user.start("converse")
            await _ready(user)
            asked, reply = await _ask(user, "quick", audio=False)
            assert reply.chunk_times[0] - asked >= 0
            agent = await sim.agent(user.session_id)
            assert "thinking for 0 s" in agent.journal
        finally:
            _journal(sim)
            await user.close()


@pytest.mark.webrtc
async def test_first_audio_comes_after_the_first_text_by_the_delay() -> None:
    """``first_audio_delay_seconds``: the reply's first loud audio frame, and its second
    transcript chunk (written with the audio), come no sooner than the delay after the
    turn was sent (the agent does not think)."""
    delay = 0.7
    scenario = parse_scenario(
        f"""
        [agent]
        greeting = ""
        idle_seconds = 0
        voice = "tones"
        think_seconds = 0
        first_audio_delay_seconds = {delay}
        """,
        name="late-voice",
    )
    async with run_sim(scenarios={"late-voice": scenario}, voice=ToneVoice()) as sim:
        user = UserClient(sim)
        try:
            await user.start("late-voice")
            await _ready(user)
            asked = time.monotonic()
            await user.send(p.UserMessage(text="hello"))
            stream = await user.until(
                lambda: next((s for s in user.agent_segments() if s.chunk_times), None)
            )
            first_audio = await user.until(
                lambda: next((t for t in user.loud_times if t > asked), None)
            )
            assert delay <= first_audio - asked
            # The text ran ahead: the second word came only with the audio.
            await user.until(lambda: stream.closed, within=30.0)
            assert stream.text.startswith("You said: hello")
            assert delay <= stream.chunk_times[1] - asked
        finally:
            _journal(sim)
            await user.close()


def _paced_span(text: str, chunk_ms: int, factor: float) -> float:
    """Seconds from a reply's first word chunk to its last one, as the sim paces them:
    each word's tone (and pause) is fed in whole chunks, ``factor`` wall seconds per
    second of audio, and a word's chunk is written as its first frame is queued. Frames
    are fed ``FEED_LEAD`` ahead of their time, except the very first (it cannot be fed
    before the reply begins), so the span is that much shorter."""
    chunk = SAMPLE_RATE * chunk_ms // 1000
    voice = ToneVoice()
    samples = 0
    for word in split_words(text)[:-1]:
        size = voice.word_audio(word).size
        samples += -(-size // chunk) * chunk  # whole chunks, the last one padded
    return factor * samples / SAMPLE_RATE - FEED_LEAD


@pytest.mark.webrtc
async def test_audio_chunks_and_real_time_factor_pace_the_reply() -> None:
    """``audio_chunk_ms`` and ``audio_realtime_factor``: the words of a spoken reply come
    as far apart as its audio, cut in those chunks and fed at that pace, takes: the last
    word comes no sooner after the turn was sent (the agent does not think)."""
    chunk_ms, factor = 100, 2.0
    overrides = {**QUIET, "think_seconds": 0, "audio_chunk_ms": chunk_ms}
    overrides["audio_realtime_factor"] = factor
    async with run_sim(voice=ToneVoice(), agent_overrides=overrides) as sim:
        user = UserClient(sim)
        try:
            await user.start("converse")
            await _ready(user)
            asked, reply = await _ask(user, "one two three four")
            expected = _paced_span(reply.text, chunk_ms, factor)
            # Real time would be about half of it, and 20 ms chunks a second less: the
            # lower bound below tells either mistake.
            assert _paced_span(reply.text, chunk_ms, 1.0) < expected - 1.0
            assert _paced_span(reply.text, 20, factor) < expected - 0.5, reply.text
            assert expected <= reply.chunk_times[-1] - asked
            assert user.loud_frames > 0  # chunks of 100 ms reach the user as sound
        finally:
            _journal(sim)
            await user.close()


@dataclass(frozen=True)
class _Served:
    """Where a ``fishtalk sim serve`` process listens (what UserClient reads of a handle)."""

    api_url: str
    dev_key: str = DEFAULT_DEV_KEY


@pytest.mark.webrtc
async def test_sim_serve_agent_setting_reaches_the_agent() -> None:
    """``fishtalk sim serve --agent-setting think_seconds=...`` (a person's way to slow the
    agent down) is what the agent of a built-in scenario then does."""
    think = 0.9
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "fishtalk",
        "sim",
        "serve",
        "--port",
        "0",
        "--agent-setting",
        f"think_seconds={think}",
        "--agent-setting",
        "greeting=",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    try:
        api_url = ""
        while not api_url:
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            assert line, "sim serve printed no API URL"
            if "API URL:" in line:
                api_url = line.split("API URL:")[1].strip()
        user = UserClient(cast(SimHandle, _Served(api_url)))
        try:
            await user.start("converse")
            await _ready(user)
            asked, reply = await _ask(user, "slowly", audio=False)
            assert think <= reply.chunk_times[0] - asked
        finally:
            await user.close()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(proc.wait(), 20)
        except TimeoutError:
            proc.kill()
            await proc.wait()
