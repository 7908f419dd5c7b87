"""The conversation state a front end shows: one immutable snapshot per input."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Final, Generic, Literal, TypeAlias, TypeVar

from pydantic import JsonValue

from fishtalk.core.conversation.latency import Latency
from fishtalk.core.conversation.reply_audio import ReplyAudioReport
from fishtalk.core.protocol import UserMessage

MAX_ERRORS: Final = 200
MAX_NOTICES: Final = 200
MAX_DEBUG_SAMPLES: Final = 10
MAX_ORPHANS: Final = 64
PREVIEW_CHARS: Final = 200
MAX_LIVE_SEGMENTS: Final = 2048
"""Transcript segments kept live (at least this many; older ones are summarised as a count,
:attr:`State.earlier_segments`). The TUI shows at most 2,000."""
MAX_LIVE_TOOLS: Final = 1024
"""Tool cards kept live (older ones are summarised as :attr:`State.earlier_tools`)."""
LOG_CHUNK: Final = 64
"""Items per block of a :class:`Log` (what one update copies, at most)."""

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
    turn: int | None = None
    """User lines: the number of the user turn this line is (from 1, in the order the
    user's turns ended), once it ended (typed: sent; spoken: its end of speech or final
    transcript). None for agent lines."""
    answers_turn: int | None = None
    """Agent lines: the user turn this line answers, the last one that had ended when the
    line started (None: the greeting, or anything said before the user's first turn).
    See :mod:`fishtalk.core.conversation.answers`."""


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


T = TypeVar("T")


class Log(Generic[T]):
    """An immutable, bounded sequence of items keyed by id, cheap to update.

    Items live in blocks of :data:`LOG_CHUNK`; an update copies one block and the short
    tuple of blocks, never the whole history, and unchanged blocks are shared between
    successive logs (so a diff compares blocks by identity). Past ``limit`` items the oldest
    block is dropped and only counted (:attr:`dropped`).

    Lookups by id are O(1) on every log, old snapshots included: the key index is two
    dicts that are never changed once a log holds them, a *base* for the full blocks
    (rebuilt once per :data:`LOG_CHUNK` appends, so O(1) amortized) and a small *delta*
    for the tail (copied on append, at most :data:`LOG_CHUNK` entries). The base may still
    name keys whose block dropped; their positions fall below :attr:`dropped` and count
    as absent.
    """

    __slots__ = ("_base", "_blocks", "_delta", "_dropped", "_items", "_key", "_limit", "_tail")

    def __init__(
        self,
        key: Callable[[T], str],
        limit: int,
        blocks: tuple[tuple[T, ...], ...] = (),
        tail: tuple[T, ...] = (),
        dropped: int = 0,
        index: tuple[dict[str, int], dict[str, int]] | None = None,
    ) -> None:
        self._key = key
        self._limit = limit
        self._blocks = blocks
        self._tail = tail
        self._dropped = dropped
        if index is None:
            index = ({key(item): dropped + i for i, item in enumerate(self._iter())}, {})
        self._base, self._delta = index
        self._items: tuple[T, ...] | None = None

    # --- reading ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._blocks) * LOG_CHUNK + len(self._tail)

    def _iter(self) -> Iterator[T]:
        for block in self._blocks:
            yield from block
        yield from self._tail

    def __iter__(self) -> Iterator[T]:
        return iter(self.items())

    def __reversed__(self) -> Iterator[T]:
        """Newest first, without building the whole tuple (stop early to stay cheap)."""
        yield from reversed(self._tail)
        for block in reversed(self._blocks):
            yield from reversed(block)

    def items(self) -> tuple[T, ...]:
        """The live items, oldest first, as one tuple (built once per log, on demand)."""
        if self._items is None:
            self._items = tuple(self._iter())
        return self._items

    @property
    def dropped(self) -> int:
        """How many older items were dropped because of the bound."""
        return self._dropped

    @property
    def blocks(self) -> tuple[tuple[T, ...], ...]:
        """The live items in blocks (the last one partial); blocks shared between logs are
        the same objects, which is what makes comparing two logs cheap."""
        return (*self._blocks, self._tail)

    def key(self, item: T) -> str:
        """The id this log keys ``item`` by."""
        return self._key(item)

    def last(self) -> T | None:
        """The newest item, if any."""
        if self._tail:
            return self._tail[-1]
        return self._blocks[-1][-1] if self._blocks else None

    def _at(self, position: int) -> T:
        block, offset = divmod(position - self._dropped, LOG_CHUNK)
        if block < len(self._blocks):
            return self._blocks[block][offset]
        return self._tail[offset]

    def position(self, key: str) -> int | None:
        """The global position (counting dropped items) of the item with this key."""
        position = self._delta.get(key)
        if position is None:
            position = self._base.get(key)
            if position is None or position < self._dropped:
                return None
        return position

    def get(self, key: str) -> T | None:
        """The item with this key, if live."""
        position = self.position(key)
        return None if position is None else self._at(position)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Log):
            return self._dropped == other._dropped and self.items() == other.items()
        if isinstance(other, tuple):
            return self.items() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._dropped, self.items()))

    def __repr__(self) -> str:
        return f"Log(dropped={self._dropped}, items={list(self.items())!r})"

    # --- updating (returns a new log) --------------------------------------------------

    def put(self, item: T) -> tuple[Log[T], T | None]:
        """A log with ``item`` replacing the one with the same key, or appended; and the
        item it replaced (None when appended)."""
        key = self._key(item)
        position = self.position(key)
        blocks, tail, dropped = self._blocks, self._tail, self._dropped
        base, delta = self._base, self._delta
        old: T | None = None
        if position is None:
            delta = {**delta, key: dropped + len(self)}
            tail = (*tail, item)
            if len(tail) == LOG_CHUNK:
                # The tail becomes a block: fold the delta into a new base (the one
                # O(live) step, once per LOG_CHUNK appends) and forget dropped keys.
                blocks, tail = (*blocks, tail), ()
                base = {**base, **delta}
                delta = {}
                while (len(blocks) - 1) * LOG_CHUNK >= self._limit:
                    for i, gone in enumerate(blocks[0]):
                        gone_key = self._key(gone)
                        if base.get(gone_key) == dropped + i:
                            del base[gone_key]
                    blocks, dropped = blocks[1:], dropped + LOG_CHUNK
        else:
            old = self._at(position)
            block, offset = divmod(position - dropped, LOG_CHUNK)
            if block < len(blocks):
                chunk = blocks[block]
                chunk = (*chunk[:offset], item, *chunk[offset + 1 :])
                blocks = (*blocks[:block], chunk, *blocks[block + 1 :])
            else:
                tail = (*tail[:offset], item, *tail[offset + 1 :])
        return Log(self._key, self._limit, blocks, tail, dropped, (base, delta)), old


def _segment_log() -> Log[Segment]:
    return Log(attrgetter("segment_id"), MAX_LIVE_SEGMENTS)


def _tool_log() -> Log[ToolCard]:
    return Log(attrgetter("call_id"), MAX_LIVE_TOOLS)


@dataclass(frozen=True, slots=True)
class LatencyBook:
    """The reducer's latency bookkeeping (internal; see :mod:`.latency`)."""

    thinking_at: float | None = None
    """When the agent last entered ``thinking`` (a turn opened later adopts it)."""
    user_final_at: float | None = None
    """A user final transcript no open turn took (a turn opened later adopts it)."""
    reply_over: bool = False
    """The open turn's reply segment closed; only its heard mark is awaited."""
    text_only: bool = False
    """The open turn asked for a text-only reply (typed with ``audio`` off)."""
    no_output: bool = False
    """The client has no audio output: no reply is heard, whatever cut it short."""


_NO_LATENCY_BOOK: Final = LatencyBook()


@dataclass(frozen=True, slots=True)
class Internal:
    """The reducer's own bookkeeping: nothing here is for front ends (it may change)."""

    streams: tuple[TranscriptStream, ...] = ()
    """Open transcript streams."""
    orphans: tuple[OrphanChunk, ...] = ()
    """Stream chunks/closes seen before their open."""
    queued: tuple[QueuedMessage, ...] = ()
    """Typed messages waiting to be sent, oldest first."""
    open_ids: tuple[str, ...] = ()
    """Segments with ``open`` set (a handful), so nothing scans the transcript for them."""
    next_seq: int = 0
    typed_count: int = 0
    last_activity_sent_at: float | None = None
    debug: Debug = field(default_factory=Debug)
    user_turn: int = 0
    """The user turns ended so far (the last one's number; see :mod:`.answers`)."""
    user_turn_at: float | None = None
    """When the last user turn ended."""
    speech_pending: bool = False
    """The last user turn is speech whose final transcript has not arrived yet."""
    last_turn_spoken: bool = False
    """The last user turn was spoken (not typed)."""
    last_agent_line: str | None = None
    """The newest agent line (a late end of speech may bind it to a later turn)."""
    opening: Literal["none", "awaited", "speaking"] = "none"
    """The agent's opening after typed turns that left when it joined: ``awaited`` until its
    first line starts, ``speaking`` until it thinks or listens again (see :mod:`.answers`)."""
    lat: LatencyBook = field(default_factory=lambda: _NO_LATENCY_BOOK)
    """The latency bookkeeping (one slot: copied only when it changes)."""


@dataclass(frozen=True, slots=True)
class State:
    """Everything a front end shows, as one immutable snapshot.

    The transcript and the tool cards are kept in bounded :class:`Log` values
    (:attr:`segment_log`, :attr:`tool_log`): the newest :data:`MAX_LIVE_SEGMENTS` segments
    and :data:`MAX_LIVE_TOOLS` cards, older ones counted in :attr:`earlier_segments` and
    :attr:`earlier_tools`. So a long call does not make each input slower.
    """

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
    segment_log: Log[Segment] = field(default_factory=_segment_log)
    """The transcript (see :attr:`transcript` for it as a tuple)."""
    tool_log: Log[ToolCard] = field(default_factory=_tool_log)
    """The tool cards (see :attr:`tools` for them as a tuple)."""
    errors: tuple[ErrorEntry, ...] = ()
    notices: tuple[Notice, ...] = ()
    clock: Clock = field(default_factory=Clock)
    earlier_user_turns: int = 0
    """Of :attr:`earlier_segments`: the user's segments that had text when they dropped."""
    earlier_agent_turns: int = 0
    """Of :attr:`earlier_segments`: the agent's segments that had text when they dropped."""
    earlier_failed_tools: int = 0
    """Of :attr:`earlier_tools`: the cards that showed a failure when they dropped (a
    ``display_status`` other than running, completed or ok)."""
    latency: Latency = field(default_factory=Latency)
    """Heard latency per turn (see :mod:`fishtalk.core.conversation.latency`)."""
    reply_audio: tuple[ReplyAudioReport, ...] = ()
    """How each reply sounded, oldest first (see :mod:`.reply_audio`; the newest few)."""
    _internal: Internal = field(default_factory=Internal, repr=False)
    """The reducer's bookkeeping (not for front ends)."""

    @property
    def ended(self) -> bool:
        """Whether the session has ended (terminal)."""
        return self.status == "ended"

    @property
    def transcript(self) -> tuple[Segment, ...]:
        """The live transcript segments in first-seen order."""
        return self.segment_log.items()

    @property
    def tools(self) -> tuple[ToolCard, ...]:
        """The live tool cards in first-seen order."""
        return self.tool_log.items()

    @property
    def earlier_segments(self) -> int:
        """Older transcript segments no longer kept (only counted)."""
        return self.segment_log.dropped

    @property
    def earlier_tools(self) -> int:
        """Older tool cards no longer kept (only counted)."""
        return self.tool_log.dropped

    @property
    def queued(self) -> tuple[QueuedMessage, ...]:
        """Typed messages not sent yet, oldest first."""
        return self._internal.queued

    @property
    def debug(self) -> Debug:
        """Counters for a debug view (malformed, unknown, ignored inputs, dropped chunks)."""
        return self._internal.debug

    def segment(self, segment_id: str) -> Segment | None:
        """The transcript segment with this id, if any."""
        return self.segment_log.get(segment_id)

    def tool(self, call_id: str) -> ToolCard | None:
        """The tool card with this call id, if any."""
        return self.tool_log.get(call_id)

    def timeline(self) -> tuple[Segment | ToolCard, ...]:
        """Transcript segments and tool cards interleaved in conversation order."""
        items: list[Segment | ToolCard] = [*self.transcript, *self.tools]
        items.sort(key=lambda item: item.seq)
        return tuple(items)

    @property
    def speaking_segment(self) -> Segment | None:
        """The agent segment currently being spoken (open, not interrupted), if any."""
        found: Segment | None = None
        for segment_id in self._internal.open_ids:
            seg = self.segment_log.get(segment_id)
            if (
                seg is not None
                and seg.role == "agent"
                and seg.open
                and not seg.interrupted
                and (found is None or seg.seq > found.seq)
            ):
                found = seg
        return found


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
