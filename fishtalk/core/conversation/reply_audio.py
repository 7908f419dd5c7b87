"""How a reply sounded (issue 29): :class:`ReplyAudioReport`, the measures of one reply's
audio as the client received it, and :func:`problems`, the one wording of what is wrong
with it against :class:`AudioBudgets` (``fishtalk test`` expectations, the ended screen,
the exit line, line mode and the exports all say it this way).

The engine measures (:mod:`fishtalk.engine.replyaudio`, numpy); this module is plain data.
Seconds throughout; ``*_at`` fields are on the session clock, ``gaps`` and ``longest_gap_at``
count from the reply's first audible sample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

Mismatch: TypeAlias = Literal["audio_without_transcript", "transcript_without_audio"]
"""Audio that no transcript line came with, or a spoken line with no audible audio."""

GAP_REPORTED: Final = 0.3
"""Gaps inside a reply longer than this are listed one by one (seconds)."""
MAX_REPORTS: Final = 256
"""Reports kept in the state (the newest)."""


@dataclass(frozen=True, slots=True)
class ReplyAudioReport:
    """The measures of one reply's received audio."""

    reply: int
    """The reply's number in the session, from 1, in the order its audio began."""
    turn: int | None
    """The user turn it answers (None: the opening, or audio before any turn)."""
    segment_ids: tuple[str, ...] = ()
    """Its agent lines (empty: audio with no transcript)."""
    duration: float = 0.0
    """Seconds of audio received for it (first to last audible sample)."""
    audible: bool = False
    """Whether any frame was above silence (-50 dBFS)."""
    first_audio_at: float | None = None
    """The first audible sample's arrival."""
    first_text_at: float | None = None
    """Its first line's first text."""
    turn_ended_at: float | None = None
    """The end of the user turn it answers."""
    leading_from_text: float | None = None
    """First text to first audible sample (negative: the audio came first)."""
    leading_from_turn: float | None = None
    """End of the user's turn to the first audible sample."""
    longest_gap: float = 0.0
    """The longest silence between two audible stretches of the reply."""
    longest_gap_at: float | None = None
    """Where it began, seconds into the reply."""
    gaps: tuple[tuple[float, float], ...] = ()
    """Every silence over :data:`GAP_REPORTED`: (seconds into the reply, length)."""
    clipping: float = 0.0
    """The share of the audible frames' samples at or near full scale (|x| >= 32000 of
    32767), 0..1."""
    loudness: float | None = None
    """Integrated loudness, LUFS (ITU-R BS.1770-4, pyloudnorm); None when not measured."""
    loudness_note: str | None = None
    """Why there is no loudness (too short, silent, pyloudnorm not installed)."""
    talk_over: float = 0.0
    """Seconds of the reply's audible audio that overlapped the user's speech."""
    mismatch: Mismatch | None = None
    interrupted_at: float | None = None
    """The interrupt (key press or command) that cut this reply, if any."""
    after_interrupt: float | None = None
    """Seconds from the interrupt to the last audible sample that still came."""

    def __post_init__(self) -> None:
        # JSON gives lists: a report read back is equal to the one written.
        object.__setattr__(self, "segment_ids", tuple(self.segment_ids))
        object.__setattr__(self, "gaps", tuple((float(a), float(b)) for a, b in self.gaps))

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ReplyAudioReport | None:
        """The report a journal's record holds (its JSON object), or None when this version
        cannot read it back: a field it does not know, or a value of the wrong shape (an
        edited or damaged journal must not end a replay or an export with a traceback)."""
        try:
            return cls(**record)
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class AudioBudgets:
    """What a reply may do before it is a problem (None: not checked)."""

    max_leading_silence: float | None = None
    """First text (else the user's turn end) to the first audible sample, seconds."""
    max_gap: float | None = None
    max_clipping: float | None = None
    """A share, 0..1."""
    loudness_range: tuple[float, float] | None = None
    """LUFS, low and high."""
    max_talk_over: float | None = None
    no_silent_replies: bool = False
    """A reply with transcript text must have audible audio (the signal, not speech
    recognition: a reply of noise passes)."""
    no_mismatch: bool = False
    stops_within: float | None = None
    """After an interrupt, the last audible sample within this many seconds."""


DEFAULT_BUDGETS: Final = AudioBudgets(
    max_leading_silence=1.5,
    max_gap=1.0,
    max_clipping=0.01,
    loudness_range=(-36.0, -8.0),
    max_talk_over=1.0,
    no_silent_replies=True,
    no_mismatch=True,
    stops_within=1.0,
)
"""What the ended screen, the exit line and line mode call a problem when no test asks:
generous, so a problem named there is one a listener hears."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One budget a reply broke: ``text`` names the reply, the value and the budget;
    ``excess`` is how far over, relative to the budget (orders problems by how bad)."""

    reply: int
    check: str
    text: str
    excess: float


