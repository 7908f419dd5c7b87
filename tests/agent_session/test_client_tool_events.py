"""The client tool call and its local result, as the events report them (pure: the real
reducer and ``changes()``, no network)."""

from __future__ import annotations

from collections.abc import Iterable

from fishtalk import events
from fishtalk.core import conversation as c
from fishtalk.core.protocol import ATTR_AGENT_STATE, ClientToolCall, ToolCompleted, ToolStarted


def _replay(inputs: Iterable[c.Input]) -> list[c.Change]:
    state = c.initial_state()
    out: list[c.Change] = []
    for inp in inputs:
        new, _ = c.reduce(state, inp)
        out += c.changes(state, new)
        state = new
    return out


def _ready() -> list[c.Input]:
    listening = c.AttributesChanged("agent", {ATTR_AGENT_STATE: "listening"}, 1.1)
    return [c.Connected("me", 1.0), listening]


def _tool_events(evs: list[c.Change]) -> list[events.ToolCardAdded | events.ToolCardChanged]:
    return [e for e in evs if isinstance(e, events.ToolCardAdded | events.ToolCardChanged)]


def test_call_then_result_each_reported_once() -> None:
    call = ClientToolCall(call_id="k1", tool_name="get_time", params={"zone": "UTC"})
    evs = _tool_events(
        _replay(
            [
                *_ready(),
                c.AgentEventReceived(
                    ToolStarted(call_id="k1", tool_name="get_time", tool_source="client"), 2.0
                ),
                c.AgentEventReceived(call, 2.1),
                c.ClientToolFinished("k1", "ok", 2.2, result_preview='{"time":"12:00"}'),
                c.AgentEventReceived(
                    ToolCompleted(call_id="k1", tool_name="get_time", tool_source="client"), 2.3
                ),
            ]
        )
    )
    calls = [e.client_call for e in evs if e.client_call is not None]
    results = [e.client_result for e in evs if e.client_result is not None]
    assert [(x.tool_name, dict(x.params)) for x in calls] == [("get_time", {"zone": "UTC"})]
    assert [(x.status, x.result_preview) for x in results] == [("ok", '{"time":"12:00"}')]
    assert evs[-1].card.status == "completed"


def test_a_call_without_tool_events_and_a_failure() -> None:
    call = ClientToolCall(call_id="k2", tool_name="nope", expects_response=True)
    evs = _tool_events(
        _replay(
            [
                *_ready(),
                c.AgentEventReceived(call, 2.0),
                c.ClientToolFinished("k2", "unknown", 2.1, error="not registered"),
            ]
        )
    )
    assert isinstance(evs[0], events.ToolCardAdded)
    assert evs[0].client_call is not None
    assert evs[0].client_result is None
    results = [e.client_result for e in evs if e.client_result is not None]
    assert [(x.status, x.error) for x in results] == [("unknown", "not registered")]
