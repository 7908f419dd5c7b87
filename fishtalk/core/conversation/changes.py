"""What changed between two states, as typed events: :func:`changes`.

A front end that renders incrementally (plain mode, a log of ``--events``, the Python API's
events) asks ``changes(previous, current)`` after each reduction instead of comparing whole
states itself. Each event is a frozen dataclass with a stable snake_case ``kind`` (the web
SDK's name where it has one) and a ``to_dict()`` that is plain JSON.

The cost is proportional to what changed, not to the conversation's length: the transcript
and the tool cards are compared block by block by identity (unchanged blocks are shared
between states), and errors and notices are bounded tuples whose new entries are at the end.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, ClassVar, Final, TypeAlias, TypeVar

from fishtalk.core.conversation.latency import InterruptTiming, Waterfall
from fishtalk.core.conversation.state import (
    LOG_CHUNK,
    ClientCall,
    ErrorEntry,
    Log,
    Mode,
    Notice,
    Segment,
    State,
    Status,
    ToolCard,
)

SCHEMA_VERSION: Final = 1
"""Bumped when an event's fields change incompatibly."""


def _json(value: object) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _json(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class _Event:
    kind: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """The event as plain JSON-able values, with its ``kind``."""
        out: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):
            out[f.name] = _json(getattr(self, f.name))
        return out


# --- connection and agent -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatusChanged(_Event):
    """``connecting -> connected <-> reconnecting -> ended`` (web SDK: statusChange)."""

    kind: ClassVar[str] = "status_change"
    status: Status
    previous: Status


@dataclass(frozen=True, slots=True)
class ModeChanged(_Event):
    """``listening | thinking | speaking`` (web SDK: modeChange)."""

    kind: ClassVar[str] = "mode_change"
    mode: Mode
    previous: Mode


@dataclass(frozen=True, slots=True)
class AgentStateChanged(_Event):
    """The agent published a new ``lk.agent.state`` (open set)."""

    kind: ClassVar[str] = "agent_state_change"
    agent_state: str
    previous: str | None


@dataclass(frozen=True, slots=True)
class MutedChanged(_Event):
    """The microphone was muted or unmuted."""

    kind: ClassVar[str] = "muted_change"
    muted: bool


@dataclass(frozen=True, slots=True)
class SpokenChanged(_Event):
    """Typed turns now ask for spoken replies, or not."""

    kind: ClassVar[str] = "spoken_change"
    spoken: bool


# --- transcript ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SegmentOpened(_Event):
    """A new transcript line (a user or agent stream began, or the user typed a message)."""

    kind: ClassVar[str] = "segment_opened"
    segment: Segment

    @property
    def answers_turn(self) -> int | None:
        """Agent lines: the user turn this line answers (None: the greeting or anything
        unprompted); see :attr:`Segment.answers_turn`."""
        return self.segment.answers_turn


@dataclass(frozen=True, slots=True)
class SegmentGrew(_Event):
    """Text was appended to a line (web SDK: agentResponseDelta for the agent)."""

    kind: ClassVar[str] = "segment_grew"
    segment: Segment
    delta: str


@dataclass(frozen=True, slots=True)
class InterimReplaced(_Event):
    """A user line's interim text was replaced by a new hypothesis (web SDK:
    userTranscript with ``final`` false)."""

    kind: ClassVar[str] = "interim_replaced"
    segment: Segment
    previous_text: str


@dataclass(frozen=True, slots=True)
class SegmentFinalised(_Event):
    """A line is final: the user's final transcript, or the agent finished speaking it
    (web SDK: userTranscript final / agentResponse)."""

    kind: ClassVar[str] = "segment_finalised"
    segment: Segment


@dataclass(frozen=True, slots=True)
class SegmentInterrupted(_Event):
    """The agent's line was cut short by an interrupt; what it says is what was spoken."""

    kind: ClassVar[str] = "segment_interrupted"
    segment: Segment


@dataclass(frozen=True, slots=True)
class MessageSent(_Event):
    """A typed message left for the agent (at once, or after waiting in the queue)."""

    kind: ClassVar[str] = "message_sent"
    segment: Segment