def _s(value: float) -> str:
    return f"{value:.2f} s"


def problems(report: ReplyAudioReport, budgets: AudioBudgets) -> list[Problem]:
    """What ``report`` breaks of ``budgets``, each worded as ``reply 2: gap of 0.84 s at
    1.92 s into the reply (max_gap 0.5)``."""
    out: list[Problem] = []
    n = report.reply

    def add(check: str, what: str, budget: object, excess: float) -> None:
        out.append(Problem(n, check, f"reply {n}: {what} ({check} {budget})", excess))

    b = report
    if budgets.no_mismatch and b.mismatch is not None:
        what = (
            "audio with no transcript"
            if b.mismatch == "audio_without_transcript"
            else "a transcript with no audio"
        )
        add("no_mismatch", what, "true", 10.0)
    elif budgets.no_silent_replies and b.mismatch == "transcript_without_audio":
        add("no_silent_replies", "no audible audio", "true", 10.0)
    limit = budgets.max_leading_silence
    leading = b.leading_from_text if b.leading_from_text is not None else b.leading_from_turn
    if limit is not None and leading is not None and leading > limit:
        since = "its first text" if b.leading_from_text is not None else "the end of your turn"
        what = f"leading silence of {_s(leading)} after {since}"
        add("max_leading_silence", what, f"{limit:g}", leading / max(limit, 0.01) - 1)
    limit = budgets.max_gap
    if limit is not None and b.longest_gap > limit and b.longest_gap_at is not None:
        what = f"gap of {_s(b.longest_gap)} at {_s(b.longest_gap_at)} into the reply"
        add("max_gap", what, f"{limit:g}", b.longest_gap / max(limit, 0.01) - 1)
    limit = budgets.max_clipping
    if limit is not None and b.clipping > limit:
        what = f"clipping in {b.clipping:.1%} of samples"
        add("max_clipping", what, f"{limit:g}", b.clipping / max(limit, 1e-4) - 1)
    span = budgets.loudness_range
    if span is not None and b.loudness is not None and not span[0] <= b.loudness <= span[1]:
        what = f"loudness {b.loudness:.1f} LUFS"
        off = span[0] - b.loudness if b.loudness < span[0] else b.loudness - span[1]
        add("loudness_range", what, f"[{span[0]:g}, {span[1]:g}]", off / 6.0)
    limit = budgets.max_talk_over
    if limit is not None and b.talk_over > limit:
        what = f"talked over you for {_s(b.talk_over)}"
        add("max_talk_over", what, f"{limit:g}", b.talk_over / max(limit, 0.01) - 1)
    limit = budgets.stops_within
    if limit is not None and b.after_interrupt is not None and b.after_interrupt > limit:
        what = f"kept talking {_s(b.after_interrupt)} after the interrupt"
        add("stops_within", what, f"{limit:g}", b.after_interrupt / max(limit, 0.01) - 1)
    return out


def _found(reports: Sequence[ReplyAudioReport]) -> list[Problem]:
    return [p for r in reports for p in problems(r, DEFAULT_BUDGETS)]


def worst(reports: Sequence[ReplyAudioReport]) -> Problem | None:
    """The worst problem of ``reports`` by :data:`DEFAULT_BUDGETS`, if any."""
    return max(_found(reports), key=lambda p: p.excess, default=None)


def worst_note(reports: Sequence[ReplyAudioReport]) -> str | None:
    """The call's worst audio problem in words, the one wording of the ended screen, the
    exit line and line mode's closing note: ``worst: reply 2: gap of 0.84 s at 1.92 s into
    the reply (max_gap 1)``, or ``worst of 3 problems: ...`` when there are more; None when
    no reply broke :data:`DEFAULT_BUDGETS` (or none was measured)."""
    found = _found(reports)
    top = max(found, key=lambda p: p.excess, default=None)
    if top is None:
        return None
    head = "worst" if len(found) == 1 else f"worst of {len(found)} problems"
    return f"{head}: {top.text}"


def audio_note(reports: Sequence[ReplyAudioReport]) -> str | None:
    """How the call's replies sounded, for the ended screen: :func:`worst_note`, or ``no
    problem in 3 replies`` when there is none; None when no reply was measured."""
    if not reports:
        return None
    note = worst_note(reports)
    if note is not None:
        return note
    return "no problem in 1 reply" if len(reports) == 1 else f"no problem in {len(reports)} replies"


__all__ = [
    "DEFAULT_BUDGETS",
    "GAP_REPORTED",
    "MAX_REPORTS",
    "AudioBudgets",
    "Mismatch",
    "Problem",
    "ReplyAudioReport",
    "audio_note",
    "problems",
    "worst",
    "worst_note",
]
