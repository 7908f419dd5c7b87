"""Hearing the agent: each reply's received audio, transcribed offline, and what the
spoken expectations read from it.

For each reply (the agent lines of a ``say``/``speak``/``listen`` turn), the audio the
client received for those lines is checked against the reply's transcript by **forced
alignment** (:meth:`~fishtalk.speech.stt.Recognizer.cover`): the words of the transcript
the audio says, in order. Alignment rather than word overlap with free decoding, because
it is robust where free decoding is not: on a synthetic voice pocketsphinx's free decoding
gets most words wrong ("what is my balance" came back "what the ah"), so an overlap score
would fail good replies, while an alignment of the true text fits and an alignment of a
wrong text finds nothing (measured: 0.0 of "Your balance is ten dollars" in audio saying
"The weather is sunny today"). When the alignment finds none of the transcript, free
decoding says what the audio held instead, and the result says so (``method = "free"``).

"Heard nothing" is a result (``method = "none"``): a reply with no speech in its audio,
or no audio at all, never passes a spoken expectation.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

import numpy as np

from fishtalk.speech.recognition import normalize

if TYPE_CHECKING:
    from fishtalk.agent_session import AgentSession
    from fishtalk.engine.replyaudio import ReplyAudio, ReplyClip
    from fishtalk.speech.pcm import Pcm
    from fishtalk.speech.process import SpeechProcess
    from fishtalk.speech.stt import Recognizer
    from fishtalk.workbench.agenttest.expect import Expect

HeardMethod = Literal["align", "free", "none"]
"""How a reply's words were found: aligned to its transcript, free decoding, nothing."""


@dataclass(frozen=True)
class HeardReply:
    """What one reply's audio said."""

    where: str
    """``turn 2 (say 'hi')``."""
    transcript: str
    """The reply's text (its agent lines, joined)."""
    heard_text: str
    """The words heard: the transcript's words the audio says (``align``), the free
    decoder's words (``free``), or empty (``none``)."""
    method: HeardMethod
    confidence: float
    """``align``: the share of the transcript's words the audio says (0..1); ``free``:
    the decoder's posterior; ``none``: 0."""
    speech_seconds: float
    """Seconds of the reply's audio loud enough to be speech."""
    audio_seconds: float
    """Seconds of audio received for the reply (0: none came)."""
    covered: tuple[str, ...] = ()
    """The transcript's words the audio was aligned to, in order."""
    segment_ids: tuple[str, ...] = ()
    spoken_words: int | None = None
    """For a cut reply (``expect.transcript_cut``): how many of its transcript's first
    words the audio says (:meth:`~fishtalk.speech.stt.Recognizer.spoken_prefix`); None
    when not asked."""

    @property
    def unspoken(self) -> tuple[str, ...]:
        """The transcript's words after those its audio says (a cut reply's transcript
        should end where its audio did); empty when not measured."""
        if self.spoken_words is None:
            return ()
        return tuple(normalize(self.transcript).split()[self.spoken_words :])

    @property
    def heard_nothing(self) -> bool:
        """No speech in the reply's audio (or no audio)."""
        return self.speech_seconds <= 0

    @property
    def share(self) -> float:
        """The share of the transcript the audio covers (0 unless aligned)."""
        return self.confidence if self.method == "align" else 0.0

    def says(self, phrase: str) -> bool:
        """Whether the audio says ``phrase``: its words one after the other among the
        aligned words or, when the alignment found nothing, in the free decoding."""
        want = normalize(phrase).split()
        have = list(self.covered) if self.method == "align" else self.heard_text.split()
        return bool(want) and any(
            have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1)
        )

    def describe(self) -> str:
        """One line for a failure report."""
        if self.audio_seconds <= 0:
            return "heard nothing: no audio came for this reply"
        if self.heard_nothing:
            return f"heard nothing: {self.audio_seconds:.1f} s of audio without speech"
        how = "alignment" if self.method == "align" else "free decoding"
        return f"heard {self.heard_text!r} ({how}, confidence {self.confidence:.2f})"

    def to_dict(self) -> dict[str, object]:
        """Plain JSON (the report and the journal's ``heard`` record)."""
        return {
            "turn": self.where,
            "segment_ids": list(self.segment_ids),
            "transcript": self.transcript,
            "heard_text": self.heard_text,
            "method": self.method,
            "confidence": round(self.confidence, 3),
            "speech_seconds": round(self.speech_seconds, 2),
            "audio_seconds": round(self.audio_seconds, 2),
            **({} if self.spoken_words is None else {"spoken_words": self.spoken_words}),
        }


