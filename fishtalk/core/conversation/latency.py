"""Heard latency: what one turn took, as the user experienced it, on one monotonic clock.

Every figure is measured at the client, on the session's clock (monotonic seconds, the
``at`` of every input). A turn's :class:`Waterfall` runs from the end of the user's turn
to the moment the agent's first audible sample left the speaker:

* **user turn ended**: a typed turn's publish, or for a spoken turn the end of speech at
  the microphone (the capture-side voice-activity detector), together with the arrival of
  the user's final transcript;
* **the agent's side**: its ``thinking`` state, its first transcript chunk, the first
  non-silent agent audio frame received;
* **at the speaker**: when that frame was handed to the output device, plus the device's
  reported output latency. That sum is the *heard* time.

The session feeds :class:`LatencyMark` inputs for what only IO can see (publishes, the
detector, frames, the device); the reducer adds what it sees itself (agent state,
transcript chunks, the user's final transcript, the interrupt key). Turns whose
measurement is incomplete carry a reason (:attr:`Waterfall.incomplete`) instead of a
number. Nothing here imports asyncio, livekit or textual.

How the reducer builds a waterfall
----------------------------------

**A turn opens** (:attr:`Latency.open`) when the user's turn ends:

* *typed*: when the reducer sends the message (at once, or when the queue flushes);
  the ``typed_sent`` mark, when the session reports the publish completed, then moves
  :attr:`Waterfall.user_ended_at` to that moment (never past an agent reaction already
  seen). ``typed_sent`` never opens a turn by itself;
* *spoken*: on a ``speech_ended`` mark. The user's final transcript is the turn's
  :attr:`~Waterfall.user_final_at` (the latest one before the reply begins; one that
  arrived before the mark, after that end of speech, is adopted);
* *unprompted*: the agent's reply begins (its first transcript chunk, or an
  ``audio_received`` mark) while no turn is open, and either no turn was ever opened in
  the call (its greeting) or the user said something (a final transcript, after the last
  measured reply began) that no end of speech was seen for. More segments of a reply
  already measured open nothing.

**The user's turn goes on** while the agent has not answered: another user end (a pause
in speech, a second message) before the reply begins moves ``user_ended_at`` to the
latest end (and forgets a ``thinking`` seen before it). An end of speech stamped before
an *unprompted* turn's reply began (the detector reports late) becomes that turn's end.

**Every reply belongs to the turn that caused it** (issue 24, :mod:`.answers`): an agent
line answers the last user turn that had ended when it started (``Segment.answers_turn``),
and turn N is numbered by, and bound to, the first line that answers N, never to a line
already speaking (the greeting the user typed over). A user final transcript that ended
a turn of its own before the reply began carries the open turn on to it.

**The agent's side**: ``thinking_at`` is when the agent state turned ``thinking`` (after
the user's end, before the reply); ``first_text_at``/``segment_id`` come from the first
agent transcript chunk of the first line that answers the turn (an *unprompted* turn: of
a line that began after its start); the audio marks fill ``audio_received_at``,
``audio_handed_at`` and ``output_latency`` (the first of each, never before the user's
end, never while a line that answers another turn is speaking; ``audio_handed_at`` is
never before ``audio_received_at``). ``rtt`` marks update :attr:`Latency.rtt`; a turn keeps the
latest value known when it closes.

**A turn closes** (moves to :attr:`Latency.turns`, never to change again) when:

* its reply is over: the segment that gave the first text closes, and the first audio
  frame received (if any) has been handed to the device;
* the next user turn ends after the reply began;
* the user interrupts (the ``Interrupt`` input) after the reply began (an interrupt
  before that leaves the turn open: if the agent drops its answer, the next user end
  carries the turn on);
* the call ends.

**Why a closed turn has no heard figure** (:attr:`Waterfall.incomplete`), first match:

``no user turn``
    an *unprompted* turn (always: there is no user end to measure from);
``text-only``
    a typed turn that asked for a text-only reply (``State.spoken`` off), unless audio
    was heard after all;
``interrupted``
    the user interrupted, or spoke/typed over the reply, before it was heard;
``not heard``
    audio arrived but was not handed to the device before the turn closed;
``ended``
    the call ended before the reply began or was heard;
``no audio``
    the reply was over without any audio received.

**Interrupts**: the ``Interrupt`` input, when there is speech to stop (the agent is
speaking, says it is, or the open turn's reply began), opens an :class:`InterruptTiming`
(:attr:`Latency.open_interrupt`, closing the previous one); the ``interrupt_flushed`` and
``interrupt_wire_stopped`` marks fill it; it closes (into :attr:`Latency.interrupts`)
when both arrived, at the next interrupt or user turn, or when the call ends.

Marks that fit nowhere (no turn open, already set, earlier than the turn, a value that is
negative or not finite) are ignored and counted in ``State.debug.ignored_inputs``.
The change events :class:`~fishtalk.core.conversation.TurnLatency` and
:class:`~fishtalk.core.conversation.InterruptLatency` report each closed turn and interrupt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, get_args

MarkKind: TypeAlias = Literal[
    "typed_sent",
    "speech_ended",
    "audio_received",
    "audio_heard",
    "rtt",
    "interrupt_flushed",
    "interrupt_wire_stopped",
]
"""What a :class:`LatencyMark` records:

