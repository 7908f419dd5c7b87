"""fishtalk's Python API against a real livekit-agents agent (issue 27)."""

from __future__ import annotations

import pytest

from fishtalk import AgentSession, events
from fishtalk.sim.runner import SimInfo

from .conftest import WAIT, options

pytestmark = pytest.mark.webrtc


async def test_a_typed_turn_gets_the_tables_reply(lk_sim: SimInfo) -> None:
    session = AgentSession(**options(lk_sim))
    seen: list[events.Event] = []
    session.on("*", seen.append)
    async with session:
        greeting = await session.wait_for_reply(WAIT)
        assert greeting.text == "Hello from livekit agents."
        await session.send_text("hello")
        reply = await session.wait_for_reply(WAIT)
        assert reply.text == "Hello there, nice to meet you."
        assert reply.final
    print([type(e).__name__ for e in seen])
