"""The session against the loopback sim: one test per behaviour of the web SDK's contract."""

from __future__ import annotations

import asyncio

import pytest
from session_harness import WAIT, Sim, exit_code, until

from fishtalk.core import protocol as p

pytestmark = pytest.mark.webrtc


async def test_text_turn_reaches_agent_and_reply_streams(sim: Sim) -> None:
    session, run, agent, _ = await sim.connected()

    session.send_text("  what's my balance?  ")
    message = await agent.expect(p.UserMessage)
    assert message.text == "what's my balance?"
    assert message.audio is False  # text-only settings ask for text-only replies

    seen_speaking = asyncio.Event()
    session.add_listener(lambda s, _e: seen_speaking.set() if s.mode == "speaking" else None)
    await agent.say("a-1", ["Your ", "balance ", "is ", "42."])
    state = await until(session, lambda s: (seg := s.segment("a-1")) is not None and seg.final)
    assert seen_speaking.is_set()
    segment = state.segment("a-1")
    assert segment is not None
    assert (segment.role, segment.text, segment.interrupted) == (
        "agent",
        "Your balance is 42.",
        False,
    )
    assert state.mode == "listening"
    typed = [seg for seg in state.transcript if seg.typed]
    assert [(seg.text, seg.queued) for seg in typed] == [("what's my balance?", False)]

    session.hangup()
    await agent.expect(p.UserHangup)
    result = await asyncio.wait_for(run, WAIT)
    assert (result.reason, exit_code(result)) == ("user_hangup", 0)


async def test_blank_text_is_not_sent(sim: Sim) -> None:
    session, run, agent, _ = await sim.connected()
    session.send_text("   ")
    session.send_text("")
    session.send_text("real")
    message = await agent.expect(p.UserMessage)
    assert message.text == "real"
    assert len([s for s in session.state.transcript if s.typed]) == 1
    session.hangup()
    await asyncio.wait_for(run, WAIT)


async def test_typed_messages_wait_for_the_agents_first_state(sim: Sim) -> None:
    session = sim.session()
    run = sim.start(session)
    session.send_text("first")
    agent, _ = await sim.agent(state=None)  # joined, but no lk.agent.state yet
    await until(session, lambda s: s.status == "connected" and s.agent_joined)
    session.send_text("second")
    state = session.state
    assert [seg.queued for seg in state.transcript if seg.typed] == [True, True]
    assert agent.events.empty()

    await agent.set_state("listening")
    first = await agent.expect(p.UserMessage)
    second = await agent.expect(p.UserMessage)
    assert [first.text, second.text] == ["first", "second"]
    await until(session, lambda s: not any(seg.queued for seg in s.transcript))
    session.hangup()
    await asyncio.wait_for(run, WAIT)


async def test_spoken_and_text_only_turns(sim: Sim) -> None:
    session, run, agent, _ = await sim.connected()

    session.send_text("quiet")
    session.set_spoken(True)
    session.send_text("loud")
    session.send_text("quiet again", audio=False)
    session.set_spoken(False)
    session.send_text("explicitly loud", audio=True)
    got = [await agent.expect(p.UserMessage) for _ in range(4)]
    assert [(m.text, m.audio) for m in got] == [
        ("quiet", False),
        ("loud", None),  # absent: the agent speaks as usual
        ("quiet again", False),
        ("explicitly loud", None),
    ]
    assert b'"audio"' not in agent.raw[1]
    session.hangup()
    await asyncio.wait_for(run, WAIT)


async def test_user_transcript_interim_updates_replace_then_final(sim: Sim) -> None:
    session, run, agent, created = await sim.connected()

    await agent.user_transcript("u-1", "what is", final=False)
    await until(session, lambda s: (seg := s.segment("u-1")) is not None and seg.text == "what is")
    await agent.user_transcript("u-1", "what is the weather", final=False)
    state = await until(
        session, lambda s: (seg := s.segment("u-1")) is not None and seg.text.endswith("weather")
    )
    segment = state.segment("u-1")
    assert segment is not None
    assert (segment.role, segment.final, segment.identity) == ("user", False, created.user_identity)
    await agent.user_transcript("u-1", "What is the weather today?", final=True)
    state = await until(session, lambda s: (seg := s.segment("u-1")) is not None and seg.final)
    segment = state.segment("u-1")
    assert segment is not None
    assert segment.text == "What is the weather today?"
    assert len([seg for seg in state.transcript if seg.segment_id == "u-1"]) == 1
    session.hangup()
    await asyncio.wait_for(run, WAIT)


