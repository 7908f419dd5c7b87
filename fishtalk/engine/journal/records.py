"""Observations (:mod:`fishtalk.engine.observe`) as journal records: plain JSON dicts.

Pure functions, no IO: the writer thread calls :meth:`Recorder.records` for each
observation it takes off its queue. The record ``type`` values:

``header``             the first line (see :func:`header`)
``packet_in``          a data packet received: ``topic``, ``from``, ``raw`` (the JSON text as
                       received) or, for a packet that is not UTF-8 JSON, a bounded ``preview``
``packet_out``         a client event published: ``topic``, ``raw``
``stream_attributes``  a transcript stream's header or trailer attributes
``input``              a reducer input (``kind``: ``stream_chunk``, ``send_text``,
                       ``interrupt``, ``set_muted``, ``hangup``, ``participant_joined``,
                       ``attributes_changed``, ``reconnecting``, ``malformed_packet``,
                       ``latency_mark``...); the input's own ``kind`` field, if it has
                       one, is ``subkind``; ``at`` is its own time when earlier than ``t``
``change``             a typed state event of :func:`fishtalk.core.conversation.changes`:
                       the fields of its ``to_dict()``, its ``type`` as ``kind`` and its
                       own ``at`` as ``t`` (not the time the writer took it)
``tool_run``           a client tool ran: params, status, result or error, duration, and
                       ``approval`` (``approved``/``declined``; null when nobody was asked)
``approval``           a person answered a tool's approval question
``grant``              the grant's public facts (session id, host, expiry; never the token)
``levels``             microphone and agent audio levels (about 2 Hz while they move)
``end``                how the session ended
``closed``             the writer's last line: how many records were dropped
``heard``              after ``closed``: what a reply's received audio said, heard offline
                       by ``fishtalk test`` once the call was over (:func:`heard_record`):
                       ``segment_ids``, ``heard_text``, ``method`` (``align``, ``free``,
                       ``none``), ``confidence``; ``t`` is the reply's last line's time
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any, Final

from fishtalk.core import conversation as conv
from fishtalk.engine import observe
from fishtalk.engine.journal import FORMAT, JOURNAL_VERSION

PREVIEW_CHARS: Final = 200
"""How much of a packet that is not JSON is kept."""
MAX_RAW_CHARS: Final = 65_536
"""Longer packets are cut to a preview (LiveKit data packets stay under 64 KiB anyway)."""

_CAMEL: Final = re.compile(r"(?<!^)(?=[A-Z])")

_INPUT_KINDS: Final[Mapping[type, str]] = {
    conv.TranscriptStreamOpened: "stream_opened",
    conv.TranscriptStreamChunk: "stream_chunk",
    conv.TranscriptStreamClosed: "stream_closed",
    conv.MalformedAgentEvent: "malformed_packet",
    conv.ClientToolFinished: "tool_finished",
    conv.SignalActivity: "activity",
    conv.AddNotice: "notice",
}
_SKIPPED_INPUTS: Final = (conv.AgentEventReceived,)
"""Inputs already in the journal as their raw packet."""
_SKIPPED_FIELDS: Final = frozenset({"at", "result_event", "event"})
FIELD_KEYS: Final[Mapping[str, str]] = {"kind": "subkind"}
"""An input field whose name is a record key already (an input's own ``kind``, as in
``LatencyMark`` and ``AddNotice``) is recorded under another key."""


def _plain(value: object) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def input_kind(inp: object) -> str:
    """The snake_case ``kind`` of a reducer input's record (an input or its class)."""
    cls = inp if isinstance(inp, type) else type(inp)
    return _INPUT_KINDS.get(cls) or _CAMEL.sub("_", cls.__name__).lower()


def packet_fields(data: bytes) -> dict[str, Any]:
    """``raw`` (the JSON text) for a UTF-8 JSON packet, else a bounded ``preview``."""
    try:
        text = data.decode("utf-8")
        if len(text) <= MAX_RAW_CHARS:
            json.loads(text)
            return {"raw": text}
    except ValueError:
        pass
    preview = data[:PREVIEW_CHARS].decode("utf-8", "replace")
    return {"preview": preview, "size": len(data), "malformed": True}


def heard_record(t: float, fields: Mapping[str, Any]) -> dict[str, Any]:
    """A ``heard`` record: ``fields`` (segment ids, heard text, method, confidence...) at
    ``t`` seconds on the journal's clock."""
    return {"type": "heard", "t": round(t, 6), **fields}


def header(
    *,
    fishtalk_version: str,
    protocol_version: str,
    agent_id: str | None,
    session_id: str | None,
    journal_id: str,
    started_at: str,
    wall: float,
    front_end: str | None = None,
    spoken: bool | None = None,
    mono: float | None = None,
) -> dict[str, Any]:
    """The first record of a journal. ``mono``: the session clock (monotonic seconds) at
    the header, the zero of every ``t``: the reader puts the marks that events carry on the
    session clock (a latency waterfall's) on the journal's clock with it."""
    return {
        "type": "header",
        "format": FORMAT,
        "version": JOURNAL_VERSION,
        "schema_version": conv.SCHEMA_VERSION,
        "fishtalk_version": fishtalk_version,
        "protocol_version": protocol_version,
        "agent_id": agent_id,
        "session_id": session_id,
        "journal_id": journal_id,
        "started_at": started_at,
        "t": 0.0,
        "wall": round(wall, 3),
        "front_end": front_end,
        "spoken": spoken,
        "mono": None if mono is None else round(mono, 6),
    }