``typed_sent``
    a typed turn (``user.text``) was published: the typed turn's end.
``speech_ended``
    the capture-side detector saw the user's speech end (``at`` is the capture time of the
    last voiced frame plus nothing: the hangover is not counted).
``audio_received``
    the first non-silent agent audio frame of a reply arrived from the room.
``audio_heard``
    that frame was handed to the output device (``at``); ``value`` is the device's
    reported output latency in seconds, so ``at + value`` is when it was heard.
``rtt``
    a network round trip from the SDK's RTC stats; ``value`` in seconds.
``interrupt_flushed``
    after an interrupt, the last agent sample left the speaker (the local flush), ``at``
    already includes the output latency.
``interrupt_wire_stopped``
    after an interrupt, the last non-silent agent frame arrived from the room.
"""

MARK_KINDS: Final[tuple[MarkKind, ...]] = get_args(MarkKind)

MAX_TURNS: Final = 1000
"""Closed turns kept in :attr:`Latency.turns` (older ones are counted, not kept)."""
MAX_INTERRUPTS: Final = 1000
"""Closed interrupts kept in :attr:`Latency.interrupts`."""

TurnKind: TypeAlias = Literal["typed", "spoken", "unprompted"]
"""How the user's turn ended: ``typed`` (a publish), ``spoken`` (end of speech), or
``unprompted`` (no user turn: the agent spoke first, e.g. its greeting)."""

Incomplete: TypeAlias = Literal[
    "text-only", "no audio", "no user turn", "interrupted", "ended", "not heard"
]
"""Why a turn has no heard figure: ``text-only`` (no audio path at all), ``no audio`` (the
reply came without audio), ``no user turn`` (the agent spoke unprompted), ``interrupted``
(cut off before it was heard), ``ended`` (the call ended first), ``not heard`` (audio
arrived but never reached the device)."""


@dataclass(frozen=True, slots=True)
class LatencyMark:
    """Input: something only IO can see happened at ``at`` (see :data:`MarkKind`)."""

    kind: MarkKind
    at: float
    value: float | None = None


@dataclass(frozen=True, slots=True)
class Waterfall:
    """One turn's marks (session clock seconds; ``None`` = not seen) and what follows."""

    turn: int
    """The number of the user turn this answers, counting the user's turns in this call
    from 1 (what a person counts as "my third message"; :attr:`Segment.turn`); of two
    user turns before one reply, the last. An *unprompted* turn carries the number of the
    user turn before it (0 for the greeting). Final once closed."""
    kind: TurnKind
    user_ended_at: float
    """Typed: the publish. Spoken: the end of speech at the microphone."""
    segment_id: str | None = None
    """The agent's reply segment (where a front end puts the badge)."""
    user_final_at: float | None = None
    """Spoken turns: the user's final transcript arrived."""
    thinking_at: float | None = None
    first_text_at: float | None = None
    audio_received_at: float | None = None
    audio_handed_at: float | None = None
    output_latency: float | None = None
    """The output device's reported latency, seconds."""
    rtt: float | None = None
    """The latest network round trip known when the turn closed, seconds."""
    incomplete: Incomplete | None = None
    """Why there is no heard figure (``None`` when :attr:`heard` is a number)."""

    @property
    def heard_at(self) -> float | None:
        """When the first audible sample left the speaker."""
        if self.audio_handed_at is None or self.output_latency is None:
            return None
        return self.audio_handed_at + self.output_latency

    @property
    def heard(self) -> float | None:
        """Heard latency: end of the user's turn to the agent heard, seconds (``None``
        while not known, and always for a turn marked :attr:`incomplete`)."""
        heard_at = self.heard_at
        if heard_at is None or self.incomplete is not None:
            return None
        return heard_at - self.user_ended_at

    @property
    def first_text(self) -> float | None:
        """End of the user's turn to the agent's first transcript chunk, seconds."""
        return None if self.first_text_at is None else self.first_text_at - self.user_ended_at

    @property
    def client_share(self) -> float | None:
        """The client's own share: first audio frame received to handed to the device."""
        if self.audio_received_at is None or self.audio_handed_at is None:
            return None
        return self.audio_handed_at - self.audio_received_at

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: every mark, relative figures in milliseconds, and why incomplete."""
        return {
            "turn": self.turn,
            "kind": self.kind,
            "segment_id": self.segment_id,
            "user_ended_at": self.user_ended_at,
            "user_final_at": self.user_final_at,
            "thinking_at": self.thinking_at,
            "first_text_at": self.first_text_at,
            "audio_received_at": self.audio_received_at,
            "audio_handed_at": self.audio_handed_at,
            "output_latency_ms": _ms(self.output_latency),
            "heard_ms": _ms(self.heard),
            "first_text_ms": _ms(self.first_text),
            "client_share_ms": _ms(self.client_share),
            "rtt_ms": _ms(self.rtt),
            "incomplete": self.incomplete,
        }


@dataclass(frozen=True, slots=True)
class InterruptTiming:
    """One interrupt: the key press and when the agent's audio stopped."""

    pressed_at: float
    flushed_at: float | None = None
    """The last agent sample left the speaker (output latency included)."""
    wire_stopped_at: float | None = None
    """The last non-silent agent frame arrived from the room."""

    @property
    def local_flush(self) -> float | None:
        """Key press to the last agent sample leaving the speaker, seconds."""
        return None if self.flushed_at is None else self.flushed_at - self.pressed_at

    @property
    def wire_stop(self) -> float | None:
        """Key press to the agent's audio stopping on the wire, seconds."""
        return None if self.wire_stopped_at is None else self.wire_stopped_at - self.pressed_at

    def to_dict(self) -> dict[str, object]:
        return {
            "pressed_at": self.pressed_at,
            "local_flush_ms": _ms(self.local_flush),
            "wire_stop_ms": _ms(self.wire_stop),
        }


