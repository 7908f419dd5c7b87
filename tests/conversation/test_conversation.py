"""The conversation reducer fed scripted inputs: in order, out of order and duplicated."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from fishtalk.core import conversation as c
from fishtalk.core.protocol import (
    ATTR_AGENT_STATE,
    AgentError,
    ClientToolCall,
    ClientToolResult,
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

ME = "user-1234abcd"
AGENT = "agent"


def run(inputs: Iterable[c.Input], state: c.State | None = None) -> tuple[c.State, list[c.Effect]]:
    state = state if state is not None else c.initial_state()
    effects: list[c.Effect] = []
    for inp in inputs:
        state, more = c.reduce(state, inp)
        effects += more
    return state, effects


def agent_state(value: str, at: float) -> c.AttributesChanged:
    return c.AttributesChanged(AGENT, {ATTR_AGENT_STATE: value}, at)


def ready(at: float = 1.0) -> list[c.Input]:
    """Connected, the agent joined and published its first state."""
    return [
        c.Connected(ME, at),
        c.ParticipantJoined(AGENT, at + 0.1),
        agent_state("listening", at + 0.2),
    ]


def live() -> c.State:
    return run(ready())[0]


def ev(event: object, at: float) -> c.AgentEventReceived:
    return c.AgentEventReceived(event, at)  # type: ignore[arg-type]


def sends(effects: Iterable[c.Effect]) -> list[object]:
    return [e.event for e in effects if isinstance(e, c.SendClientEvent)]


def agent_says(stream: str, segment: str, chunks: list[str], at: float) -> list[c.Input]:
    out: list[c.Input] = [c.TranscriptStreamOpened(stream, segment, AGENT, False, at)]
    out += [c.TranscriptStreamChunk(stream, segment, text, at + 0.1) for text in chunks]
    out.append(c.TranscriptStreamClosed(stream, segment, at + 0.2))
    return out


# --- status and lifecycle -------------------------------------------------------------------


def test_initial_state() -> None:
    s = c.initial_state(max_duration_seconds=1800, spoken=True)
    assert s.status == "connecting"
    assert s.mode == "listening"
    assert s.end_reason is None
    assert s.spoken is True
    assert s.clock.max_duration_seconds == 1800
    assert s.transcript == ()
    assert s.tools == ()
    assert s.errors == ()


def test_connect_schedules_join_and_max_duration_timers() -> None:
    s, effects = run([c.Connected(ME, 5.0)], c.initial_state(max_duration_seconds=60))
    assert s.status == "connected"
    assert s.local_identity == ME
    assert s.clock.connected_at == 5.0
    assert s.clock.join_deadline == 20.0
    assert s.clock.max_duration_deadline == 65.0
    assert effects == [
        c.ScheduleTimer(c.TIMER_AGENT_JOIN, 20.0),
        c.ScheduleTimer(c.TIMER_MAX_DURATION, 65.0 + c.MAX_DURATION_SLACK),
    ]
    s, _ = run([c.TimerFired("nothing", 30.0)], s)
    assert s.clock.elapsed() == 25.0
    assert s.clock.remaining() == 35.0


def test_first_agent_state_cancels_join_timer() -> None:
    s, effects = run(ready())
    assert s.agent_joined
    assert s.agent_ready
    assert s.agent_identity == AGENT
    assert s.agent_state == "listening"
    assert c.CancelTimer(c.TIMER_AGENT_JOIN) in effects
    assert s.clock.join_deadline is None
    # A late join timer is ignored.
    s2, effects = run([c.TimerFired(c.TIMER_AGENT_JOIN, 16.0)], s)
    assert s2.status == "connected"
    assert effects == []


def test_agent_join_timeout_fails_the_connection() -> None:
    s, effects = run([c.Connected(ME, 0.0), c.ParticipantJoined(AGENT, 1.0)])
    # Early (stale) fire: ignored.
    s, effects = run([c.TimerFired(c.TIMER_AGENT_JOIN, 14.0)], s)
    assert s.status == "connected"
    assert effects == []
    s, effects = run([c.TimerFired(c.TIMER_AGENT_JOIN, 15.0)], s)
    assert s.status == "ended"
    assert s.end_reason == "connection_failed"
    assert [e.code for e in s.errors] == ["connection_failed"]
    assert effects == [c.CancelTimer(c.TIMER_AGENT_JOIN), c.Teardown("connection_failed")]


def test_connect_failed_and_session_expired() -> None:
    s, effects = run([c.ConnectFailed(0.0, "session_expired", "grant expired at 12:00")])
    assert s.status == "ended"
    assert s.end_reason == "session_expired"
    assert s.errors[0].message == c.describe_error("session_expired")
    assert s.errors[0].detail == "grant expired at 12:00"
    assert effects == [c.Teardown("session_expired")]
    s, _ = run([c.ConnectFailed(0.0)])
    assert s.end_reason == "connection_failed"


def test_reconnect_cycle_keeps_state_and_flushes_queue() -> None:
    s, _ = run([*ready(), c.Reconnecting(5.0)])
    assert s.status == "reconnecting"
    s, effects = run([c.SendText("while away", 5.5)], s)
    assert sends(effects) == []
    assert s.transcript[-1].queued
    s, effects = run([c.Reconnected(6.0, (AGENT,))], s)
    assert s.status == "connected"
    assert sends(effects) == [UserMessage(text="while away", audio=False)]
    assert not s.transcript[-1].queued


def test_reconnect_without_the_agent_means_it_left() -> None:
    s, effects = run([*ready(), c.Reconnecting(5.0), c.Reconnected(6.0, ())])
    assert s.status == "ended"
    assert s.end_reason == "agent_hangup"
    assert effects[-1] == c.Teardown("agent_hangup")


def test_reconnect_before_the_agent_joined_keeps_waiting() -> None:
    s, _ = run([c.Connected(ME, 0.0), c.Reconnecting(1.0), c.Reconnected(2.0, ())])
    assert s.status == "connected"
    assert s.clock.join_deadline == 15.0


def test_agent_leaving_ends_with_agent_hangup() -> None:
    s, effects = run([*ready(), c.ParticipantLeft("someone-else", 3.0)])
    assert s.status == "connected"
    assert effects[-1] != c.Teardown("agent_hangup")
    s, effects = run([c.ParticipantLeft(AGENT, 4.0)], s)
    assert (s.status, s.end_reason) == ("ended", "agent_hangup")
    assert effects == [c.Teardown("agent_hangup")]


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("ROOM_DELETED", "agent_hangup"),
        ("ROOM_CLOSED", "agent_hangup"),
        ("agent_left", "agent_hangup"),
        ("SIGNAL_CLOSE", "connection_lost"),
        (None, "connection_lost"),
    ],
)
def test_disconnect_reasons(reason: str | None, expected: str) -> None:
    s, effects = run([*ready(), c.Disconnected(3.0, reason)])
    assert s.end_reason == expected
    assert effects[-1] == c.Teardown(expected)


def test_session_ended_then_grace_timer() -> None:
    s, effects = run([ev(SessionEnded(reason="conversation_timeout"), 10.0)], live())
    assert s.status == "connected"
    assert s.announced_end_reason == "conversation_timeout"
    assert effects == [c.ScheduleTimer(c.TIMER_ENDED_GRACE, 20.0)]
    assert s.notices[-1].text == c.describe_end_reason("conversation_timeout")
    # A second announcement does not move the deadline.
    s, effects = run([ev(SessionEnded(reason="agent_hangup"), 11.0)], s)
    assert effects == []
    assert s.announced_end_reason == "conversation_timeout"
    s, effects = run([c.TimerFired(c.TIMER_ENDED_GRACE, 19.0)], s)
    assert s.status == "connected"
    s, effects = run([c.TimerFired(c.TIMER_ENDED_GRACE, 20.0)], s)
    assert (s.status, s.end_reason) == ("ended", "conversation_timeout")
    assert effects == [c.CancelTimer(c.TIMER_ENDED_GRACE), c.Teardown("conversation_timeout")]


@pytest.mark.parametrize("reason", ["escalated", "user_hangup", "brand_new_reason"])
def test_session_ended_reason_wins_over_the_transport(reason: str) -> None:
    s, _ = run([*ready(), ev(SessionEnded(reason=reason), 10.0), c.Disconnected(10.5, "X")])
    assert (s.status, s.end_reason) == ("ended", reason)
    s, _ = run([*ready(), ev(SessionEnded(reason=reason), 10.0), c.ParticipantLeft(AGENT, 11)])
    assert s.end_reason == reason


def test_unknown_end_reason_is_described_as_given() -> None:
    assert "brand_new_reason" in c.describe_end_reason("brand_new_reason")
    assert c.describe_end_reason("user_hangup") == "You hung up."


def test_max_duration_safety_net() -> None:
    s, _ = run(ready(0.0), c.initial_state(max_duration_seconds=60))
    s, effects = run([c.TimerFired(c.TIMER_MAX_DURATION, 61.0)], s)
    assert s.status == "connected"
    assert effects == []
    s, effects = run([c.TimerFired(c.TIMER_MAX_DURATION, 70.0)], s)
    assert effects[-1] == c.Teardown("conversation_timeout")
    assert (s.status, s.end_reason) == ("ended", "conversation_timeout")


def test_hangup_sends_then_tears_down_and_twice_is_harmless() -> None:
    s, effects = run([*ready(), c.Hangup(5.0)])
    assert (s.status, s.end_reason) == ("ended", "user_hangup")
    assert effects[-2:] == [c.SendClientEvent(UserHangup()), c.Teardown("user_hangup")]
    s2, effects = run([c.Hangup(6.0), c.Disconnected(6.1, "CLIENT_INITIATED")], s)
    assert effects == []
    assert s2.end_reason == "user_hangup"
    assert s2.clock.ended_at == 5.0


def test_hangup_before_connecting_sends_nothing() -> None:
    s, effects = run([c.Hangup(0.5)])
    assert s.end_reason == "user_hangup"
    assert effects == [c.Teardown("user_hangup")]


def test_ended_state_is_absorbing() -> None:
    s, _ = run([*ready(), c.Hangup(5.0)])
    later: list[c.Input] = [
        c.Connected(ME, 6.0),
        agent_state("speaking", 6.1),
        c.TranscriptStreamOpened("s", "g", AGENT, False, 6.2),
        ev(ClientToolCall(call_id="x", tool_name="t", expects_response=True), 6.3),
        c.SendText("hello?", 6.4),
        c.Interrupt(6.5),
        c.SignalActivity(6.6),
        c.TimerFired(c.TIMER_ENDED_GRACE, 99.0),
    ]
    s2, effects = run(later, s)
    assert effects == []
    assert s2.status == "ended"
    assert s2.transcript == s.transcript
    assert s2.tools == s.tools
    assert s2.debug.ignored_inputs == s.debug.ignored_inputs + len(later)


# --- agent state and mode -----------------------------------------------------------------


def test_attribute_before_join_identifies_the_agent() -> None:
    s, effects = run([c.Connected(ME, 0.0), agent_state("initializing", 0.5)])
    assert c.CancelTimer(c.TIMER_AGENT_JOIN) in effects
    assert s.agent_identity == AGENT
    assert s.agent_ready
    assert s.agent_state == "initializing"
    s, _ = run([c.ParticipantJoined(AGENT, 0.6)], s)
    assert s.agent_identity == AGENT
    assert s.agent_ready


def test_join_with_sticky_attribute() -> None:
    s, effects = run(
        [c.Connected(ME, 0.0), c.ParticipantJoined(AGENT, 0.1, True, {ATTR_AGENT_STATE: "idle"})]
    )
    assert s.agent_state == "idle"
    assert s.agent_ready
    assert c.CancelTimer(c.TIMER_AGENT_JOIN) in effects


def test_non_agent_participants_and_foreign_attributes_are_ignored() -> None:
    s, _ = run(
        [
            *ready(),
            c.ParticipantJoined("observer", 2.0, is_agent=False),
            c.AttributesChanged("observer", {ATTR_AGENT_STATE: "thinking"}, 2.1),
            c.AttributesChanged(ME, {ATTR_AGENT_STATE: "thinking"}, 2.2),
            c.AttributesChanged(AGENT, {"other": "x"}, 2.3),
            c.AttributesChanged(AGENT, {ATTR_AGENT_STATE: ""}, 2.4),
        ]
    )
    assert s.agent_identity == AGENT
    assert s.agent_state == "listening"
    assert s.mode == "listening"


def test_a_second_agent_is_ignored() -> None:
    s, _ = run([*ready(), c.ParticipantJoined("agent-2", 2.0), agent_state("thinking", 2.1)])
    assert s.agent_identity == AGENT
    s, _ = run([c.AttributesChanged("agent-2", {ATTR_AGENT_STATE: "speaking"}, 2.2)], s)
    assert s.agent_state == "thinking"
    s, _ = run([c.ParticipantLeft("agent-2", 2.3)], s)
    assert s.status == "connected"


def test_agent_joined_notice_once() -> None:
    s, _ = run([c.Connected(ME, 0.0), agent_state("idle", 0.1), c.ParticipantJoined(AGENT, 0.2)])
    assert [n.text for n in s.notices] == ["The agent joined."]


def test_notices_say_what_they_are_about() -> None:
    """Front ends pick notices by ``kind``, never by their English text."""
    s, _ = run(
        [
            *ready(),
            c.Reconnecting(2.0),
            c.Reconnected(3.0, (AGENT,)),
            c.AddNotice("audio fell back to text-only", 3.5, kind="audio"),
            c.AddNotice("something else", 3.6),
            ev(SessionEnded(reason="agent_hangup"), 4.0),
        ]
    )
    assert [n.kind for n in s.notices] == [
        "agent_joined",
        "reconnecting",
        "reconnected",
        "audio",
        "info",
        "session_ending",
    ]


def test_unknown_agent_state_is_kept() -> None:
    s, _ = run([*ready(), agent_state("pondering", 2.0)])
    assert s.agent_state == "pondering"
    assert s.mode == "listening"


def test_mode_follows_state_and_open_segments() -> None:
    s = live()
    s, _ = run([agent_state("thinking", 2.0)], s)
    assert s.mode == "thinking"
    # The agent reports speaking before any transcript is audible: still thinking.
    s, _ = run([agent_state("speaking", 2.5)], s)
    assert s.mode == "thinking"
    s, _ = run([c.TranscriptStreamOpened("s1", "seg1", AGENT, False, 3.0)], s)
    assert s.mode == "speaking"
    s, _ = run([c.TranscriptStreamChunk("s1", "seg1", "Hi", 3.1), agent_state("listening", 3.2)], s)
    assert s.mode == "speaking"  # the segment is still open: still audible
    s, _ = run([c.TranscriptStreamClosed("s1", "seg1", 4.0)], s)
    assert s.mode == "listening"


def test_thinking_without_a_reply_returns_to_listening() -> None:
    s, _ = run([*ready(), agent_state("thinking", 2.0), agent_state("listening", 3.0)])
    assert s.mode == "listening"


def test_closing_while_thinking_again() -> None:
    s, _ = run(
        [
            *ready(),
            c.TranscriptStreamOpened("s1", "seg1", AGENT, False, 3.0),
            agent_state("thinking", 3.5),
        ]
    )
    assert s.mode == "speaking"
    s, _ = run([c.TranscriptStreamClosed("s1", "seg1", 4.0)], s)
    assert s.mode == "thinking"


# --- transcript -----------------------------------------------------------------------------


def test_agent_chunks_append_and_close_finalises() -> None:
    s, _ = run([*ready(), *agent_says("s1", "seg1", ["Hello", ", ", "world."], 2.0)])
    (seg,) = s.transcript
    assert (seg.role, seg.identity, seg.text) == ("agent", AGENT, "Hello, world.")
    assert seg.final
    assert not seg.open
    assert not seg.interrupted
    assert seg.started_at == 2.0
    assert seg.updated_at == 2.2


def test_user_interim_updates_replace_the_text() -> None:
    s, _ = run(
        [
            *ready(),
            c.TranscriptStreamOpened("u1", "useg", ME, False, 2.0),
            c.TranscriptStreamChunk("u1", "useg", "what is", 2.0),
            c.TranscriptStreamClosed("u1", "useg", 2.1),
        ]
    )
    assert s.transcript[0].text == "what is"
    assert s.transcript[0].role == "user"
    assert not s.transcript[0].final
    s, _ = run(
        [
            c.TranscriptStreamOpened("u2", "useg", ME, False, 2.2),
            c.TranscriptStreamChunk("u2", "useg", "what is my", 2.2),
            c.TranscriptStreamClosed("u2", "useg", 2.3),
            c.TranscriptStreamOpened("u3", "useg", ME, True, 2.4),
            c.TranscriptStreamChunk("u3", "useg", "What is my balance?", 2.4),
            c.TranscriptStreamClosed("u3", "useg", 2.5),
        ],
        s,
    )
    (seg,) = s.transcript
    assert seg.text == "What is my balance?"
    assert seg.final
    assert not seg.open


def test_late_interim_after_final_does_not_overwrite() -> None:
    s, _ = run(
        [
            *ready(),
            c.TranscriptStreamOpened("u3", "useg", ME, True, 2.4),
            c.TranscriptStreamChunk("u3", "useg", "Final text.", 2.4),
            c.TranscriptStreamClosed("u3", "useg", 2.5),
            c.TranscriptStreamOpened("u2", "useg", ME, False, 2.6),
            c.TranscriptStreamChunk("u2", "useg", "final te", 2.6),
            c.TranscriptStreamClosed("u2", "useg", 2.7),
        ]
    )
    (seg,) = s.transcript
    assert (seg.text, seg.final) == ("Final text.", True)
    assert s._internal.streams == ()


def test_interim_still_open_when_the_final_lands_does_not_overwrite() -> None:
    s, _ = run(
        [
            *ready(),
            c.TranscriptStreamOpened("u1", "useg", ME, False, 2.0),
            c.TranscriptStreamOpened("u2", "useg", ME, True, 2.1),
            c.TranscriptStreamChunk("u2", "useg", "The final words.", 2.1),
            c.TranscriptStreamClosed("u2", "useg", 2.2),
            c.TranscriptStreamChunk("u1", "useg", "the fin", 2.3),
            c.TranscriptStreamClosed("u1", "useg", 2.4),
        ]
    )
    (seg,) = s.transcript
    assert (seg.text, seg.final, seg.open) == ("The final words.", True, False)


def test_segment_id_clash_across_roles_is_dropped_quietly() -> None:
    s, _ = run(
        [
            *ready(),
            *agent_says("a1", "same", ["agent text"], 2.0),
            c.TranscriptStreamOpened("u1", "same", ME, False, 3.0),
            c.TranscriptStreamChunk("u1", "same", "user text", 3.0),
            c.TranscriptStreamClosed("u1", "same", 3.1),
        ]
    )
    (seg,) = s.transcript
    assert (seg.role, seg.text) == ("agent", "agent text")
    assert s._internal.orphans == ()
    assert s._internal.streams == ()


def test_final_from_stream_trailer() -> None:
    s, _ = run(
        [
            *ready(),
            c.TranscriptStreamOpened("u1", "useg", ME, False, 2.0),
            c.TranscriptStreamChunk("u1", "useg", "done", 2.0),
            c.TranscriptStreamClosed("u1", "useg", 2.1, final=True),
        ]
    )
    assert s.transcript[0].final


def test_segments_keep_first_seen_order() -> None:
    s, _ = run(
        [
            *ready(),
            c.TranscriptStreamOpened("u1", "a", ME, False, 2.0),
            *agent_says("s1", "b", ["reply"], 2.1),
            c.TranscriptStreamOpened("u2", "a", ME, True, 2.5),
            c.TranscriptStreamChunk("u2", "a", "question", 2.5),
            c.TranscriptStreamClosed("u2", "a", 2.6),
        ]
    )
    assert [seg.segment_id for seg in s.transcript] == ["a", "b"]
    assert [seg.seq for seg in s.transcript] == sorted(seg.seq for seg in s.transcript)


def test_chunk_and_close_before_open_are_replayed() -> None:
    s, _ = run(
        [
            *ready(),
            c.TranscriptStreamChunk("s1", "seg1", "early ", 2.0),
            c.TranscriptStreamClosed("s1", "seg1", 2.05),
        ]
    )
    assert s.transcript == ()
    assert len(s._internal.orphans) == 2
    s, _ = run([c.TranscriptStreamOpened("s1", "seg1", AGENT, False, 2.1)], s)
    (seg,) = s.transcript
    assert seg.text == "early "
    assert seg.final
    assert not seg.open
    assert s._internal.orphans == ()
    assert s._internal.streams == ()
    assert s.mode == "listening"


def test_orphans_are_bounded() -> None:
    inputs = [c.TranscriptStreamChunk(f"s{i}", "g", "x", 2.0) for i in range(500)]
    s, _ = run([*ready(), *inputs])
    assert len(s._internal.orphans) == c.MAX_ORPHANS


def test_duplicate_open_and_unknown_close_are_harmless() -> None:
    s, _ = run(
        [
            *ready(),
            c.TranscriptStreamOpened("s1", "seg1", AGENT, False, 2.0),
            c.TranscriptStreamOpened("s1", "seg1", AGENT, False, 2.0),
            c.TranscriptStreamChunk("s1", "seg1", "once", 2.1),
            c.TranscriptStreamClosed("s1", "seg1", 2.2),
            c.TranscriptStreamClosed("s1", "seg1", 2.3),
            c.TranscriptStreamChunk("s1", "seg1", "late", 2.4),
        ]
    )
    (seg,) = s.transcript
    assert seg.final
    # The late chunk and close (after the stream is gone) wait as orphans, never shown.
    assert seg.text == "once"


def test_second_stream_for_the_same_agent_segment_appends() -> None:
    s, _ = run(
        [
            *ready(),
            *agent_says("s1", "seg1", ["Let me check. "], 2.0),
            *agent_says("s2", "seg1", ["Your balance is 5."], 3.0),
        ]
    )
    (seg,) = s.transcript
    assert seg.text == "Let me check. Your balance is 5."
    assert seg.final


def test_interrupt_marks_the_open_segment_and_drops_later_chunks() -> None:
    s, _ = run(
        [
            *ready(),
            c.TranscriptStreamOpened("s1", "seg1", AGENT, False, 2.0),
            c.TranscriptStreamChunk("s1", "seg1", "I was saying", 2.1),
        ]
    )
    assert s.mode == "speaking"
    s, effects = run([c.Interrupt(2.5)], s)
    assert effects == [c.SendClientEvent(UserInterrupt())]
    assert s.transcript[0].interrupted
    assert s.mode == "listening"
    s, _ = run(
        [
            c.TranscriptStreamChunk("s1", "seg1", " something long", 2.6),
            c.TranscriptStreamClosed("s1", "seg1", 2.7),
        ],
        s,
    )
    (seg,) = s.transcript
    assert seg.text == "I was saying"
    assert seg.interrupted
    assert seg.final
    assert s.debug.dropped_chunks == 1
    # The next segment is not affected.
    s, _ = run(agent_says("s2", "seg2", ["New answer."], 3.0), s)
    assert s.transcript[1].text == "New answer."
    assert not s.transcript[1].interrupted


def test_interrupt_with_nothing_open_still_sends() -> None:
    s, effects = run([*ready(), agent_state("thinking", 2.0), c.Interrupt(2.1)])
    assert sends(effects)[-1] == UserInterrupt()
    assert s.transcript == ()


def test_interrupt_before_connect_is_ignored() -> None:
    _, effects = run([c.Interrupt(0.1)])
    assert effects == []


def test_end_closes_open_segments() -> None:
    s, _ = run(
        [
            *ready(),
            c.TranscriptStreamOpened("s1", "seg1", AGENT, False, 2.0),
            c.TranscriptStreamChunk("s1", "seg1", "cut", 2.1),
            c.Disconnected(2.2, None),
        ]
    )
    assert s.transcript[0].final
    assert not s.transcript[0].open
    assert s.mode == "listening"
    assert s._internal.streams == ()


def test_role_before_local_identity_known() -> None:
    s, _ = run(
        [
            c.ParticipantJoined(AGENT, 0.0),
            c.TranscriptStreamOpened("u", "g1", ME, False, 0.1),
            c.TranscriptStreamOpened("a", "g2", AGENT, False, 0.2),
        ]
    )
    assert [seg.role for seg in s.transcript] == ["user", "agent"]
    s, _ = run([c.TranscriptStreamOpened("x", "g3", ME, False, 0.1)], c.initial_state())
    assert s.transcript[0].role == "agent"  # nothing known yet: only the agent transcribes
    s, _ = run(
        [c.TranscriptStreamOpened("x", "g3", ME, False, 0.1)], c.initial_state(local_identity=ME)
    )
    assert s.transcript[0].role == "user"


# --- typed messages -------------------------------------------------------------------------


def test_typed_messages_show_at_once_and_queue_until_the_agent_is_ready() -> None:
    s, effects = run(
        [
            c.SendText("  first  ", 0.1),
            c.Connected(ME, 0.5),
            c.SendText("second", 0.6, audio=True),
            c.SendText("   ", 0.7),
        ]
    )
    assert sends(effects) == []
    assert [(seg.segment_id, seg.text, seg.queued) for seg in s.transcript] == [
        ("typed-1", "first", True),
        ("typed-2", "second", True),
    ]
    assert all(seg.role == "user" and seg.typed and seg.final for seg in s.transcript)
    s, effects = run([c.ParticipantJoined(AGENT, 1.0)], s)
    assert sends(effects) == []  # joining is not enough: the first state is the gate
    s, effects = run([agent_state("initializing", 1.5)], s)
    assert sends(effects) == [
        UserMessage(text="first", audio=False),
        UserMessage(text="second"),
    ]
    assert not any(seg.queued for seg in s.transcript)
    assert s.queued == ()
    s, effects = run([c.SendText("third", 2.0)], s)
    assert sends(effects) == [UserMessage(text="third", audio=False)]
    assert s.transcript[-1].segment_id == "typed-3"
    assert not s.transcript[-1].queued


def test_spoken_toggle_sets_the_default_audio_flag() -> None:
    s, effects = run([*ready(), c.SetSpoken(True, 2.0), c.SendText("hi", 2.1)])
    assert sends(effects)[-1] == UserMessage(text="hi")
    assert s.transcript[-1].audio is True
    s, effects = run([c.SendText("quiet", 2.2, audio=False)], s)
    assert sends(effects) == [UserMessage(text="quiet", audio=False)]


def test_queued_messages_stay_marked_when_the_session_ends_first() -> None:
    s, _ = run([c.Connected(ME, 0.0), c.SendText("lost?", 1.0), c.TimerFired("agent_join", 15)])
    assert s.end_reason == "connection_failed"
    assert s.transcript[0].queued


# --- activity, mute -------------------------------------------------------------------------


def test_activity_is_throttled() -> None:
    _, effects = run(
        [
            *ready(),
            c.SignalActivity(2.0),
            c.SignalActivity(2.5),
            c.SignalActivity(3.0),
            c.SignalActivity(3.1),
        ]
    )
    assert sends(effects) == [UserActivity(), UserActivity()]


def test_activity_before_the_agent_is_ready_is_not_sent() -> None:
    _, effects = run([c.Connected(ME, 0.0), c.SignalActivity(1.0)])
    assert effects == [c.ScheduleTimer(c.TIMER_AGENT_JOIN, 15.0)]


def test_mute_toggles_microphone() -> None:
    s, effects = run([*ready(), c.SetMuted(True, 2.0), c.SetMuted(True, 2.1)])
    assert s.muted
    assert [e for e in effects if isinstance(e, c.SetMicrophoneMuted)] == [
        c.SetMicrophoneMuted(True)
    ]
    s, effects = run([c.SetMuted(False, 3.0)], s)
    assert effects == [c.SetMicrophoneMuted(False)]
    assert not s.muted


def test_mute_chosen_before_connecting_is_applied_on_connect() -> None:
    _, effects = run([c.SetMuted(True, 0.0), c.Connected(ME, 0.5)])
    assert effects.count(c.SetMicrophoneMuted(True)) == 2
    _, effects = run([c.Connected(ME, 0.5)], c.initial_state(muted=True))
    assert c.SetMicrophoneMuted(True) in effects


# --- tool cards -----------------------------------------------------------------------------


def started(call_id: str = "t1", node_id: str | None = None) -> ToolStarted:
    return ToolStarted(
        call_id=call_id, tool_name="lookup", tool_source="webhook", input='{"q":1}', node_id=node_id
    )


def completed(call_id: str = "t1") -> ToolCompleted:
    return ToolCompleted(
        call_id=call_id, tool_name="lookup", tool_source="webhook", output='{"a":2}'
    )


def test_tool_card_lifecycle_with_duration() -> None:
    s, effects = run([*ready(), ev(started(node_id="n1"), 2.0), ev(completed(), 3.5)])
    (card,) = s.tools
    assert not any(isinstance(e, c.RunClientTool) for e in effects)
    assert (card.tool_name, card.source, card.status) == ("lookup", "webhook", "completed")
    assert (card.input, card.output, card.node_id) == ('{"q":1}', '{"a":2}', "n1")
    assert card.duration == 1.5
    assert card.display_status == "completed"


def test_terminal_event_alone_renders_a_card() -> None:
    failed = ToolFailed(
        call_id="t9",
        tool_name="crm",
        tool_source="mcp",
        input='{"x":"' + "y" * 10 + '"}',
        input_truncated=True,
        error="503 from upstream",
        output="partial",
        output_truncated=True,
    )
    s, _ = run([*ready(), ev(failed, 4.0)])
    (card,) = s.tools
    assert (card.status, card.error, card.source) == ("failed", "503 from upstream", "mcp")
    assert card.input_truncated
    assert card.output_truncated
    assert card.started_at is None
    assert card.ended_at == 4.0
    assert card.duration is None


def test_start_after_terminal_and_duplicate_terminal_are_ignored() -> None:
    s, _ = run(
        [
            *ready(),
            ev(ToolCompleted(call_id="t1", tool_name="lookup", tool_source="webhook"), 3.0),
            ev(started(), 3.1),
            ev(ToolFailed(call_id="t1", tool_name="lookup", error="late"), 3.2),
            ev(completed(), 3.3),
        ]
    )
    (card,) = s.tools
    assert card.status == "completed"
    assert card.error is None
    assert card.output is None  # the first terminal event stands
    assert card.input == '{"q":1}'  # filled from the late start
    assert card.started_at is None
    assert s.debug.ignored_inputs >= 3


def test_duplicate_start_keeps_the_first_time() -> None:
    s, _ = run([*ready(), ev(started(), 2.0), ev(started(), 2.5), ev(completed(), 3.0)])
    assert s.tools[0].duration == 1.0


def test_tool_sources_are_an_open_set() -> None:
    s, _ = run([*ready(), ev(ToolStarted(call_id="a", tool_name="x", tool_source="quantum"), 2.0)])
    assert s.tools[0].source == "quantum"


def test_client_tool_call_runs_once_and_sends_the_result() -> None:
    call = ClientToolCall(
        call_id="call_abc",
        tool_name="open_dashboard",
        params={"tab": "billing"},
        expects_response=True,
    )
    s, effects = run([*ready(), ev(call, 2.0)])
    assert effects[-1] == c.RunClientTool(call)
    card = s.tool("call_abc")
    assert card is not None
    assert card.client is not None
    assert card.source == "client"
    assert card.client.status == "running"
    assert card.display_status == "running"
    assert card.client.params == {"tab": "billing"}
    # The agent's own lifecycle events for the same call merge into the card.
    s, effects = run([ev(call, 2.1), ev(started("call_abc"), 2.2)], s)
    assert not any(isinstance(e, c.RunClientTool) for e in effects)
    result = ClientToolResult(call_id="call_abc", result={"opened": True})
    s, effects = run(
        [c.ClientToolFinished("call_abc", "ok", 2.5, '{"opened":true}', None, result)], s
    )
    assert effects == [c.SendClientEvent(result)]
    card = s.tool("call_abc")
    assert card is not None
    assert card.client is not None
    assert card.client.status == "ok"
    assert card.client.duration == 0.5
    assert card.display_status == "ok"
    assert s.errors == ()
    # A duplicate outcome is ignored.
    s, effects = run([c.ClientToolFinished("call_abc", "ok", 2.6, None, None, result)], s)
    assert effects == []
    s, _ = run([ev(completed("call_abc"), 3.0)], s)
    assert s.tool("call_abc").display_status == "completed"  # type: ignore[union-attr]
    assert len(s.tools) == 1


@pytest.mark.parametrize(
    ("status", "code"),
    [("error", "tool_failed"), ("unknown", "tool_failed"), ("timeout", "tool_timeout")],
)
def test_client_tool_failures_raise_local_errors(status: c.ClientToolStatus, code: str) -> None:
    call = ClientToolCall(call_id="k", tool_name="t", expects_response=True)
    err = ClientToolResult(call_id="k", result="boom", is_error=True)
    s, effects = run(
        [*ready(), ev(call, 2.0), c.ClientToolFinished("k", status, 3.0, "boom", "boom", err)]
    )
    assert effects[-1] == c.SendClientEvent(err)
    assert [(e.code, e.call_id, e.detail) for e in s.errors] == [(code, "k", "boom")]
    assert s.errors[0].message == c.describe_error(code)


def test_declined_client_tool_is_not_an_error() -> None:
    call = ClientToolCall(call_id="k", tool_name="t", expects_response=False)
    s, effects = run([*ready(), ev(call, 2.0), c.ClientToolFinished("k", "declined", 3.0)])
    assert s.errors == ()
    assert effects[-1] == c.RunClientTool(call)
    assert s.tools[0].client.status == "declined"  # type: ignore[union-attr]


def test_fire_and_forget_result_is_never_sent() -> None:
    call = ClientToolCall(call_id="k", tool_name="t", expects_response=False)
    stray = ClientToolResult(call_id="k", result=1)
    _, effects = run(
        [*ready(), ev(call, 2.0), c.ClientToolFinished("k", "ok", 3.0, "1", None, stray)]
    )
    assert sends(effects) == []


def test_outcome_for_an_unknown_call_is_ignored() -> None:
    s, effects = run([c.ClientToolFinished("nope", "ok", 2.0)], live())
    assert effects == []
    assert s.tools == ()


def test_result_after_hangup_updates_the_card_but_sends_nothing() -> None:
    call = ClientToolCall(call_id="k", tool_name="t", expects_response=True)
    result = ClientToolResult(call_id="k", result=1)
    s, _ = run([*ready(), ev(call, 2.0), c.Hangup(2.5)])
    s, effects = run([c.ClientToolFinished("k", "error", 3.0, "x", "Cancelled", result)], s)
    assert effects == []
    assert s.tools[0].client.status == "error"  # type: ignore[union-attr]


def test_long_result_preview_is_cut() -> None:
    call = ClientToolCall(call_id="k", tool_name="t")
    s, _ = run([*ready(), ev(call, 2.0), c.ClientToolFinished("k", "ok", 3.0, "x" * 5000)])
    preview = s.tools[0].client.result_preview  # type: ignore[union-attr]
    assert preview is not None
    assert len(preview) == c.PREVIEW_CHARS


def test_tools_and_transcript_share_one_timeline() -> None:
    s, _ = run(
        [
            *ready(),
            *agent_says("s1", "a", ["x"], 2.0),
            ev(started(), 3.0),
            *agent_says("s2", "b", ["y"], 4.0),
        ]
    )
    names = [
        item.segment_id if isinstance(item, c.Segment) else item.call_id for item in s.timeline()
    ]
    assert names == ["a", "t1", "b"]


# --- errors, notices, debug -------------------------------------------------------------------


@pytest.mark.parametrize("code", ["provider_error", "internal_error", "new_code"])
def test_agent_errors_get_a_sentence(code: str) -> None:
    s, effects = run([ev(AgentError(code=code), 2.0)], live())
    assert effects == []
    (err,) = s.errors
    assert err.code == code
    assert err.message == c.describe_error(code)
    assert err.message.endswith(".")


def test_every_known_error_code_has_a_sentence() -> None:
    for code in [
        "provider_error",
        "internal_error",
        "tool_failed",
        "tool_timeout",
        "connection_failed",
        "session_expired",
        "session_request_failed",
        "agent_not_public",
        "origin_forbidden",
        "unsupported_transport",
        "mic_permission_denied",
        "device_change_failed",
    ]:
        assert c.describe_error(code) == c.ERROR_TEXT[code]


def test_errors_and_notices_are_bounded() -> None:
    inputs: list[c.Input] = [c.LocalError("internal_error", 2.0, str(i)) for i in range(300)]
    inputs += [c.AddNotice(f"n{i}", 2.0) for i in range(300)]
    s, _ = run([*ready(), *inputs])
    assert len(s.errors) == c.MAX_ERRORS
    assert s.errors[-1].detail == "299"
    assert len(s.notices) == c.MAX_NOTICES
    assert s.notices[-1].text == "n299"


def test_malformed_and_unknown_events_are_counted() -> None:
    s, effects = run(
        [
            c.MalformedAgentEvent("malformed JSON: Expecting value", "{not json" * 100, 2.0),
            ev(UnknownAgentEvent(type="agent.mood", raw={"type": "agent.mood"}), 2.1),
            ev(UnknownAgentEvent(type="agent.mood", raw={"type": "agent.mood"}), 2.2),
        ],
        live(),
    )
    assert effects == []
    assert s.debug.malformed_events == 1
    assert s.debug.unknown_events == 2
    assert s.debug.recent_unknown_types == ("agent.mood", "agent.mood")
    assert s.debug.recent_malformed[0].startswith("malformed JSON")
    assert len(s.debug.recent_malformed[0]) < 300
    assert s.status == "connected"


def test_time_never_goes_backwards() -> None:
    s, _ = run([*ready(5.0), c.AddNotice("old", 1.0)])
    assert s.clock.now == 5.2


def test_not_an_input_is_ignored() -> None:
    s, effects = c.reduce(c.initial_state(), "bogus")  # type: ignore[arg-type]
    assert effects == []
    assert s.debug.ignored_inputs == 1


def test_state_is_immutable() -> None:
    s = live()
    with pytest.raises(AttributeError):
        s.status = "ended"  # type: ignore[misc]


# --- a whole conversation ---------------------------------------------------------------------


def test_a_whole_conversation() -> None:
    """A realistic session from connect to the agent's goodbye, checked end to end."""
    lookup = ClientToolCall(
        call_id="call_1", tool_name="get_balance", params={"account": "main"}, expects_response=True
    )
    result = ClientToolResult(call_id="call_1", result={"balance": 42})
    script: list[c.Input] = [
        c.SendText("hello?", 0.2),  # typed before anything is up: shown and queued
        c.Connected(ME, 0.5),
        c.ParticipantJoined(AGENT, 0.9, True, {ATTR_AGENT_STATE: "initializing"}),
        agent_state("speaking", 1.2),
        *agent_says("g1", "greet", ["Hi! ", "How can I help?"], 1.3),
        agent_state("listening", 1.6),
        c.TranscriptStreamOpened("u1", "q1", ME, False, 2.0),
        c.TranscriptStreamChunk("u1", "q1", "what's my", 2.0),
        c.TranscriptStreamClosed("u1", "q1", 2.0),
        c.TranscriptStreamOpened("u2", "q1", ME, True, 2.5),
        c.TranscriptStreamChunk("u2", "q1", "What's my balance?", 2.5),
        c.TranscriptStreamClosed("u2", "q1", 2.5),
        agent_state("thinking", 2.6),
        ev(lookup, 2.7),
        ev(ToolStarted(call_id="call_1", tool_name="get_balance", tool_source="client"), 2.7),
        c.ClientToolFinished("call_1", "ok", 2.9, '{"balance":42}', None, result),
        ev(
            ToolCompleted(
                call_id="call_1",
                tool_name="get_balance",
                tool_source="client",
                output='{"balance":42}',
            ),
            3.0,
        ),
        agent_state("speaking", 3.1),
        c.TranscriptStreamOpened("g2", "answer", AGENT, False, 3.2),
        c.TranscriptStreamChunk("g2", "answer", "You have 42 ", 3.3),
        c.Interrupt(3.4),
        c.TranscriptStreamChunk("g2", "answer", "dollars and also", 3.5),
        c.TranscriptStreamClosed("g2", "answer", 3.6),
        agent_state("listening", 3.7),
        ev(SessionEnded(reason="agent_hangup"), 4.0),
        c.Disconnected(4.5, "ROOM_DELETED"),
    ]
    s, effects = run(script)

    assert (s.status, s.end_reason) == ("ended", "agent_hangup")
    assert sends(effects) == [
        UserMessage(text="hello?", audio=False),
        result,
        UserInterrupt(),
    ]
    assert [type(e).__name__ for e in effects if not isinstance(e, c.SendClientEvent)] == [
        "ScheduleTimer",  # agent join
        "CancelTimer",  # the agent published its first state
        "RunClientTool",
        "ScheduleTimer",  # session.ended grace
        "CancelTimer",
        "Teardown",
    ]
    lines = [
        (item.role, item.text, item.final, item.interrupted)
        if isinstance(item, c.Segment)
        else (item.tool_name, item.display_status, item.duration)
        for item in s.timeline()
    ]
    assert lines == [
        ("user", "hello?", True, False),
        ("agent", "Hi! How can I help?", True, False),
        ("user", "What's my balance?", True, False),
        ("get_balance", "completed", pytest.approx(0.3)),
        ("agent", "You have 42 ", True, True),
    ]
    assert s.mode == "listening"
    assert s.errors == ()
    assert s.clock.elapsed() == 4.0


