"""The typed-turn send path: one way out. A client event is reduced, the event the reducer
returns goes to the outbox, and the outbox publishes it, after everything asked for before it
(also across an outage).

The spy below only records the calls and hands them to the real SDK method unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from session_harness import WAIT, Sim, until

from fishtalk.core import protocol as p
from fishtalk.engine.observe import PacketOut
from fishtalk.engine.session import Session

pytestmark = pytest.mark.webrtc


def _record_publishes(session: Session, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every payload the session hands to ``publish_data``, in call order."""
    room = session.room
    assert room is not None
    participant = room.local_participant
    real: Callable[..., Awaitable[None]] = participant.publish_data
    calls: list[bytes] = []

    async def recording(payload: bytes, **options: Any) -> None:
        calls.append(payload)
        await real(payload, **options)

    monkeypatch.setattr(participant, "publish_data", recording)
    return calls


def _texts(payloads: list[bytes]) -> list[str]:
    events = [p.decode_client_event(payload) for payload in payloads]
    return [event.text for event in events if isinstance(event, p.UserMessage)]


async def test_a_typed_turn_leaves_as_the_reducers_effect_through_the_outbox(
    sim: Sim, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reduce, then publish: the reducer decides once, and the event it returns (its
    normalised text, its ``audio``) is what goes to ``publish_data``, once."""
    from fishtalk.core import conversation as conv

    session, run, agent, _ = await sim.connected()
    published = _record_publishes(session, monkeypatch)
    completed: asyncio.Queue[bytes] = asyncio.Queue()
    at_reduction: list[list[str]] = []

    def seen(item: object) -> None:
        if isinstance(item, conv.SendText):
            at_reduction.append(_texts(published))
        elif isinstance(item, PacketOut):
            completed.put_nowait(item.data)

    session.add_observer(seen)
    before = session.state
    _, effects = conv.reduce(before, conv.SendText(text="  first  ", at=0.0))
    sends = [e.event for e in effects if isinstance(e, conv.SendClientEvent)]
    assert len(sends) == 1

    session.send_text("  first  ")
    assert at_reduction == [[]]  # nothing left before the reduction
    assert (await agent.expect(p.UserMessage)).text == "first"
    assert published == [p.encode_client_event(sends[0])]
    assert await asyncio.wait_for(completed.get(), WAIT) == published[0]
    typed = [(s.text, s.queued) for s in session.state.transcript if s.typed]
    assert typed == [("first", False)]
    # A blank turn is not sent at all.
    session.send_text("   ")
    session.hangup()
    assert isinstance(await agent.next_event(), p.UserHangup)  # nothing sent twice
    assert _texts(published) == ["first"]
    assert (await asyncio.wait_for(run, WAIT)).reason == "user_hangup"


async def test_typed_turns_sent_back_to_back_arrive_in_order_once_each(
    sim: Sim, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, run, agent, _ = await sim.connected()
    published = _record_publishes(session, monkeypatch)
    texts = [f"turn {n}" for n in range(30)]
    for text in texts:  # no await in between: all asked for before the first leaves
        session.send_text(text)
    for text in texts:
        assert (await agent.expect(p.UserMessage)).text == text
    assert _texts(published) == texts
    assert [s.text for s in session.state.transcript if s.typed] == texts
    assert not session.state.errors
    session.hangup()
    assert isinstance(await agent.next_event(), p.UserHangup)
    assert (await asyncio.wait_for(run, WAIT)).reason == "user_hangup"


async def test_turns_and_commands_mixed_at_any_pace_arrive_once_each_in_order(
    sim: Sim,
) -> None:
    session, run, agent, _ = await sim.connected()
    expected: list[p.ClientEvent] = []
    for n in range(40):
        session.send_text(f"turn {n}")
        expected.append(p.UserMessage(text=f"turn {n}", audio=False))
        if n % 7 == 3:
            session.interrupt()
            expected.append(p.UserInterrupt())
        # Some turns while the previous publish is still on its way, some after it.
        for _ in range(n % 4):
            await asyncio.sleep(0)
        if n % 10 == 9:
            await asyncio.sleep(0.01)
    received = [await agent.next_event() for _ in expected]
    assert received == expected
    assert [s.text for s in session.state.transcript if s.typed] == [f"turn {n}" for n in range(40)]
    assert not session.state.errors

    session.hangup()
    assert isinstance(await agent.next_event(), p.UserHangup)
    assert (await asyncio.wait_for(run, WAIT)).reason == "user_hangup"


async def test_a_turn_right_after_an_outage_follows_what_was_queued_during_it(
    sim: Sim,
) -> None:
    session, run, agent, created = await sim.connected()
    await sim.server.drop_signalling(created.room, created.user_identity)
    await until(session, lambda s: s.status == "reconnecting", within=20)
    session.send_text("during the outage")
    session.interrupt()
    back = asyncio.Event()

    def on_state(state: Any, _events: object) -> None:
        if state.status == "connected" and not back.is_set():
            back.set()
            # In the same reduction that flushed the queue: must still come after it.
            session.send_text("right after it")

    session.add_listener(on_state)
    await asyncio.wait_for(back.wait(), 30)
    assert isinstance(await agent.next_event(30), p.UserInterrupt)
    assert (await agent.expect(p.UserMessage)).text == "during the outage"
    assert (await agent.expect(p.UserMessage)).text == "right after it"
    assert not [e for e in session.state.errors if e.code == "send_failed"]
    session.hangup()
    assert (await asyncio.wait_for(run, WAIT)).reason == "user_hangup"