@dataclass(frozen=True, slots=True)
class Latency:
    """The latency part of :class:`~fishtalk.core.conversation.State`."""

    open: Waterfall | None = None
    """The turn being measured now."""
    turns: tuple[Waterfall, ...] = ()
    """Closed turns, oldest first (the newest :data:`MAX_TURNS`)."""
    earlier_turns: int = 0
    """Closed turns no longer kept in :attr:`turns` (only counted)."""
    user_turns: int = 0
    """Closed turns that answered the user (not *unprompted*), kept or not: the last
    :attr:`Waterfall.turn` given."""
    interrupts: tuple[InterruptTiming, ...] = ()
    """Closed interrupts, oldest first (the newest :data:`MAX_INTERRUPTS`)."""
    open_interrupt: InterruptTiming | None = None
    """The interrupt whose marks are still awaited."""
    rtt: float | None = None
    """The latest network round trip, seconds."""

    @property
    def awaiting_audio(self) -> bool:
        """A turn is open and its first agent audio frame was not seen yet: the audio path
        reports the next non-silent frame it receives (``audio_received``)."""
        w = self.open
        return w is not None and w.audio_received_at is None

    @property
    def awaiting_heard(self) -> bool:
        """A turn is open and its first agent audio was not handed to the device yet: the
        audio path reports that moment (``audio_heard``)."""
        w = self.open
        return w is not None and w.audio_handed_at is None

    def for_segment(self, segment_id: str) -> Waterfall | None:
        """The turn (open or closed) whose reply began with this agent segment, if any:
        where a front end puts a badge. Newest first, so cheap for recent lines."""
        w = self.open
        if w is not None and w.segment_id == segment_id:
            return w
        for turn in reversed(self.turns):
            if turn.segment_id == segment_id:
                return turn
        return None

    def summary(self, last: int | None = None) -> LatencySummary:
        """:func:`summarize` over the closed turns, or only the ``last`` N (a rolling
        figure, e.g. for a status bar)."""
        turns = self.turns if last is None else self.turns[-last:] if last > 0 else ()
        return summarize(turns)


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Heard latency over a call: p50, p95 and the worst turn (``None`` with no figures)."""

    turns: int
    """Turns closed that answered the user (an *unprompted* turn, such as the greeting,
    has nothing to measure from and is not counted)."""
    measured: int
    """Of those, turns with a heard figure."""
    p50: float | None
    p95: float | None
    worst: Waterfall | None

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: counts, p50/p95 in milliseconds, and the worst turn's number."""
        worst = self.worst
        return {
            "turns": self.turns,
            "measured": self.measured,
            "p50_ms": _ms(self.p50),
            "p95_ms": _ms(self.p95),
            "worst_ms": _ms(worst.heard) if worst is not None else None,
            "worst_turn": worst.turn if worst is not None else None,
        }


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) of ``values`` by the nearest-rank method, or ``None``."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def summarize(turns: Sequence[Waterfall]) -> LatencySummary:
    """p50, p95 and the worst of the turns' heard figures (unprompted turns left out)."""
    turns = [t for t in turns if t.kind != "unprompted"]
    measured = [t for t in turns if t.heard is not None]
    heard = [t.heard for t in measured if t.heard is not None]
    worst = max(measured, key=lambda t: t.heard or 0.0) if measured else None
    return LatencySummary(
        turns=len(turns),
        measured=len(measured),
        p50=percentile(heard, 0.5),
        p95=percentile(heard, 0.95),
        worst=worst,
    )


