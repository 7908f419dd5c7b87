"""The conversation reducer: ``(state, input) -> (state, effects)``, sans-IO.

This is the one place that knows what a front end shows. The session (``fishtalk.engine.session``)
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

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final, Literal, TypeAlias, TypeVar

from fishtalk.core.conversation.effects import (
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
from fishtalk.core.conversation.inputs import (
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
from fishtalk.core.conversation.latency import (
    MAX_INTERRUPTS,
    MAX_TURNS,
    Incomplete,
    InterruptTiming,
    LatencyMark,
    TurnKind,
    Waterfall,
)
from fishtalk.core.conversation.reasons import (
    AGENT_SIDE_DISCONNECTS,
    END_AGENT_HANGUP,
    END_CONNECTION_FAILED,
    END_CONNECTION_LOST,
    END_CONVERSATION_TIMEOUT,
    END_USER_HANGUP,
    describe_end_reason,
    describe_error,
)
from fishtalk.core.conversation.state import (
    LOG_CHUNK,
    MAX_DEBUG_SAMPLES,
    MAX_ERRORS,
    MAX_NOTICES,
    MAX_ORPHANS,
    PREVIEW_CHARS,
    ClientCall,
    Clock,
    ErrorEntry,
    Internal,
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
from fishtalk.core.protocol import (
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
    The cost of one input does not depend on how long the conversation is.
    """
    r = _Step(state)
    if not isinstance(inp, _INPUT_TYPES):
        _ignored(r)
        return r.s, r.fx
    if state.ended and not isinstance(inp, _AFTER_END):
        _ignored(r)
    else:
        handler = _HANDLERS.get(type(inp))
        if handler is None:  # a subclass of an input type
            handler = next(h for t, h in _HANDLERS.items() if isinstance(inp, t))
        handler(r, inp)
    if inp.at > r.s.clock.now:
        r.clock(now=inp.at)
    return r.s, r.fx


# --- one reduction in progress ------------------------------------------------------------

_T = TypeVar("_T")


_COPIERS: dict[type, Callable[[Any], Any]] = {}


def _copier(cls: type) -> Callable[[Any], Any]:
    """A function that copies an instance of the slotted class ``cls`` field by field,
    written out once per class: each slot's descriptor is called directly, with no loop
    over names and no ``getattr``/``object.__setattr__`` lookups per field (a copy of the
    21-slot state takes about 40% of the time of the loop). Frozen dataclasses refuse
    ``setattr``, but not their slots' descriptors."""
    names: tuple[str, ...] = cls.__slots__  # type: ignore[attr-defined]
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    lines = ["def copy(obj):", "    new = _new(_cls)"]
    for i, name in enumerate(names):
        if not name.isidentifier():  # not expected of a dataclass; keep the plain path
            return _copy_slots
        scope[f"_set{i}"] = getattr(cls, name).__set__
        lines.append(f"    _set{i}(new, obj.{name})")
    lines.append("    return new")
    exec("\n".join(lines), scope)  # noqa: S102  # built from the class's own slot names
    copy: Callable[[Any], Any] = scope["copy"]
    return copy


def _copy_slots(obj: _T) -> _T:
    new = object.__new__(type(obj))
    for name in type(obj).__slots__:  # type: ignore[attr-defined]
        object.__setattr__(new, name, getattr(obj, name))
    return new


def _copy(obj: _T) -> _T:
    """A shallow copy of a slotted dataclass (cheaper than ``dataclasses.replace``)."""
    cls = type(obj)
    copier = _COPIERS.get(cls)
    if copier is None:
        copier = _COPIERS[cls] = _copier(cls)
    new: _T = copier(obj)
    return new


class _Step:
    """One reduction: the state being built and the effects so far.

    The first write copies the state (and, separately, its clock or bookkeeping) once;
    later writes in the same step change that private copy in place. Nothing outside sees
    the copy before :func:`reduce` returns it, so every published state stays immutable.
    """

    __slots__ = ("_own_book", "_own_clock", "_own_state", "fx", "s")

    def __init__(self, state: State) -> None:
        self.s = state
        self.fx: list[Effect] = []
        self._own_state = False
        self._own_book = False
        self._own_clock = False

    def set(self, **changes: Any) -> None:
        if not self._own_state:
            self.s = _copy(self.s)
            self._own_state = True
        for name, value in changes.items():
            object.__setattr__(self.s, name, value)

    def book(self, **changes: Any) -> None:
        """Change the reducer's bookkeeping (:class:`Internal`)."""
        if not self._own_book:
            self.set(_internal=_copy(self.s._internal))
            self._own_book = True
        internal = self.s._internal
        for name, value in changes.items():
            object.__setattr__(internal, name, value)

    def clock(self, **changes: Any) -> None:
        if not self._own_clock:
            self.set(clock=_copy(self.s.clock))
            self._own_clock = True
        clock = self.s.clock
        for name, value in changes.items():
            object.__setattr__(clock, name, value)

    @property
    def internal(self) -> Internal:
        return self.s._internal


