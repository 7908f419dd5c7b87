"""What a :class:`~fishtalk.engine.session.Session` reports to its observers (the journal, ...).

An observer is a plain callable registered with ``Session.add_observer``; it is called on
the session's event loop, synchronously, with one :data:`Observation` at a time, in the
order things happened:

- every reducer input (:data:`fishtalk.core.conversation.Input`) just before it is reduced, and
  the :class:`~fishtalk.core.conversation.State` it led to (wrapped in :class:`Reduced`);
- raw packets in and out (:class:`PacketIn`, :class:`PacketOut`), before decoding and as
  published;
- the attributes of transcript streams (:class:`StreamAttributes`);
- every client-tool run with its full outcome (:class:`ToolRan`);
- the grant's public facts (:class:`GrantReceived`: never the token);
- call audio, frame by frame (:class:`AudioFrame`: the microphone as sent, the agent as
  played);
- how the session ended (:class:`SessionFinished`).

Observers must be cheap (they run on the loop): hand the observation to a queue and do the
work elsewhere. Every object passed is immutable. An observer that raises is logged and
otherwise ignored. No asyncio or livekit here: this module is plain data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeAlias

from fishtalk.core import conversation as conv

if TYPE_CHECKING:
    from fishtalk.engine.session.result import EndResult
    from fishtalk.engine.tools.runner import ToolOutcome


@dataclass(frozen=True, slots=True)
class Reduced:
    """The state after the input observed just before it was reduced, and what changed."""

    state: conv.State
    at: float
    events: Sequence[conv.Change] = ()
    """The events of this reduction (:func:`fishtalk.core.conversation.changes`, computed
    once by the session for every reader)."""


@dataclass(frozen=True, slots=True)
class PacketIn:
    """A data packet as received (any topic), before it is decoded."""

    topic: str | None
    data: bytes
    sender: str | None
    at: float


@dataclass(frozen=True, slots=True)
class PacketOut:
    """A data packet as published (``client-event``)."""

    topic: str
    data: bytes
    at: float


@dataclass(frozen=True, slots=True)
class StreamAttributes:
    """The attributes of a transcript text stream: its header (``trailer`` False) or the
    trailer it closed with."""

    stream_id: str
    sender: str
    attributes: Mapping[str, str]
    trailer: bool
    at: float


@dataclass(frozen=True, slots=True)
class ToolRan:
    """A client tool call ran locally (params as the agent sent them, the full outcome)."""

    call_id: str
    tool_name: str
    params: Mapping[str, object]
    outcome: ToolOutcome
    at: float


@dataclass(frozen=True, slots=True)
class GrantReceived:
    """The session grant arrived (its public facts only: the token is never observed)."""

    session_id: str
    transport: str
    livekit_host: str
    expires_at: datetime
    max_duration_seconds: int
    at: float


AudioChannel: TypeAlias = Literal["mic", "agent"]
"""Which side of the call an audio frame is."""


@dataclass(frozen=True, slots=True)
class AudioFrame:
    """One frame of call audio: ``mic`` as sent, or ``agent`` as handed to playback.
    ``data``: 16-bit signed PCM samples (native byte order), interleaved channels."""

    channel: AudioChannel
    data: bytes
    sample_rate: int
    num_channels: int
    at: float


@dataclass(frozen=True, slots=True)
class SessionFinished:
    """The session has torn down; ``result`` says how it ended."""

    result: EndResult
    at: float
    extra: Mapping[str, object] = field(default_factory=dict)


Observation: TypeAlias = (
    conv.Input
    | Reduced
    | PacketIn
    | PacketOut
    | StreamAttributes
    | ToolRan
    | GrantReceived
    | AudioFrame
    | SessionFinished
)
"""Everything an observer receives."""

Observer: TypeAlias = Callable[[Observation], None]
"""A callable fed every :data:`Observation` on the session's loop."""


__all__ = [
    "AudioChannel",
    "AudioFrame",
    "GrantReceived",
    "Observation",
    "Observer",
    "PacketIn",
    "PacketOut",
    "Reduced",
    "SessionFinished",
    "StreamAttributes",
    "ToolRan",
]