def metrics(latency: Latency) -> dict[str, object]:
    """Everything measured in a call as JSON-ready data (what ``--metrics-json`` writes):
    every closed turn's waterfall, every interrupt, the summary and the last round trip."""
    return {
        "turns": [t.to_dict() for t in latency.turns],
        "earlier_turns": latency.earlier_turns,
        "interrupts": [i.to_dict() for i in latency.interrupts],
        "summary": summarize(latency.turns).to_dict(),
        "rtt_ms": _ms(latency.rtt),
    }


# --- wording: the one place that says latency in words ------------------------------------

MEASURING: Final = "…"
"""The badge of a turn still being measured."""


def _secs(seconds: float) -> str:
    return f"{seconds:.2f} s"


def figure(seconds: float) -> str:
    """A measure in words, as every front end and export writes it: ``0.43 s``."""
    return _secs(seconds)


def measure_words(first_text: float | None, heard: float | None) -> list[str]:
    """A reply's measures in words, as every transcript writes them (export, diff, reports):
    ``first text 0.43 s`` (:attr:`Waterfall.first_text`) and ``heard 0.82 s``
    (:attr:`Waterfall.heard`), each left out when not measured."""
    words = []
    if first_text is not None:
        words.append(f"first text {_secs(first_text)}")
    if heard is not None:
        words.append(f"heard {_secs(heard)}")
    return words