# --- helpers ----------------------------------------------------------------------------


def _ignored(r: _Step) -> None:
    debug = r.internal.debug
    r.book(debug=replace(debug, ignored_inputs=debug.ignored_inputs + 1))


def _bounded(items: tuple[object, ...], limit: int) -> int:
    return max(0, len(items) - limit)


def _add_error(
    r: _Step, code: str, at: float, detail: str | None = None, call_id: str | None = None
) -> None:
    entry = ErrorEntry(
        code=code, message=describe_error(code), at=at, detail=detail, call_id=call_id
    )
    errors = (*r.s.errors, entry)
    r.set(errors=errors[_bounded(errors, MAX_ERRORS) :])


def _add_notice(r: _Step, text: str, at: float, kind: NoticeKind) -> None:
    notices = (*r.s.notices, Notice(text=text, at=at, kind=kind))
    r.set(notices=notices[_bounded(notices, MAX_NOTICES) :])


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


def _end(r: _Step, reason: str, at: float) -> None:
    """Move to ``ended`` (idempotent): cancel timers, close open segments, tear down."""
    if r.s.ended:
        return
    latency = r.s.latency
    if latency.open is not None or latency.open_interrupt is not None:
        _lat_close_turn(r, "ended")
        _lat_close_interrupt(r)
    r.fx += [CancelTimer(name) for name in _active_timers(r.s.clock)]
    for segment_id in r.internal.open_ids:
        seg = r.s.segment_log.get(segment_id)
        if seg is not None and seg.role == "agent" and seg.open:
            _put_segment(r, replace(seg, open=False, final=True, updated_at=at))
    r.clock(join_deadline=None, ended_grace_deadline=None, ended_at=at)
    r.set(status="ended", end_reason=reason, mode="listening")
    r.book(streams=(), orphans=())
    r.fx.append(Teardown(reason))


def _agent_gone_reason(state: State) -> str:
    return state.announced_end_reason or END_AGENT_HANGUP


def _next_seq(r: _Step) -> int:
    seq = r.internal.next_seq
    r.book(next_seq=seq + 1)
    return seq


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


def _with_mode(r: _Step) -> None:
    mode = _derive_mode(r.s, r.s.mode)
    if mode != r.s.mode:
        r.set(mode=mode)


