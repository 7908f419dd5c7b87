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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from fishtalk.speech.recognition import normalize

if TYPE_CHECKING:
    from fishtalk.speech.pcm import Pcm
    from fishtalk.speech.stt import Recognizer
    from fishtalk.workbench.agenttest.spec import Expect

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
        }


def hear(
    recognizer: Recognizer,
    audio: Pcm,
    rate: int,
    transcript: str,
    *,
    where: str = "",
    segment_ids: Sequence[str] = (),
) -> HeardReply:
    """What ``audio`` (a reply's received audio at ``rate``) says of ``transcript``."""
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


def spoken_failures(expect: Expect, replies: Sequence[HeardReply]) -> list[tuple[str, str]]:
    """``(expected, seen)`` for each spoken expectation of ``expect`` that ``replies`` (a
    turn's reply, or every reply of the session) do not meet."""
    failures: list[tuple[str, str]] = []
    if not expect.checks_audio:
        return failures
    if not replies:
        seen = "no agent reply to hear"
        for key in ("spoken_contains", "audio_matches_text", "no_silent_replies"):
            if getattr(expect, key) not in (None, False):
                failures.append((_expected(expect, key), seen))
        return failures

    def heard(reply: HeardReply) -> str:
        label = f"{reply.where}: " if len(replies) > 1 else ""
        return f"{label}{reply.describe()}"

    for phrase in expect.spoken_contains or ():
        if not any(r.says(phrase) for r in replies):
            failures.append((f"the agent's audio says {phrase!r}", "; ".join(map(heard, replies))))
    if expect.audio_matches_text is not None:
        want = expect.audio_matches_text
        for r in replies:
            if r.heard_nothing or r.share < want:
                failures.append(
                    (
                        f"the audio says at least {want:.0%} of the reply's transcript",
                        f"{heard(r)}; {r.share:.0%} of {r.transcript!r}",
                    )
                )
    if expect.no_silent_replies:
        for r in replies:
            if r.heard_nothing and normalize(r.transcript):
                failures.append(
                    ("no silent replies", f"{heard(r)}, for the transcript {r.transcript!r}")
                )
    return failures


def _expected(expect: Expect, key: str) -> str:
    if key == "spoken_contains":
        return f"the agent's audio says {expect.spoken_contains!r}"
    if key == "audio_matches_text":
        return f"the audio says at least {expect.audio_matches_text:.0%} of the reply's transcript"
    return "no silent replies"


__all__ = ["HeardMethod", "HeardReply", "hear", "spoken_failures"]
