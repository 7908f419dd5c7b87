"""The simulated Fish agent against a real ``livekit.rtc.Room`` user, through the sim server.

Run: ``.venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/sim/test_agent.py -q``
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator

import pytest
from livekit import rtc

from fishtalk.core import protocol as p
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle

from .sim_user import ManualClock, UserClient, tone_sim

pytestmark = pytest.mark.webrtc

SCENARIOS = {
    "plain": """
        [agent]
        greeting = "Hello there, friend."
        idle_seconds = 0
        voice = "tones"
    """,
    "long": """
        then = "listen"
        [agent]
        greeting = ""
        voice = "tones"
        [[steps]]
        do = "say"
        text = '''one two three four five six seven eight nine ten eleven twelve thirteen
        fourteen fifteen sixteen seventeen eighteen nineteen twenty'''
        [[steps]]
        do = "say"
        text = "After the interruption."
    """,
    "tools": """
        then = "listen"
        [agent]
        greeting = ""
        voice = "tones"
        [[steps]]
        do = "client_tool"
        name = "get_thing"
        params = { what = "answer" }
        timeout = 10.0
        call_id = "call_one"
        [[steps]]
        do = "client_tool"
        name = "notify"
        expects_response = false
        call_id = "call_two"
        [[steps]]
        do = "client_tool"
        name = "slow_tool"
        timeout = 0.5
        call_id = "call_three"
        [[steps]]
        do = "say"
        text = "Tools done."
        audio = false
    """,
    "agent-tools": """
        then = "listen"
        [agent]
        greeting = ""
        [[steps]]
        do = "tool"
        name = "lookup"
        source = "webhook"
        input = { city = "Lisbon" }
        output = { sunny = true }
        duration = 0.1
        node_id = "n1"
        [[steps]]
        do = "tool"
        name = "search"
        source = "mcp"
        pad_input_bytes = 6000
        error = "upstream timed out"
        duration = 0.1
        [[steps]]
        do = "tool"
        name = "clock"
        source = "builtin"
        output = "12:00"
        pad_output_bytes = 5000
        duration = 0.0
        [[steps]]
        do = "error"
        code = "internal_error"
        [[steps]]
        do = "say"
        text = "Events sent."
        audio = false
    """,
    "chatty": """
        then = "listen"
        [agent]
        voice = "tones"
        greeting = '''Good morning, this greeting is deliberately long so that the user can
        talk over it while it plays, which is the whole point of this little scenario.'''
    """,
    "vars": """
        then = "listen"
        [agent]
        greeting = "Hello {{ customer }}, you are on {{plan}} ({{missing}})."
        greeting_audio = false
    """,
    "idle": """
        [agent]
        greeting = "Hi."
        greeting_audio = false
        idle_seconds = 1.5
    """,
    "short": """
        then = "listen"
        [agent]
        greeting = ""
        max_duration_seconds = 3
    """,
}


@pytest.fixture
def idle_clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def sim(idle_clock: ManualClock) -> AsyncIterator[SimHandle]:
    scenarios = {name: parse_scenario(text, name=name) for name, text in SCENARIOS.items()}
    async with tone_sim(scenarios, idle_clock=idle_clock) as handle:
        yield handle


async def test_greeting_states_and_spoken_reply(sim: SimHandle, user: UserClient) -> None:
    started = time.monotonic()
    await user.start("plain")
    greeting = await user.final_agent_segment("friend.")
    assert greeting.text == "Hello there, friend."
    assert not greeting.header_final
    assert greeting.final
    # Words stream in step with the audio: several chunks, the last no sooner than the
    # audio of the words before it takes after the call began (measured from that cause,
    # not between two arrivals, whose delays differ).
    assert len(greeting.chunk_times) == 3
    assert greeting.chunk_times[-1] - started > 0.3
    await user.until(lambda: user.loud_frames > 10)
    await user.until(lambda: user.states[-1:] == ["listening"])
    assert "speaking" in user.states
    assert user.states.index("speaking") < len(user.states) - 1

    before = len(user.states)
    loud_before = user.loud_frames
    await user.send(p.UserMessage(text="what is up"))
    reply = await user.final_agent_segment("You said: what is up", within=30.0)
    assert reply.final
    later = user.states[before - 1 :]
    assert "thinking" in later
    assert "speaking" in later
    assert later.index("thinking") < later.index("speaking")
    await user.until(lambda: user.loud_frames > loud_before + 10)
    await user.until(lambda: user.states[-1] == "listening")


async def test_text_only_reply_has_no_speech(sim: SimHandle, user: UserClient) -> None:
    await user.start("plain")
    await user.final_agent_segment("friend.")
    await user.until(lambda: user.states[-1] == "listening")
    agent = await sim.agent(user.session_id)
    # The spoken greeting has been fed to the voice track in full once it is noted.
    await agent.wait_note("said: Hello there, friend.")
    frames_before = agent.speech.frames_sent
    assert frames_before > 0
    states_before = len(user.states)
    await user.send(p.UserMessage(text="quietly", audio=False))
    reply = await user.final_agent_segment("You said: quietly")
    assert reply.final
    await agent.wait_note("wrote: You said: quietly")
    # The reply is over once the agent is back to listening: no frame was fed meanwhile,
    # and the user never saw it speaking.
    await user.until(lambda: user.states[states_before:] == ["thinking", "listening"])
    assert agent.speech.frames_sent == frames_before
    assert "speaking" not in user.states[states_before:]


async def test_interrupt_closes_segment_with_spoken_words(sim: SimHandle, user: UserClient) -> None:
    await user.start("long")
    full = " ".join(SCENARIOS["long"].split("text = '''")[1].split("'''")[0].split())
    segment = await user.until(
        lambda: next((s for s in user.agent_segments() if s.text.count(" ") >= 3), None)
    )
    await user.send(p.UserInterrupt())
    await user.until(lambda: segment.closed)
    assert segment.final
    assert full.startswith(" ".join(segment.text.split()))
    assert len(segment.text) < len(full) - 20
    agent = await sim.agent(user.session_id)
    await agent.wait_note("interrupted")
    # The script moves on, and the audio of the cut words stops.
    await user.final_agent_segment("After the interruption.")
    words_of_first = segment.text.split()
    assert agent.journal.count("interrupted") == 1
    assert any(n == "said: " + " ".join(words_of_first) for n in agent.journal)


async def test_hangup_ends_session(sim: SimHandle, user: UserClient) -> None:
    grant = await user.start("plain")
    await user.final_agent_segment("friend.")
    await user.send(p.UserHangup())
    ended = await user.event(p.SessionEnded)
    assert ended.reason == "user_hangup"
    session = sim.endpoint.sessions[user.session_id]
    await user.until(lambda: "agent" not in sim.server.participants(session.room))
    assert session.status == "completed"
    assert sim.endpoint.gate.check(grant["token"]) is not None


async def test_client_tool_calls(sim: SimHandle, user: UserClient) -> None:
    await user.start("tools")
    call = await user.event(p.ClientToolCall, call_id="call_one")
    assert call.tool_name == "get_thing"
    assert call.params == {"what": "answer"}
    assert call.expects_response
    started = await user.event(p.ToolStarted, call_id="call_one")
    assert started.tool_source == "client"
    assert json.loads(started.input) == {"what": "answer"}
    # An unknown call id is ignored; the real result settles the call.
    await user.send(p.ClientToolResult(call_id="call_nope", result=1))
    await user.send(p.ClientToolResult(call_id="call_one", result={"v": 42}))
    said = await user.final_agent_segment("get_thing tool returned")
    assert '"v": 42' in said.text
    completed = await user.event(p.ToolCompleted, call_id="call_one")
    assert json.loads(completed.output) == {"v": 42}
    agent = await sim.agent(user.session_id)
    await agent.wait_note("ignored result for unknown or settled call call_nope")

    # Fire and forget: any result is ignored.
    fire = await user.event(p.ClientToolCall, call_id="call_two")
    assert not fire.expects_response
    await user.send(p.ClientToolResult(call_id="call_two", result="late"))
    await agent.wait_note("ignored result for unknown or settled call call_two")
    await user.final_agent_segment("I asked your client to run notify")

    # Past the server-side deadline: the agent moves on and ignores the late result.
    await user.event(p.ClientToolCall, call_id="call_three")
    failed = await user.event(p.ToolFailed, call_id="call_three")
    assert failed.error == "no result within 0.5 s"
    await user.final_agent_segment("did not answer my slow_tool call in time")
    await user.send(p.ClientToolResult(call_id="call_three", result="too late"))
    await agent.wait_note("ignored result for unknown or settled call call_three")
    await user.final_agent_segment("Tools done.")


async def test_client_tool_error_result(sim: SimHandle, user: UserClient) -> None:
    await user.start("plain")
    await user.final_agent_segment("friend.")
    await user.send(p.UserMessage(text="call open_thing", audio=False))
    call = await user.event(p.ClientToolCall, tool_name="open_thing")
    await user.send(p.ClientToolResult(call_id=call.call_id, result="no such tool", is_error=True))
    await user.final_agent_segment("Your open_thing tool failed: no such tool")
    failed = await user.event(p.ToolFailed, call_id=call.call_id)
    assert failed.error == "no such tool"


async def test_a_typed_call_names_the_tool_as_a_spoken_one_does(
    sim: SimHandle, user: UserClient
) -> None:
    """ "call get time", typed, calls ``get_time``: the tool the spoken phrase calls."""
    await user.start("plain")
    await user.final_agent_segment("friend.")
    await user.send(p.UserMessage(text="call  get time ", audio=False))
    call = await user.event(p.ClientToolCall)
    assert call.tool_name == "get_time"
    await user.send(p.ClientToolResult(call_id=call.call_id, result="09:41"))
    await user.final_agent_segment("get_time tool returned")


async def test_agent_tool_events_and_error(sim: SimHandle, user: UserClient) -> None:
    await user.start("agent-tools")
    await user.final_agent_segment("Events sent.")
    lookup = await user.event(p.ToolCompleted, tool_name="lookup")
    assert lookup.tool_source == "webhook"
    assert lookup.node_id == "n1"
    assert json.loads(lookup.input) == {"city": "Lisbon"}
    assert json.loads(lookup.output) == {"sunny": True}
    assert lookup.input_truncated is None
    started = [e for e in user.events if isinstance(e, p.ToolStarted)]
    assert [e.tool_name for e in started] == ["lookup", "search", "clock"]
    search = await user.event(p.ToolFailed, tool_name="search")
    assert search.tool_source == "mcp"
    assert search.error == "upstream timed out"
    assert search.input_truncated is True
    assert search.input is not None
    assert len(search.input.encode()) == p.MAX_PAYLOAD_PREVIEW
    clock = await user.event(p.ToolCompleted, tool_name="clock")
    assert clock.tool_source == "builtin"
    assert clock.output_truncated is True
    error = await user.event(p.AgentError)
    assert error.code == "internal_error"
    assert user.bad_packets == []


async def test_tool_events_off(sim: SimHandle, user: UserClient) -> None:
    await user.start("agent-tools", tool_events=False)
    await user.final_agent_segment("Events sent.")
    await user.event(p.AgentError)
    assert not [e for e in user.events if isinstance(e, p.ToolStarted | p.ToolCompleted)]
    assert not [e for e in user.events if isinstance(e, p.ToolFailed)]


async def test_conversation_timeout(sim: SimHandle, user: UserClient) -> None:
    grant = await user.start("short")
    assert grant["max_duration_seconds"] == 3
    started = time.monotonic()
    ended = await user.event(p.SessionEnded, within=10.0)
    assert ended.reason == "conversation_timeout"
    assert time.monotonic() - started > 1.5
    session = sim.endpoint.sessions[user.session_id]
    await user.until(lambda: "agent" not in sim.server.participants(session.room))


async def test_malformed_client_events_ignored(sim: SimHandle, user: UserClient) -> None:
    await user.start("plain")
    await user.final_agent_segment("friend.")
    agent = await sim.agent(user.session_id)
    await user.send_raw(b"{not json")
    await user.send_raw(b'{"type": "user.message"}')
    await user.send_raw(b'{"type": "user.dance"}')
    await agent.wait_note("ignored a malformed client event: malformed JSON")
    await agent.wait_note("ignored a malformed client event: invalid 'user.message'")
    await agent.wait_note("ignored a client event of unknown type")
    await user.send(p.UserMessage(text="still there", audio=False))
    await user.final_agent_segment("You said: still there")


async def test_end_via_api(sim: SimHandle, user: UserClient) -> None:
    await user.start("plain")
    await user.final_agent_segment("friend.")
    sim.endpoint.end_session(user.session_id)
    ended = await user.event(p.SessionEnded)
    assert ended.reason == "agent_hangup"


async def test_user_transcript_from_a_tone(sim: SimHandle, user: UserClient) -> None:
    await user.start("plain")
    await user.final_agent_segment("friend.")
    await user.until(lambda: user.states[-1] == "listening")
    agent = await sim.agent(user.session_id)
    publishing = asyncio.ensure_future(user.publish_tone(440.0, 1.2))
    await agent.wait_note("listening to")
    await publishing
    final = await user.until(
        lambda: next((s for s in user.user_streams() if s.header_final and s.closed), None)
    )
    interims = [s for s in user.user_streams() if not s.header_final]
    assert interims, "expected interim transcripts before the final one"
    assert all(s.segment == final.segment for s in interims)
    assert all(s.text.startswith("(hearing ") for s in interims)
    match = re.fullmatch(
        r"\(heard (\d+\.\d) s of sound at (-?\d+) dBFS, mostly around (\d+) Hz\)", final.text
    )
    assert match, final.text
    assert 0.9 <= float(match[1]) <= 1.6
    assert abs(int(match[3]) - 440) <= 5
    assert -25 <= int(match[2]) <= -5
    reply = await user.final_agent_segment("I heard")
    assert "hertz" in reply.text


async def test_sound_over_its_own_voice_is_not_answered(sim: SimHandle, user: UserClient) -> None:
    await user.start("chatty")
    await user.until(lambda: user.states[-1:] == ["speaking"])
    await user.publish_tone(330.0, 0.8, before=0.0, after=1.2)
    agent = await sim.agent(user.session_id)
    await agent.wait_note("heard sound over my own voice; not answering it", within=30.0)
    # The agent notes it before its final transcript has reached us: wait for that too.
    final = await user.until(
        lambda: [s for s in user.user_streams() if s.header_final and s.closed] or None,
        within=20.0,
    )
    assert len(final) == 1
    match = re.search(r"mostly around (\d+) Hz", final[0].text)
    assert match, final[0].text
    assert abs(int(match[1]) - 330) <= 5


async def test_token_is_single_use(sim: SimHandle, user: UserClient) -> None:
    grant = await user.start("plain")
    await user.final_agent_segment("friend.")
    second = rtc.Room()
    with pytest.raises(rtc.ConnectError, match="single-use"):
        await asyncio.wait_for(second.connect(grant["livekit_url"], grant["token"]), 30)
    # The user leaving on purpose ends the session; the token is then dead too.
    await user.room.disconnect()
    session = sim.endpoint.sessions[user.session_id]
    await user.until(lambda: session.status == "completed")
    agent = await sim.agent(user.session_id)
    await agent.wait_note("left")
    third = rtc.Room()
    with pytest.raises(rtc.ConnectError, match="session has ended"):
        await asyncio.wait_for(third.connect(grant["livekit_url"], grant["token"]), 30)


async def test_idle_re_engagement_postponed_by_activity(
    sim: SimHandle, user: UserClient, idle_clock: ManualClock
) -> None:
    # The agent's idle time runs on a clock the test moves: no wall-clock margins.
    await user.start("idle")  # idle_seconds = 1.5
    await user.final_agent_segment("Hi.")
    agent = await sim.agent(user.session_id)
    await agent.wait_note("steps done")  # the idle clock starts here
    for sent in range(1, 4):
        idle_clock.advance(1.0)  # 3 s in all: twice the idle time, but never 1.5 s quiet
        await user.send(p.UserActivity())
        await user.until(lambda n=sent: agent.journal.count("received user.activity") == n)
    idle_clock.advance(2.0)  # now quiet for longer than idle_seconds
    nudge = await user.final_agent_segment("Are you still there?", within=20.0)
    assert nudge.final
    # The greeting was text only: the first time the agent speaks is the nudge.
    nudge_began = agent.journal.index("state speaking")
    before = agent.journal[:nudge_began]
    # It re-engaged only after the last activity, which each time pushed it back.
    assert before.count("received user.activity") == 3
    assert "idle: activity postponed re-engaging" in before
    assert not [s for s in user.agent_segments()[:-1] if "still there" in s.text]
    await agent.wait_note("idle: nudged")
    idle_clock.advance(2.0)  # no answer to the nudge either: the agent goes idle
    await user.until(lambda: user.states[-1] == "idle", within=20.0)
    # A turn wakes it up again.
    await user.send(p.UserMessage(text="back", audio=False))
    await user.final_agent_segment("You said: back")


async def test_greeting_fills_dynamic_variables(sim: SimHandle, user: UserClient) -> None:
    await user.start("vars", dynamic_variables={"customer": "Ada", "plan": 3})
    greeting = await user.final_agent_segment("Hello")
    assert greeting.text == "Hello Ada, you are on 3 ({{missing}})."


async def test_first_message_override(sim: SimHandle, user: UserClient) -> None:
    await user.start("vars", overrides={"first_message": "Custom hello."})
    greeting = await user.final_agent_segment("Custom hello.")
    assert greeting.text == "Custom hello."
