"""``conversation.changes``: what changed between two states, as typed JSON-able events."""

from __future__ import annotations

import json
from collections.abc import Iterable

from reducer_feed import AGENT, ME, agent_state, feed

from fishtalk.core import conversation as c
from fishtalk.core.protocol import (
    AgentError,
    SessionEnded,
    ToolCompleted,
    ToolStarted,
)


def kinds(events: Iterable[c.Change]) -> list[str]:
    return [e.kind for e in events]


def test_a_conversation_as_events() -> None:
    s, events = feed(
        [
            c.SendText("hi there", 0.5),  # typed before the agent is ready: queued
            c.Connected(ME, 1.0),
            c.ParticipantJoined(AGENT, 1.1),
            agent_state("listening", 1.2),
            c.TranscriptStreamOpened("u1", "useg", ME, False, 2.0),
            c.TranscriptStreamChunk("u1", "useg", "what is", 2.1),
            c.TranscriptStreamClosed("u1", "useg", 2.2),
            c.TranscriptStreamOpened("u2", "useg", ME, True, 2.3),
            c.TranscriptStreamChunk("u2", "useg", "What's up?", 2.4),
            c.TranscriptStreamClosed("u2", "useg", 2.5, final=True),
            agent_state("thinking", 2.6),
            c.AgentEventReceived(ToolStarted(call_id="k", tool_name="t", tool_source="x"), 2.7),
            c.AgentEventReceived(ToolCompleted(call_id="k", tool_name="t", tool_source="x"), 2.8),
            agent_state("speaking", 2.9),
            c.TranscriptStreamOpened("a1", "aseg", AGENT, False, 3.0),
            c.TranscriptStreamChunk("a1", "aseg", "All ", 3.1),
            c.TranscriptStreamChunk("a1", "aseg", "good.", 3.2),
            c.TranscriptStreamClosed("a1", "aseg", 3.3),
            c.AgentEventReceived(AgentError(code="provider_error", message="x"), 3.4),
            c.AgentEventReceived(SessionEnded(reason="agent_hangup"), 3.5),
            c.Disconnected(3.6),
        ]
    )
    assert kinds(events) == [
        "segment_opened",  # the typed message, queued
        "status_change",  # connected
        "notice",  # the agent joined
        "agent_state_change",
        "message_sent",  # the queue flushed once the agent was ready
        "segment_opened",
        "segment_grew",
        "interim_replaced",
        "segment_finalised",
        "agent_state_change",
        "mode_change",  # thinking
        "tool_card_added",
        "tool_card_changed",
        "agent_state_change",
        "segment_opened",
        "mode_change",  # speaking
        "segment_grew",
        "segment_grew",
        "segment_finalised",
        "mode_change",  # listening
        "turn_latency",  # the reply is over (no audio: no heard figure)
        "error",
        "notice",  # the agent announced the end
        "status_change",
        "ended",
    ]
    by_kind = {e.kind: e for e in events}
    assert isinstance(by_kind["tool_card_changed"], c.ToolCardChanged)
    assert by_kind["tool_card_changed"].previous_status == "running"
    assert by_kind["tool_card_changed"].card.status == "completed"
    notices = [e for e in events if isinstance(e, c.NoticeAdded)]
    assert [n.notice.kind for n in notices] == ["agent_joined", "session_ending"]
    grew = [e for e in events if isinstance(e, c.SegmentGrew) and e.segment.role == "agent"]
    assert [g.delta for g in grew] == ["All ", "good."]
    ended = events[-1]
    assert isinstance(ended, c.Ended)
    assert ended.reason == "agent_hangup" == s.end_reason
    latency = by_kind["turn_latency"]
    assert isinstance(latency, c.TurnLatency)
    w = latency.waterfall
    # The reply answers the user's last turn, the spoken one (issue 24): the turn that the
    # typed message began went on until that final transcript, the best end known of it.
    assert (w.turn, w.kind, w.user_ended_at, w.thinking_at, w.first_text_at) == (
        2,
        "spoken",
        2.4,
        2.6,
        3.1,
    )
    assert (w.segment_id, w.incomplete) == ("aseg", "no audio")
    opened = [e for e in events if isinstance(e, c.SegmentOpened)]
    assert [(e.segment.turn, e.answers_turn) for e in opened] == [
        (None, None),
        (None, None),
        (None, 2),
    ]
    assert s.segment("typed-1").turn == 1
    assert s.segment("useg").turn == 2


def test_interrupt_and_typed_turn_events() -> None:
    ready = [c.Connected(ME, 1.0), agent_state("listening", 1.1)]
    s, _ = feed(ready)
    _s2, events = feed(
        [
            c.TranscriptStreamOpened("a1", "aseg", AGENT, False, 2.0),
            c.TranscriptStreamChunk("a1", "aseg", "Long answer", 2.1),
            c.Interrupt(2.2),
            c.SendText("stop", 2.3),
            c.SetMuted(True, 2.4),
            c.SetSpoken(True, 2.5),
        ],
        s,
    )
    assert kinds(events) == [
        "segment_opened",
        "mode_change",
        "segment_grew",
        "segment_interrupted",
        "mode_change",
        "turn_latency",  # the greeting (no user turn), closed by the interrupt
        "segment_opened",
        "message_sent",
        "interrupt_latency",  # the next user turn closes the interrupt's measurement
        "muted_change",
        "spoken_change",
    ]


def test_every_event_is_json() -> None:
    _s, events = feed(
        [
            c.Connected(ME, 1.0),
            agent_state("listening", 1.1),
            c.AgentEventReceived(
                ToolStarted(call_id="k", tool_name="t", tool_source="x", input='{"a": 1}'), 2.0
            ),
            c.LocalError("tool_failed", 2.1, "boom"),
            c.SendText("hello", 2.2),
            c.Hangup(3.0),
        ]
    )
    for event in events:
        data = event.to_dict()
        assert data["kind"] == event.kind
        assert json.loads(json.dumps(data)) == data
    card = next(e for e in events if isinstance(e, c.ToolCardAdded)).to_dict()
    assert card["card"]["call_id"] == "k"
    assert card["card"]["input"] == '{"a": 1}'


def test_kinds_are_unique_snake_case() -> None:
    names = [t.kind for t in c.CHANGE_TYPES]
    assert len(names) == len(set(names))
    assert all(n == n.lower() and " " not in n for n in names)


def test_no_change_no_events_and_no_full_copy() -> None:
    """Comparing two states never materialises the whole transcript (cost follows change)."""
    s, _ = feed([c.Connected(ME, 1.0), agent_state("listening", 1.1)])
    for i in range(3000):
        s, _ = c.reduce(s, c.SendText(f"line {i}", 2.0))
    assert c.changes(s, s) == []
    new, _ = c.reduce(s, c.SendText("one more", 3.0))
    events = c.changes(s, new)
    assert kinds(events) == ["segment_opened", "message_sent"]
    assert new.segment_log._items is None  # no tuple of the whole transcript was built
    assert s.segment_log._items is None