def _put_segment(r: _Step, seg: Segment) -> None:
    """Replace the segment with the same id, or append it (keeping ``open_ids`` right)."""
    before = r.s.segment_log
    log, old = before.put(seg)
    r.set(segment_log=log)
    # Latency: an agent reply's first text and its end; the user's final transcript.
    if seg.role == "agent":
        if seg.text and (old is None or not old.text) and not seg.interrupted:
            _lat_first_text(r, seg)
        if seg.final and old is not None and not old.final:
            _lat_reply_closed(r, seg)
    elif seg.final and not seg.typed and (old is None or not old.final):
        _lat_user_final(r, seg.updated_at)
    if log.dropped != before.dropped:
        _count_dropped_segments(r, before.blocks[: (log.dropped - before.dropped) // LOG_CHUNK])
    was_open = old is not None and old.open
    if was_open != seg.open:
        ids = r.internal.open_ids
        if seg.open:
            # Segments dropped from the log while open cannot be closed any more: forget them.
            kept = tuple(i for i in ids if log.position(i) is not None) if len(ids) > 16 else ids
            r.book(open_ids=(*kept, seg.segment_id))
        else:
            r.book(open_ids=tuple(i for i in ids if i != seg.segment_id))


def _put_card(r: _Step, card: ToolCard) -> None:
    before = r.s.tool_log
    log = before.put(card)[0]
    r.set(tool_log=log)
    if log.dropped != before.dropped:
        failed = sum(
            1
            for block in before.blocks[: (log.dropped - before.dropped) // LOG_CHUNK]
            for dropped in block
            if dropped.display_status not in _NOT_FAILED
        )
        if failed:
            r.set(earlier_failed_tools=r.s.earlier_failed_tools + failed)


_NOT_FAILED: Final = frozenset({"running", "completed", "ok"})
"""A card's ``display_status`` values that are not a failure (what the summary counts)."""


def _count_dropped_segments(r: _Step, blocks: tuple[tuple[Segment, ...], ...]) -> None:
    """Count what was said in segments that just dropped off the live log (one block per
    :data:`LOG_CHUNK` appends, so O(1) per input on average)."""
    user = agent = 0
    for block in blocks:
        for dropped in block:
            if dropped.text.strip():
                if dropped.role == "user":
                    user += 1
                else:
                    agent += 1
    r.set(
        earlier_user_turns=r.s.earlier_user_turns + user,
        earlier_agent_turns=r.s.earlier_agent_turns + agent,
    )


def _role_of(state: State, identity: str) -> Role:
    if state.local_identity is not None:
        return "user" if identity == state.local_identity else "agent"
    # Local identity not known yet: only the agent's identity can tell us anything.
    if state.agent_identity is not None and identity != state.agent_identity:
        return "user"
    return "agent"


def _can_send(state: State) -> bool:
    return state.agent_ready and state.status == "connected"


def _flush_queue(r: _Step, at: float) -> None:
    """Send queued typed messages in order once the agent is ready and we are connected."""
    queued = r.internal.queued
    if not queued or not _can_send(r.s):
        return
    for q in queued:
        r.fx.append(SendClientEvent(q.message))
        seg = r.s.segment_log.get(q.segment_id)
        if seg is not None and seg.queued:
            _put_segment(r, replace(seg, queued=False))
        _lat_user_turn_ended(r, "typed", at, text_only=q.message.audio is False)
    r.book(queued=())


def _mark_agent_ready(r: _Step, at: float) -> None:
    if r.s.agent_ready:
        return
    if r.s.clock.join_deadline is not None:
        r.fx.append(CancelTimer(TIMER_AGENT_JOIN))
        r.clock(join_deadline=None)
    r.set(agent_ready=True)
    _flush_queue(r, at)


def _learn_agent(r: _Step, identity: str, at: float) -> None:
    if r.s.agent_identity == identity and r.s.agent_joined:
        return
    r.set(agent_identity=identity, agent_joined=True)
    _add_notice(r, "The agent joined.", at, "agent_joined")


# --- handlers: connection ---------------------------------------------------------------


def _on_connected(r: _Step, inp: Connected) -> None:
    if r.s.status != "connecting":
        _ignored(r)
        return
    r.clock(connected_at=inp.at)
    if not r.s.agent_ready:
        r.clock(join_deadline=inp.at + AGENT_JOIN_TIMEOUT)
        r.fx.append(ScheduleTimer(TIMER_AGENT_JOIN, inp.at + AGENT_JOIN_TIMEOUT))
    limit = r.s.clock.max_duration_seconds
    if limit is not None and limit > 0:
        deadline = inp.at + limit
        r.clock(max_duration_deadline=deadline)
        r.fx.append(ScheduleTimer(TIMER_MAX_DURATION, deadline + MAX_DURATION_SLACK))
    r.set(status="connected", local_identity=inp.local_identity)
    if r.s.muted:
        # The mic is published unmuted by default; re-apply a mute chosen before connecting.
        r.fx.append(SetMicrophoneMuted(True))
    _flush_queue(r, inp.at)


def _on_connect_failed(r: _Step, inp: ConnectFailed) -> None:
    _add_error(r, inp.code, inp.at, inp.detail)
    _end(r, inp.code, inp.at)


def _on_reconnecting(r: _Step, inp: Reconnecting) -> None:
    if r.s.status != "connected":
        _ignored(r)
        return
    r.set(status="reconnecting")
    _add_notice(r, "Reconnecting…", inp.at, "reconnecting")


def _on_reconnected(r: _Step, inp: Reconnected) -> None:
    if r.s.status != "reconnecting":
        _ignored(r)
        return
    r.set(status="connected")
    s = r.s
    if (
        s.agent_joined
        and s.agent_identity is not None
        and s.agent_identity not in inp.remote_identities
    ):
        # No replay and no agent left after the reconnect: the agent is gone.
        _end(r, _agent_gone_reason(s), inp.at)
        return
    _add_notice(r, "Reconnected.", inp.at, "reconnected")
    _flush_queue(r, inp.at)


def _on_disconnected(r: _Step, inp: Disconnected) -> None:
    if r.s.announced_end_reason is not None:
        reason = r.s.announced_end_reason
    elif inp.reason is not None and inp.reason.upper() in AGENT_SIDE_DISCONNECTS:
        reason = END_AGENT_HANGUP
    else:
        reason = END_CONNECTION_LOST
    _end(r, reason, inp.at)


def _on_participant_joined(r: _Step, inp: ParticipantJoined) -> None:
    s = r.s
    if inp.identity == s.local_identity:
        _ignored(r)
        return
    if not inp.is_agent and s.agent_identity != inp.identity:
        return
    if s.agent_joined and s.agent_identity != inp.identity:
        # One agent per session: a second one is not who we are talking to.
        _ignored(r)
        return
    _learn_agent(r, inp.identity, inp.at)
    value = inp.attributes.get(ATTR_AGENT_STATE)
    if value:
        _apply_agent_state(r, value, inp.at)


def _on_participant_left(r: _Step, inp: ParticipantLeft) -> None:
    if r.s.agent_identity is None or inp.identity != r.s.agent_identity:
        return
    _end(r, _agent_gone_reason(r.s), inp.at)


def _on_attributes_changed(r: _Step, inp: AttributesChanged) -> None:
    value = inp.changed.get(ATTR_AGENT_STATE)
    if not value:
        # An empty value deletes the key; the state is sticky, so keep the last one.
        return
    if inp.identity == r.s.local_identity:
        _ignored(r)
        return
    if r.s.agent_identity is not None and inp.identity != r.s.agent_identity:
        _ignored(r)
        return
    # Only the agent publishes lk.agent.state, so an update before its join event still
    # identifies it (attributes can overtake the participant event).
    _learn_agent(r, inp.identity, inp.at)
    _apply_agent_state(r, value, inp.at)


def _apply_agent_state(r: _Step, value: str, at: float) -> None:
    if value != r.s.agent_state:
        r.set(agent_state=value)
        if value == "thinking":
            _lat_thinking(r, at)
    _mark_agent_ready(r, at)
    _with_mode(r)


# --- handlers: transcript ---------------------------------------------------------------


def _find_stream(r: _Step, stream_id: str) -> TranscriptStream | None:
    for s in r.internal.streams:
        if s.stream_id == stream_id:
            return s
    return None


def _replace_stream(r: _Step, stream: TranscriptStream) -> None:
    streams = r.internal.streams
    r.book(streams=tuple(stream if s.stream_id == stream.stream_id else s for s in streams))


def _on_stream_opened(r: _Step, inp: TranscriptStreamOpened) -> None:
    if _find_stream(r, inp.stream_id) is not None:
        _ignored(r)
        return
    role = _role_of(r.s, inp.identity)
    stream = TranscriptStream(
        stream_id=inp.stream_id, segment_id=inp.segment_id, role=role, final=inp.final
    )
    seg = r.s.segment_log.get(inp.segment_id)
    if seg is not None and seg.role != role:
        # The same segment id from the other side: not ours to change. The stream is
        # tracked without a segment so its chunks and close are dropped quietly.
        _track_detached(r, stream, inp.at)
        return
    if seg is None:
        seg = Segment(
            seq=_next_seq(r),
            segment_id=inp.segment_id,
            role=role,
            identity=inp.identity,
            text="",
            final=False,
            open=True,
            started_at=inp.at,
            updated_at=inp.at,
        )
        _put_segment(r, seg)
    elif role == "agent" and not seg.interrupted:
        # Another stream for the same agent segment (e.g. a preamble and its answer).
        _put_segment(r, replace(seg, open=True, final=False, updated_at=inp.at))
    elif role == "user":
        if seg.final and not inp.final:
            # A late interim after the final transcript: the final text stands.
            _track_detached(r, stream, inp.at)
            return
        _put_segment(r, replace(seg, open=True, updated_at=inp.at))
    r.book(streams=(*r.internal.streams, stream))
    _with_mode(r)
    _replay_orphans(r, inp.stream_id, inp.at)


def _track_detached(r: _Step, stream: TranscriptStream, at: float) -> None:
    r.book(streams=(*r.internal.streams, replace(stream, segment_id="")))
    _ignored(r)
    _replay_orphans(r, stream.stream_id, at)


def _replay_orphans(r: _Step, stream_id: str, at: float) -> None:
    orphans = r.internal.orphans
    if not orphans:
        return
    mine = [o for o in orphans if o.stream_id == stream_id]
    if not mine:
        return
    r.book(orphans=tuple(o for o in orphans if o.stream_id != stream_id))
    stream = _find_stream(r, stream_id)
    seg_id = stream.segment_id if stream is not None else ""
    for o in mine:
        if o.text is not None:
            _on_stream_chunk(r, TranscriptStreamChunk(stream_id, seg_id, o.text, max(o.at, at)))
        else:
            _on_stream_closed(r, TranscriptStreamClosed(stream_id, seg_id, max(o.at, at), o.final))


def _add_orphan(r: _Step, orphan: OrphanChunk) -> None:
    orphans = (*r.internal.orphans, orphan)
    r.book(orphans=orphans[_bounded(orphans, MAX_ORPHANS) :])


def _on_stream_chunk(r: _Step, inp: TranscriptStreamChunk) -> None:
    stream = _find_stream(r, inp.stream_id)
    if stream is None:
        # The chunk overtook its header: hold it until the open arrives.
        _add_orphan(r, OrphanChunk(inp.stream_id, inp.text, None, inp.at))
        return
    seg = r.s.segment_log.get(stream.segment_id) if stream.segment_id else None
    if seg is None:
        _ignored(r)
        return
    if stream.role == "agent":
        if seg.interrupted:
            # Barge-in: only what was spoken before the interrupt counts.
            debug = r.internal.debug
            r.book(debug=replace(debug, dropped_chunks=debug.dropped_chunks + 1))
            return
        seg = replace(seg, text=seg.text + inp.text, updated_at=inp.at)
    else:
        stream = replace(stream, text=stream.text + inp.text)
        _replace_stream(r, stream)
        if seg.final and not stream.final:
            # An interim stream still open when the final one landed: the final text stands.
            _ignored(r)
            return
        # Each user stream carries the whole interim text, replacing the previous one.
        seg = replace(seg, text=stream.text, updated_at=inp.at, final=seg.final or stream.final)
    _put_segment(r, seg)
    _with_mode(r)


def _on_stream_closed(r: _Step, inp: TranscriptStreamClosed) -> None:
    stream = _find_stream(r, inp.stream_id)
    if stream is None:
        _add_orphan(r, OrphanChunk(inp.stream_id, None, inp.final, inp.at))
        return
    streams = tuple(s for s in r.internal.streams if s is not stream)
    r.book(streams=streams)
    seg = r.s.segment_log.get(stream.segment_id) if stream.segment_id else None
    if seg is None:
        return
    still_open = any(s.segment_id == seg.segment_id for s in streams)
    if stream.role == "agent":
        # An agent segment closing means playout finished (or it was cut): it is done.
        seg = replace(seg, open=still_open, final=not still_open, updated_at=inp.at)
    else:
        final = seg.final or stream.final or bool(inp.final)
        text = stream.text if inp.final and not seg.final and stream.text else seg.text
        seg = replace(seg, text=text, open=still_open, final=final, updated_at=inp.at)
    _put_segment(r, seg)
    _with_mode(r)


# --- handlers: agent events -------------------------------------------------------------


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


# --- handlers: timers -------------------------------------------------------------------


def _on_timer(r: _Step, inp: TimerFired) -> None:
    clock = r.s.clock
    if inp.name == TIMER_AGENT_JOIN and clock.join_deadline is not None:
        if inp.at < clock.join_deadline or r.s.agent_ready:
            _ignored(r)
            return
        _add_error(
            r,
            "connection_failed",
            inp.at,
            f"The agent did not join within {AGENT_JOIN_TIMEOUT:g} s.",
        )
        _end(r, END_CONNECTION_FAILED, inp.at)
    elif inp.name == TIMER_ENDED_GRACE and clock.ended_grace_deadline is not None:
        if inp.at < clock.ended_grace_deadline:
            _ignored(r)
            return
        _end(r, r.s.announced_end_reason or END_AGENT_HANGUP, inp.at)
    elif inp.name == TIMER_MAX_DURATION and clock.max_duration_deadline is not None:
        if inp.at < clock.max_duration_deadline + MAX_DURATION_SLACK:
            _ignored(r)
            return
        _end(r, r.s.announced_end_reason or END_CONVERSATION_TIMEOUT, inp.at)
    else:
        _ignored(r)


# --- handlers: local commands -----------------------------------------------------------


def _typed_message(state: State, inp: SendText) -> UserMessage | None:
    """The ``user.message`` a typed turn becomes (None: blank, ignored)."""
    text = inp.text.strip()
    if not text:
        return None
    spoken = state.spoken if inp.audio is None else inp.audio
    # Absent audio means "speak as usual"; the web SDK sends audio=false unless asked.
    return UserMessage(text=text) if spoken else UserMessage(text=text, audio=False)


def sends_at_once(state: State, inp: SendText) -> UserMessage | None:
    """The message :func:`reduce` of ``inp`` on ``state`` sends at once (its one
    :class:`SendClientEvent`, nothing queued before it), or None when it would queue it or
    ignore the input. The same decision :func:`reduce` takes, so a session may start the
    publish before it reduces (the bytes leave first, the bookkeeping follows)."""
    if state.ended or type(inp) is not SendText:
        return None
    if state._internal.queued or not _can_send(state):
        return None
    return _typed_message(state, inp)


def _on_send_text(r: _Step, inp: SendText) -> None:
    message = _typed_message(r.s, inp)
    if message is None:
        return
    text = message.text
    spoken = message.audio is not False
    internal = r.internal
    typed = internal.typed_count + 1
    segment_id = f"typed-{typed}"
    # Fast path: nothing waiting and the agent listening, so it goes out at once.
    send_now = not internal.queued and _can_send(r.s)
    r.book(typed_count=typed, next_seq=internal.next_seq + 1)
    seg = Segment(
        seq=internal.next_seq,
        segment_id=segment_id,
        role="user",
        identity=None,
        text=text,
        final=True,
        typed=True,
        queued=not send_now,
        audio=spoken,
        started_at=inp.at,
        updated_at=inp.at,
    )
    _put_segment(r, seg)
    if send_now:
        r.fx.append(SendClientEvent(message))
        _lat_user_turn_ended(r, "typed", inp.at, text_only=not spoken)
        return
    r.book(queued=(*r.internal.queued, QueuedMessage(segment_id, message)))
    _flush_queue(r, inp.at)


def _on_activity(r: _Step, inp: SignalActivity) -> None:
    if r.s.status != "connected" or not r.s.agent_ready:
        return
    last = r.internal.last_activity_sent_at
    if last is not None and inp.at - last < ACTIVITY_THROTTLE:
        return
    r.book(last_activity_sent_at=inp.at)
    r.fx.append(SendClientEvent(UserActivity()))


def _on_interrupt(r: _Step, inp: Interrupt) -> None:
    if r.s.status not in ("connected", "reconnecting"):
        return
    turn = r.s.latency.open
    replying = turn is not None and _reply_began(turn) is not None
    speaking = replying or r.s.mode == "speaking" or r.s.agent_state == "speaking"
    for segment_id in r.internal.open_ids:
        seg = r.s.segment_log.get(segment_id)
        if seg is not None and seg.role == "agent" and seg.open and not seg.interrupted:
            _put_segment(r, replace(seg, interrupted=True, updated_at=inp.at))
    _with_mode(r)
    r.fx.append(SendClientEvent(UserInterrupt()))
    if replying:
        _lat_close_turn(r, "interrupted")
    if speaking:
        # Timed only when there was speech to stop (see fishtalk.core.conversation.latency).
        _lat_close_interrupt(r)
        _lat_set(r, open_interrupt=InterruptTiming(pressed_at=inp.at))


def _on_set_muted(r: _Step, inp: SetMuted) -> None:
    if inp.muted == r.s.muted:
        return
    r.set(muted=inp.muted)
    if not r.s.ended:
        r.fx.append(SetMicrophoneMuted(inp.muted))


def _on_set_spoken(r: _Step, inp: SetSpoken) -> None:
    if inp.spoken != r.s.spoken:
        r.set(spoken=inp.spoken)


def _on_hangup(r: _Step, inp: Hangup) -> None:
    if r.s.status in ("connected", "reconnecting"):
        r.fx.append(SendClientEvent(UserHangup()))
    _end(r, END_USER_HANGUP, inp.at)


def _on_local_error(r: _Step, inp: LocalError) -> None:
    _add_error(r, inp.code, inp.at, inp.detail)


def _on_notice(r: _Step, inp: AddNotice) -> None:
    _add_notice(r, inp.text, inp.at, inp.kind)


# --- latency (issue 14): the waterfall of each turn -----------------------------------
#
# The rules (when a turn opens and closes, every ``incomplete`` reason) are documented in
# fishtalk.core.conversation.latency; these helpers carry them out. Each one first checks the
# cheap facts (is a turn open, is the mark still missing) so the common input costs a few
# attribute reads.

_Closing: TypeAlias = Literal["over", "next", "interrupted", "ended"]


def _with(obj: _T, **changes: Any) -> _T:
    """``obj`` with ``changes``: a fresh copy (cheaper than ``dataclasses.replace``, which
    matters on the reducer's common path); the values are the reducer's own."""
    new = _copy(obj)
    for name, value in changes.items():
        object.__setattr__(new, name, value)
    return new


def _lat_book(r: _Step, **changes: Any) -> None:
    book = r.internal.lat
    for name, value in changes.items():
        if getattr(book, name) != value:
            r.book(lat=_with(book, **changes))
            return


def _lat_set(r: _Step, **changes: Any) -> None:
    r.set(latency=_with(r.s.latency, **changes))


def _lat_set_open(r: _Step, w: Waterfall) -> None:
    r.set(latency=_with(r.s.latency, open=w))


def _reply_began(w: Waterfall) -> float | None:
    """When the agent's reply to this turn began (first text or audio), if it did."""
    began: float | None = None
    for at in (w.first_text_at, w.audio_received_at, w.audio_handed_at):
        if at is not None and (began is None or at < began):
            began = at
    return began


def _lat_open_turn(r: _Step, kind: TurnKind, at: float, *, text_only: bool) -> Waterfall:
    lat = r.s.latency
    internal = r.internal
    thinking = internal.lat.thinking_at
    final = internal.lat.user_final_at
    w = Waterfall(
        turn=lat.user_turns + (kind != "unprompted"),  # settled when it closes
        kind=kind,
        user_ended_at=at,
        user_final_at=final if final is not None and final >= at and kind != "typed" else None,
        thinking_at=thinking if thinking is not None and thinking >= at else None,
    )
    _lat_set_open(r, w)
    _lat_book(r, reply_over=False, text_only=text_only)
    return w


def _lat_user_turn_ended(r: _Step, kind: TurnKind, at: float, *, text_only: bool) -> None:
    """The user's turn ended at ``at`` (a typed message left, or speech ended)."""
    lat = r.s.latency
    if lat.open_interrupt is not None:
        _lat_close_interrupt(r)
    w = lat.open
    if w is not None:
        began = _reply_began(w)
        if began is None or (w.kind == "unprompted" and at <= began):
            # The agent has not answered yet (or its answer began after this end of
            # speech, reported late): the user's turn goes on, and ends at its latest end.
            end = max(at, w.user_ended_at) if began is None else at
            thinking = w.thinking_at
            final = w.user_final_at
            _lat_set_open(
                r,
                _with(
                    w,
                    kind=kind,
                    turn=lat.user_turns + (kind != "unprompted"),
                    user_ended_at=end,
                    thinking_at=thinking if thinking is not None and thinking >= end else None,
                    user_final_at=final if final is not None and final >= end else None,
                ),
            )
            _lat_book(r, text_only=text_only)
            return
        _lat_close_turn(r, "next")
    _lat_open_turn(r, kind, at, text_only=text_only)


def _lat_unprompted(r: _Step, at: float) -> Waterfall | None:
    """The agent's reply began with no turn open: a turn with no user turn, if the agent
    spoke first in the call or the user said something no end of speech was seen for."""
    lat = r.s.latency
    final = r.internal.lat.user_final_at
    if lat.turns:
        began = _reply_began(lat.turns[-1])
        if final is None or (began is not None and final <= began):
            return None  # more of the last reply (another segment): not a new turn
    # The user said something (a final transcript) that no end of speech was seen for:
    # that transcript is the best end of their turn there is (and no mark precedes it).
    start = final if final is not None and final <= at else at
    return _lat_open_turn(r, "unprompted", start, text_only=False)


def _lat_thinking(r: _Step, at: float) -> None:
    w = r.s.latency.open
    if (
        w is not None
        and w.thinking_at is None
        and at >= w.user_ended_at
        and _reply_began(w) is None
    ):
        _lat_set_open(r, _with(w, thinking_at=at))
    else:
        _lat_book(r, thinking_at=at)  # for a turn whose end is reported later


def _lat_first_text(r: _Step, seg: Segment) -> None:
    w = r.s.latency.open
    if w is None:
        w = _lat_unprompted(r, seg.started_at)
        if w is None:
            return
    if w.first_text_at is not None or min(seg.started_at, seg.updated_at) < w.user_ended_at:
        return  # not the first text, or a reply that began before this turn
    _lat_set_open(r, _with(w, first_text_at=seg.updated_at, segment_id=seg.segment_id))


def _lat_reply_closed(r: _Step, seg: Segment) -> None:
    w = r.s.latency.open
    if w is None or w.segment_id != seg.segment_id:
        return
    if w.audio_received_at is not None and w.audio_handed_at is None:
        _lat_book(r, reply_over=True)  # the first frame is on its way to the speaker
        return
    _lat_close_turn(r, "over")


def _lat_user_final(r: _Step, at: float) -> None:
    w = r.s.latency.open
    if (
        w is not None
        and w.kind == "spoken"
        and at >= w.user_ended_at
        and (w.user_final_at is None or _reply_began(w) is None)
    ):
        _lat_set_open(r, _with(w, user_final_at=at))
        return
    _lat_book(r, user_final_at=at)


def _lat_reason(w: Waterfall, closing: _Closing, text_only: bool, over: bool) -> Incomplete | None:
    if w.kind == "unprompted":
        return "no user turn"
    if w.heard_at is not None:
        return None
    if text_only:
        return "text-only"
    if closing == "interrupted":
        return "interrupted"
    if w.audio_received_at is not None:
        return "not heard"
    if closing == "ended":
        return "ended"
    if closing == "next" and not over:
        return "interrupted"  # the user spoke or typed over the reply before it was heard
    return "no audio"


def _lat_close_turn(r: _Step, closing: _Closing) -> None:
    lat = r.s.latency
    w = lat.open
    if w is None:
        return
    internal = r.internal
    over = closing == "over" or internal.lat.reply_over
    # An unprompted turn may have become the answer to a user turn while open (a late
    # end of speech), so its number is settled here.
    user_turns = lat.user_turns + (w.kind != "unprompted")
    closed = _with(
        w,
        turn=user_turns,
        rtt=lat.rtt,
        incomplete=_lat_reason(w, closing, internal.lat.text_only, over),
    )
    turns = (*lat.turns, closed)
    drop = _bounded(turns, MAX_TURNS)
    _lat_set(
        r,
        open=None,
        turns=turns[drop:],
        earlier_turns=lat.earlier_turns + drop,
        user_turns=user_turns,
    )
    _lat_book(r, reply_over=False)


def _lat_close_interrupt(r: _Step) -> None:
    lat = r.s.latency
    pending = lat.open_interrupt
    if pending is None:
        return
    interrupts = (*lat.interrupts, pending)
    _lat_set(r, open_interrupt=None, interrupts=interrupts[_bounded(interrupts, MAX_INTERRUPTS) :])


def _on_latency_mark(r: _Step, inp: LatencyMark) -> None:
    """A mark only IO can see (see :data:`~fishtalk.core.conversation.latency.MarkKind`)."""
    at = inp.at
    value = inp.value
    if value is not None and not (math.isfinite(value) and value >= 0.0):
        value = None
    if not math.isfinite(at):
        _ignored(r)
        return
    kind = inp.kind
    lat = r.s.latency
    w = lat.open
    if kind == "speech_ended":
        _lat_user_turn_ended(r, "spoken", at, text_only=False)
    elif kind == "typed_sent":
        # The turn opened when the message went out; the publish completing is its end.
        if w is None or w.kind != "typed" or at < w.user_ended_at or _reply_began(w) is not None:
            _ignored(r)
            return
        # The agent cannot have reacted before the message left: an agent mark seen
        # before the publish was reported bounds the end.
        end = at
        for seen in (w.thinking_at, w.user_final_at):
            if seen is not None and seen < end:
                end = seen
        _lat_set_open(r, _with(w, user_ended_at=end))
    elif kind == "audio_received":
        if w is None:
            w = _lat_unprompted(r, at)
        if w is None or w.audio_received_at is not None or at < w.user_ended_at:
            _ignored(r)
            return
        handed = w.audio_handed_at
        _lat_set_open(r, _with(w, audio_received_at=at if handed is None else min(at, handed)))
    elif kind == "audio_heard":
        if w is None or w.audio_handed_at is not None or at < w.user_ended_at:
            _ignored(r)
            return
        received = w.audio_received_at
        handed = at if received is None else max(at, received)
        _lat_set_open(r, _with(w, audio_handed_at=handed, output_latency=value or 0.0))
        if r.internal.lat.reply_over:
            _lat_close_turn(r, "over")
    elif kind == "rtt":
        if value is None:
            _ignored(r)
            return
        _lat_set(r, rtt=value)
    else:
        pending = lat.open_interrupt
        if pending is None or at < pending.pressed_at:
            _ignored(r)
            return
        if kind == "interrupt_flushed" and pending.flushed_at is None:
            pending = _with(pending, flushed_at=at)
        elif kind == "interrupt_wire_stopped" and pending.wire_stopped_at is None:
            pending = _with(pending, wire_stopped_at=at)
        else:
            _ignored(r)
            return
        _lat_set(r, open_interrupt=pending)
        if pending.flushed_at is not None and pending.wire_stopped_at is not None:
            _lat_close_interrupt(r)


_HANDLERS: Final[dict[type, Any]] = {
    Connected: _on_connected,
    ConnectFailed: _on_connect_failed,
    Reconnecting: _on_reconnecting,
    Reconnected: _on_reconnected,
    Disconnected: _on_disconnected,
    ParticipantJoined: _on_participant_joined,
    ParticipantLeft: _on_participant_left,
    AttributesChanged: _on_attributes_changed,
    TranscriptStreamOpened: _on_stream_opened,
    TranscriptStreamChunk: _on_stream_chunk,
    TranscriptStreamClosed: _on_stream_closed,
    AgentEventReceived: _on_agent_event,
    MalformedAgentEvent: _on_malformed,
    ClientToolFinished: _on_client_tool_finished,
    TimerFired: _on_timer,
    SendText: _on_send_text,
    SignalActivity: _on_activity,
    Interrupt: _on_interrupt,
    SetMuted: _on_set_muted,
    SetSpoken: _on_set_spoken,
    Hangup: _on_hangup,
    LocalError: _on_local_error,
    AddNotice: _on_notice,
    LatencyMark: _on_latency_mark,
}
"""One handler per input type; each changes the step in place."""

_INPUT_TYPES: Final = tuple(_HANDLERS)

# After the end only local bookkeeping still applies (state only, no effects but a result
# for a tool that finished as the session ended, which is then dropped).
_AFTER_END: Final = (ClientToolFinished, SetMuted, SetSpoken, MalformedAgentEvent)