# --- bounded live state: an input's cost does not grow with the conversation -------------


def _typed_turns(n: int, state: c.State | None = None) -> c.State:
    s = state if state is not None else live()
    for i in range(n):
        s, _ = c.reduce(s, c.SendText(f"line {i}", 2.0 + i * 0.001))
    return s


def test_the_transcript_keeps_a_bounded_live_tail_and_counts_the_rest() -> None:
    n = c.MAX_LIVE_SEGMENTS + 3 * c.LOG_CHUNK + 5
    s = _typed_turns(n)
    assert c.MAX_LIVE_SEGMENTS <= len(s.transcript) <= c.MAX_LIVE_SEGMENTS + c.LOG_CHUNK
    assert s.earlier_segments + len(s.transcript) == n
    assert s.transcript[-1].text == f"line {n - 1}"
    assert s.transcript[0].text == f"line {s.earlier_segments}"
    # Lookups by id still work for live segments, and dropped ones are gone.
    assert s.segment(f"typed-{n}") is s.transcript[-1]
    assert s.segment("typed-1") is None


def test_tool_cards_keep_a_bounded_live_tail() -> None:
    s = live()
    n = c.MAX_LIVE_TOOLS + 2 * c.LOG_CHUNK
    for i in range(n):
        s, _ = c.reduce(s, ev(ToolStarted(call_id=f"k{i}", tool_name="t", tool_source="x"), 2.0))
    assert c.MAX_LIVE_TOOLS <= len(s.tools) <= c.MAX_LIVE_TOOLS + c.LOG_CHUNK
    assert s.earlier_tools + len(s.tools) == n
    s, _ = c.reduce(s, ev(ToolCompleted(call_id=f"k{n - 1}", tool_name="t", tool_source="x"), 3))
    assert s.tools[-1].status == "completed"