class Recorder:
    """Turns observations into records (a reduction's records are its events, as the
    session computed them).

    ``mono0``/``wall0``: the session clock and Unix time at the header, so each record's
    ``t`` is seconds since the header and ``wall`` is ``wall0 + t``.
    """

    def __init__(self, mono0: float, wall0: float) -> None:
        self.mono0 = mono0
        self.wall0 = wall0
        self._last = 0.0
        self._approvals: dict[str, str] = {}

    def note(self, record: Mapping[str, Any], at: float) -> dict[str, Any]:
        """A ready-made record, stamped; an ``approval`` is remembered for its tool run."""
        if record.get("type") == "approval":
            self._approvals[str(record.get("call_id"))] = str(record.get("answer"))
        out = {"type": record.get("type"), **self.stamp(at)}
        out.update(record)
        return out

    def stamp(self, at: float) -> dict[str, Any]:
        """The time fields for an observation made at ``at`` (session clock); never earlier
        than the previous record's, so a journal's times only go forward."""
        t = self._last = max(self._last, at - self.mono0)
        return {"t": round(t, 6), "wall": round(self.wall0 + t, 3)}

    def records(self, item: observe.Observation, at_: float | None = None) -> list[dict[str, Any]]:
        """The records for one observation (none, one, or several), observed at ``at_``
        (default: the observation's own time). A state's events carry their own time."""
        if isinstance(item, observe.Reduced):
            return [change_record(c, self.stamp(c.at)) for c in item.events]
        at = self.stamp(item.at if at_ is None else at_)
        match item:
            case observe.PacketIn(topic=topic, data=data, sender=sender):
                return [
                    {
                        "type": "packet_in",
                        **at,
                        "topic": topic,
                        "from": sender,
                        **packet_fields(data),
                    }
                ]
            case observe.PacketOut(topic=topic, data=data):
                return [{"type": "packet_out", **at, "topic": topic, **packet_fields(data)}]
            case observe.StreamAttributes():
                return [
                    {
                        "type": "stream_attributes",
                        **at,
                        "stream_id": item.stream_id,
                        "from": item.sender,
                        "attributes": dict(item.attributes),
                        "trailer": item.trailer,
                    }
                ]
            case observe.ToolRan(outcome=outcome):
                return [
                    {
                        "type": "tool_run",
                        **at,
                        "call_id": item.call_id,
                        "tool_name": item.tool_name,
                        "params": _plain(item.params),
                        "status": outcome.status,
                        "result": _plain(outcome.result) if outcome.ok else None,
                        "error": outcome.error,
                        "duration": round(outcome.duration, 6),
                        "approval": self._approvals.pop(item.call_id, None),
                    }
                ]
            case observe.GrantReceived():
                return [
                    {
                        "type": "grant",
                        **at,
                        "session_id": item.session_id,
                        "transport": item.transport,
                        "livekit_host": item.livekit_host,
                        "expires_at": item.expires_at.isoformat(),
                        "max_duration_seconds": item.max_duration_seconds,
                    }
                ]
            case observe.SessionFinished(result=result):
                return [
                    {
                        "type": "end",
                        **at,
                        "reason": result.reason,
                        "message": result.message,
                        "error": type(result.error).__name__ if result.error else None,
                        **{k: _plain(v) for k, v in item.extra.items()},
                    }
                ]
            case _:
                if isinstance(item, _SKIPPED_INPUTS):
                    return []
                out: dict[str, Any] = {"type": "input", **at, "kind": input_kind(item)}
                for f in fields(item):
                    if f.name not in _SKIPPED_FIELDS:
                        out[FIELD_KEYS.get(f.name, f.name)] = _plain(getattr(item, f.name))
                own = getattr(item, "at", None)
                if isinstance(own, float) and own - self.mono0 < at["t"] - 1e-6:
                    # Stamped earlier than the records before it (a latency mark reported
                    # late): keep its own time for replay.
                    out["at"] = round(own - self.mono0, 6)
                return [out]


def change_record(event: conv.Change, at: Mapping[str, Any]) -> dict[str, Any]:
    """The ``change`` record of ``event``, with the time fields ``at`` (its own ``at`` on
    the journal's clock): the record's ``type`` is ``change``, so the event's is ``kind``."""
    body = event.to_dict()
    del body["type"], body["at"]
    return {"type": "change", **at, **body}


def dumps(record: Mapping[str, Any]) -> str:
    """One record as one line of JSON (no newline inside, non-ASCII kept)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


__all__ = [
    "FIELD_KEYS",
    "MAX_RAW_CHARS",
    "PREVIEW_CHARS",
    "Recorder",
    "change_record",
    "dumps",
    "header",
    "input_kind",
    "packet_fields",
]