# --- tools, errors, notices, the end -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolCardAdded(_Event):
    """A tool call appeared (web SDK: toolCallStarted; a card may arrive already done)."""

    kind: ClassVar[str] = "tool_card_added"
    card: ToolCard

    @property
    def client_call(self) -> ClientCall | None:
        """The client tool call the agent asked this client to run, if this card is one."""
        return self.card.client

    @property
    def client_result(self) -> ClientCall | None:
        """The local outcome, if the card arrived with its client call already finished."""
        client = self.card.client
        return client if client is not None and client.status != "running" else None


@dataclass(frozen=True, slots=True)
class ToolCardChanged(_Event):
    """A tool card changed: its status (toolCallCompleted/Failed), input, or local run."""

    kind: ClassVar[str] = "tool_card_changed"
    card: ToolCard
    previous: ToolCard
    """The card as it was before."""

    @property
    def previous_status(self) -> str:
        """What the card showed before (``display_status``)."""
        return self.previous.display_status

    @property
    def client_call(self) -> ClientCall | None:
        """The client tool call the agent just asked this client to run (the card had
        none before), else None."""
        if self.card.client is not None and self.previous.client is None:
            return self.card.client
        return None

    @property
    def client_result(self) -> ClientCall | None:
        """The local outcome of a client tool call that just finished (``status``,
        ``result_preview``, ``error``), else None."""
        client, before = self.card.client, self.previous.client
        if client is None or client.status == "running":
            return None
        if before is not None and before.status != "running":
            return None
        return client


@dataclass(frozen=True, slots=True)
class ErrorAdded(_Event):
    """An error to show (web SDK: error)."""

    kind: ClassVar[str] = "error"
    error: ErrorEntry


@dataclass(frozen=True, slots=True)
class NoticeAdded(_Event):
    """An informational line; ``notice.kind`` says what it is about."""

    kind: ClassVar[str] = "notice"
    notice: Notice


@dataclass(frozen=True, slots=True)
class TurnLatency(_Event):
    """A turn's latency measurement closed (see :mod:`fishtalk.core.conversation.latency`):
    ``waterfall.heard`` is the heard latency, or ``waterfall.incomplete`` says why there is
    none. ``to_dict()`` carries the waterfall as :meth:`Waterfall.to_dict` gives it."""

    kind: ClassVar[str] = "turn_latency"
    waterfall: Waterfall

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "waterfall": self.waterfall.to_dict()}


@dataclass(frozen=True, slots=True)
class InterruptLatency(_Event):
    """An interrupt's timing closed: key press to the speaker silent (``local_flush``)
    and to the agent's audio stopping on the wire (``wire_stop``)."""

    kind: ClassVar[str] = "interrupt_latency"
    interrupt: InterruptTiming

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "interrupt": self.interrupt.to_dict()}


@dataclass(frozen=True, slots=True)
class Ended(_Event):
    """The session ended (web SDK: disconnect{reason}). Always the last event."""

    kind: ClassVar[str] = "ended"
    reason: str


Change: TypeAlias = (
    StatusChanged
    | ModeChanged
    | AgentStateChanged
    | MutedChanged
    | SpokenChanged
    | SegmentOpened
    | SegmentGrew
    | InterimReplaced
    | SegmentFinalised
    | SegmentInterrupted
    | MessageSent
    | ToolCardAdded
    | ToolCardChanged
    | ErrorAdded
    | NoticeAdded
    | TurnLatency
    | InterruptLatency
    | Ended
)
"""Every event :func:`changes` yields."""

CHANGE_TYPES: Final = (
    StatusChanged,
    ModeChanged,
    AgentStateChanged,
    MutedChanged,
    SpokenChanged,
    SegmentOpened,
    SegmentGrew,
    InterimReplaced,
    SegmentFinalised,
    SegmentInterrupted,
    MessageSent,
    ToolCardAdded,
    ToolCardChanged,
    ErrorAdded,
    NoticeAdded,
    TurnLatency,
    InterruptLatency,
    Ended,
)

_T = TypeVar("_T")


