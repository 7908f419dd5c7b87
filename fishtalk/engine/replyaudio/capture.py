"""Each reply's received audio: the agent's frames as the client received them, per reply.

:class:`ReplyAudio` is fed by the session's media (:mod:`fishtalk.engine.session.media`)
on the event loop, from the same receive loop that hands frames to playback and to
``--record-audio`` (nothing runs in a PortAudio callback): every agent frame as it came off
the wire, *before* the interrupt hold drops it (``played`` says whether it was played),
with its arrival time on the session clock, plus the level of each microphone frame sent
(for talk-over). It also reads every state the reducer yields (a state listener).

**Which reply a frame belongs to** is the one rule of :mod:`fishtalk.core.conversation.
answers`, applied to audio. A frame is first bound to an agent *line*:

- the line being spoken when it arrived (``State.speaking_segment``);
- else, a quiet frame, or an audible one within :data:`TAIL` of the last audible frame,
  stays with the line the frame before it went to (the tail the jitter buffer holds back
  after the line's transcript closed, and the pauses in it);
- else a line that has come (opened, maybe already closed or interrupted) after that one
  and answers the newest user turn, but has had no audible frame yet, takes it: on a
  busy machine the audio lags its transcript, and a short line can close (or be
  interrupted) before any of its audio arrived;
- else, if the line the frame before went to answers the newest user turn, the frame
  stays with it whatever the silence before it (a stall, a voice going on after an
  interrupt): no other line has come to claim it;
- else it is audio ahead of its transcript: held until the next line starts and then
  given to it, unless a user turn ended meanwhile, when it is audio with no transcript.

Nothing here depends on the order in which the interrupt, the transcript's segments and
the audio frames arrive, only on the order of each (the audio is one stream, the lines
come one after the other).

The reply is then the turn that line answers (``Segment.answers_turn``, read from the
newest state when asked, so a line bound late to a turn by the rule moves with it). Audio
no line took forms a reply of its own, with no lines: it answers the user turn that had
ended when it arrived.

Memory is bounded: at most :data:`MAX_SECONDS` of agent audio is kept; the oldest
replies' audio is dropped first (counted in :attr:`ReplyAudio.dropped_frames`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from fishtalk.core import conversation as conv
from fishtalk.engine.audio.vad import VOICED_DBFS, is_audible, mean_square

TAIL: Final = 0.5
"""Seconds after a line's last audible frame during which audio with no line speaking
still belongs to it (the media's ``WIRE_QUIET``: longer than a pause between words)."""
MAX_SECONDS: Final = 900.0
"""Agent audio kept at most, in seconds of audio (about 86 MB at 48 kHz mono)."""
USER_HANGOVER: Final = 0.3
"""A pause in the user's speech shorter than this joins its two parts (the end-of-speech
detector's hangover)."""
_VOICED_MS: Final = (32768.0 * 10 ** (VOICED_DBFS / 20.0)) ** 2


@dataclass(frozen=True, slots=True)
class ReceivedFrame:
    """One agent audio frame as received: ``at`` is its arrival on the session clock (its
    last sample's), ``data`` 16-bit PCM (native order, interleaved channels)."""

    at: float
    data: bytes
    audible: bool
    """Above silence (:func:`fishtalk.engine.audio.vad.is_audible`)."""
    played: bool
    """Handed to playback (False: dropped just after an interrupt)."""


@dataclass(slots=True)
class ReplyClip:
    """The audio of one reply as the client received it, in arrival order."""

    turn: int | None
    """The user turn it answers (None: the agent's opening, or lines before any turn)."""
    segment_ids: list[str]
    """Its agent lines, in the order their audio came (empty: audio with no transcript)."""
    sample_rate: int
    channels: int
    frames: list[ReceivedFrame] = field(default_factory=list)

    @property
    def started_at(self) -> float | None:
        """The first frame's start on the session clock (arrival less its length)."""
        if not self.frames:
            return None
        first = self.frames[0]
        return first.at - len(first.data) / (2 * self.channels * self.sample_rate)

    @property
    def ended_at(self) -> float | None:
        """The last frame's arrival."""
        return self.frames[-1].at if self.frames else None

    def samples(self) -> npt.NDArray[np.int16]:
        """Every frame's samples, mono (channels averaged), one after the other."""
        if not self.frames:
            return np.zeros(0, np.int16)
        pcm = np.frombuffer(b"".join(f.data for f in self.frames), dtype=np.int16)
        if self.channels > 1:
            pcm = pcm.reshape(-1, self.channels).mean(axis=1).astype(np.int16)
        return pcm


class ReplyAudio:
    """Collects the agent's received audio per reply (see the module docs); fed on the
    session's loop, read with :meth:`replies` (or :meth:`reply` for one turn)."""

    def __init__(self, *, max_seconds: float = MAX_SECONDS, keep_audio: bool = True) -> None:
        self.keep_audio = keep_audio
        """False: a reply's audio is let go once it is measured (:meth:`release`)."""
        self._state: conv.State | None = None
        self._lines: dict[str, list[ReceivedFrame]] = {}
        """Per agent line (segment id, in first-frame order), its frames."""
        self._orphans: list[tuple[int | None, list[ReceivedFrame]]] = []
        """Audio no line took: (the user turn it followed, its frames)."""
        self._owner: str | None = None
        """The line the last frame went to (None: held, or none yet)."""
        self._voiced: set[str] = set()
        """The lines an audible frame went to."""
        self._last_audible = -1e9
        self._held: list[ReceivedFrame] = []
        self._held_turn: int | None = None
        self._user_turn = 0
        self._rate = 48_000
        self._channels = 1
        self._kept: deque[tuple[list[ReceivedFrame], int]] = deque()
        """(the list a frame went to, its bytes) in arrival order, for the memory bound."""
        self._kept_bytes = 0
        self._max_bytes = int(max_seconds * 96_000)
        self.frames_seen = 0
        """Agent frames received so far."""
        self.dropped_frames = 0
        """Frames dropped to stay within ``max_seconds``."""
        self._waiters: list[Callable[[float], object]] = []
        self.interrupts: list[float] = []
        """When the user interrupted (key press or command), session clock."""
        self.user_speech: list[tuple[float, float]] = []
        """The user's speech at the microphone: (start, end) on the session clock of each
        run of voiced frames (pauses under :data:`USER_HANGOVER` joined)."""

    # --- fed by the session ------------------------------------------------------------

    def state(self, state: conv.State, _events: Sequence[conv.Change] = ()) -> None:
        """A state listener: the newest state (which line is speaking, the turns)."""
        self._state = state
        latency = state.latency.open
        if latency is not None and latency.turn is not None:
            self._user_turn = max(self._user_turn, latency.turn)

    def agent_frame(
        self, at: float, data: memoryview | bytes, rate: int, channels: int, *, played: bool
    ) -> None:
        """An agent frame arrived at ``at`` (before the interrupt hold: ``played`` says
        whether playback got it)."""
        self._rate, self._channels = rate, channels
        self.frames_seen += 1
        buf = bytes(data.cast("B")) if isinstance(data, memoryview) else data
        audible = is_audible(np.frombuffer(buf, dtype=np.int16))
        frame = ReceivedFrame(at, buf, audible, played)
        state = self._state
        speaking = state.speaking_segment if state is not None else None
        if speaking is not None:
            if self._held:
                self._give_held(speaking.segment_id)
            self._add(speaking.segment_id, frame)
        elif self._owner is not None and (not audible or at - self._last_audible < TAIL):
            self._add(self._owner, frame)
        elif audible and (waiting := self._waiting_line()) is not None:
            if self._held:
                self._give_held(waiting)
            self._add(waiting, frame)
        elif audible and self._owner is not None and self._answers_newest(self._owner):
            self._add(self._owner, frame)
        elif audible or self._held:
            turn = self._user_turn
            if self._held and self._held_turn != turn:
                self._orphan()
            self._held_turn = turn
            self._owner = None
            self._held.append(frame)
            self._count(self._held, len(buf))
        if audible:
            self._last_audible = at
            if self._owner is not None:
                self._voiced.add(self._owner)
            waiters, self._waiters = self._waiters, []
            for fn in waiters:
                fn(at)

    @property
    def last_audible(self) -> float | None:
        """When the last audible agent frame arrived (None: none yet)."""
        return self._last_audible if self._last_audible > -1e9 else None

    def when_audible(self, fn: Callable[[float], object]) -> None:
        """Call ``fn(at)`` once, on the loop, when the next audible agent frame arrives."""
        self._waiters.append(fn)

    def interrupted(self, at: float) -> None:
        """The user interrupted the agent at ``at``."""
        self.interrupts.append(at)

    def mic_frame(self, at: float, data: memoryview | bytes) -> None:
        """A microphone frame was sent at ``at`` (only its level is kept)."""
        samples = np.frombuffer(data, dtype=np.int16)
        if mean_square(samples) < _VOICED_MS:
            return
        start = at - samples.size / self._rate
        speech = self.user_speech
        if speech and start - speech[-1][1] < USER_HANGOVER:
            speech[-1] = (speech[-1][0], at)
        else:
            speech.append((start, at))

    # --- read ---------------------------------------------------------------------------

    @property
    def lines(self) -> Container[str]:
        """The agent lines some audio went to."""
        return self._lines.keys()

    @property
    def held_frames(self) -> list[ReceivedFrame]:
        """Audio still waiting for its line (the last clip :meth:`replies` gives, if any)."""
        return self._held

    def replies(self, *, skip_lines: Container[str] = (), skip_orphans: int = 0) -> list[ReplyClip]:
        """Every reply heard so far, in the order its audio began (a reply's lines by the
        newest state: lines that answer the same turn are one reply); but the lines in
        ``skip_lines`` and the first ``skip_orphans`` clips of audio with no line."""
        state = self._state
        clips: dict[tuple[str, int | None], ReplyClip] = {}
        order: list[tuple[float, ReplyClip]] = []
        for line_id, frames in self._lines.items():
            if line_id in skip_lines:
                continue
            seg = state.segment(line_id) if state is not None else None
            turn = seg.answers_turn if seg is not None else None
            key = ("turn", turn)
            clip = clips.get(key)
            if clip is None:
                clip = clips[key] = ReplyClip(turn, [], self._rate, self._channels)
                order.append((frames[0].at if frames else 0.0, clip))
            clip.segment_ids.append(line_id)
            clip.frames.extend(frames)
        for turn, frames in self._orphans[skip_orphans:]:
            if frames:
                clip = ReplyClip(turn, [], self._rate, self._channels, list(frames))
                order.append((frames[0].at, clip))
        if self._held:
            clip = ReplyClip(self._held_turn, [], self._rate, self._channels, self._held)
            order.append((self._held[0].at, clip))
        for clip in clips.values():
            if len(clip.segment_ids) > 1:
                clip.frames.sort(key=lambda f: f.at)
        order.sort(key=lambda item: item[0])
        return [clip for _, clip in order]

    def reply(self, turn: int) -> ReplyClip | None:
        """The audio of the reply to user turn ``turn`` (its lines'; None if none came)."""
        for clip in self.replies():
            if clip.turn == turn and clip.segment_ids:
                return clip
        return None

    def release(self, clip: ReplyClip) -> None:
        """Let go of ``clip``'s audio (a reply measured, with ``keep_audio`` False)."""
        for line_id in clip.segment_ids:
            frames = self._lines.get(line_id)
            if frames is not None:
                frames.clear()
        for _, frames in self._orphans:
            if frames and clip.frames and frames[0] is clip.frames[0]:
                frames.clear()

    # --- bookkeeping --------------------------------------------------------------------

    def _waiting_line(self) -> str | None:
        """The first agent line after the owner's that answers the newest user turn and
        has had no audible frame (its audio still to come), if any."""
        state = self._state
        if state is None:
            return None
        owner = state.segment(self._owner) if self._owner is not None else None
        after = owner.seq if owner is not None else -1
        for seg in state.transcript:
            if (
                seg.role == "agent"
                and not seg.typed
                and seg.seq > after
                and (seg.answers_turn or 0) == self._user_turn
                and seg.segment_id not in self._voiced
            ):
                return seg.segment_id
        return None

    def _answers_newest(self, line_id: str) -> bool:
        """Whether ``line_id`` answers the newest user turn (none ended since it began)."""
        seg = self._state.segment(line_id) if self._state is not None else None
        return seg is not None and (seg.answers_turn or 0) == self._user_turn

    def _add(self, line_id: str, frame: ReceivedFrame) -> None:
        self._owner = line_id
        frames = self._lines.setdefault(line_id, [])
        frames.append(frame)
        self._count(frames, len(frame.data))

    def _give_held(self, line_id: str) -> None:
        if self._held_turn != self._user_turn:
            self._orphan()
            return
        if any(f.audible for f in self._held):
            self._voiced.add(line_id)
        frames = self._lines.get(line_id)
        if frames is None:
            self._lines[line_id] = self._held  # the same list: the memory bound follows it
        else:
            # Rare (audio held while the line had only quiet frames): in arrival order.
            frames.extend(self._held)
            frames.sort(key=lambda f: f.at)
        self._held = []

    def _orphan(self) -> None:
        self._orphans.append((self._held_turn, self._held))
        self._held = []

    def _count(self, frames: list[ReceivedFrame], size: int) -> None:
        """Keep the newest ``max_seconds`` of audio: drop the oldest frames beyond it."""
        self._kept.append((frames, size))
        self._kept_bytes += size
        while self._kept_bytes > self._max_bytes and self._kept:
            old, n = self._kept.popleft()
            self._kept_bytes -= n
            self.dropped_frames += 1
            if old:
                del old[0]


__all__ = ["MAX_SECONDS", "TAIL", "USER_HANGOVER", "ReceivedFrame", "ReplyAudio", "ReplyClip"]
