"""What changed between two states, as typed events: :func:`changes`.

A front end that renders incrementally (plain mode, a log of ``--events``, the Python API's
events) asks ``changes(previous, current)`` after each reduction instead of comparing whole
states itself. Each event is a frozen dataclass with a ``type`` field (a stable snake_case
literal: the web SDK's name where it has one; ``kind`` is the same name on the class) and
an ``at`` field (seconds on the session's monotonic clock: the time of the reducer input
that caused it). ``to_dict()``/``to_json()`` give plain JSON and :func:`event_from_dict` /
:func:`event_from_json` read it back to an equal event.

The cost is proportional to what changed, not to the conversation's length: the transcript
and the tool cards are compared block by block by identity (unchanged blocks are shared
between states), and errors and notices are bounded tuples whose new entries are at the end.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import KW_ONLY, dataclass, fields, is_dataclass
from typing import Any, ClassVar, Final, Literal, TypeAlias, TypeVar

from fishtalk.core.conversation.latency import InterruptTiming, Waterfall
from fishtalk.core.conversation.reply_audio import ReplyAudioReport
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

SCHEMA_VERSION: Final = 2
"""Bumped when an event's fields change incompatibly (2: every event has ``type`` and
``at``; a latency event's JSON also carries the raw seconds it is read back from)."""


def _json(value: object) -> Any:
    if isinstance(value, Waterfall | InterruptTiming):
        # Their own to_dict() (milliseconds, derived figures), plus the raw fields it
        # leaves out, so the event reads back equal.
        raw = {f.name: getattr(value, f.name) for f in fields(value)}
        return {**value.to_dict(), **raw}
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _json(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    return value


_NESTED: Final[Mapping[str, type[Any]]] = {
    cls.__name__: cls
    for cls in (
        Segment,
        ToolCard,
        ClientCall,
        ErrorEntry,
        Notice,
        Waterfall,
        InterruptTiming,
        ReplyAudioReport,
    )
}
"""The dataclasses an event's fields hold (by the name in their annotation)."""


def _legacy(cls: type[Any], data: Mapping[str, Any]) -> Mapping[str, Any]:
    """Latency values written before schema 2 carried milliseconds only."""
    ms: dict[str, tuple[str, str | None]] = {}
    if cls is Waterfall:
        ms = {"output_latency": ("output_latency_ms", None), "rtt": ("rtt_ms", None)}
    elif cls is InterruptTiming:
        ms = {
            "flushed_at": ("local_flush_ms", "pressed_at"),
            "wire_stopped_at": ("wire_stop_ms", "pressed_at"),
        }
    out = dict(data)
    for name, (key, base) in ms.items():
        value = data.get(key)
        if name not in data and isinstance(value, int | float):
            out[name] = value / 1000.0 + (float(data.get(base) or 0.0) if base else 0.0)
    return out


def _build(cls: type[Any], data: Mapping[str, Any]) -> Any:
    """``cls`` (a dataclass) from its JSON form; unknown keys are ignored."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
    data = _legacy(cls, data)
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if f.name == "type" or f.name not in data:
            continue
        value = data[f.name]
        nested = _NESTED.get(str(f.type).removesuffix(" | None"))
        if nested is not None and value is not None:
            value = _build(nested, value)
        elif f.name == "at" and isinstance(value, int | float):
            value = float(value)
        kwargs[f.name] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ValueError(f"{cls.__name__}: {exc}") from None


@dataclass(frozen=True, slots=True)
class _Event:
    kind: ClassVar[str] = ""
    """The event's ``type`` name, on the class (what ``session.on`` and ``--events``
    filters take)."""
    _: KW_ONLY
    at: float = 0.0
    """When it happened: seconds on the session's monotonic clock (the time of the reducer
    input that caused it)."""

    def __init_subclass__(cls) -> None:
        # ``kind`` is the default of the subclass's ``type`` field (dataclass(slots=True)
        # builds the class twice; the second time ``kind`` is already in its namespace).
        default = cls.__dict__.get("type")
        if isinstance(default, str):
            cls.kind = default

    def to_dict(self) -> dict[str, Any]:
        """The event as plain JSON-able values: ``type``, ``kind`` (the same name, as
        before schema 2), ``at``, then its fields."""
        out: dict[str, Any] = {"type": self.kind, "kind": self.kind, "at": self.at}
        for f in fields(self):
            if f.name not in out:
                out[f.name] = _json(getattr(self, f.name))
        return out

    def to_json(self) -> str:
        """:meth:`to_dict` as one line of JSON (non-ASCII kept)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


# --- connection and agent -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatusChanged(_Event):
    """``connecting -> connected <-> reconnecting -> ended`` (web SDK: statusChange)."""

    status: Status
    previous: Status
    _: KW_ONLY
    type: Literal["status_change"] = "status_change"


