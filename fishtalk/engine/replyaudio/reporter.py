"""When a reply's audio is over, and its report (issue 29): :class:`ReplyReporter`.

The session's media asks :meth:`ReplyReporter.due` every :data:`CHECK_EVERY` agent frames
(frames arrive every 10 ms, silent ones too) and feeds each report it returns to the
reducer, which keeps it in ``State.reply_audio`` and yields one ``reply_audio`` event per
reply. A reply is over when none of its lines is open, the agent is not speaking it, and
no audible frame of it came for :data:`QUIET` (the jitter buffer's tail, and the audio
lagging the state on a busy machine); or when a later reply began; at hangup every reply
still unreported is measured as it stands. Each reply is reported once.

A spoken session's agent line with text but no audio frame at all is reported too (a
transcript with no audio) once it is final and :data:`~.capture.TAIL` has passed.
"""

from __future__ import annotations

from typing import Final

from fishtalk.core import conversation as conv
from fishtalk.core.conversation.reply_audio import ReplyAudioReport
from fishtalk.engine.replies import BACK
from fishtalk.engine.replyaudio.capture import TAIL, ReplyAudio, ReplyClip
from fishtalk.engine.replyaudio.measure import measure

QUIET: Final = 1.0
"""A reply is over once no audible frame of it came for this long (and its lines are
done): longer than the capture's tail, as the audio may lag the agent's state."""
CHECK_EVERY: Final = 25
"""Agent frames between two looks for replies that are over (a quarter second)."""


class ReplyReporter:
    """Measures each reply of ``capture`` once, when it is over."""

    def __init__(self, capture: ReplyAudio) -> None:
        self.capture = capture
        self.reports: list[ReplyAudioReport] = []
        self._done_lines: set[str] = set()
        self._done_orphans = 0
        self._frames = 0

    def tick(self, state: conv.State, now: float) -> list[ReplyAudioReport]:
        """Per agent frame: every :data:`CHECK_EVERY`, :meth:`due`."""
        self._frames += 1
        if self._frames % CHECK_EVERY:
            return []
        return self.due(state, now)

    def due(self, state: conv.State, now: float, *, final: bool = False) -> list[ReplyAudioReport]:
        """The reports of the replies over by ``now`` (``final``: all of them)."""
        capture = self.capture
        clips = capture.replies(skip_lines=self._done_lines, skip_orphans=self._done_orphans)
        out: list[ReplyAudioReport] = []
        for index, clip in enumerate(clips):
            later = index + 1 < len(clips)
            if not (final or later or self._over(clip, state, now)):
                break  # replies are reported in order
            if not clip.segment_ids and not final and clip.frames is capture.held_frames:
                break  # audio still waiting for its line
            out.append(self._report(clip, state))
        out += self._silent_lines(state, now, final)
        return out

    def _over(self, clip: ReplyClip, state: conv.State, now: float) -> bool:
        last = max((f.at for f in clip.frames if f.audible), default=None)
        if last is not None and now - last < QUIET:
            return False
        if clip.segment_ids and not state.ended and state.agent_state not in BACK:
            return False  # still speaking, or thinking about (a tool for) more of it
        for line_id in clip.segment_ids:
            seg = state.segment(line_id)
            if seg is not None and seg.open:
                return False
        return True

    def _report(self, clip: ReplyClip, state: conv.State) -> ReplyAudioReport:
        if clip.segment_ids:
            self._done_lines.update(clip.segment_ids)
        elif clip.frames is not self.capture.held_frames:
            self._done_orphans += 1
        lines = [s for s in map(state.segment, clip.segment_ids) if s is not None]
        report = measure(
            clip,
            len(self.reports) + 1,
            has_text=any(s.text.strip() for s in lines),
            # Cut short, or asked for as text: its audio may rightly never have come.
            cut=not state.spoken or any(s.interrupted for s in lines),
            first_text_at=_first_text(state, clip.turn, lines),
            turn_ended_at=_turn_ended(state, clip.turn),
            user_speech=self.capture.user_speech,
            interrupts=self.capture.interrupts,
        )
        self.reports.append(report)
        if not self.capture.keep_audio:
            self.capture.release(clip)
        return report

    def _silent_lines(self, state: conv.State, now: float, final: bool) -> list[ReplyAudioReport]:
        """Spoken lines that got no audio frame at all (where audio was received at all:
        without an audio path, no line has any)."""
        if not state.spoken or not self.capture.frames_seen:
            return []
        out = []
        heard = self.capture.lines
        for seg in state.transcript:
            if (
                seg.role != "agent"
                or seg.typed
                or not seg.text.strip()
                or seg.segment_id in heard
                or seg.segment_id in self._done_lines
                or not (final or (seg.final and not seg.open and now - seg.updated_at >= TAIL))
            ):
                continue
            clip = ReplyClip(seg.answers_turn, [seg.segment_id], 48_000, 1)
            out.append(self._report(clip, state))
        return out


def measure_all(capture: ReplyAudio, state: conv.State) -> tuple[ReplyAudioReport, ...]:
    """Every reply of ``capture`` measured now, as it stands (after the call: all its
    audio), numbered in order; what ``fishtalk test`` checks."""
    return tuple(ReplyReporter(capture).due(state, 0.0, final=True))


def _waterfalls(state: conv.State) -> list[conv.Waterfall]:
    latency = state.latency
    return [*latency.turns, latency.open] if latency.open is not None else [*latency.turns]


def _first_text(state: conv.State, turn: int | None, lines: list[conv.Segment]) -> float | None:
    """When the reply's text began: its turn's first-text mark where the reply holds the
    line that turn was measured on, else when its own first line opened (a later line of
    the same turn, the agent going on by itself, is not measured from the turn's first)."""
    ids = {s.segment_id for s in lines}
    for w in _waterfalls(state):
        if w.turn == turn and w.segment_id in ids and w.first_text_at is not None:
            return w.first_text_at
    return min((s.started_at for s in lines), default=None)


def _turn_ended(state: conv.State, turn: int | None) -> float | None:
    if turn is None:
        return None
    for w in _waterfalls(state):
        if w.turn == turn and w.kind != "unprompted":
            return w.user_ended_at
    return None


__all__ = ["CHECK_EVERY", "QUIET", "ReplyReporter", "measure_all"]
