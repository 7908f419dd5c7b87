"""The typed-turn send path: a client event on an idle, connected link is published at once
(before ``send_text`` returns, no hop through the sender task), and everything asked for
while that publish or a queued one is on its way follows it in order.

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


async def test_a_typed_turn_on_an_idle_link_leaves_before_send_text_returns(
    sim: Sim, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, run, agent, _ = await sim.connected()
    published = _record_publishes(session, monkeypatch)
    completed: asyncio.Queue[bytes] = asyncio.Queue()
    session.add_observer(
        lambda seen: completed.put_nowait(seen.data) if isinstance(seen, PacketOut) else None
    )

    session.send_text("right away")
    # No await in between: the publish has already been handed to the SDK.
    assert _texts(published) == ["right away"]
    # Asked for while that publish is on its way: queued behind it, sent after it.
    session.send_text("second")
    session.send_text("third")
    assert _texts(published) == ["right away"]

    for text in ("right away", "second", "third"):
        assert (await agent.expect(p.UserMessage)).text == text
    assert _texts(published) == ["right away", "second", "third"]
    typed = [(s.text, s.queued) for s in session.state.transcript if s.typed]
    assert typed == [("right away", False), ("second", False), ("third", False)]
    assert not session.state.errors

    # Once every publish has completed, the next turn takes the direct path again.
    done = [await asyncio.wait_for(completed.get(), WAIT) for _ in range(3)]
    assert _texts(done) == ["right away", "second", "third"]
    session.send_text("idle again")
    assert _texts(published)[-1] == "idle again"
    assert (await agent.expect(p.UserMessage)).text == "idle again"

    session.hangup()
    await agent.expect(p.UserHangup)
    assert (await asyncio.wait_for(run, WAIT)).reason == "user_hangup"


async def test_a_typed_turn_on_an_idle_link_leaves_before_it_is_reduced(
    sim: Sim, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bytes first, the bookkeeping after: when the reducer would send the turn at
    once, the publish is handed to the SDK before the reduction (observers see the input
    just before it is reduced), and the reducer's own send of it is not repeated."""
    from fishtalk.core import conversation as conv

    session, run, agent, _ = await sim.connected()
    published = _record_publishes(session, monkeypatch)
    at_reduction: list[list[str]] = []
    session.add_observer(
        lambda seen: (
            at_reduction.append(_texts(published)) if isinstance(seen, conv.SendText) else None
        )
    )

    session.send_text("  first  ")
    assert at_reduction == [["first"]]
    assert (await agent.expect(p.UserMessage)).text == "first"
    typed = [(s.text, s.queued) for s in session.state.transcript if s.typed]
    assert typed == [("first", False)]
    # A blank turn is not sent at all, early or late.
    session.send_text("   ")
    assert at_reduction == [["first"], ["first"]]
    session.hangup()
    assert isinstance(await agent.next_event(), p.UserHangup)  # nothing sent twice
    assert _texts(published) == ["first"]
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

    def on_state(state: Any) -> None:
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