@dataclass(frozen=True, slots=True)
class ModeChanged(_Event):
    """``listening | thinking | speaking`` (web SDK: modeChange)."""

    mode: Mode
    previous: Mode
    _: KW_ONLY
    type: Literal["mode_change"] = "mode_change"


@dataclass(frozen=True, slots=True)
class AgentStateChanged(_Event):
    """The agent published a new ``lk.agent.state`` (open set)."""

    agent_state: str
    previous: str | None
    _: KW_ONLY
    type: Literal["agent_state_change"] = "agent_state_change"


@dataclass(frozen=True, slots=True)
class MutedChanged(_Event):
    """The microphone was muted or unmuted."""

    muted: bool
    _: KW_ONLY
    type: Literal["muted_change"] = "muted_change"


@dataclass(frozen=True, slots=True)
class SpokenChanged(_Event):
    """Typed turns now ask for spoken replies, or not."""

    spoken: bool
    _: KW_ONLY
    type: Literal["spoken_change"] = "spoken_change"


# --- transcript ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SegmentOpened(_Event):
    """A new transcript line (a user or agent stream began, or the user typed a message)."""

    segment: Segment
    _: KW_ONLY
    type: Literal["segment_opened"] = "segment_opened"

    @property
    def answers_turn(self) -> int | None:
        """Agent lines: the user turn this line answers (None: the greeting or anything
        unprompted); see :attr:`Segment.answers_turn`."""
        return self.segment.answers_turn


@dataclass(frozen=True, slots=True)
class SegmentGrew(_Event):
    """Text was appended to a line (web SDK: agentResponseDelta for the agent)."""

    segment: Segment
    delta: str
    _: KW_ONLY
    type: Literal["segment_grew"] = "segment_grew"


@dataclass(frozen=True, slots=True)
class InterimReplaced(_Event):
    """A user line's interim text was replaced by a new hypothesis (web SDK:
    userTranscript with ``final`` false)."""

    segment: Segment
    previous_text: str
    _: KW_ONLY
    type: Literal["interim_replaced"] = "interim_replaced"


@dataclass(frozen=True, slots=True)
class SegmentFinalised(_Event):
    """A line is final: the user's final transcript, or the agent finished speaking it
    (web SDK: userTranscript final / agentResponse)."""

    segment: Segment
    _: KW_ONLY
    type: Literal["segment_finalised"] = "segment_finalised"


@dataclass(frozen=True, slots=True)
class SegmentInterrupted(_Event):
    """The agent's line was cut short by an interrupt; what it says is what was spoken."""

    segment: Segment
    _: KW_ONLY
    type: Literal["segment_interrupted"] = "segment_interrupted"


@dataclass(frozen=True, slots=True)
class MessageSent(_Event):
    """A typed message left for the agent (at once, or after waiting in the queue)."""

    segment: Segment
    _: KW_ONLY
    type: Literal["message_sent"] = "message_sent"


# --- tools, errors, notices, the end -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolCardAdded(_Event):
    """A tool call appeared (web SDK: toolCallStarted; a card may arrive already done)."""

    card: ToolCard
    _: KW_ONLY
    type: Literal["tool_card_added"] = "tool_card_added"

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

    card: ToolCard
    previous: ToolCard
    """The card as it was before."""
    _: KW_ONLY
    type: Literal["tool_card_changed"] = "tool_card_changed"

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

    error: ErrorEntry
    _: KW_ONLY
    type: Literal["error"] = "error"


@dataclass(frozen=True, slots=True)
class NoticeAdded(_Event):
    """An informational line; ``notice.kind`` says what it is about."""

    notice: Notice
    _: KW_ONLY
    type: Literal["notice"] = "notice"


@dataclass(frozen=True, slots=True)
class TurnLatency(_Event):
    """A turn's latency measurement closed (see :mod:`fishtalk.core.conversation.latency`):
    ``waterfall.heard`` is the heard latency, or ``waterfall.incomplete`` says why there is
    none. ``to_dict()`` carries the waterfall as :meth:`Waterfall.to_dict` gives it, plus
    its raw ``output_latency`` and ``rtt`` (seconds)."""

    waterfall: Waterfall
    _: KW_ONLY
    type: Literal["turn_latency"] = "turn_latency"


@dataclass(frozen=True, slots=True)
class InterruptLatency(_Event):
    """An interrupt's timing closed: key press to the speaker silent (``local_flush``)
    and to the agent's audio stopping on the wire (``wire_stop``)."""

    interrupt: InterruptTiming
    _: KW_ONLY
    type: Literal["interrupt_latency"] = "interrupt_latency"


@dataclass(frozen=True, slots=True)
class ReplyAudio(_Event):
    """How a reply sounded, measured once its audio was over (issue 29): ``report`` is a
    :class:`~fishtalk.core.conversation.reply_audio.ReplyAudioReport`."""

    report: ReplyAudioReport
    _: KW_ONLY
    type: Literal["reply_audio"] = "reply_audio"


