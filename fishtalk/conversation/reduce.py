"""The conversation reducer: ``(state, input) -> (state, effects)``, sans-IO.

This is the one place that knows what a front end shows. The session (``fishtalk.session``)
turns LiveKit callbacks and user commands into :data:`Input` values, feeds them to
:func:`reduce`, executes the returned :data:`Effect` values and hands the new :class:`State`
to the front ends. Nothing here does IO, reads a clock or imports asyncio/livekit/textual:
time arrives on every input as ``at`` (monotonic seconds, the same clock the session uses
for timer deadlines), so the reducer is pure and deterministic.

Behaviour follows the Fish web SDK (the reference; see spec/contract-notes.md) with a few
deliberate improvements, each noted where it happens:

- status ``connecting -> connected <-> reconnecting -> ended`` with an open-set end reason;
- the agent must publish state within :data:`AGENT_JOIN_TIMEOUT` of connecting, else the
  session ends with ``connection_failed``;
- ``session.ended`` starts a :data:`SESSION_ENDED_GRACE` timer; the transport dropping or the
  timer firing ends the session with the announced reason;
- typed messages appear at once (no server echo) and are queued until the agent has
  published its first state (and while reconnecting), then sent in order;
- mode ``listening | thinking | speaking``: speaking while an agent transcript segment is
  open, thinking from the agent state, else listening.

State is immutable (frozen dataclasses and tuples); every reduction returns a new snapshot,
so front ends may keep references to old ones safely.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final, TypeAlias

from fishtalk.conversation.effects import (
    TIMER_AGENT_JOIN,
    TIMER_ENDED_GRACE,
    TIMER_MAX_DURATION,
    CancelTimer,
    Effect,
    RunClientTool,
    ScheduleTimer,
    SendClientEvent,
    SetMicrophoneMuted,
    Teardown,
)
from fishtalk.conversation.inputs import (
    AddNotice,
    AgentEventReceived,
    AttributesChanged,
    ClientToolFinished,
    Connected,
    ConnectFailed,
    Disconnected,
    Hangup,
    Input,
    Interrupt,
    LocalError,
    MalformedAgentEvent,
    ParticipantJoined,
    ParticipantLeft,
    Reconnected,
    Reconnecting,
    SendText,
    SetMuted,
    SetSpoken,
    SignalActivity,
    TimerFired,
    TranscriptStreamChunk,
    TranscriptStreamClosed,
    TranscriptStreamOpened,
)
from fishtalk.conversation.reasons import (
    _AGENT_SIDE_DISCONNECTS,
    END_AGENT_HANGUP,
    END_CONNECTION_FAILED,
    END_CONNECTION_LOST,
    END_CONVERSATION_TIMEOUT,
    END_USER_HANGUP,
    describe_end_reason,
    describe_error,
)
from fishtalk.conversation.state import (
    MAX_DEBUG_SAMPLES,
    MAX_ERRORS,
    MAX_NOTICES,
    MAX_ORPHANS,
    PREVIEW_CHARS,
    ClientCall,
    Clock,
    ErrorEntry,
    Mode,
    Notice,
    NoticeKind,
    OrphanChunk,
    QueuedMessage,
    Role,
    Segment,
    State,
    ToolCard,
    TranscriptStream,
)
from fishtalk.protocol import (
    ATTR_AGENT_STATE,
    AgentError,
    ClientToolCall,
    SessionEnded,
    ToolCompleted,
    ToolFailed,
    ToolStarted,
    UnknownAgentEvent,
    UserActivity,
    UserHangup,
    UserInterrupt,
    UserMessage,
)

Result: TypeAlias = tuple[State, list[Effect]]
"""The new state and the effects to execute, in order."""

# --- constants --------------------------------------------------------------------------

AGENT_JOIN_TIMEOUT: Final = 15.0
"""Seconds after connecting for the agent to publish its first state (web SDK: 15 s)."""
SESSION_ENDED_GRACE: Final = 10.0
"""Seconds after ``session.ended`` before the client tears down on its own (web SDK: 10 s)."""
MAX_DURATION_SLACK: Final = 10.0
"""Extra seconds past the grant's max duration before the local safety-net timer ends the
session (the server normally ends it first, announcing ``conversation_timeout``)."""
ACTIVITY_THROTTLE: Final = 1.0
"""Minimum seconds between two ``user.activity`` events actually sent."""

# --- reducer ----------------------------------------------------------------------------


def reduce(state: State, inp: Input) -> Result:
    """Apply one input; return the new state and the effects to execute, in order.

    Never raises for any input value of the declared types; out-of-place inputs (duplicates,
    late arrivals, anything after the end) are ignored and counted in ``state.debug``.
    """
    if not isinstance(inp, _INPUT_TYPES):
        return _ignored(state), []
    state = _tick(state, inp.at)
    if state.ended and not isinstance(inp, _AFTER_END):
        return _ignored(state), []
    return _dispatch(state, inp)


# --- helpers ----------------------------------------------------------------------------


def _tick(state: State, at: float) -> State:
    if at > state.clock.now:
        return replace(state, clock=replace(state.clock, now=at))
    return state


def _ignored(state: State) -> State:
    return replace(state, debug=replace(state.debug, ignored_inputs=state.debug.ignored_inputs + 1))


def _bounded(items: tuple[object, ...], limit: int) -> int:
    return max(0, len(items) - limit)


def _add_error(
    state: State, code: str, at: float, detail: str | None = None, call_id: str | None = None
) -> State:
    entry = ErrorEntry(
        code=code, message=describe_error(code), at=at, detail=detail, call_id=call_id
    )
    errors = (*state.errors, entry)
    return replace(state, errors=errors[_bounded(errors, MAX_ERRORS) :])


def _add_notice(state: State, text: str, at: float, kind: NoticeKind) -> State:
    notices = (*state.notices, Notice(text=text, at=at, kind=kind))
    return replace(state, notices=notices[_bounded(notices, MAX_NOTICES) :])


def _preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _active_timers(clock: Clock) -> list[str]:
    names = []
    if clock.join_deadline is not None:
        names.append(TIMER_AGENT_JOIN)
    if clock.ended_grace_deadline is not None:
        names.append(TIMER_ENDED_GRACE)
    if clock.max_duration_deadline is not None:
        names.append(TIMER_MAX_DURATION)
    return names


def _end(state: State, reason: str, at: float) -> Result:
    """Move to ``ended`` (idempotent): cancel timers, close open segments, tear down."""
    if state.ended:
        return state, []
    effects: list[Effect] = [CancelTimer(name) for name in _active_timers(state.clock)]
    transcript = tuple(
        replace(seg, open=False, final=True, updated_at=at)
        if seg.role == "agent" and seg.open
        else seg
        for seg in state.transcript
    )
    clock = replace(state.clock, join_deadline=None, ended_grace_deadline=None, ended_at=at)
    state = replace(
        state,
        status="ended",
        end_reason=reason,
        clock=clock,
        transcript=transcript,
        streams=(),
        orphans=(),
        mode="listening",
    )
    effects.append(Teardown(reason))
    return state, effects


def _agent_gone_reason(state: State) -> str:
    return state.announced_end_reason or END_AGENT_HANGUP


def _next_seq(state: State) -> tuple[State, int]:
    return replace(state, next_seq=state.next_seq + 1), state.next_seq


def _derive_mode(state: State, previous: Mode) -> Mode:
    """Speaking while an agent segment is open; thinking from the agent state; else listening.

    Like the web SDK, thinking persists while the agent reports ``speaking`` but no
    transcript has started yet (speech is paced to playout, so nothing is audible). Unlike
    the web SDK, a return to ``listening``/``idle`` without a reply clears thinking.
    """
    if state.speaking_segment is not None:
        return "speaking"
    if state.agent_state == "thinking":
        return "thinking"
    if state.agent_state == "speaking" and previous == "thinking":
        return "thinking"
    return "listening"


def _with_mode(state: State) -> State:
    mode = _derive_mode(state, state.mode)
    return state if mode == state.mode else replace(state, mode=mode)


def _put_segment(state: State, seg: Segment) -> State:
    """Replace the segment with the same id, or append it."""
    transcript = state.transcript
    for i in range(len(transcript) - 1, -1, -1):
        if transcript[i].segment_id == seg.segment_id:
            return replace(state, transcript=(*transcript[:i], seg, *transcript[i + 1 :]))
    return replace(state, transcript=(*transcript, seg))


def _put_card(state: State, card: ToolCard) -> State:
    tools = state.tools
    for i in range(len(tools) - 1, -1, -1):
        if tools[i].call_id == card.call_id:
            return replace(state, tools=(*tools[:i], card, *tools[i + 1 :]))
    return replace(state, tools=(*tools, card))


def _role_of(state: State, identity: str) -> Role:
    if state.local_identity is not None:
        return "user" if identity == state.local_identity else "agent"
    # Local identity not known yet: only the agent's identity can tell us anything.
    if state.agent_identity is not None and identity != state.agent_identity:
        return "user"
    return "agent"


def _flush_queue(state: State) -> Result:
    """Send queued typed messages in order once the agent is ready and we are connected."""
    if not state.queued or not state.agent_ready or state.status != "connected":
        return state, []
    effects: list[Effect] = [SendClientEvent(q.message) for q in state.queued]
    sent = {q.segment_id for q in state.queued}
    transcript = tuple(
        replace(seg, queued=False) if seg.segment_id in sent else seg for seg in state.transcript
    )
    return replace(state, queued=(), transcript=transcript), effects


def _mark_agent_ready(state: State, at: float) -> Result:
    if state.agent_ready:
        return state, []
    effects: list[Effect] = []
    clock = state.clock
    if clock.join_deadline is not None:
        effects.append(CancelTimer(TIMER_AGENT_JOIN))
        clock = replace(clock, join_deadline=None)
    state = replace(state, agent_ready=True, clock=clock)
    state, sends = _flush_queue(state)
    return state, effects + sends


def _learn_agent(state: State, identity: str, at: float) -> State:
    if state.agent_identity == identity and state.agent_joined:
        return state
    state = replace(state, agent_identity=identity, agent_joined=True)
    return _add_notice(state, "The agent joined.", at, "agent_joined")


# --- handlers: connection ---------------------------------------------------------------


def _on_connected(state: State, inp: Connected) -> Result:
    if state.status != "connecting":
        return _ignored(state), []
    effects: list[Effect] = []
    clock = replace(state.clock, connected_at=inp.at)
    if not state.agent_ready:
        clock = replace(clock, join_deadline=inp.at + AGENT_JOIN_TIMEOUT)
        effects.append(ScheduleTimer(TIMER_AGENT_JOIN, inp.at + AGENT_JOIN_TIMEOUT))
    if clock.max_duration_seconds is not None and clock.max_duration_seconds > 0:
        deadline = inp.at + clock.max_duration_seconds
        clock = replace(clock, max_duration_deadline=deadline)
        effects.append(ScheduleTimer(TIMER_MAX_DURATION, deadline + MAX_DURATION_SLACK))
    state = replace(state, status="connected", local_identity=inp.local_identity, clock=clock)
    if state.muted:
        # The mic is published unmuted by default; re-apply a mute chosen before connecting.
        effects.append(SetMicrophoneMuted(True))
    state, sends = _flush_queue(state)
    return state, effects + sends


def _on_connect_failed(state: State, inp: ConnectFailed) -> Result:
    state = _add_error(state, inp.code, inp.at, inp.detail)
    return _end(state, inp.code, inp.at)


def _on_reconnecting(state: State, inp: Reconnecting) -> Result:
    if state.status != "connected":
        return _ignored(state), []
    state = _add_notice(
        replace(state, status="reconnecting"), "Reconnecting…", inp.at, "reconnecting"
    )
    return state, []


def _on_reconnected(state: State, inp: Reconnected) -> Result:
    if state.status != "reconnecting":
        return _ignored(state), []
    state = replace(state, status="connected")
    if (
        state.agent_joined
        and state.agent_identity is not None
        and state.agent_identity not in inp.remote_identities
    ):
        # No replay and no agent left after the reconnect: the agent is gone.
        return _end(state, _agent_gone_reason(state), inp.at)
    state = _add_notice(state, "Reconnected.", inp.at, "reconnected")
    return _flush_queue(state)


def _on_disconnected(state: State, inp: Disconnected) -> Result:
    if state.announced_end_reason is not None:
        reason = state.announced_end_reason
    elif inp.reason is not None and inp.reason.upper() in _AGENT_SIDE_DISCONNECTS:
        reason = END_AGENT_HANGUP
    else:
        reason = END_CONNECTION_LOST
    return _end(state, reason, inp.at)


def _on_participant_joined(state: State, inp: ParticipantJoined) -> Result:
    if inp.identity == state.local_identity:
        return _ignored(state), []
    if not inp.is_agent and state.agent_identity != inp.identity:
        return state, []
    if state.agent_joined and state.agent_identity != inp.identity:
        # One agent per session: a second one is not who we are talking to.
        return _ignored(state), []
    state = _learn_agent(state, inp.identity, inp.at)
    value = inp.attributes.get(ATTR_AGENT_STATE)
    if value:
        return _apply_agent_state(state, value, inp.at)
    return state, []


def _on_participant_left(state: State, inp: ParticipantLeft) -> Result:
    if state.agent_identity is None or inp.identity != state.agent_identity:
        return state, []
    return _end(state, _agent_gone_reason(state), inp.at)


def _on_attributes_changed(state: State, inp: AttributesChanged) -> Result:
    value = inp.changed.get(ATTR_AGENT_STATE)
    if not value:
        # An empty value deletes the key; the state is sticky, so keep the last one.
        return state, []
    if inp.identity == state.local_identity:
        return _ignored(state), []
    if state.agent_identity is not None and inp.identity != state.agent_identity:
        return _ignored(state), []
    # Only the agent publishes lk.agent.state, so an update before its join event still
    # identifies it (attributes can overtake the participant event).
    state = _learn_agent(state, inp.identity, inp.at)
    return _apply_agent_state(state, value, inp.at)


def _apply_agent_state(state: State, value: str, at: float) -> Result:
    state = replace(state, agent_state=value)
    state, effects = _mark_agent_ready(state, at)
    return _with_mode(state), effects


# --- handlers: transcript ---------------------------------------------------------------


def _find_stream(state: State, stream_id: str) -> TranscriptStream | None:
    for s in state.streams:
        if s.stream_id == stream_id:
            return s
    return None


def _replace_stream(state: State, stream: TranscriptStream) -> State:
    return replace(
        state,
        streams=tuple(stream if s.stream_id == stream.stream_id else s for s in state.streams),
    )


def _on_stream_opened(state: State, inp: TranscriptStreamOpened) -> Result:
    if _find_stream(state, inp.stream_id) is not None:
        return _ignored(state), []
    role = _role_of(state, inp.identity)
    stream = TranscriptStream(
        stream_id=inp.stream_id, segment_id=inp.segment_id, role=role, final=inp.final
    )
    seg = state.segment(inp.segment_id)
    if seg is not None and seg.role != role:
        # The same segment id from the other side: not ours to change. The stream is
        # tracked without a segment so its chunks and close are dropped quietly.
        return _track_detached(state, stream, inp.at)
    if seg is None:
        state, seq = _next_seq(state)
        seg = Segment(
            seq=seq,
            segment_id=inp.segment_id,
            role=role,
            identity=inp.identity,
            text="",
            final=False,
            open=True,
            started_at=inp.at,
            updated_at=inp.at,
        )
        state = _put_segment(state, seg)
    elif role == "agent" and not seg.interrupted:
        # Another stream for the same agent segment (e.g. a preamble and its answer).
        state = _put_segment(state, replace(seg, open=True, final=False, updated_at=inp.at))
    elif role == "user":
        if seg.final and not inp.final:
            # A late interim after the final transcript: the final text stands.
            return _track_detached(state, stream, inp.at)
        state = _put_segment(state, replace(seg, open=True, updated_at=inp.at))
    state = replace(state, streams=(*state.streams, stream))
    state = _with_mode(state)
    return _replay_orphans(state, inp.stream_id, inp.at)


def _track_detached(state: State, stream: TranscriptStream, at: float) -> Result:
    state = replace(state, streams=(*state.streams, replace(stream, segment_id="")))
    return _replay_orphans(_ignored(state), stream.stream_id, at)


def _replay_orphans(state: State, stream_id: str, at: float) -> Result:
    mine = [o for o in state.orphans if o.stream_id == stream_id]
    if not mine:
        return state, []
    state = replace(state, orphans=tuple(o for o in state.orphans if o.stream_id != stream_id))
    stream = _find_stream(state, stream_id)
    seg_id = stream.segment_id if stream is not None else ""
    effects: list[Effect] = []
    for o in mine:
        if o.text is not None:
            state, more = _on_stream_chunk(
                state, TranscriptStreamChunk(stream_id, seg_id, o.text, max(o.at, at))
            )
        else:
            state, more = _on_stream_closed(
                state, TranscriptStreamClosed(stream_id, seg_id, max(o.at, at), o.final)
            )
        effects += more
    return state, effects


def _add_orphan(state: State, orphan: OrphanChunk) -> State:
    orphans = (*state.orphans, orphan)
    return replace(state, orphans=orphans[_bounded(orphans, MAX_ORPHANS) :])


def _on_stream_chunk(state: State, inp: TranscriptStreamChunk) -> Result:
    stream = _find_stream(state, inp.stream_id)
    if stream is None:
        # The chunk overtook its header: hold it until the open arrives.
        return _add_orphan(state, OrphanChunk(inp.stream_id, inp.text, None, inp.at)), []
    seg = state.segment(stream.segment_id) if stream.segment_id else None
    if seg is None:
        return _ignored(state), []
    if stream.role == "agent":
        if seg.interrupted:
            # Barge-in: only what was spoken before the interrupt counts.
            debug = replace(state.debug, dropped_chunks=state.debug.dropped_chunks + 1)
            return replace(state, debug=debug), []
        seg = replace(seg, text=seg.text + inp.text, updated_at=inp.at)
    else:
        stream = replace(stream, text=stream.text + inp.text)
        state = _replace_stream(state, stream)
        if seg.final and not stream.final:
            # An interim stream still open when the final one landed: the final text stands.
            return _ignored(state), []
        # Each user stream carries the whole interim text, replacing the previous one.
        seg = replace(seg, text=stream.text, updated_at=inp.at, final=seg.final or stream.final)
    state = _put_segment(state, seg)
    return _with_mode(state), []


def _on_stream_closed(state: State, inp: TranscriptStreamClosed) -> Result:
    stream = _find_stream(state, inp.stream_id)
    if stream is None:
        return _add_orphan(state, OrphanChunk(inp.stream_id, None, inp.final, inp.at)), []
    state = replace(state, streams=tuple(s for s in state.streams if s is not stream))
    seg = state.segment(stream.segment_id) if stream.segment_id else None
    if seg is None:
        return state, []
    still_open = any(s.segment_id == seg.segment_id for s in state.streams)
    if stream.role == "agent":
        # An agent segment closing means playout finished (or it was cut): it is done.
        seg = replace(seg, open=still_open, final=not still_open, updated_at=inp.at)
    else:
        final = seg.final or stream.final or bool(inp.final)
        if inp.final and not seg.final and stream.text:
            seg = replace(seg, text=stream.text)
        seg = replace(seg, open=still_open, final=final, updated_at=inp.at)
    state = _put_segment(state, seg)
    return _with_mode(state), []


# --- handlers: agent events -------------------------------------------------------------


def _on_agent_event(state: State, inp: AgentEventReceived) -> Result:
    ev = inp.event
    if isinstance(ev, ClientToolCall):
        return _on_client_tool_call(state, ev, inp.at)
    if isinstance(ev, ToolStarted | ToolCompleted | ToolFailed):
        return _on_tool_event(state, ev, inp.at), []
    if isinstance(ev, AgentError):
        return _add_error(state, ev.code, inp.at, ev.message), []
    if isinstance(ev, SessionEnded):
        return _on_session_ended(state, ev, inp.at)
    if isinstance(ev, UnknownAgentEvent):
        recent = (*state.debug.recent_unknown_types, ev.type)
        debug = replace(
            state.debug,
            unknown_events=state.debug.unknown_events + 1,
            recent_unknown_types=recent[_bounded(recent, MAX_DEBUG_SAMPLES) :],
        )
        return replace(state, debug=debug), []
    return _ignored(state), []


def _on_client_tool_call(state: State, call: ClientToolCall, at: float) -> Result:
    card = state.tool(call.call_id)
    if card is not None and card.client is not None:
        # A duplicate call: the handler already ran (or runs); never run it twice.
        return _ignored(state), []
    client = ClientCall(
        tool_name=call.tool_name,
        params=call.params,
        expects_response=call.expects_response,
        started_at=at,
    )
    if card is None:
        state, seq = _next_seq(state)
        card = ToolCard(seq=seq, call_id=call.call_id, tool_name=call.tool_name, source="client")
    state = _put_card(state, replace(card, client=client))
    return state, [RunClientTool(call)]


def _on_tool_event(state: State, ev: ToolStarted | ToolCompleted | ToolFailed, at: float) -> State:
    card = state.tool(ev.call_id)
    if card is None:
        state, seq = _next_seq(state)
        card = ToolCard(seq=seq, call_id=ev.call_id, tool_name=ev.tool_name, source=ev.tool_source)
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
            return _put_card(_ignored(state), card)
        card = replace(
            card,
            tool_name=ev.tool_name,
            source=ev.tool_source,
            input=ev.input,
            input_truncated=bool(ev.input_truncated),
            node_id=ev.node_id,
            started_at=at,
        )
        return _put_card(state, card)
    if card.status != "running":
        return _ignored(state)  # a duplicate terminal event: the first one stands
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
    return _put_card(state, card)


def _on_session_ended(state: State, ev: SessionEnded, at: float) -> Result:
    if state.announced_end_reason is not None:
        return _ignored(state), []
    deadline = at + SESSION_ENDED_GRACE
    state = replace(
        state,
        announced_end_reason=ev.reason,
        clock=replace(state.clock, ended_grace_deadline=deadline),
    )
    state = _add_notice(state, describe_end_reason(ev.reason), at, "session_ending")
    return state, [ScheduleTimer(TIMER_ENDED_GRACE, deadline)]


def _on_malformed(state: State, inp: MalformedAgentEvent) -> Result:
    sample = f"{inp.error}: {_preview(inp.preview)}"
    recent = (*state.debug.recent_malformed, sample)
    debug = replace(
        state.debug,
        malformed_events=state.debug.malformed_events + 1,
        recent_malformed=recent[_bounded(recent, MAX_DEBUG_SAMPLES) :],
    )
    return replace(state, debug=debug), []


def _on_client_tool_finished(state: State, inp: ClientToolFinished) -> Result:
    card = state.tool(inp.call_id)
    if card is None or card.client is None or card.client.status != "running":
        return _ignored(state), []
    client = replace(
        card.client,
        status=inp.status,
        result_preview=None if inp.result_preview is None else _preview(inp.result_preview),
        error=inp.error,
        ended_at=inp.at,
    )
    state = _put_card(state, replace(card, client=client))
    if inp.status == "timeout":
        state = _add_error(state, "tool_timeout", inp.at, inp.error, inp.call_id)
    elif inp.status in ("error", "unknown"):
        state = _add_error(state, "tool_failed", inp.at, inp.error, inp.call_id)
    if inp.result_event is None or state.ended or not card.client.expects_response:
        return state, []
    return state, [SendClientEvent(inp.result_event)]


# --- handlers: timers -------------------------------------------------------------------


def _on_timer(state: State, inp: TimerFired) -> Result:
    clock = state.clock
    if inp.name == TIMER_AGENT_JOIN and clock.join_deadline is not None:
        if inp.at < clock.join_deadline or state.agent_ready:
            return _ignored(state), []
        state = _add_error(
            state,
            "connection_failed",
            inp.at,
            f"The agent did not join within {AGENT_JOIN_TIMEOUT:g} s.",
        )
        return _end(state, END_CONNECTION_FAILED, inp.at)
    if inp.name == TIMER_ENDED_GRACE and clock.ended_grace_deadline is not None:
        if inp.at < clock.ended_grace_deadline:
            return _ignored(state), []
        return _end(state, state.announced_end_reason or END_AGENT_HANGUP, inp.at)
    if inp.name == TIMER_MAX_DURATION and clock.max_duration_deadline is not None:
        if inp.at < clock.max_duration_deadline + MAX_DURATION_SLACK:
            return _ignored(state), []
        return _end(state, state.announced_end_reason or END_CONVERSATION_TIMEOUT, inp.at)
    return _ignored(state), []


# --- handlers: local commands -----------------------------------------------------------


def _on_send_text(state: State, inp: SendText) -> Result:
    text = inp.text.strip()
    if not text:
        return state, []
    spoken = state.spoken if inp.audio is None else inp.audio
    # Absent audio means "speak as usual"; the web SDK sends audio=false unless asked.
    message = UserMessage(text=text) if spoken else UserMessage(text=text, audio=False)
    state, seq = _next_seq(state)
    segment_id = f"typed-{state.typed_count + 1}"
    seg = Segment(
        seq=seq,
        segment_id=segment_id,
        role="user",
        identity=None,
        text=text,
        final=True,
        typed=True,
        queued=True,
        audio=spoken,
        started_at=inp.at,
        updated_at=inp.at,
    )
    state = replace(state, typed_count=state.typed_count + 1)
    state = _put_segment(state, seg)
    state = replace(state, queued=(*state.queued, QueuedMessage(segment_id, message)))
    return _flush_queue(state)


def _on_activity(state: State, inp: SignalActivity) -> Result:
    if state.status != "connected" or not state.agent_ready:
        return state, []
    last = state.last_activity_sent_at
    if last is not None and inp.at - last < ACTIVITY_THROTTLE:
        return state, []
    return replace(state, last_activity_sent_at=inp.at), [SendClientEvent(UserActivity())]


def _on_interrupt(state: State, inp: Interrupt) -> Result:
    if state.status not in ("connected", "reconnecting"):
        return state, []
    transcript = tuple(
        replace(seg, interrupted=True, updated_at=inp.at)
        if seg.role == "agent" and seg.open and not seg.interrupted
        else seg
        for seg in state.transcript
    )
    state = _with_mode(replace(state, transcript=transcript))
    return state, [SendClientEvent(UserInterrupt())]


def _on_set_muted(state: State, inp: SetMuted) -> Result:
    if inp.muted == state.muted:
        return state, []
    state = replace(state, muted=inp.muted)
    if state.ended:
        return state, []
    return state, [SetMicrophoneMuted(inp.muted)]


def _on_set_spoken(state: State, inp: SetSpoken) -> Result:
    return replace(state, spoken=inp.spoken), []


def _on_hangup(state: State, inp: Hangup) -> Result:
    effects: list[Effect] = []
    if state.status in ("connected", "reconnecting"):
        effects.append(SendClientEvent(UserHangup()))
    state, more = _end(state, END_USER_HANGUP, inp.at)
    return state, effects + more


def _on_local_error(state: State, inp: LocalError) -> Result:
    return _add_error(state, inp.code, inp.at, inp.detail), []


def _on_notice(state: State, inp: AddNotice) -> Result:
    return _add_notice(state, inp.text, inp.at, inp.kind), []


def _dispatch(state: State, inp: Input) -> Result:
    match inp:
        case Connected():
            return _on_connected(state, inp)
        case ConnectFailed():
            return _on_connect_failed(state, inp)
        case Reconnecting():
            return _on_reconnecting(state, inp)
        case Reconnected():
            return _on_reconnected(state, inp)
        case Disconnected():
            return _on_disconnected(state, inp)
        case ParticipantJoined():
            return _on_participant_joined(state, inp)
        case ParticipantLeft():
            return _on_participant_left(state, inp)
        case AttributesChanged():
            return _on_attributes_changed(state, inp)
        case TranscriptStreamOpened():
            return _on_stream_opened(state, inp)
        case TranscriptStreamChunk():
            return _on_stream_chunk(state, inp)
        case TranscriptStreamClosed():
            return _on_stream_closed(state, inp)
        case AgentEventReceived():
            return _on_agent_event(state, inp)
        case MalformedAgentEvent():
            return _on_malformed(state, inp)
        case ClientToolFinished():
            return _on_client_tool_finished(state, inp)
        case TimerFired():
            return _on_timer(state, inp)
        case SendText():
            return _on_send_text(state, inp)
        case SignalActivity():
            return _on_activity(state, inp)
        case Interrupt():
            return _on_interrupt(state, inp)
        case SetMuted():
            return _on_set_muted(state, inp)
        case SetSpoken():
            return _on_set_spoken(state, inp)
        case Hangup():
            return _on_hangup(state, inp)
        case LocalError():
            return _on_local_error(state, inp)
        case AddNotice():
            return _on_notice(state, inp)
    return _ignored(state), []  # pragma: no cover - every Input arm is matched above


_INPUT_TYPES: Final = (
    Connected,
    ConnectFailed,
    Reconnecting,
    Reconnected,
    Disconnected,
    ParticipantJoined,
    ParticipantLeft,
    AttributesChanged,
    TranscriptStreamOpened,
    TranscriptStreamChunk,
    TranscriptStreamClosed,
    AgentEventReceived,
    MalformedAgentEvent,
    ClientToolFinished,
    TimerFired,
    SendText,
    SignalActivity,
    Interrupt,
    SetMuted,
    SetSpoken,
    Hangup,
    LocalError,
    AddNotice,
)

# After the end only local bookkeeping still applies (state only, no effects but a result
# for a tool that finished as the session ended, which is then dropped).
_AFTER_END: Final = (ClientToolFinished, SetMuted, SetSpoken, MalformedAgentEvent)
