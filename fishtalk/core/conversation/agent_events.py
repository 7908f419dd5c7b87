"""Agent event handlers: tool calls and their cards, client tools, agent errors, the
announced end, and events this client does not know."""

from __future__ import annotations

from dataclasses import replace

from fishtalk.core.conversation.connection import (
    SESSION_ENDED_GRACE,
)
from fishtalk.core.conversation.effects import (
    TIMER_ENDED_GRACE,
    RunClientTool,
    ScheduleTimer,
    SendClientEvent,
)
from fishtalk.core.conversation.inputs import (
    AgentEventReceived,
    ClientToolFinished,
    MalformedAgentEvent,
)
from fishtalk.core.conversation.lines import _put_card
from fishtalk.core.conversation.reasons import (
    describe_end_reason,
)
from fishtalk.core.conversation.state import (
    MAX_DEBUG_SAMPLES,
    ClientCall,
    ToolCard,
)
from fishtalk.core.conversation.step import (
    _add_error,
    _add_notice,
    _bounded,
    _ignored,
    _next_seq,
    _preview,
    _Step,
)
from fishtalk.core.protocol import (
    AgentError,
    ClientToolCall,
    SessionEnded,
    ToolCompleted,
    ToolFailed,
    ToolStarted,
    UnknownAgentEvent,
)


def _on_agent_event(r: _Step, inp: AgentEventReceived) -> None:
    ev = inp.event
    if isinstance(ev, ClientToolCall):
        _on_client_tool_call(r, ev, inp.at)
    elif isinstance(ev, ToolStarted | ToolCompleted | ToolFailed):
        _on_tool_event(r, ev, inp.at)
    elif isinstance(ev, AgentError):
        _add_error(r, ev.code, inp.at, ev.message)
    elif isinstance(ev, SessionEnded):
        _on_session_ended(r, ev, inp.at)
    elif isinstance(ev, UnknownAgentEvent):
        debug = r.internal.debug
        recent = (*debug.recent_unknown_types, ev.type)
        debug = replace(
            debug,
            unknown_events=debug.unknown_events + 1,
            recent_unknown_types=recent[_bounded(recent, MAX_DEBUG_SAMPLES) :],
        )
        r.book(debug=debug)
    else:
        _ignored(r)


def _on_client_tool_call(r: _Step, call: ClientToolCall, at: float) -> None:
    card = r.s.tool_log.get(call.call_id)
    if card is not None and card.client is not None:
        # A duplicate call: the handler already ran (or runs); never run it twice.
        _ignored(r)
        return
    client = ClientCall(
        tool_name=call.tool_name,
        params=call.params,
        expects_response=call.expects_response,
        started_at=at,
    )
    if card is None:
        card = ToolCard(
            seq=_next_seq(r), call_id=call.call_id, tool_name=call.tool_name, source="client"
        )
    _put_card(r, replace(card, client=client))
    r.fx.append(RunClientTool(call))


def _on_tool_event(r: _Step, ev: ToolStarted | ToolCompleted | ToolFailed, at: float) -> None:
    card = r.s.tool_log.get(ev.call_id)
    if card is None:
        card = ToolCard(
            seq=_next_seq(r), call_id=ev.call_id, tool_name=ev.tool_name, source=ev.tool_source
        )
    if isinstance(ev, ToolStarted):
        if card.started_at is not None or card.status != "running":
            # Duplicate start, or the start after its terminal event: keep what we have,
            # filling only fields the terminal event did not carry.
            card = replace(
                card,
                input=card.input if card.input is not None else ev.input,
                input_truncated=card.input_truncated or bool(ev.input_truncated),
                node_id=card.node_id or ev.node_id,
            )
            _ignored(r)
            _put_card(r, card)
            return
        card = replace(
            card,
            tool_name=ev.tool_name,
            source=ev.tool_source,
            input=ev.input,
            input_truncated=bool(ev.input_truncated),
            node_id=ev.node_id,
            started_at=at,
        )
        _put_card(r, card)
        return
    if card.status != "running":
        _ignored(r)  # a duplicate terminal event: the first one stands
        return
    card = replace(
        card,
        tool_name=ev.tool_name,
        source=ev.tool_source,
        status="completed" if isinstance(ev, ToolCompleted) else "failed",
        input=ev.input if ev.input is not None else card.input,
        input_truncated=bool(ev.input_truncated) or card.input_truncated,
        output=ev.output,
        output_truncated=bool(ev.output_truncated),
        error=ev.error if isinstance(ev, ToolFailed) else None,
        node_id=ev.node_id or card.node_id,
        ended_at=at,
    )
    _put_card(r, card)


def _on_session_ended(r: _Step, ev: SessionEnded, at: float) -> None:
    if r.s.announced_end_reason is not None:
        _ignored(r)
        return
    deadline = at + SESSION_ENDED_GRACE
    r.set(announced_end_reason=ev.reason)
    r.clock(ended_grace_deadline=deadline)
    _add_notice(r, describe_end_reason(ev.reason), at, "session_ending")
    r.fx.append(ScheduleTimer(TIMER_ENDED_GRACE, deadline))


def _on_malformed(r: _Step, inp: MalformedAgentEvent) -> None:
    sample = f"{inp.error}: {_preview(inp.preview)}"
    debug = r.internal.debug
    recent = (*debug.recent_malformed, sample)
    debug = replace(
        debug,
        malformed_events=debug.malformed_events + 1,
        recent_malformed=recent[_bounded(recent, MAX_DEBUG_SAMPLES) :],
    )
    r.book(debug=debug)


def _on_client_tool_finished(r: _Step, inp: ClientToolFinished) -> None:
    card = r.s.tool_log.get(inp.call_id)
    if card is None or card.client is None or card.client.status != "running":
        _ignored(r)
        return
    client = replace(
        card.client,
        status=inp.status,
        result_preview=None if inp.result_preview is None else _preview(inp.result_preview),
        error=inp.error,
        ended_at=inp.at,
    )
    _put_card(r, replace(card, client=client))
    if inp.status == "timeout":
        _add_error(r, "tool_timeout", inp.at, inp.error, inp.call_id)
    elif inp.status in ("error", "unknown"):
        _add_error(r, "tool_failed", inp.at, inp.error, inp.call_id)
    if inp.result_event is None or r.s.ended or not card.client.expects_response:
        return
    r.fx.append(SendClientEvent(inp.result_event))
