"""Scenario files: parsing (pure) and every step kind played to a real user client.

Run: ``.venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/sim/test_scenario.py -q``
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fishtalk.cli.exits import exit_code_for
from fishtalk.core import protocol as p
from fishtalk.core.errors import ScenarioError
from fishtalk.sim.fish.scenario import (
    BUILTIN,
    Raw,
    Scenario,
    builtin_scenario,
    load_scenario,
    parse_scenario,
)
from fishtalk.sim.fish.voice import Pcm, tone
from fishtalk.sim.runner import SimHandle, run_sim

from .sim_user import UserClient, tone_sim

# --- parsing (no network) --------------------------------------------------------------


def test_builtin_scenarios_parse() -> None:
    for name in BUILTIN:
        scenario = builtin_scenario(name)
        assert scenario.name == name
    demo = builtin_scenario("demo")
    kinds = {step.do for step in demo.steps}
    # The demo shows every feature a client must handle.
    assert {
        "say",
        "state",
        "tool",
        "client_tool",
        "user_transcript",
        "error",
        "raw",
        "drop_signalling",
    } <= kinds
    assert demo.then == "converse"
    assert any(s.do == "say" and not s.audio for s in demo.steps)  # type: ignore[union-attr]


def test_what_the_tour_invites_you_to_say_works_in_the_demo() -> None:
    """Each "try saying ..." of the built-in scenarios is a phrase the sim's ears know, and
    a tool it calls is one `fishtalk demo` gives its client (no failed tool card for
    doing what the tour said)."""
    from fishtalk.cli.demo import DEMO_BUILTINS
    from fishtalk.sim.fish.hearing import SPOKEN_COMMANDS
    from fishtalk.sim.fish.interpreter import tool_name

    invited = [
        match.group(1)
        for name in BUILTIN
        for step in builtin_scenario(name).steps
        if step.do == "say"
        for match in re.finditer(r"try saying ([a-z ]+)", step.text)  # type: ignore[union-attr]
    ]
    assert invited, "the tour invites no speech"
    for phrase in invited:
        assert phrase in SPOKEN_COMMANDS, phrase
        command = SPOKEN_COMMANDS[phrase]
        if command.startswith("call "):
            assert tool_name(command.removeprefix("call ")) in DEMO_BUILTINS, phrase


def test_load_by_name_and_path(tmp_path: Path) -> None:
    assert load_scenario("demo").name == "demo"
    path = tmp_path / "mine.toml"
    path.write_text('[[steps]]\ndo = "sleep"\nseconds = 1\n', encoding="utf-8")
    scenario = load_scenario(path)
    assert scenario.name == "mine"
    assert scenario.then == "converse"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("then = [", "not valid TOML"),
        ('[[steps]]\ndo = "dance"', "steps.0"),
        ('[[steps]]\ndo = "say"', "steps.0.say.text: is required"),
        ('[[steps]]\ndo = "raw"', "exactly one of payload, payload_hex or json"),
        ('[[steps]]\ndo = "raw"\npayload_hex = "zz"', "payload_hex is not hexadecimal"),
        ('[[steps]]\ndo = "user_transcript"', "interim texts, a final text, or both"),
        ('[[steps]]\ndo = "sleep"\nseconds = -1', "must be at least 0"),
        ("bogus = 1", "bogus: is not a known setting"),
        ("[agent]\nvoice = 'opera'", "agent.voice"),
        ("[agent]\ntool_deadline_seconds = 500", "agent.tool_deadline_seconds"),
        ('then = "dance"', "then"),
    ],
)
def test_bad_scenarios_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, source="t.toml")
    assert message in str(info.value)
    assert str(info.value).startswith("scenario t.toml: ")
    assert "\n" not in str(info.value)
    assert exit_code_for(None, info.value) == 2


def test_unreadable_and_unknown() -> None:
    with pytest.raises(ScenarioError, match="cannot read scenario"):
        load_scenario("/nonexistent/x.toml")
    with pytest.raises(ScenarioError, match="no built-in scenario"):
        builtin_scenario("nope")


def test_raw_payloads() -> None:
    def raw(text: str) -> Raw:
        step = parse_scenario(f'[[steps]]\ndo = "raw"\n{text}').steps[0]
        assert isinstance(step, Raw)
        return step

    assert raw('payload = "{x"').data() == b"{x"
    assert raw('payload_hex = "ff00"').data() == b"\xff\x00"
    assert json.loads(raw('json = { type = "future.thing", n = 1 }').data()) == {
        "type": "future.thing",
        "n": 1,
    }


# --- played through the sim (needs the network namespace) ------------------------------

STEPS = """
then = "end"
[agent]
greeting = ""

[[steps]]
do = "state"
value = "thinking"

