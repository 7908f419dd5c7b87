"""Property tests: any input sequence is accepted and the reducer's invariants hold."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    UserHangup,
    UserMessage,
)

ME = "user-1"
IDS = st.sampled_from([ME, "agent", "other"])
STREAMS = st.sampled_from(["s0", "s1", "s2", "s3"])
SEGMENTS = st.sampled_from(["g0", "g1", "g2"])
CALLS = st.sampled_from(["c0", "c1"])
TEXT = st.text(max_size=12)
AGENT_STATES = st.sampled_from(["initializing", "idle", "listening", "thinking", "speaking", ""])
TIMERS = st.sampled_from([*c.TIMER_NAMES, "bogus"])
REASONS = st.sampled_from(["user_hangup", "agent_hangup", "escalated", "weird"])
TOOL_STATUSES = st.sampled_from(["ok", "error", "timeout", "declined", "unknown"])


def _agent_event() -> st.SearchStrategy[c.Input]:
    # Built through lambdas: st.builds would also fill the models' camelCase aliases.
    events = st.one_of(
        st.builds(
            lambda cid, er: ClientToolCall(call_id=cid, tool_name="t", expects_response=er),
            CALLS,
            st.booleans(),
        ),
        st.builds(
            lambda cid, src: ToolStarted(call_id=cid, tool_name="t", tool_source=src), CALLS, IDS
        ),
        st.builds(
            lambda cid, out: ToolCompleted(call_id=cid, tool_name="t", output=out), CALLS, TEXT
        ),
        st.builds(lambda cid, err: ToolFailed(call_id=cid, tool_name="t", error=err), CALLS, TEXT),
        st.builds(
            lambda code: AgentError(code=code),
            st.sampled_from(["provider_error", "internal_error", "x"]),
        ),
        st.builds(lambda reason: SessionEnded(reason=reason), REASONS),
        st.just(UnknownAgentEvent(type="new.thing", raw={})),
    )
    return events.map(lambda e: c.AgentEventReceived(e, 0.0))


def _inputs() -> st.SearchStrategy[c.Input]:
    at = 0.0  # replaced per step
    result = st.builds(
        lambda cid, err: ClientToolResult(call_id=cid, result={}, is_error=err),
        CALLS,
        st.none() | st.just(True),
    )
    return st.one_of(
        st.just(c.Connected(ME, at)),
        st.just(c.Reconnecting(at)),
        st.builds(c.Reconnected, at=st.just(at), remote_identities=st.lists(IDS).map(tuple)),
        st.builds(c.ParticipantJoined, identity=IDS, at=st.just(at), is_agent=st.booleans()),
        st.builds(c.ParticipantLeft, identity=IDS, at=st.just(at)),
        st.builds(
            c.AttributesChanged,
            identity=IDS,
            changed=AGENT_STATES.map(lambda v: {ATTR_AGENT_STATE: v}),
            at=st.just(at),
        ),
        st.builds(c.TranscriptStreamOpened, STREAMS, SEGMENTS, IDS, st.booleans(), st.just(at)),
        st.builds(c.TranscriptStreamChunk, STREAMS, SEGMENTS, TEXT, st.just(at)),
        st.builds(
            c.TranscriptStreamClosed, STREAMS, SEGMENTS, st.just(at), st.none() | st.booleans()
        ),
        _agent_event(),
        st.builds(c.MalformedAgentEvent, TEXT, TEXT, st.just(at)),
        st.builds(
            c.ClientToolFinished,
            call_id=CALLS,
            status=TOOL_STATUSES,
            at=st.just(at),
            result_preview=st.none() | TEXT,
            result_event=st.none() | result,
        ),
        st.builds(c.TimerFired, TIMERS, st.just(at)),
        st.builds(c.SendText, TEXT, st.just(at), st.none() | st.booleans()),
        st.just(c.SignalActivity(at)),
        st.just(c.Interrupt(at)),
        st.builds(c.SetMuted, st.booleans(), st.just(at)),
        st.builds(c.SetSpoken, st.booleans(), st.just(at)),
        st.builds(c.LocalError, st.sampled_from(["tool_failed", "x"]), st.just(at)),
        st.builds(c.AddNotice, TEXT, st.just(at)),
        st.builds(
            c.LatencyMark,
            kind=st.sampled_from(c.MARK_KINDS),
            at=st.just(at),
            value=st.none() | st.floats(min_value=-1.0, max_value=1.0),
        ),
    )


# Inputs that end the session are drawn rarely, so most scripts get somewhere first.
ENDERS: st.SearchStrategy[c.Input] = st.one_of(
    st.builds(c.ConnectFailed, at=st.just(0.0)),
    st.builds(c.Disconnected, at=st.just(0.0), reason=st.none() | st.just("ROOM_DELETED")),
    st.just(c.Hangup(0.0)),
)
OTHERS = _inputs()
INPUTS = st.sampled_from(range(25)).flatmap(lambda i: ENDERS if i == 0 else OTHERS)
PREFIX: list[c.Input] = [
    c.Connected(ME, 0.0),
    c.AttributesChanged("agent", {ATTR_AGENT_STATE: "listening"}, 0.0),
]
# Mostly forward in time, sometimes a little backwards (callbacks can reorder).
STEPS = st.sampled_from([0.0, 0.1, 1.0, 5.0, 16.0, -0.5])


@st.composite
def scripts(draw: st.DrawFn) -> list[c.Input]:
    steps = draw(st.lists(st.tuples(STEPS, INPUTS), min_size=15, max_size=60))
    at = 0.0
    out: list[c.Input] = list(PREFIX) if draw(st.booleans()) else []
    for dt, inp in steps:
        at += dt
        out.append(dataclasses.replace(inp, at=at))
    return out


def _check(state: c.State) -> None:
    ids = [seg.segment_id for seg in state.transcript]
    assert len(ids) == len(set(ids))
    calls = [card.call_id for card in state.tools]
    assert len(calls) == len(set(calls))
    seqs = [seg.seq for seg in state.transcript]
    assert seqs == sorted(seqs)
    assert [t.seq for t in state.tools] == sorted(t.seq for t in state.tools)
    all_seqs = seqs + [t.seq for t in state.tools]
    assert len(all_seqs) == len(set(all_seqs))
    assert all(s < state._internal.next_seq for s in all_seqs)
    assert (state.mode == "speaking") == (state.speaking_segment is not None)
    assert (state.status == "ended") == (state.end_reason is not None)
    if state.ended:
        assert state._internal.streams == ()
        assert not any(seg.open for seg in state.transcript if seg.role == "agent")
    elif state.queued:
        assert not (state.agent_ready and state.status == "connected")
    queued_ids = {q.segment_id for q in state.queued}
    if not state.ended:
        assert queued_ids == {seg.segment_id for seg in state.transcript if seg.queued}
    assert len(state.errors) <= c.MAX_ERRORS
    assert len(state._internal.orphans) <= c.MAX_ORPHANS
    for card in state.tools:
        if card.duration is not None:
            assert card.duration >= 0
    latency = state.latency
    if state.ended:
        assert latency.open is None
        assert latency.open_interrupt is None
    for w in latency.turns:
        assert (w.heard is None) == (w.incomplete is not None)
        assert w.heard is None or w.heard >= 0
    # Turns are numbered by the user turn they answer (the one rule, issue 24): the
    # answered ones increase (two user turns before the reply make one, numbered by the
    # last), an unprompted one carries the number of the user turn before it.
    ended_turns = state._internal.user_turn
    answered = [w.turn for w in latency.turns if w.kind != "unprompted"]
    assert answered == sorted(set(answered))
    assert all(1 <= n <= ended_turns for n in answered)
    assert not answered or latency.user_turns == answered[-1]
    numbers = [w.turn for w in latency.turns]
    assert numbers == sorted(numbers)
    assert all(0 <= n <= ended_turns for n in numbers)
    if latency.open is not None:
        assert latency.open.incomplete is None
        assert latency.user_turns <= latency.open.turn <= ended_turns
        if latency.open.kind != "unprompted":
            assert latency.open.turn > latency.user_turns
    # Every agent line answers a user turn that ended, or none; later lines never answer
    # an earlier turn; every user turn is one user line at most.
    agent = [seg.answers_turn or 0 for seg in state.transcript if seg.role == "agent"]
    assert agent == sorted(agent)
    assert all(n <= ended_turns for n in agent)
    mine = [seg.turn for seg in state.transcript if seg.role == "user" and seg.turn is not None]
    assert len(mine) == len(set(mine))
    assert all(1 <= n <= ended_turns for n in mine)
    assert not any(seg.turn is not None for seg in state.transcript if seg.role == "agent")
    assert not any(seg.answers_turn is not None for seg in state.transcript if seg.role == "user")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts())
def test_any_script_keeps_the_invariants(script: list[c.Input]) -> None:
    state = c.initial_state(max_duration_seconds=30)
    teardowns = 0
    runs: list[str] = []
    typed_sent: list[str] = []
    now = 0.0
    for inp in script:
        was_ended = state.ended
        before = state
        state, effects = c.reduce(state, inp)
        # Pure and deterministic: the same input on the same state gives the same result.
        assert c.reduce(before, inp) == (state, effects)
        assert state.clock.now >= now
        now = state.clock.now
        teardowns += sum(isinstance(e, c.Teardown) for e in effects)
        if was_ended:
            assert effects == []
            assert state.end_reason == before.end_reason
        if state.ended and not was_ended:
            assert isinstance(effects[-1], c.Teardown)
            assert effects[-1].reason == state.end_reason
        for e in effects:
            if isinstance(e, c.RunClientTool):
                runs.append(e.call.call_id)
            if isinstance(e, c.SendClientEvent) and isinstance(e.event, UserMessage):
                typed_sent.append(e.event.text)
            if isinstance(e, c.SendClientEvent) and isinstance(e.event, UserHangup):
                assert isinstance(inp, c.Hangup)
        _check(state)
    assert teardowns == (1 if state.ended else 0)
    assert len(runs) == len(set(runs))  # a call id never runs twice
    typed = [seg.text for seg in state.transcript if seg.typed and not seg.queued]
    assert typed_sent == typed  # sent exactly once each, in the order typed


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts())
def test_replaying_the_changes_rebuilds_the_conversation(script: list[c.Input]) -> None:
    """Applying only the events of ``changes()`` to an empty picture gives the final
    transcript text, tool card statuses, errors and end, and ``ended`` comes once, last."""
    state = c.initial_state(max_duration_seconds=30)
    texts: dict[str, str] = {}
    cards: dict[str, str] = {}
    errors = 0
    ended: list[str] = []
    for inp in script:
        new, _ = c.reduce(state, inp)
        events = c.changes(state, new)
        if ended:  # after the end only local bookkeeping changes
            assert all(
                isinstance(e, c.MutedChanged | c.SpokenChanged | c.ToolCardChanged | c.ErrorAdded)
                for e in events
            )
        for event in events:
            if isinstance(event, c.SegmentOpened):
                assert event.segment.segment_id not in texts
                texts[event.segment.segment_id] = event.segment.text
            elif isinstance(event, c.SegmentGrew):
                texts[event.segment.segment_id] += event.delta
            elif isinstance(event, c.InterimReplaced):
                assert texts[event.segment.segment_id] == event.previous_text
                texts[event.segment.segment_id] = event.segment.text
            elif isinstance(event, c.ToolCardAdded | c.ToolCardChanged):
                cards[event.card.call_id] = event.card.display_status
            elif isinstance(event, c.ErrorAdded):
                errors += 1
            elif isinstance(event, c.Ended):
                ended.append(event.reason)
        state = new
    assert texts == {seg.segment_id: seg.text for seg in state.transcript}
    assert cards == {card.call_id: card.display_status for card in state.tools}
    assert errors >= len(state.errors)
    assert ended == ([state.end_reason] if state.ended else [])