@dataclass(frozen=True, slots=True)
class Ended(_Event):
    """The session ended (web SDK: disconnect{reason}). Always the last event."""

    reason: str
    _: KW_ONLY
    type: Literal["ended"] = "ended"


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
    | ReplyAudio
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
    ReplyAudio,
    Ended,
)

_BY_TYPE: Final[Mapping[str, type[Change]]] = {t.kind: t for t in CHANGE_TYPES}


def event_from_dict(data: Mapping[str, Any]) -> Change:
    """The event :meth:`~_Event.to_dict` gave ``data`` (ValueError if it is none). Reads
    schema 1 too: ``kind`` instead of ``type``, no ``at`` (0.0), latency in milliseconds."""
    name = data.get("type")
    if name not in _BY_TYPE:
        name = data.get("kind")
    cls = _BY_TYPE.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"not an event: type {data.get('type')!r}")
    event: Change = _build(cls, data)
    return event


def event_from_json(text: str) -> Change:
    """The event :meth:`~_Event.to_json` gave ``text`` (ValueError if it is none)."""
    data = json.loads(text)
    if not isinstance(data, Mapping):
        raise ValueError("not an event: not a JSON object")
    return event_from_dict(data)


_T = TypeVar("_T")


def changes(previous: State, current: State, *, at: float | None = None) -> list[Change]:
    """What happened between ``previous`` and ``current`` (usually successive states), in
    order: connection and agent first, then notices, transcript lines and tool cards in
    conversation order, the mode they led to, closed latency measurements, errors, and
    ``ended`` last. Each event's ``at`` is ``at``, by default the session clock of
    ``current`` (the latest reducer input's time, :attr:`Clock.now`)."""
    if previous is current:
        return []
    when = current.clock.now if at is None else at
    out: list[Change] = []
    if current.status != previous.status and current.status != "ended":
        out.append(StatusChanged(current.status, previous.status, at=when))
    if current.agent_state != previous.agent_state and current.agent_state is not None:
        out.append(AgentStateChanged(current.agent_state, previous.agent_state, at=when))
    if current.muted != previous.muted:
        out.append(MutedChanged(current.muted, at=when))
    if current.spoken != previous.spoken:
        out.append(SpokenChanged(current.spoken, at=when))
    out += [NoticeAdded(n, at=when) for n in _appended(previous.notices, current.notices)]
    timeline: list[tuple[int, int, Change]] = []
    for old_seg, seg in _changed(previous.segment_log, current.segment_log):
        for i, event in enumerate(_segment_changes(old_seg, seg, when)):
            timeline.append((seg.seq, i, event))
    for old_card, card in _changed(previous.tool_log, current.tool_log):
        if old_card is None:
            timeline.append((card.seq, 0, ToolCardAdded(card, at=when)))
        else:
            timeline.append((card.seq, 0, ToolCardChanged(card, old_card, at=when)))
    if len(timeline) > 1:
        timeline.sort(key=lambda entry: (entry[0], entry[1]))
    out += [event for _, _, event in timeline]
    if current.mode != previous.mode:
        # After the lines: the agent speaks because its line opened, and so on.
        out.append(ModeChanged(current.mode, previous.mode, at=when))
    latency, before = current.latency, previous.latency
    if latency is not before:
        out += [TurnLatency(w, at=when) for w in _appended(before.turns, latency.turns)]
        out += [
            InterruptLatency(i, at=when) for i in _appended(before.interrupts, latency.interrupts)
        ]
    out += [ReplyAudio(a, at=when) for a in _appended(previous.reply_audio, current.reply_audio)]
    out += [ErrorAdded(e, at=when) for e in _appended(previous.errors, current.errors)]
    if current.ended and not previous.ended:
        out.append(StatusChanged(current.status, previous.status, at=when))
        out.append(Ended(current.end_reason or "", at=when))
    return out


def _segment_changes(old: Segment | None, seg: Segment, when: float) -> Iterator[Change]:
    if old is None:
        yield SegmentOpened(seg, at=when)
        if seg.typed and not seg.queued:
            yield MessageSent(seg, at=when)
        if seg.final and not seg.open and not seg.typed:
            yield SegmentFinalised(seg, at=when)
        return
    if seg.text != old.text:
        if seg.text.startswith(old.text):
            yield SegmentGrew(seg, seg.text[len(old.text) :], at=when)
        else:
            yield InterimReplaced(seg, old.text, at=when)
    if seg.interrupted and not old.interrupted:
        yield SegmentInterrupted(seg, at=when)
    if seg.typed and old.queued and not seg.queued:
        yield MessageSent(seg, at=when)
    if seg.final and not old.final:
        yield SegmentFinalised(seg, at=when)


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
    "ReplyAudio",
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
    "event_from_dict",
    "event_from_json",
]
