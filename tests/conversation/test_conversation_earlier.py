"""What drops off the front of the bounded live logs is still counted: turns said (by whom)
and failed tool calls, so a summary of a long call is right."""

from __future__ import annotations

from fishtalk.core import conversation as c
from fishtalk.core.protocol import ATTR_AGENT_STATE, ToolCompleted, ToolFailed, ToolStarted

ME = "user-1234abcd"
AGENT = "agent"


def live() -> c.State:
    state = c.initial_state()
    for inp in (
        c.Connected(ME, 1.0),
        c.ParticipantJoined(AGENT, 1.1, attributes={ATTR_AGENT_STATE: "listening"}),
    ):
        state, _ = c.reduce(state, inp)
    return state


def said(segments: tuple[c.Segment, ...], role: str) -> int:
    return sum(1 for s in segments if s.role == role and s.text.strip())


def test_turns_said_in_dropped_segments_are_counted_by_role() -> None:
    state = live()
    turns = c.MAX_LIVE_SEGMENTS + 3 * c.LOG_CHUNK + 7
    user = agent = silent = 0
    for i in range(turns):
        at = 2.0 + i
        if i % 3 == 0:
            state, _ = c.reduce(state, c.SendText(f"line {i}", at))
            user += 1
            continue
        stream, seg = f"s{i}", f"a{i}"
        state, _ = c.reduce(state, c.TranscriptStreamOpened(stream, seg, AGENT, False, at))
        if i % 3 == 1:
            state, _ = c.reduce(state, c.TranscriptStreamChunk(stream, seg, f"reply {i}", at))
            agent += 1
        else:
            silent += 1  # a segment that never said anything is not a turn
        state, _ = c.reduce(state, c.TranscriptStreamClosed(stream, seg, at + 0.5))
    assert state.earlier_segments >= 3 * c.LOG_CHUNK
    assert 0 < state.earlier_user_turns + state.earlier_agent_turns < state.earlier_segments
    assert state.earlier_user_turns + said(state.transcript, "user") == user
    assert state.earlier_agent_turns + said(state.transcript, "agent") == agent
    empty_live = sum(1 for s in state.transcript if not s.text.strip())
    assert (
        state.earlier_segments - state.earlier_user_turns - state.earlier_agent_turns
        == silent - empty_live
    )


def test_failed_tool_cards_that_dropped_are_counted() -> None:
    state = live()
    cards = c.MAX_LIVE_TOOLS + 2 * c.LOG_CHUNK + 3
    failed = 0
    for i in range(cards):
        call = f"k{i}"
        at = 2.0 + i
        state, _ = c.reduce(
            state,
            c.AgentEventReceived(ToolStarted(call_id=call, tool_name="t", tool_source="x"), at),
        )
        if i % 5 == 0:
            end: ToolFailed | ToolCompleted = ToolFailed(
                call_id=call, tool_name="t", tool_source="x", error="no"
            )
            failed += 1
        elif i % 5 == 1:
            continue  # still running when it dropped: not a failure
        else:
            end = ToolCompleted(call_id=call, tool_name="t", tool_source="x")
        state, _ = c.reduce(state, c.AgentEventReceived(end, at + 0.5))
    assert state.earlier_tools >= 2 * c.LOG_CHUNK
    live_failed = sum(1 for card in state.tools if card.display_status == "failed")
    assert state.earlier_failed_tools > 0
    assert state.earlier_failed_tools + live_failed == failed


def test_nothing_dropped_counts_nothing() -> None:
    state = live()
    state, _ = c.reduce(state, c.SendText("hi", 2.0))
    assert (state.earlier_user_turns, state.earlier_agent_turns, state.earlier_failed_tools) == (
        0,
        0,
        0,
    )
