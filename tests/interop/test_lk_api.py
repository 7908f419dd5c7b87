"""fishtalk's Python API against a real livekit-agents agent (issue 27): its transcripts
stream paced to its audio and finalize, an interrupt cuts the line to what was spoken, its
state attribute moves as the reference implementation moves it, and its function tools
reach the client as Fish client tools."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from pydantic import JsonValue
from support.lk_agent import GREETING, TABLE

from fishtalk import AgentSession, ToolContext, events
from fishtalk.sim.runner import SimInfo

from .conftest import WAIT, options

pytestmark = pytest.mark.webrtc

STORY = TABLE["story"]
assert isinstance(STORY, str)


async def test_a_reply_streams_word_by_word_then_finalizes(lk_sim: SimInfo) -> None:
    session = AgentSession(**options(lk_sim))
    grew: list[str] = []
    states: list[str] = []
    session.on(events.SegmentGrew, lambda ev: grew.append(ev.segment.text))
    session.on(events.AgentStateChanged, lambda ev: states.append(ev.agent_state))
    async with session:
        greeting = await session.wait_for_reply(WAIT)
        assert greeting.text == GREETING
        grew.clear()
        await session.send_text("hello")
        reply = await session.wait_for_reply(WAIT)
        assert reply.final
        assert reply.text == TABLE["hello"]
    # RoomIO writes each word as its audio plays: the text grew in several steps, each a
    # prefix of the next, before the line was final.
    assert len(grew) >= 3, grew
    assert all(b.startswith(a) for a, b in itertools.pairwise(grew)), grew
    # The state is a sticky attribute: a client that joins after the agent left
    # "initializing" reads "listening" first. Either way, the agent's states come in order.
    assert states[0] in ("initializing", "listening"), states
    assert "initializing" not in states[1:], states
    turn = states[states.index("thinking") :]
    assert turn[:3] == ["thinking", "speaking", "listening"], states


async def test_an_interrupt_cuts_the_line_to_what_was_spoken(lk_sim: SimInfo) -> None:
    async with AgentSession(**options(lk_sim)) as session:
        await session.wait_for_reply(WAIT)
        grown = asyncio.Event()

        def words(ev: events.SegmentGrew) -> None:
            if ev.segment.role == "agent" and len(ev.segment.text.split()) >= 3:
                grown.set()

        session.on(events.SegmentGrew, words)
        await session.send_text("tell me a story")
        await asyncio.wait_for(grown.wait(), WAIT)
        session.interrupt()
        cut = await session.wait_for(
            lambda ev: isinstance(ev, events.SegmentFinalised) and ev.segment.role == "agent",
            WAIT,
        )
        assert isinstance(cut, events.SegmentFinalised)
        text = cut.segment.text
        assert STORY.startswith(text.rstrip()), text
        assert 3 <= len(text.split()) < len(STORY.split()), text
        await session.send_text("hello")  # and the conversation goes on
        assert (await session.wait_for_reply(WAIT)).text == TABLE["hello"]


async def test_its_function_tools_run_as_fish_client_tools(lk_sim: SimInfo) -> None:
    calls: list[dict[str, JsonValue]] = []

    def get_time(params: dict[str, JsonValue], context: ToolContext) -> JsonValue:
        calls.append(params)
        return {"time": "12:34"}

    cards: list[events.ToolCardChanged] = []
    session = AgentSession(**options(lk_sim), client_tools={"get_time": get_time})
    session.on(events.ToolCardChanged, cards.append)
    async with session:
        await session.wait_for_reply(WAIT)
        await session.send_text("what time is it")
        reply = await session.wait_for_reply(WAIT)
        assert calls == [{"zone": "UTC"}]
        assert "12:34" in reply.text, reply.text
        await session.send_text("and the weather")  # a builtin tool: tool.* events only
        reply = await session.wait_for_reply(WAIT)
        assert "clear" in reply.text, reply.text
    sources = {(c.card.tool_name, c.card.source, c.card.status) for c in cards}
    assert ("get_time", "client", "completed") in sources, sources
    assert ("get_weather", "builtin", "completed") in sources, sources
