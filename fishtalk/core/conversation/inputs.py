"""What the reducer accepts (:data:`Input`): room events, agent events, timers and the
user's commands. Every input carries ``at``: monotonic seconds on the session's clock."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from fishtalk.core.conversation.latency import LatencyMark
from fishtalk.core.conversation.reasons import END_CONNECTION_FAILED
from fishtalk.core.conversation.reply_audio import ReplyAudioReport
from fishtalk.core.conversation.state import ClientToolStatus, NoticeKind
from fishtalk.core.protocol import AgentEvent, ClientToolResult


@dataclass(frozen=True, slots=True)
class Connected:
    """The room connection succeeded (the first time). ``audio_out``: whether the agent's
    audio reaches an output device here (False: no device, or audio turned off), so a
    reply can be heard at all."""

    local_identity: str
    at: float
    audio_out: bool = True


@dataclass(frozen=True, slots=True)
class ConnectFailed:
    """Connecting failed, or the grant was refused before connecting.

    ``code`` becomes both the error code and the end reason (``connection_failed``,
    ``session_expired``, ...).
    """

    at: float
    code: str = END_CONNECTION_FAILED
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Reconnecting:
    """The transport dropped and the SDK is trying to resume or rejoin."""

    at: float


@dataclass(frozen=True, slots=True)
class Reconnected:
    """The transport is back (resumed or rejoined).

    ``remote_identities``: the remote participants in the room now. With no replay, an
    agent missing from it is taken as gone. Re-read sticky attributes by feeding
    :class:`ParticipantJoined` / :class:`AttributesChanged` afterwards.
    """

    at: float
    remote_identities: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Disconnected:
    """The room disconnected for good. ``reason``: the LiveKit DisconnectReason name."""

    at: float
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ParticipantJoined:
    """A remote participant is in the room (joined now, or already there on connect)."""

    identity: str
    at: float
    is_agent: bool = True
    attributes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ParticipantLeft:
    """A remote participant left the room."""

    identity: str
    at: float


@dataclass(frozen=True, slots=True)
class AttributesChanged:
    """A participant's attributes changed; ``changed`` holds the new values."""

    identity: str
    changed: Mapping[str, str]
    at: float


@dataclass(frozen=True, slots=True)
class TranscriptStreamOpened:
    """An ``lk.transcription`` text stream opened (its header arrived)."""

    stream_id: str
    segment_id: str
    identity: str
    final: bool
    at: float


@dataclass(frozen=True, slots=True)
class TranscriptStreamChunk:
    """A chunk of text on an open transcript stream."""

    stream_id: str
    segment_id: str
    text: str
    at: float


@dataclass(frozen=True, slots=True)
class TranscriptStreamClosed:
    """A transcript stream closed. ``final``: the trailer's final attribute, if it had one."""

    stream_id: str
    segment_id: str
    at: float
    final: bool | None = None


@dataclass(frozen=True, slots=True)
class AgentEventReceived:
    """A decoded ``agent-event`` packet (known or unknown type)."""

    event: AgentEvent
    at: float


@dataclass(frozen=True, slots=True)
class MalformedAgentEvent:
    """An ``agent-event`` packet that failed to decode."""

    error: str
    preview: str
    at: float


@dataclass(frozen=True, slots=True)
class ClientToolFinished:
    """A client tool call finished locally (from ``fishtalk.engine.tools.ToolOutcome``).

    When ``result_event`` is set the reducer asks the session to publish it, so every send
    goes through one place (and nothing is sent after the session ended).
    """

    call_id: str
    status: ClientToolStatus
    at: float
    result_preview: str | None = None
    error: str | None = None
    result_event: ClientToolResult | None = None


@dataclass(frozen=True, slots=True)
class TimerFired:
    """A timer scheduled with :class:`ScheduleTimer` reached its deadline."""

    name: str
    at: float


@dataclass(frozen=True, slots=True)
class SendText:
    """Command: the user typed a message. ``audio=None`` follows the spoken toggle."""

    text: str
    at: float
    audio: bool | None = None


@dataclass(frozen=True, slots=True)
class SignalActivity:
    """Command: the user is active (typing); sent as ``user.activity``, throttled."""

    at: float


@dataclass(frozen=True, slots=True)
class Interrupt:
    """Command: interrupt the agent's current speech."""

    at: float


@dataclass(frozen=True, slots=True)
class SetMuted:
    """Command: mute or unmute the microphone."""

    muted: bool
    at: float


@dataclass(frozen=True, slots=True)
class SetSpoken:
    """Command: whether typed turns should get spoken replies."""

    spoken: bool
    at: float


@dataclass(frozen=True, slots=True)
class Hangup:
    """Command: end the session (sends ``user.hangup``, then tears down; twice is harmless).
    ``reason``: the end reason recorded, ``user_hangup``, or ``interrupted`` when a signal
    (Ctrl-C) made fishtalk hang up on its way out."""

    at: float
    reason: str = "user_hangup"


@dataclass(frozen=True, slots=True)
class LocalError:
    """Something failed locally that the user should see (send failure, audio device...)."""

    code: str
    at: float
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class AddNotice:
    """An informational line from the session (e.g. audio fell back to text-only)."""

    text: str
    at: float
    kind: NoticeKind = "info"


@dataclass(frozen=True, slots=True)
class ReplyAudioMeasured:
    """A reply's received audio was measured (see :mod:`.reply_audio`)."""

    report: ReplyAudioReport
    at: float


Input: TypeAlias = (
    Connected
    | ConnectFailed
    | Reconnecting
    | Reconnected
    | Disconnected
    | ParticipantJoined
    | ParticipantLeft
    | AttributesChanged
    | TranscriptStreamOpened
    | TranscriptStreamChunk
    | TranscriptStreamClosed
    | AgentEventReceived
    | MalformedAgentEvent
    | ClientToolFinished
    | TimerFired
    | SendText
    | SignalActivity
    | Interrupt
    | SetMuted
    | SetSpoken
    | Hangup
    | LocalError
    | AddNotice
    | LatencyMark
    | ReplyAudioMeasured
)
"""Everything the reducer accepts."""