async def test_interrupt_marks_the_segment_and_drops_late_chunks(sim: Sim) -> None:
    session, run, agent, _ = await sim.connected()

    writer = await agent.open_segment("a-long")
    await writer.write("Once upon a time ")
    await until(session, lambda s: s.mode == "speaking")
    await until(session, lambda s: (seg := s.segment("a-long")) is not None and seg.text != "")
    session.interrupt()
    await agent.expect(p.UserInterrupt)
    await writer.write("there was a dragon.")
    await writer.aclose()
    state = await until(session, lambda s: (seg := s.segment("a-long")) is not None and seg.final)
    segment = state.segment("a-long")
    assert segment is not None
    assert segment.interrupted
    assert segment.text == "Once upon a time "
    assert state.debug.dropped_chunks >= 1
    assert state.mode == "listening"
    session.hangup()
    await asyncio.wait_for(run, WAIT)


async def test_agent_state_changes_drive_the_mode(sim: Sim) -> None:
    session = sim.session()
    run = sim.start(session)
    agent, _ = await sim.agent()
    await until(session, lambda s: s.agent_state == "listening")
    await agent.set_state("thinking")
    await until(session, lambda s: s.agent_state == "thinking" and s.mode == "thinking")
    await agent.set_state("speaking")
    writer = await agent.open_segment("a-2")
    await writer.write("Hello")
    await until(session, lambda s: s.mode == "speaking")
    await writer.aclose()
    await agent.set_state("listening")
    await until(session, lambda s: s.agent_state == "listening" and s.mode == "listening")
    session.hangup()
    await asyncio.wait_for(run, WAIT)


async def test_late_join_reads_the_sticky_state(sim: Sim) -> None:
    from session_harness import ScriptedAgent

    agent = ScriptedAgent(sim.server, "late-room", "user-0000test")
    sim.agents.append(agent)
    await agent.join("thinking")
    session = sim.session(grant=sim.grant_for("late-room"))
    run = sim.start(session)
    state = await until(session, lambda s: s.status == "connected" and s.agent_ready)
    assert state.agent_state == "thinking"
    assert state.mode == "thinking"
    assert state.agent_identity == "agent"
    session.hangup()
    await asyncio.wait_for(run, WAIT)


async def test_every_agent_event_type(sim: Sim) -> None:
    session, run, agent, _ = await sim.connected()

    await agent.send(
        p.ToolStarted(call_id="w1", tool_name="lookup", tool_source="webhook", input='{"q":1}')
    )
    await agent.send(
        p.ToolCompleted(
            call_id="w1",
            tool_name="lookup",
            tool_source="webhook",
            output='{"a":2}',
            output_truncated=True,
        )
    )
    # A terminal event alone (its start was missed) still renders a complete card.
    await agent.send(
        p.ToolFailed(call_id="m1", tool_name="search", tool_source="mcp", error="boom")
    )
    await agent.send(p.AgentError(code="provider_error"))
    await agent.send(p.ClientToolCall(call_id="c1", tool_name="nope", expects_response=True))
    result = await agent.expect(p.ClientToolResult)
    assert result.call_id == "c1"
    assert result.is_error is True
    state = await until(session, lambda s: len(s.tools) == 3 and len(s.errors) >= 2)
    card = state.tool("w1")
    assert card is not None
    assert (card.status, card.source, card.input, card.output, card.output_truncated) == (
        "completed",
        "webhook",
        '{"q":1}',
        '{"a":2}',
        True,
    )
    failed = state.tool("m1")
    assert failed is not None
    assert (failed.status, failed.error, failed.source) == (
        "failed",
        "boom",
        "mcp",
    )
    codes = [e.code for e in state.errors]
    assert "provider_error" in codes
    assert "tool_failed" in codes

    await agent.send(p.SessionEnded(reason="escalated"))
    await until(session, lambda s: s.announced_end_reason == "escalated")
    await agent.leave()
    result_end = await asyncio.wait_for(run, WAIT)
    assert (result_end.reason, exit_code(result_end)) == ("escalated", 0)


async def test_malformed_and_unknown_events_are_counted_not_fatal(sim: Sim) -> None:
    session, run, agent, _ = await sim.connected()
    await agent.send(b"not json at all")
    await agent.send(b"[1, 2, 3]")
    await agent.send(b'{"type": "tool.started"}')
    await agent.send(b'{"type": "agent.mood", "mood": "happy"}')
    await agent.send(b'{"no": "type"}')
    # Other topics are not agent events at all and are not counted.
    await agent.room.local_participant.publish_data(b"whatever", topic="something-else")
    state = await until(
        session, lambda s: s.debug.malformed_events == 4 and s.debug.unknown_events == 1
    )
    assert state.debug.recent_unknown_types == ("agent.mood",)
    assert state.status == "connected"
    session.send_text("still alive?")
    assert (await agent.expect(p.UserMessage)).text == "still alive?"
    session.hangup()
    await asyncio.wait_for(run, WAIT)


async def test_activity_is_throttled(sim: Sim) -> None:
    session, run, agent, _ = await sim.connected()
    for _ in range(20):
        session.activity()
    session.send_text("marker")
    assert isinstance(await agent.next_event(), p.UserActivity)
    assert isinstance(await agent.next_event(), p.UserMessage)
    session.hangup()
    await asyncio.wait_for(run, WAIT)
