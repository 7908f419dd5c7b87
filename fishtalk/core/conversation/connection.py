"""Connection handlers: connecting, reconnecting, the agent joining and leaving, its state,
and the end of the session (the one way to ``ended``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from fishtalk.core.conversation.answers import (
    _agent_state_changed,
    _turns_left_at_join,
    _user_turn_ended,
)
from fishtalk.core.conversation.effects import (
    TIMER_AGENT_JOIN,
    TIMER_ENDED_GRACE,
    TIMER_MAX_DURATION,
    CancelTimer,
    ScheduleTimer,
    SendClientEvent,
    SetMicrophoneMuted,
    Teardown,
)
from fishtalk.core.conversation.inputs import (
    AttributesChanged,
    Connected,
    ConnectFailed,
    Disconnected,
    ParticipantJoined,
    ParticipantLeft,
    Reconnected,
    Reconnecting,
)
from fishtalk.core.conversation.latency_rules import (
    _lat_book,
    _lat_close_interrupt,
    _lat_close_turn,
    _lat_opening_over,
    _lat_thinking,
    _lat_user_turn_ended,
)
from fishtalk.core.conversation.lines import _put_segment
from fishtalk.core.conversation.reasons import (
    AGENT_SIDE_DISCONNECTS,
    END_AGENT_HANGUP,
    END_CONNECTION_LOST,
)
from fishtalk.core.conversation.state import (
    Clock,
    State,
)
from fishtalk.core.conversation.step import (
    _add_error,
    _add_notice,
    _ignored,
    _Step,
    _with_mode,
)
from fishtalk.core.protocol import (
    ATTR_AGENT_STATE,
)

AGENT_JOIN_TIMEOUT: Final = 15.0
"""Seconds after connecting for the agent to publish its first state (web SDK: 15 s)."""


SESSION_ENDED_GRACE: Final = 10.0
"""Seconds after ``session.ended`` before the client tears down on its own (web SDK: 10 s)."""


MAX_DURATION_SLACK: Final = 10.0
"""Extra seconds past the grant's max duration before the local safety-net timer ends the
session (the server normally ends it first, announcing ``conversation_timeout``)."""


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


def _can_send(state: State) -> bool:
    return state.agent_ready and state.status == "connected"


def _flush_queue(r: _Step, at: float) -> None:
    """Send queued typed messages in order once the agent is ready and we are connected."""
    queued = r.internal.queued
    if not queued or not _can_send(r.s):
        return
    _turns_left_at_join(r)
    for q in queued:
        r.fx.append(SendClientEvent(q.message))
        seg = r.s.segment_log.get(q.segment_id)
        turn = _user_turn_ended(r, at, "typed")
        if seg is not None and seg.queued:
            _put_segment(r, replace(seg, queued=False, turn=turn))
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
    if not inp.audio_out:
        _lat_book(r, no_output=True)
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
        if _agent_state_changed(r, value):
            _lat_opening_over(r, at)
        if value == "thinking":
            _lat_thinking(r, at)
    _mark_agent_ready(r, at)
    _with_mode(r)
