"""Latency events through the Python API: ``AgentSession.events()`` and ``on()`` deliver
``turn_latency`` (issue 14). Text-only against the sim, so the figures say "text-only";
numbers from real audio are tested with the sim's timings (tests of simtime)."""

from __future__ import annotations

import pytest

from fishtalk import AgentSession, events
from fishtalk.core.conversation import note
from fishtalk.sim.runner import SimInfo

from .conftest import WAIT, options

pytestmark = pytest.mark.webrtc


def test_latency_kinds_are_public_events() -> None:
    assert {"turn_latency", "interrupt_latency"} <= events.KINDS
    assert events.TurnLatency.kind == "turn_latency"
    assert events.InterruptLatency.kind == "interrupt_latency"


async def test_a_text_only_turn_reports_its_latency_as_text_only(sim: SimInfo) -> None:
    session = AgentSession(**options(sim))
    stream = session.events()
    by_type: list[events.TurnLatency] = []
    by_name: list[events.TurnLatency] = []
    session.on(events.TurnLatency, by_type.append)
    session.on("turn_latency", by_name.append)
    async with session:
        greeting = await session.wait_for_reply(WAIT)
        sent = await session.send_text("How fast are you?")
        reply = await session.wait_for_reply(WAIT)
        assert reply.segment_id != greeting.segment_id
        turns = session.state.latency.turns
        assert [w.kind for w in turns] == ["unprompted", "typed"]
    seen = [ev async for ev in stream if isinstance(ev, events.TurnLatency)]
    assert [ev.waterfall for ev in seen] == [ev.waterfall for ev in by_type]
    assert by_name == by_type
    greeted, answered = (ev.waterfall for ev in seen)
    assert (greeted.incomplete, greeted.segment_id) == ("no user turn", greeting.segment_id)
    assert (greeted.turn, answered.turn, answered.incomplete) == (0, 1, "text-only")
    assert answered.segment_id == reply.segment_id
    assert answered.user_ended_at >= sent.started_at
    assert answered.first_text is not None
    assert answered.first_text > 0
    assert note(answered).startswith("latency: not measured — text-only (first text ")
    assert seen[1].to_dict()["waterfall"]["incomplete"] == "text-only"
