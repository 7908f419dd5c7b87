"""``wait_for_reply()`` and ``ask()`` follow the one rule of who answers whom (issue 24).

The greeting here is long and spoken (paced at the speed of speech), and each test sends
its first turn only once the greeting has begun: so the greeting deterministically finishes
after the first turn was sent, the case that used to hand back the greeting as the reply.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fishtalk import AgentSession
from fishtalk.core import conversation as conv
from fishtalk.sim.runner import SimInfo, SimThread

from .conftest import WAIT, options, scenario

pytestmark = pytest.mark.webrtc

GREETING = (
    "Hello and welcome, this greeting is spoken word by word, so your first message "
    "is sent while it lasts."
)

LONG = f"""
name = "long"
then = "converse"
[agent]
greeting = "{GREETING}"
voice = "tones"
idle_seconds = 0
"""


@pytest.fixture(scope="module")
def sim() -> Iterator[SimInfo]:
    """Agent id ``long`` plays the scenario above."""
    thread = SimThread(scenario(LONG), scenarios={"long": scenario(LONG)})
    info = thread.start()
    try:
        yield info
    finally:
        thread.stop()


async def _greeting_begun(session: AgentSession) -> conv.Segment:
    """Wait until the greeting's first words are in; the greeting line."""
    event = await session.wait_for(
        lambda e: (
            isinstance(e, conv.SegmentOpened | conv.SegmentGrew)
            and e.segment.role == "agent"
            and bool(e.segment.text)
        ),
        WAIT,
    )
    assert isinstance(event, conv.SegmentOpened | conv.SegmentGrew)
    return event.segment


async def test_the_reply_is_never_the_greeting_that_ends_after_the_send(sim: SimInfo) -> None:
    # Spoken replies (no devices): the greeting is paced by its audio, seconds long.
    async with AgentSession(**options(sim, agent_id="long", text_only=False)) as session:
        greeting = await _greeting_begun(session)
        assert greeting.answers_turn is None
        await session.send_text("What can you do?")
        line = session.state.segment(greeting.segment_id)
        assert line is not None
        assert not line.final  # the greeting is still being spoken
        reply = await session.wait_for_reply(WAIT)
        assert reply.text.startswith("You said: What can you do?"), reply.text
        assert reply.answers_turn == 1
        line = session.state.segment(greeting.segment_id)
        assert line is not None
        assert line.final
        assert line.answers_turn is None
        assert GREETING.split()[0] not in reply.text
        # Asked again for the same turn: the same reply, at once.
        assert await session.wait_for_reply(0.1) == reply


async def test_ask_returns_the_reply_to_this_turn_not_an_earlier_one(sim: SimInfo) -> None:
    async with AgentSession(**options(sim, agent_id="long", text_only=False)) as session:
        await _greeting_begun(session)
        first = await session.ask("First question?", WAIT)
        second = await session.ask("Second question?", WAIT)
    assert first.text.startswith("You said: First question?"), first.text
    assert second.text.startswith("You said: Second question?"), second.text
    assert (first.answers_turn, second.answers_turn) == (1, 2)


async def test_before_any_turn_the_reply_is_the_opening(sim: SimInfo) -> None:
    async with AgentSession(**options(sim, agent_id="long", text_only=False)) as session:
        opening = await session.wait_for_reply(WAIT)
        reply = await session.ask("And now?", WAIT)
    assert opening.text == GREETING
    assert opening.answers_turn is None
    assert reply.text.startswith("You said: And now?"), reply.text