def hear(
    recognizer: Recognizer,
    audio: Pcm,
    rate: int,
    transcript: str,
    where: str = "",
    segment_ids: Sequence[str] = (),
    cut: bool = False,
) -> HeardReply:
    """What ``audio`` (a reply's received audio at ``rate``) says of ``transcript``; with
    ``cut`` (an interrupted reply) also how many of its first words it says."""
    heard = _heard(recognizer, audio, rate, transcript, where, segment_ids)
    if not cut:
        return heard
    spoken = recognizer.spoken_prefix(audio, rate, transcript) if heard.speech_seconds else 0
    return replace(heard, spoken_words=spoken)


def _heard(
    recognizer: Recognizer,
    audio: Pcm,
    rate: int,
    transcript: str,
    where: str,
    segment_ids: Sequence[str],
) -> HeardReply:
    from fishtalk.speech.stt import speech_seconds

    seconds = audio.size / rate if rate else 0.0
    speech = speech_seconds(audio, rate) if audio.size else 0.0

    def reply(
        text: str, method: HeardMethod, confidence: float, covered: tuple[str, ...] = ()
    ) -> HeardReply:
        ids = tuple(segment_ids)
        return HeardReply(
            where, transcript, text, method, confidence, speech, seconds, covered, ids
        )

    if speech <= 0:
        return reply("", "none", 0.0)
    if normalize(transcript):
        coverage = recognizer.cover(audio, rate, transcript)
        if coverage.covered:
            return reply(" ".join(coverage.covered), "align", coverage.share, coverage.covered)
    free = recognizer.free(audio, rate)
    return reply(free.text, "free", free.confidence)


def _process(model: Path | None) -> SpeechProcess:
    """The speech process for ``model`` (the user's own pocketsphinx model folder; None:
    the bundled one): decodes run there, as a decode here would stall the microphones of
    the sessions still running."""
    from fishtalk.speech.models import identify
    from fishtalk.speech.process import shared

    return shared(identify(model) if model is not None else None)


@dataclass(frozen=True)
class ReplyToHear:
    """A turn's reply: where it is, its agent lines by segment id, and the turn's time
    span on the session clock (``end`` None: until the session ended)."""

    index: int
    where: str
    lines: Mapping[str, str]
    start: float
    end: float | None
    cut: bool = False
    """The turn interrupts the reply and checks ``transcript_cut``."""


def reply_samples(clips: Sequence[ReplyClip], reply: ReplyToHear) -> tuple[Pcm, int]:
    """The agent audio received for ``reply``, mono, and its rate: the frames of its own
    lines, and those of audio bound to no line that arrived during its turn (a short
    line's audio can come after its transcript closed). A test's turns follow one another
    and each waits for its reply's audio to end, so a frame's arrival time places it."""
    rate = clips[0].sample_rate if clips else 48_000
    end = reply.end if reply.end is not None else float("inf")
    frames = sorted(
        (
            frame
            for clip in clips
            if set(clip.segment_ids) & set(reply.lines) or not clip.segment_ids
            for frame in clip.frames
            if set(clip.segment_ids) & set(reply.lines) or reply.start <= frame.at < end
        ),
        key=lambda f: f.at,
    )
    if not frames:
        return np.zeros(0, np.int16), rate
    pcm = np.frombuffer(b"".join(f.data for f in frames), dtype=np.int16)
    channels = clips[0].channels
    if channels > 1:
        pcm = pcm.reshape(-1, channels).mean(axis=1).astype(np.int16)
    return pcm, rate


def _hear_all(
    clips: Sequence[ReplyClip], replies: Sequence[ReplyToHear], model: Path | None
) -> dict[int, HeardReply]:
    process = _process(model)
    heard: dict[int, HeardReply] = {}
    for reply in replies:
        audio, rate = reply_samples(clips, reply)
        transcript = " ".join(t.strip() for t in reply.lines.values() if t.strip())
        heard[reply.index] = process.run(
            hear, audio, rate, transcript, reply.where, list(reply.lines), reply.cut
        )
    return heard


QUIET_AUDIO: Final = 1.0
"""Seconds of silent agent audio, received after its last audible frame, that end a
reply's audio (counted in audio, not wall time: a stalled connection delivers nothing,
and is waited for)."""
NO_AUDIO_WAIT: Final = 8.0
"""Seconds after the agent stopped speaking that a reply with no audio yet may still get
some (audio can lag its transcript and state by seconds on a loaded machine)."""