[[steps]]
do = "raw"
payload_hex = "ff fe 7b"

[[steps]]
do = "raw"
payload = "[1, 2]"

[[steps]]
do = "raw"
json = { type = "future.event", answer = 42 }

[[steps]]
do = "raw"
json = { type = "error" }

[[steps]]
do = "user_transcript"
interim = ["what", "what is"]
final = "What is up?"
interval = 0.1

[[steps]]
do = "say"
text = "Waiting."
audio = false

[[steps]]
do = "wait_for"
event = "user.message"
timeout = 20

[[steps]]
do = "say"
text = "Got it."
audio = false

[[steps]]
do = "wait_for"
event = "user.activity"
timeout = 0.3

[[steps]]
do = "drop_signalling"

[[steps]]
do = "sleep"
seconds = 4.0

[[steps]]
do = "say"
text = "After the drop."
audio = false

# Let the end of that text stream reach the user before the server removes them: data in
# flight to a participant that is being reconnected is lost, as with a real LiveKit server.
[[steps]]
do = "sleep"
seconds = 1.0

[[steps]]
do = "reconnect"

[[steps]]
do = "say"
text = "After the rejoin."
audio = false

[[steps]]
do = "end"
reason = "escalated"
"""


@dataclass(frozen=True)
class _QuickVoice:
    """Very short tones so that a long scenario plays in seconds."""

    name: str = "quick"

    async def render(self, word: str) -> Pcm:
        return tone(300.0, 0.03)


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    scenarios: dict[str, Scenario] = {"steps": parse_scenario(STEPS, name="steps")}
    async with tone_sim(scenarios) as handle:
        yield handle


@pytest.mark.webrtc
async def test_every_step_kind(sim: SimHandle, user: UserClient) -> None:
    await user.start("steps")
    await user.until(lambda: "thinking" in user.states)
    await user.final_agent_segment("Waiting.")
    # Malformed bytes, a non-object, a bad known type: all refused by the decoder; an
    # unknown type decodes as UnknownAgentEvent.
    assert len(user.bad_packets) == 3
    assert any("malformed JSON" in b for b in user.bad_packets)
    assert any("expected a JSON object" in b for b in user.bad_packets)
    assert any("invalid 'error' event" in b for b in user.bad_packets)
    unknown = await user.event(p.UnknownAgentEvent)
    assert unknown.type == "future.event"
    assert unknown.raw["answer"] == 42
    # The user transcript: interim streams replace the text, then a final one.
    mine = user.user_streams()
    assert [s.text for s in mine] == ["what", "what is", "What is up?"]
    assert [s.header_final for s in mine] == [False, False, True]
    assert len({s.segment for s in mine}) == 1

    await user.send(p.UserMessage(text="here you go", audio=False))
    await user.final_agent_segment("Got it.")
    agent = await sim.agent(user.session_id)
    await agent.wait_note("got awaited user.message")
    await agent.wait_note("timed out waiting for user.activity")
    # A consumed user.message is not answered again later.
    assert not any("You said" in s.text for s in user.agent_segments())

    await user.final_agent_segment("After the drop.", within=20.0)
    await user.final_agent_segment("After the rejoin.", within=30.0)
    ended = await user.event(p.SessionEnded, within=20.0)
    assert ended.reason == "escalated"
    session = sim.endpoint.sessions[user.session_id]
    await user.until(lambda: "agent" not in sim.server.participants(session.room))


@pytest.mark.webrtc
async def test_demo_scenario_plays_everything() -> None:
    async with run_sim(voice=_QuickVoice()) as sim:
        user = UserClient(sim)
        try:
            await user.start("demo")
            call = await user.event(p.ClientToolCall, within=40.0, tool_name="get_local_context")
            await user.send(p.ClientToolResult(call_id=call.call_id, result={"tz": "UTC"}))
            await user.final_agent_segment("get_local_context tool returned", within=20.0)
            notify = await user.event(p.ClientToolCall, tool_name="notify")
            assert not notify.expects_response
            await user.final_agent_segment("That's the tour.", within=40.0)
            kinds = {type(e) for e in user.events}
            assert {
                p.ToolStarted,
                p.ToolCompleted,
                p.ToolFailed,
                p.ClientToolCall,
                p.AgentError,
                p.UnknownAgentEvent,
            } <= kinds
            assert len(user.bad_packets) == 1
            assert user.bad_packets[0].startswith("malformed JSON")
            assert any(s.header_final for s in user.user_streams())
            assert user.loud_frames > 0
            # Then it keeps conversing.
            await user.send(p.UserMessage(text="hello demo", audio=False))
            await user.final_agent_segment("You said: hello demo", within=20.0)
        finally:
            await user.close()
            await asyncio.sleep(0)