def changes(previous: State, current: State) -> list[Change]:
    """What happened between ``previous`` and ``current`` (usually successive states), in
    order: connection and agent first, then notices, transcript lines and tool cards in
    conversation order, the mode they led to, closed latency measurements, errors, and
    ``ended`` last."""
    if previous is current:
        return []
    out: list[Change] = []
    if current.status != previous.status and current.status != "ended":
        out.append(StatusChanged(current.status, previous.status))
    if current.agent_state != previous.agent_state and current.agent_state is not None:
        out.append(AgentStateChanged(current.agent_state, previous.agent_state))
    if current.muted != previous.muted:
        out.append(MutedChanged(current.muted))
    if current.spoken != previous.spoken:
        out.append(SpokenChanged(current.spoken))
    out += [NoticeAdded(n) for n in _appended(previous.notices, current.notices)]
    timeline: list[tuple[int, int, Change]] = []
    for old_seg, seg in _changed(previous.segment_log, current.segment_log):
        for i, event in enumerate(_segment_changes(old_seg, seg)):
            timeline.append((seg.seq, i, event))
    for old_card, card in _changed(previous.tool_log, current.tool_log):
        if old_card is None:
            timeline.append((card.seq, 0, ToolCardAdded(card)))
        else:
            timeline.append((card.seq, 0, ToolCardChanged(card, old_card)))
    if len(timeline) > 1:
        timeline.sort(key=lambda entry: (entry[0], entry[1]))
    out += [event for _, _, event in timeline]
    if current.mode != previous.mode:
        # After the lines: the agent speaks because its line opened, and so on.
        out.append(ModeChanged(current.mode, previous.mode))
    latency, before = current.latency, previous.latency
    if latency is not before:
        out += [TurnLatency(w) for w in _appended(before.turns, latency.turns)]
        out += [InterruptLatency(i) for i in _appended(before.interrupts, latency.interrupts)]
    out += [ErrorAdded(e) for e in _appended(previous.errors, current.errors)]
    if current.ended and not previous.ended:
        out.append(StatusChanged(current.status, previous.status))
        out.append(Ended(current.end_reason or ""))
    return out


def _segment_changes(old: Segment | None, seg: Segment) -> Iterator[Change]:
    if old is None:
        yield SegmentOpened(seg)
        if seg.typed and not seg.queued:
            yield MessageSent(seg)
        if seg.final and not seg.open and not seg.typed:
            yield SegmentFinalised(seg)
        return
    if seg.text != old.text:
        if seg.text.startswith(old.text):
            yield SegmentGrew(seg, seg.text[len(old.text) :])
        else:
            yield InterimReplaced(seg, old.text)
    if seg.interrupted and not old.interrupted:
        yield SegmentInterrupted(seg)
    if seg.typed and old.queued and not seg.queued:
        yield MessageSent(seg)
    if seg.final and not old.final:
        yield SegmentFinalised(seg)


def _changed(previous: Log[_T], current: Log[_T]) -> Iterator[tuple[_T | None, _T]]:
    """Pairs ``(old or None, new)`` for items of ``current`` that are not the very same
    object at the same position in ``previous``. Blocks shared by both logs are skipped
    whole, so this costs one identity check per block plus the changed blocks' items."""
    if previous is current:
        return
    old_blocks = previous.blocks
    new_blocks = current.blocks
    # Both logs start their blocks at multiples of the block size (whole blocks are
    # dropped), so block k of ``current`` lines up with block k + shift of ``previous``.
    shift = (current.dropped - previous.dropped) // LOG_CHUNK
    for k, block in enumerate(new_blocks):
        j = k + shift
        old = old_blocks[j] if 0 <= j < len(old_blocks) else ()
        if old is block:
            continue
        for i, item in enumerate(block):
            before = old[i] if i < len(old) else None
            if before is item:
                continue
            if before is not None and current.key(before) != current.key(item):
                before = None  # not the same lineage: no common history to compare with
            yield before, item


def _appended(previous: tuple[_T, ...], current: tuple[_T, ...]) -> tuple[_T, ...]:
    """The entries added at the end of a bounded tuple (older ones may have dropped off)."""
    if previous is current or not current:
        return ()
    if not previous:
        return current
    last = previous[-1]
    for i in range(len(current) - 1, -1, -1):
        if current[i] is last:
            return current[i + 1 :]
    return current


__all__ = [
    "CHANGE_TYPES",
    "SCHEMA_VERSION",
    "AgentStateChanged",
    "Change",
    "Ended",
    "ErrorAdded",
    "InterimReplaced",
    "InterruptLatency",
    "MessageSent",
    "ModeChanged",
    "MutedChanged",
    "NoticeAdded",
    "SegmentFinalised",
    "SegmentGrew",
    "SegmentInterrupted",
    "SegmentOpened",
    "SpokenChanged",
    "StatusChanged",
    "ToolCardAdded",
    "ToolCardChanged",
    "TurnLatency",
    "changes",
]