def _silence_after_speech(audio: ReplyAudio, since: float) -> float | None:
    """Seconds of silent audio received after the last audible frame since ``since``
    (None: no audible frame yet)."""
    frames = sorted(
        (
            (f.at, f.audible, len(f.data) / (2 * c.channels * c.sample_rate))
            for c in audio.replies()
            for f in c.frames
            if f.at >= since
        ),
    )
    quiet: float | None = None
    for _, audible, seconds in frames:
        if audible:
            quiet = 0.0
        elif quiet is not None:
            quiet += seconds
    return quiet


async def reply_audio_settled(
    session: AgentSession,
    since: float,
    timeout: float,  # noqa: ASYNC109 - the turn's own bound
) -> None:
    """Wait until the reply's audio has come in: the agent is done speaking and
    :data:`QUIET_AUDIO` of silence has followed its last audible frame (after ``since``),
    or no audible frame came within :data:`NO_AUDIO_WAIT` of it stopping. A reply's
    transcript is final when its last word starts playing, so the checks need this to
    hear all of it."""
    from fishtalk.workbench.agenttest.turns import BUSY_STATES

    audio = session.reply_audio
    if audio is None:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    stopped_at: float | None = None
    while loop.time() < deadline and not session.state.ended:
        now = time.monotonic()
        if session.state.agent_state not in BUSY_STATES:
            stopped_at = stopped_at or now
            quiet = _silence_after_speech(audio, since)
            if quiet is not None and quiet >= QUIET_AUDIO:
                return
            if quiet is None and now - stopped_at >= NO_AUDIO_WAIT:
                return
        else:
            stopped_at = None
        await asyncio.sleep(0.1)


async def hear_replies(
    reply_audio: ReplyAudio | None, replies: Sequence[ReplyToHear], model: Path | None = None
) -> dict[int, HeardReply]:
    """Each reply heard from its received audio, off the event loop (by window index)."""
    clips = reply_audio.replies() if reply_audio is not None else []
    return await asyncio.to_thread(_hear_all, clips, replies, model)


def journal_heard(path: Path, replies: Sequence[HeardReply]) -> None:
    """Add a ``heard`` record per reply to the session's (closed) journal, each at its
    last line's time, so ``fishtalk export`` and ``replay`` show what the audio said. A
    journal that cannot be read or written is left as it is (the report still has it)."""
    from fishtalk.core.errors import JournalError
    from fishtalk.engine.journal.reader import read_journal
    from fishtalk.engine.journal.records import heard_record
    from fishtalk.engine.journal.writer import append_records

    try:
        journal = read_journal(path)
    except (OSError, JournalError):
        return
    last: dict[str, float] = {}
    for rec in journal.records:
        segment = rec.get("segment")
        t = rec.get("t")
        if rec.get("type") == "change" and isinstance(segment, dict) and isinstance(t, int | float):
            last[str(segment.get("segment_id"))] = t
    records = []
    for reply in replies:
        times = [last[i] for i in reply.segment_ids if i in last]
        if times:
            fields = reply.to_dict()
            fields.pop("turn")
            records.append(heard_record(max(times), fields))
    with contextlib.suppress(OSError):
        append_records(path, records)


def spoken_failures(expect: Expect, replies: Sequence[HeardReply]) -> list[tuple[str, str]]:
    """``(expected, seen)`` for each spoken expectation of ``expect`` that ``replies`` (a
    turn's reply, or every reply of the session) do not meet. No reply meets none."""
    failures: list[tuple[str, str]] = []
    nothing = "no agent reply to hear"

    def heard(reply: HeardReply) -> str:
        label = f"{reply.where}: " if len(replies) > 1 else ""
        return f"{label}{reply.describe()}"

    for phrase in expect.spoken_contains or ():
        if not any(r.says(phrase) for r in replies):
            seen = "; ".join(map(heard, replies)) or nothing
            failures.append((f"the agent's audio says {phrase!r}", seen))
    if expect.audio_matches_text is not None:
        want = f"the audio says at least {expect.audio_matches_text:.0%} of the reply's transcript"
        for r in replies:
            if r.heard_nothing or r.share < expect.audio_matches_text:
                failures.append((want, f"{heard(r)}; {r.share:.0%} of {r.transcript!r}"))
        if not replies:
            failures.append((want, nothing))
    if expect.no_silent_replies:
        for r in replies:
            if r.heard_nothing and normalize(r.transcript):
                failures.append(
                    ("no silent replies", f"{heard(r)}, for the transcript {r.transcript!r}")
                )
    return failures


__all__ = [
    "HeardMethod",
    "HeardReply",
    "ReplyToHear",
    "hear",
    "hear_replies",
    "journal_heard",
    "reply_audio_settled",
    "spoken_failures",
]
