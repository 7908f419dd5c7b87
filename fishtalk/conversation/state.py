"""The conversation state a front end shows: one immutable snapshot per input."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

from pydantic import JsonValue

from fishtalk.protocol import UserMessage

MAX_ERRORS: Final = 200
MAX_NOTICES: Final = 200
MAX_DEBUG_SAMPLES: Final = 10
MAX_ORPHANS: Final = 64
PREVIEW_CHARS: Final = 200

# --- small types ------------------------------------------------------------------------

Status: TypeAlias = Literal["connecting", "connected", "reconnecting", "ended"]
Mode: TypeAlias = Literal["listening", "thinking", "speaking"]
Role: TypeAlias = Literal["user", "agent"]
ToolStatus: TypeAlias = Literal["running", "completed", "failed"]
"""The agent-side lifecycle of a tool card (from ``tool.*`` events)."""
NoticeKind: TypeAlias = Literal[
    "reconnecting", "reconnected", "agent_joined", "session_ending", "audio", "info"
]
"""What a :class:`Notice` is about: ``reconnecting``/``reconnected`` (the transport),
``agent_joined``, ``session_ending`` (the agent announced the end; the text says why),
``audio`` (the audio path changed, e.g. fell back to text-only), ``info`` (anything else)."""
ClientToolStatus: TypeAlias = Literal["running", "ok", "error", "timeout", "declined", "unknown"]
"""The local outcome of a client tool call (``unknown`` = no handler registered)."""
# --- state ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Segment:
    """One transcript line, keyed by ``segment_id``, in first-seen order (``seq``)."""

    seq: int
    """Position in the conversation timeline (shared with :class:`ToolCard`)."""
    segment_id: str
    """The ``lk.segment_id`` attribute, or a local id (``typed-N``) for typed messages."""
    role: Role
    identity: str | None
    """Sender identity (None for typed messages)."""
    text: str
    final: bool
    """User: a final transcript arrived. Agent: the segment closed (done speaking)."""
    open: bool = False
    """A transcript stream for this segment is open (agent: still speaking)."""
    interrupted: bool = False
    """Agent segment cut short by a local interrupt; later chunks were dropped."""
    typed: bool = False
    """A message the user typed (rendered locally, no server echo)."""
    queued: bool = False
    """Typed message not sent yet (waiting for the agent, or the session ended first)."""
    audio: bool | None = None
    """Typed messages: whether the agent was asked to speak its reply."""
    started_at: float = 0.0
    updated_at: float = 0.0


@dataclass(frozen=True, slots=True)
class ClientCall:
    """The local side of a ``client_tool.call``: what we ran and how it went."""

    tool_name: str
    params: Mapping[str, JsonValue]
    expects_response: bool
    status: ClientToolStatus = "running"
    result_preview: str | None = None
    """The serialised result (or error text), cut to :data:`PREVIEW_CHARS`."""
    error: str | None = None
    started_at: float = 0.0
    ended_at: float | None = None

    @property
    def duration(self) -> float | None:
        """Seconds the local handler ran, once finished."""
        return None if self.ended_at is None else max(0.0, self.ended_at - self.started_at)


@dataclass(frozen=True, slots=True)
class ToolCard:
    """One tool invocation keyed by ``call_id``; renders from a terminal event alone."""

    seq: int
    call_id: str
    tool_name: str
    source: str
    """Open set (``client``, ``webhook``, ``mcp``, ``builtin``, ``background``, ...)."""
    status: ToolStatus = "running"
    input: str | None = None
    input_truncated: bool = False
    output: str | None = None
    output_truncated: bool = False
    error: str | None = None
    node_id: str | None = None
    started_at: float | None = None
    """When ``tool.started`` arrived (None if it was missed)."""
    ended_at: float | None = None
    """When the terminal event arrived."""
    client: ClientCall | None = None
    """Set when the agent asked us to run this tool locally."""

    @property
    def duration(self) -> float | None:
        """Agent-side duration, when both the start and the terminal event were seen."""
        if self.started_at is None or self.ended_at is None:
            return None
        return max(0.0, self.ended_at - self.started_at)

    @property
    def display_status(self) -> str:
        """What to show: the agent's terminal status, else the local outcome, else running."""
        if self.status != "running":
            return self.status
        if self.client is not None:
            return self.client.status
        return "running"


@dataclass(frozen=True, slots=True)
class ErrorEntry:
    """An error to show: a code plus a human sentence (and optional detail)."""

    code: str
    message: str
    at: float
    detail: str | None = None
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Notice:
    """An informational line (reconnecting, agent joined, the session is ending, ...).

    ``kind`` says what it is about, so a front end can choose which notices to show without
    reading the English ``text``.
    """

    text: str
    at: float
    kind: NoticeKind = "info"


