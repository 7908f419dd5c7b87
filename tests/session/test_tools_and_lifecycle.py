"""Client-tool outcomes and the session lifecycle (ends, reconnects) against the sim."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from session_harness import FAST_SLACK, SHORT, WAIT, ScriptedAgent, Sim, exit_code, until

from fishtalk.core import protocol as p
from fishtalk.engine.tools import ToolContext, ToolRegistry, ToolRunner

pytestmark = pytest.mark.webrtc


def _runner(fired: list[str]) -> ToolRunner:
    registry = ToolRegistry()

    def open_dashboard(params: dict[str, Any], ctx: ToolContext) -> object:
        return {"opened": params.get("tab"), "call": ctx.call_id}

    async def nothing(params: dict[str, Any], ctx: ToolContext) -> None:
        return None

    def explode(params: dict[str, Any], ctx: ToolContext) -> object:
        raise RuntimeError("the dashboard is on fire")

    async def slow(params: dict[str, Any], ctx: ToolContext) -> object:
        await asyncio.sleep(30)
        return "never"

    def notify(params: dict[str, Any], ctx: ToolContext) -> object:
        fired.append(str(params.get("text")))
        return "noted"

    registry.register("open_dashboard", open_dashboard)
    registry.register("nothing", nothing)
    registry.register("explode", explode)
    registry.register("slow", slow, timeout=0.5)
    registry.register("notify", notify)
    return ToolRunner(registry, default_timeout=5.0)


async def test_client_tool_outcomes(sim: Sim) -> None:
    fired: list[str] = []
    session, run, agent, _ = await sim.connected(tools=_runner(fired))

    async def call(name: str, **params: Any) -> p.ClientToolResult:
        call_id = f"call-{name}"
        await agent.send(
            p.ClientToolCall(call_id=call_id, tool_name=name, params=params, expects_response=True)
        )
        result: p.ClientToolResult = await agent.expect(p.ClientToolResult)
        assert result.call_id == call_id
        return result

    ok = await call("open_dashboard", tab="billing")
    assert ok.result == {"opened": "billing", "call": "call-open_dashboard"}
    assert ok.is_error is None
    empty = await call("nothing")
    assert empty.result == {}
    assert empty.is_error is None
    raised = await call("explode")
    assert raised.is_error is True
    assert "the dashboard is on fire" in str(raised.result)
    timed_out = await call("slow")
    assert timed_out.is_error is True
    assert "timed out" in str(timed_out.result)
    unknown = await call("no_such_tool")
    assert unknown.is_error is True
    assert "not registered" in str(unknown.result)

    # Fire-and-forget: the handler runs, nothing is sent back.
    await agent.send(
        p.ClientToolCall(
            call_id="call-ff", tool_name="notify", params={"text": "hi"}, expects_response=False
        )
    )
    state = await until(
        session,
        lambda s: (
            (c := s.tool("call-ff")) is not None
            and c.client is not None
            and c.client.status == "ok"
        ),
    )
    assert fired == ["hi"]
    session.send_text("marker")
    assert isinstance(await agent.next_event(), p.UserMessage)  # no result came before it

    statuses = {card.call_id: card.client.status for card in state.tools if card.client is not None}
    assert statuses == {
        "call-open_dashboard": "ok",
        "call-nothing": "ok",
        "call-explode": "error",
        "call-slow": "timeout",
        "call-no_such_tool": "unknown",
        "call-ff": "ok",
    }
    codes = [(e.code, e.call_id) for e in state.errors]
    assert ("tool_failed", "call-explode") in codes
    assert ("tool_timeout", "call-slow") in codes
    assert ("tool_failed", "call-no_such_tool") in codes
    session.hangup()
    await asyncio.wait_for(run, WAIT)


async def test_hangup_cancels_running_tools_and_is_safe_twice(sim: Sim) -> None:
    session, run, agent, created = await sim.connected(tools=_runner([]))
    await agent.send(p.ClientToolCall(call_id="c-slow", tool_name="slow", expects_response=True))
    await until(session, lambda s: s.tool("c-slow") is not None)
    session.hangup()
    session.hangup()
    await agent.expect(p.UserHangup)
    result = await asyncio.wait_for(run, WAIT)
    assert result.reason == "user_hangup"
    session.hangup()  # after the end: still harmless
    session.send_text("too late")
    await sim.server.wait_for_participants(created.room, {"agent"}, within=WAIT)
    hangups = [raw for raw in agent.raw if b"user.hangup" in raw]
    assert len(hangups) == 1
    assert not any(b"client_tool.result" in raw for raw in agent.raw)


async def test_agent_leaving_ends_with_agent_hangup(sim: Sim) -> None:
    _session, run, agent, _ = await sim.connected()
    await agent.leave()
    result = await asyncio.wait_for(run, WAIT)
    assert (result.reason, exit_code(result)) == ("agent_hangup", 0)


async def test_session_ended_then_grace_period_tears_down(sim: Sim) -> None:
    session, run, agent, _ = await sim.connected(timeouts=SHORT)
    await agent.send(p.SessionEnded(reason="agent_hangup"))
    await until(session, lambda s: s.announced_end_reason == "agent_hangup")
    assert session.state.status == "connected"  # the agent may still say goodbye
    started = time.monotonic()
    result = await asyncio.wait_for(run, SHORT.ended_grace + WAIT)
    elapsed = time.monotonic() - started
    assert elapsed >= SHORT.ended_grace * 0.9  # the agent never left: the grace ran out
    assert elapsed < SHORT.ended_grace + FAST_SLACK  # and not much later
    assert (result.reason, exit_code(result)) == ("agent_hangup", 0)


async def test_conversation_timeout(sim: Sim) -> None:
    session, run, agent, _ = await sim.connected()
    await agent.say("bye", ["We are out of time."])
    await agent.send(p.SessionEnded(reason="conversation_timeout"))
    await until(session, lambda s: s.announced_end_reason is not None)
    await agent.leave()
    result = await asyncio.wait_for(run, WAIT)
    assert (result.reason, exit_code(result)) == ("conversation_timeout", 0)
    segment = session.state.segment("bye")
    assert segment is not None
    assert segment.text == "We are out of time."


async def test_agent_must_join_in_time(sim: Sim) -> None:
    session = sim.session(timeouts=SHORT)
    run = sim.start(session)
    await sim.next_session()  # nobody joins as the agent
    await until(session, lambda s: s.status == "connected")
    started = time.monotonic()
    result = await asyncio.wait_for(run, SHORT.agent_join + WAIT)
    assert time.monotonic() - started < SHORT.agent_join + FAST_SLACK  # fails fast
    assert (result.reason, exit_code(result)) == ("connection_failed", 7)
    assert "did not join" in result.message


async def test_signalling_drop_resumes_and_rereads_state(sim: Sim) -> None:
    session, run, agent, created = await sim.connected()
    seen: list[str] = []
    session.add_listener(
        lambda s, _e: seen.append(s.status) if s.status != (seen or [""])[-1] else None
    )
    await sim.server.drop_signalling(created.room, created.user_identity)
    await until(session, lambda s: s.status == "reconnecting", within=20)
    await agent.set_state("thinking")
    await until(session, lambda s: s.status == "connected" and s.agent_state == "thinking", 30)
    assert seen[:2] == ["reconnecting", "connected"]
    session.send_text("after the drop")
    assert (await agent.expect(p.UserMessage)).text == "after the drop"
    session.hangup()
    result = await asyncio.wait_for(run, WAIT)
    assert result.reason == "user_hangup"


async def test_full_reconnect_keeps_the_conversation(sim: Sim) -> None:
    session, run, agent, created = await sim.connected()
    await sim.server.force_reconnect(created.room, created.user_identity)
    await until(session, lambda s: s.status == "reconnecting", within=20)
    await until(session, lambda s: s.status == "connected", within=30)
    session.send_text("still here")
    assert (await agent.expect(p.UserMessage)).text == "still here"
    assert session.state.status == "connected"
    session.hangup()
    assert (await asyncio.wait_for(run, WAIT)).reason == "user_hangup"


async def test_agent_gone_after_reconnect(sim: Sim) -> None:
    session, run, agent, created = await sim.connected()
    await sim.server.force_reconnect(created.room, created.user_identity)
    await until(session, lambda s: s.status != "connected", within=20)
    await agent.leave()
    result = await asyncio.wait_for(run, 30)
    assert (result.reason, exit_code(result)) == ("agent_hangup", 0)


async def test_room_closed_by_the_server(sim: Sim) -> None:
    _session, run, agent, created = await sim.connected()
    await sim.server.close_room(created.room)
    result = await asyncio.wait_for(run, 30)
    assert result.reason == "agent_hangup"
    assert exit_code(result) == 0
    del agent


async def test_late_agent_after_user(sim: Sim) -> None:
    """The agent joins after the user has connected: its join and state are picked up."""
    session = sim.session()
    run = sim.start(session)
    created = await sim.next_session()
    await until(session, lambda s: s.status == "connected")
    agent = ScriptedAgent(sim.server, created.room, created.user_identity)
    sim.agents.append(agent)
    await agent.join("idle")
    state = await until(session, lambda s: s.agent_ready)
    assert state.agent_state == "idle"
    session.hangup()
    await asyncio.wait_for(run, WAIT)


async def test_server_going_away_is_connection_lost(sim: Sim) -> None:
    _session, run, _, _ = await sim.connected()
    await sim.server.stop()
    result = await asyncio.wait_for(run, 60)
    assert (result.reason, exit_code(result)) == ("connection_lost", 7)


async def test_commands_during_an_outage_are_sent_after_it(sim: Sim) -> None:
    session, run, agent, created = await sim.connected()
    await sim.server.drop_signalling(created.room, created.user_identity)
    await until(session, lambda s: s.status == "reconnecting", within=20)
    session.interrupt()
    session.send_text("typed during the outage")
    assert session.state.transcript[-1].queued
    await until(session, lambda s: s.status == "connected", within=30)
    assert isinstance(await agent.next_event(30), p.UserInterrupt)
    message = await agent.expect(p.UserMessage)
    assert message.text == "typed during the outage"
    assert not [e for e in session.state.errors if e.code == "send_failed"]
    session.hangup()
    assert (await asyncio.wait_for(run, WAIT)).reason == "user_hangup"
