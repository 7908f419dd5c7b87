"""Every event has a ``type`` literal and an ``at``, and its JSON reads back to an equal event.

The strategies are built from the dataclass fields (``st.builds``), so a field added to an
event or to what it holds is covered without touching this file.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fishtalk.core import conversation as c
from fishtalk.core import events
from fishtalk.core.conversation.changes import event_from_dict, event_from_json

_FLOATS = st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False)
_JSON_LEAVES = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | _FLOATS | st.text()
_JSON = st.recursive(
    _JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)


def strategy(hint: Any) -> st.SearchStrategy[Any]:
    """Values of ``hint``, as JSON can carry them (finite floats, lists for arrays)."""
    origin = typing.get_origin(hint)
    if hint is float:
        return _FLOATS
    if hint is type(None):
        return st.none()
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        return st.one_of([strategy(arg) for arg in typing.get_args(hint)])
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(strategy(args[0]), max_size=3).map(tuple)
        return st.tuples(*(strategy(arg) for arg in args))
    if origin is Mapping or origin is dict:
        return st.dictionaries(st.text(max_size=8), _JSON, max_size=3)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        kwargs = {
            f.name: strategy(hints[f.name])
            for f in dataclasses.fields(hint)
            if f.init and f.name != "type"  # ``type`` is the class's own literal
        }
        return st.builds(hint, **kwargs)
    return st.from_type(hint)


@pytest.mark.parametrize("cls", c.CHANGE_TYPES, ids=lambda cls: cls.kind)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
@given(data=st.data())
def test_every_event_reads_back_from_its_json(cls: type[Any], data: st.DataObject) -> None:
    event = data.draw(strategy(cls))
    text = event.to_json()
    assert event_from_json(text) == event
    assert event_from_dict(json.loads(text)) == event
    as_dict = event.to_dict()
    assert as_dict["type"] == event.type == cls.kind
    assert as_dict["at"] == event.at


def test_every_event_has_a_type_literal_and_an_at() -> None:
    assert events.EVENT_TYPES == c.CHANGE_TYPES
    assert {t.kind for t in c.CHANGE_TYPES} == events.KINDS
    for cls in c.CHANGE_TYPES:
        hints = typing.get_type_hints(cls)
        assert hints["at"] is float
        assert typing.get_origin(hints["type"]) is typing.Literal
        assert typing.get_args(hints["type"]) == (cls.kind,)
        by_name = {f.name: f for f in dataclasses.fields(cls)}
        assert by_name["type"].default == cls.kind
        assert by_name["type"].kw_only
        assert by_name["at"].kw_only


def test_changes_stamp_the_time_of_the_input_that_caused_them() -> None:
    s0 = c.initial_state()
    s1, _ = c.reduce(s0, c.Connected("me", 12.5))
    s2, _ = c.reduce(s1, c.SendText("hello", 13.25))
    assert {e.at for e in c.changes(s0, s1)} == {12.5}
    assert next(e.type for e in c.changes(s1, s2)) == "segment_opened"
    assert {e.at for e in c.changes(s1, s2)} == {13.25}
    assert {e.at for e in c.changes(s1, s2, at=99.0)} == {99.0}


def test_schema_1_dicts_still_read() -> None:
    """What a journal of schema 1 holds: ``kind``, no ``type``/``at``, latency in ms."""
    status = event_from_dict({"kind": "status_change", "status": "connected", "previous": "x"})
    assert status == c.StatusChanged("connected", "x")  # type: ignore[arg-type]
    turn = event_from_dict(
        {
            "type": "change",
            "kind": "turn_latency",
            "waterfall": {
                "turn": 1,
                "kind": "typed",
                "user_ended_at": 1.0,
                "output_latency_ms": 20.0,
                "rtt_ms": 50.0,
                "heard_ms": 300.0,
            },
        }
    )
    assert isinstance(turn, c.TurnLatency)
    assert turn.waterfall.output_latency == pytest.approx(0.02)
    assert turn.waterfall.rtt == pytest.approx(0.05)
    interrupt = event_from_dict(
        {"kind": "interrupt_latency", "interrupt": {"pressed_at": 2.0, "local_flush_ms": 40.0}}
    )
    assert isinstance(interrupt, c.InterruptLatency)
    assert interrupt.interrupt.flushed_at == pytest.approx(2.04)
    assert interrupt.interrupt.wire_stopped_at is None


@pytest.mark.parametrize(
    "data", [{"type": "nope"}, {"kind": "status_change"}, {"type": "error", "error": 3}]
)
def test_what_is_not_an_event_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"not an event|ErrorEntry|StatusChanged"):
        event_from_dict(data)