def test_an_input_copies_one_block_not_the_history() -> None:
    """Structural sharing: after a reply chunk only the block holding that segment is new."""
    s = _typed_turns(1000)
    s, _ = run(agent_says("st", "reply", ["Hello"], 5.0)[:2], s)
    before = s.segment_log.blocks
    s, _ = c.reduce(s, c.TranscriptStreamChunk("st", "reply", " there", 5.2))
    after = s.segment_log.blocks
    assert len(before) == len(after) > 10
    assert sum(a is not b for a, b in zip(before, after, strict=True)) == 1
    assert s.transcript[-1].text == "Hello there"
    assert s.speaking_segment is s.transcript[-1]


def test_an_old_snapshot_stays_intact_when_reduced_again() -> None:
    """Keeping and reducing an older state (a branch) never disturbs the newer one."""
    base = _typed_turns(100)
    a = _typed_turns(3, base)
    b, _ = c.reduce(base, c.SendText("other", 9.0))
    assert [seg.text for seg in a.transcript[-3:]] == ["line 0", "line 1", "line 2"]
    assert b.transcript[-1].text == "other"
    assert a.segment("typed-101") is not None
    assert a.segment("typed-101") != b.segment("typed-101")
    assert base.segment("typed-101") is None
    assert len(base.transcript) == 100


def test_the_reducers_copy_is_a_shallow_copy_of_every_slot() -> None:
    """The reducer's copy-on-write (a copier written out per class) copies every slot of
    each state class it copies, and the copy is a new object the original does not see."""
    import dataclasses
    import importlib

    red = importlib.import_module("fishtalk.core.conversation.step")

    state = c.initial_state()
    for obj in (state, state._internal, state.clock, state.latency, state._internal.debug):
        copy = red._copy(obj)
        assert copy is not obj
        assert type(copy) is type(obj)
        names = type(obj).__slots__
        assert names, type(obj)
        assert all(getattr(copy, n) is getattr(obj, n) for n in names)
        assert copy == obj
        first = dataclasses.fields(obj)[0].name  # type: ignore[arg-type]
        object.__setattr__(copy, first, object())
        assert getattr(obj, first) is not getattr(copy, first)
