"""A journal played back: the reducer inputs it recorded, fed again, give the states the
front ends showed, on the session clock.

The journal keeps every reducer input (``input`` records) and every agent event as its raw
packet (``packet_in``); decoding those again and reducing them in order rebuilds the
conversation exactly as it unfolded, with no network and no audio. Pure and sans-IO: the
caller paces the states (:func:`paced`) and renders them.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import fields
from typing import Any, Final

from fishtalk.core import conversation as conv
from fishtalk.core.protocol import TOPIC_AGENT_EVENT, ProtocolError, decode_agent_event
from fishtalk.engine.journal.reader import Journal
from fishtalk.engine.journal.records import FIELD_KEYS, input_kind

_INPUT_CLASSES: Final[Mapping[str, type]] = {
    input_kind(cls): cls for cls in typing.get_args(conv.Input) if isinstance(cls, type)
}


def _build(cls: type, record: Mapping[str, Any], at: float) -> conv.Input | None:
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        key = FIELD_KEYS.get(f.name, f.name)
        if f.name == "at":
            own = record.get("at")
            kwargs["at"] = float(own) if isinstance(own, int | float) and own <= at else at
        elif key in record:
            value = record[key]
            kwargs[f.name] = tuple(value) if isinstance(value, list) else value
    try:
        built: conv.Input = cls(**kwargs)
    except TypeError:
        return None  # a record this version cannot rebuild (fields it does not know)
    return built


def inputs(journal: Journal) -> Iterator[tuple[float, conv.Input]]:
    """The recorded reducer inputs, in order, with their time on the session clock."""
    for rec in journal.records:
        t = rec.get("t")
        at = float(t) if isinstance(t, int | float) else 0.0
        kind = rec.get("type")
        if kind == "input":
            cls = _INPUT_CLASSES.get(str(rec.get("kind")))
            if cls is None or cls is conv.AgentEventReceived:
                continue
            inp = _build(cls, rec, at)
            if inp is not None:
                yield at, inp
        elif kind == "packet_in" and rec.get("topic") == TOPIC_AGENT_EVENT:
            raw = rec.get("raw")
            if not isinstance(raw, str):
                continue  # malformed: its own ``malformed_packet`` input follows
            try:
                event = decode_agent_event(raw)
            except ProtocolError:
                continue  # likewise
            yield at, conv.AgentEventReceived(event=event, at=at)


def states(
    journal: Journal, *, spoken: bool = False
) -> Iterator[tuple[float, conv.State, Sequence[conv.Change]]]:
    """Each state the session went through, with when it was reached and what changed in
    it (the replay's event stream, computed once here as the live session does)."""
    state = conv.initial_state(spoken=spoken)
    for at, inp in inputs(journal):
        previous = state
        state, _effects = conv.reduce(state, inp)
        yield at, state, conv.changes(previous, state)


def delays(times: list[float], speed: float) -> list[float]:
    """Seconds to wait before each item at ``speed`` (0: no waiting at all)."""
    if speed <= 0:
        return [0.0] * len(times)
    out = []
    previous = times[0] if times else 0.0
    for t in times:
        out.append(max(0.0, t - previous) / speed)
        previous = t
    return out


__all__ = ["delays", "inputs", "states"]
