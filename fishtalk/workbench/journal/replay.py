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
    try:
        for f in fields(cls):
            key = FIELD_KEYS.get(f.name, f.name)
            if f.name == "at":
                own = record.get("at")
                kwargs["at"] = float(own) if isinstance(own, int | float) and own <= at else at
            elif key in record:
                value = record[key]
                if f.name == "report" and isinstance(value, Mapping):
                    value = conv.ReplyAudioReport.from_record(value)  # a nested record
                    if value is None:
                        return None
                kwargs[f.name] = tuple(value) if isinstance(value, list) else value
        built: conv.Input = cls(**kwargs)
    except (TypeError, ValueError):
        return None  # a record this version cannot rebuild (fields it does not know)
    return built


def _heard_notices(journal: Journal) -> list[tuple[float, conv.Input]]:
    """The ``heard`` records (written after the call) as notices at their replies' time."""
    from fishtalk.workbench.journal.export import heard_note

    notices: list[tuple[float, conv.Input]] = []
    for rec in journal.records:
        t = rec.get("t")
        if rec.get("type") != "heard" or not isinstance(t, int | float):
            continue
        confidence = rec.get("confidence")
        note = heard_note(
            str(rec.get("heard_text") or ""),
            str(rec.get("method") or ""),
            float(confidence) if isinstance(confidence, int | float) else None,
        )
        notices.append((float(t), conv.AddNotice(text=note, at=float(t))))
    return sorted(notices, key=lambda item: item[0])


def inputs(journal: Journal) -> Iterator[tuple[float, conv.Input]]:
    """The recorded reducer inputs, in order, with their time on the session clock (and
    what each reply's audio said, when ``fishtalk test`` heard it, as a notice)."""
    notices = _heard_notices(journal)
    for rec in journal.records:
        t = rec.get("t")
        at = float(t) if isinstance(t, int | float) else 0.0
        while notices and notices[0][0] <= at and rec.get("type") != "heard":
            yield notices.pop(0)
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
    yield from notices


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