@dataclass(frozen=True, slots=True)
class Clock:
    """The session clock. All times are monotonic seconds from the inputs."""

    connected_at: float | None = None
    join_deadline: float | None = None
    """Set while waiting for the agent's first state."""
    ended_grace_deadline: float | None = None
    """Set after ``session.ended`` until the session ends."""
    max_duration_seconds: int | None = None
    """From the grant."""
    max_duration_deadline: float | None = None
    """``connected_at + max_duration_seconds`` (the server's limit, approximately)."""
    ended_at: float | None = None
    now: float = 0.0
    """The latest ``at`` seen (never goes backwards)."""

    def elapsed(self) -> float:
        """Seconds connected so far (up to the end, once ended)."""
        if self.connected_at is None:
            return 0.0
        end = self.ended_at if self.ended_at is not None else self.now
        return max(0.0, end - self.connected_at)

    def remaining(self) -> float | None:
        """Seconds left before the max duration, when known."""
        if self.max_duration_deadline is None:
            return None
        end = self.ended_at if self.ended_at is not None else self.now
        return max(0.0, self.max_duration_deadline - end)


@dataclass(frozen=True, slots=True)
class Debug:
    """Counters for a debug view: what arrived that we could not use."""

    malformed_events: int = 0
    unknown_events: int = 0
    ignored_inputs: int = 0
    """Inputs that arrived out of place (duplicates, late, after the end)."""
    dropped_chunks: int = 0
    """Agent transcript chunks dropped after a local interrupt."""
    recent_malformed: tuple[str, ...] = ()
    """The last few malformed packets: ``"<error>: <preview>"``."""
    recent_unknown_types: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class QueuedMessage:
    """A typed message waiting to be sent, with the transcript segment that shows it."""

    segment_id: str
    message: UserMessage


@dataclass(frozen=True, slots=True)
class TranscriptStream:
    """Bookkeeping for one open ``lk.transcription`` text stream (internal to the reducer)."""

    stream_id: str
    segment_id: str
    role: Role
    final: bool
    text: str = ""
    """User streams: the text received so far (each user stream is a whole update)."""


@dataclass(frozen=True, slots=True)
class OrphanChunk:
    """A chunk or close that arrived before its stream was opened (internal)."""

    stream_id: str
    text: str | None
    """Chunk text, or None for a close."""
    final: bool | None = None
    at: float = 0.0


@dataclass(frozen=True, slots=True)
class State:
    """Everything a front end shows, as one immutable snapshot."""

    status: Status = "connecting"
    end_reason: str | None = None
    """Set once ``status == "ended"``: a known reason or whatever the agent announced."""
    announced_end_reason: str | None = None
    """The ``session.ended`` reason, held until the session actually ends."""
    local_identity: str | None = None
    agent_identity: str | None = None
    agent_joined: bool = False
    """The agent participant is in the room."""
    agent_ready: bool = False
    """The agent has published a state at least once (gates typed messages)."""
    agent_state: str | None = None
    """The sticky ``lk.agent.state`` value (open set; see ``protocol.AGENT_STATES``)."""
    mode: Mode = "listening"
    muted: bool = False
    spoken: bool = False
    """Whether typed turns ask for a spoken reply (the web SDK default is text-only)."""
    transcript: tuple[Segment, ...] = ()
    tools: tuple[ToolCard, ...] = ()
    errors: tuple[ErrorEntry, ...] = ()
    notices: tuple[Notice, ...] = ()
    queued: tuple[QueuedMessage, ...] = ()
    clock: Clock = field(default_factory=Clock)
    debug: Debug = field(default_factory=Debug)
    streams: tuple[TranscriptStream, ...] = ()
    """Open transcript streams (internal bookkeeping)."""
    orphans: tuple[OrphanChunk, ...] = ()
    """Stream chunks/closes seen before their open (internal bookkeeping)."""
    next_seq: int = 0
    typed_count: int = 0
    last_activity_sent_at: float | None = None

    @property
    def ended(self) -> bool:
        """Whether the session has ended (terminal)."""
        return self.status == "ended"

    def segment(self, segment_id: str) -> Segment | None:
        """The transcript segment with this id, if any."""
        # Newest first: updates almost always hit the latest segments.
        for seg in reversed(self.transcript):
            if seg.segment_id == segment_id:
                return seg
        return None

    def tool(self, call_id: str) -> ToolCard | None:
        """The tool card with this call id, if any."""
        for card in self.tools:
            if card.call_id == call_id:
                return card
        return None

    def timeline(self) -> tuple[Segment | ToolCard, ...]:
        """Transcript segments and tool cards interleaved in conversation order."""
        items: list[Segment | ToolCard] = [*self.transcript, *self.tools]
        items.sort(key=lambda item: item.seq)
        return tuple(items)

    @property
    def speaking_segment(self) -> Segment | None:
        """The agent segment currently being spoken (open, not interrupted), if any."""
        for seg in reversed(self.transcript):
            if seg.role == "agent" and seg.open and not seg.interrupted:
                return seg
        return None


def initial_state(
    *,
    local_identity: str | None = None,
    max_duration_seconds: int | None = None,
    spoken: bool = False,
    muted: bool = False,
) -> State:
    """The state before connecting. ``max_duration_seconds`` comes from the session grant."""
    return State(
        local_identity=local_identity,
        spoken=spoken,
        muted=muted,
        clock=Clock(max_duration_seconds=max_duration_seconds),
    )