def _millis(seconds: float) -> str:
    return f"{seconds * 1000.0:.0f} ms"


def badge(w: Waterfall) -> str:
    """A short label for a turn: its heard latency (``"0.82 s"``), else why there is none
    (``"text-only"``, ``"no audio"``...), else :data:`MEASURING` while still open."""
    heard = w.heard
    if heard is not None:
        return _secs(heard)
    if w.incomplete is not None:
        return w.incomplete
    return MEASURING


def note(w: Waterfall) -> str:
    """One line for plain mode, e.g. ``latency: heard 0.82 s (first text 0.31 s, client
    12 ms, rtt 40 ms)`` or ``latency: not measured — text-only (first text 0.31 s)``."""
    parts = []
    if w.first_text is not None:
        parts.append(f"first text {_secs(w.first_text)}")
    heard = w.heard
    if heard is not None:
        if w.client_share is not None:
            parts.append(f"client {_millis(w.client_share)}")
        if w.rtt is not None:
            parts.append(f"rtt {_millis(w.rtt)}")
        head = f"latency: heard {_secs(heard)}"
    elif w.incomplete is not None:
        head = f"latency: not measured — {w.incomplete}"
    else:
        head = "latency: measuring"
    return f"{head} ({', '.join(parts)})" if parts else head


def summary_parts(s: LatencySummary) -> tuple[tuple[str, str], ...]:
    """The call's heard latency as labelled parts: ``("latency", "p50 0.82 s, p95
    1.20 s")``, ``("worst", "1.31 s (your turn 4)")``, ``("measured", "5 of 6 replies")``,
    or only ``("latency", "no measured turns")``. Only replies to the user's turns count
    (not the greeting); "your turn 4" is the user's fourth turn, so the words never clash
    with a count of transcript lines. :func:`summary_text` is the same on one line."""
    if s.p50 is None or s.p95 is None or s.worst is None or s.worst.heard is None:
        return (("latency", "no measured turns"),)
    counted = (
        f"{s.measured} repl{'y' if s.measured == 1 else 'ies'}"
        if s.measured == s.turns
        else f"{s.measured} of {s.turns} replies"
    )
    return (
        ("latency", f"p50 {_secs(s.p50)}, p95 {_secs(s.p95)}"),
        ("worst", f"{_secs(s.worst.heard)} (your turn {s.worst.turn})"),
        ("measured", counted),
    )


def summary_text(s: LatencySummary) -> str:
    """The call's heard latency in one line: ``latency: p50 0.82 s, p95 1.20 s, worst
    1.31 s (your turn 4); 5 of 6 replies measured``, or ``latency: no measured turns``
    (the parts of :func:`summary_parts`)."""
    parts = summary_parts(s)
    if len(parts) == 1:
        return f"latency: {parts[0][1]}"
    (_, figures), (_, worst), (_, counted) = parts
    if s.measured != s.turns:
        counted += " measured"
    return f"latency: {figures}, worst {worst}; {counted}"


def interrupt_note(i: InterruptTiming) -> str:
    """One line for an interrupt: ``interrupt: speaker silent after 45 ms, wire stopped
    after 120 ms`` (a part not measured says so)."""
    flush = i.local_flush
    wire = i.wire_stop
    if flush is None and wire is None:
        return "interrupt: not measured"
    speaker = (
        f"speaker silent after {_millis(flush)}" if flush is not None else "speaker not measured"
    )
    stopped = f"wire stopped after {_millis(wire)}" if wire is not None else "wire not measured"
    return f"interrupt: {speaker}, {stopped}"


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 1)
