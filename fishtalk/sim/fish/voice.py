"""The simulated agent's voice and ears, as pure numpy: no livekit, no IO but espeak-ng.

* :func:`split_words` cuts a reply into the chunks its transcript streams, so that the
  chunks concatenate back to the text exactly.
* :class:`ToneVoice` renders each word as a short deterministic tone (pitch from a hash of
  the word, length from its letters, pauses after punctuation); :class:`EspeakVoice` asks
  a locally installed ``espeak-ng`` for real speech, word by word, so each word's audio
  length is known and the transcript can be paced to it. Nothing is downloaded.
* :func:`analyse` measures what the agent heard: duration, RMS loudness in dBFS and the
  dominant frequency (FFT peak); :func:`describe` turns that into the sentence the agent
  publishes as the user's transcript.

All audio is 48 kHz mono int16.
"""

from __future__ import annotations

import math
import re
import shutil
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from fishtalk.core.errors import SpeechUnavailableError
from fishtalk.speech import pcm as speech_pcm
from fishtalk.speech.tts import Espeak, SynthesisError

SAMPLE_RATE: Final = 48_000
"""Sample rate of everything the sim says and hears."""
FRAME_MS: Final = 20
"""Frame length the agent feeds its audio source with."""
FRAME_SAMPLES: Final = SAMPLE_RATE * FRAME_MS // 1000

Pcm = npt.NDArray[np.int16]

_WORD = re.compile(r"\S+\s*")


def split_words(text: str) -> list[str]:
    """Split ``text`` into word chunks (each with its trailing whitespace).

    ``"".join(split_words(t)) == t.lstrip()``: streamed chunks rebuild the text exactly.
    """
    return _WORD.findall(text.lstrip())


def _pause_after(word: str) -> float:
    stripped = word.rstrip()
    if stripped.endswith((".", "!", "?", ":", ";")):
        return 0.28
    if stripped.endswith((",", "-", ")")):
        return 0.14
    return 0.05


class Voice(Protocol):
    """Turns one word chunk into its audio."""

    @property
    def name(self) -> str:
        """A short label (``tones``, ``espeak-ng``)."""
        ...

    async def render(self, word: str) -> Pcm:
        """48 kHz mono int16 audio for ``word`` including the pause after it."""
        ...


def silence(seconds: float) -> Pcm:
    """``seconds`` of digital silence."""
    return np.zeros(round(seconds * SAMPLE_RATE), dtype=np.int16)


def tone(freq: float, seconds: float, *, amplitude: float = 0.3) -> Pcm:
    """A sine tone with 5 ms raised-cosine edges (no clicks)."""
    n = round(seconds * SAMPLE_RATE)
    t = np.arange(n, dtype=np.float64) / SAMPLE_RATE
    wave_ = np.sin(2 * math.pi * freq * t) * amplitude
    edge = min(n // 2, SAMPLE_RATE * 5 // 1000)
    if edge > 0:
        ramp = 0.5 - 0.5 * np.cos(np.linspace(0.0, math.pi, edge))
        wave_[:edge] *= ramp
        wave_[n - edge :] *= ramp[::-1]
    return np.round(wave_ * 32767).astype(np.int16)


@dataclass(frozen=True)
class ToneVoice:
    """Deterministic tone speech: one tone per word, pitched by a hash of the word."""

    name: str = "tones"
    amplitude: float = 0.25

    def word_audio(self, word: str) -> Pcm:
        """The tone for ``word`` followed by its pause (pure, synchronous)."""
        letters = sum(ch.isalnum() for ch in word) or 1
        seconds = min(0.6, max(0.12, 0.07 + 0.045 * letters))
        key = zlib.crc32(word.strip().lower().encode("utf-8"))
        freq = 180.0 + (key % 240)
        return np.concatenate(
            [tone(freq, seconds, amplitude=self.amplitude), silence(_pause_after(word))]
        )

    async def render(self, word: str) -> Pcm:
        """See :meth:`word_audio`."""
        return self.word_audio(word)


def decode_wav(data: bytes) -> Pcm:
    """A 16-bit PCM WAV (any rate, mono or first channel) as 48 kHz mono int16."""
    return speech_pcm.decode_wav(data, SAMPLE_RATE)


@dataclass(frozen=True)
class EspeakVoice:
    """Real (robotic) speech from a locally installed ``espeak-ng``, one call per word."""

    executable: str
    name: str = "espeak-ng"
    words_per_minute: int = 165
    accent: str = "en-us"
    """espeak-ng's American voice: the one pocketsphinx's bundled en-US model hears (its
    British default barely aligns), so tests can check what the sim's audio says."""

    async def render(self, word: str) -> Pcm:
        """Speak ``word`` (fed on stdin: never parsed as an option) and add its pause."""
        engine = Espeak(self.executable, self.accent, self.words_per_minute)
        try:
            audio = await engine.synthesize_async(word, SAMPLE_RATE)
        except (SpeechUnavailableError, SynthesisError):
            return ToneVoice().word_audio(word)
        # espeak pads every utterance with silence; trim it so words flow.
        loud = np.flatnonzero(np.abs(audio) > 300)
        if loud.size:
            audio = audio[loud[0] : loud[-1] + 1]
        return np.concatenate([audio, silence(_pause_after(word))])


def pick_voice(preference: str = "auto") -> Voice:
    """``"tones"``, ``"espeak"`` or ``"auto"`` (espeak-ng when installed, else tones)."""
    if preference in {"auto", "espeak"}:
        exe = shutil.which("espeak-ng")
        if exe is not None:
            return EspeakVoice(exe)
    return ToneVoice()


def frames(samples: Pcm, frame_samples: int = FRAME_SAMPLES) -> Iterator[Pcm]:
    """Cut ``samples`` into frames of ``frame_samples``, zero-padding the last one."""
    for start in range(0, samples.size, frame_samples):
        chunk = samples[start : start + frame_samples]
        if chunk.size < frame_samples:
            chunk = np.concatenate([chunk, np.zeros(frame_samples - chunk.size, np.int16)])
        yield chunk


# --- hearing ---------------------------------------------------------------------------


def rms_dbfs(samples: Pcm) -> float:
    """RMS level in dBFS (a full-scale sine is about -3 dBFS); silence is -inf."""
    if samples.size == 0:
        return -math.inf
    x = samples.astype(np.float64) / 32768.0
    rms = float(np.sqrt(np.mean(x * x)))
    return 20 * math.log10(rms) if rms > 0 else -math.inf


def dominant_frequency(samples: Pcm, rate: int = SAMPLE_RATE) -> float:
    """Frequency (Hz) of the strongest FFT bin, refined by parabolic interpolation."""
    if samples.size < 64:
        return 0.0
    x = samples.astype(np.float64)
    x = (x - x.mean()) * np.hanning(x.size)
    spectrum = np.abs(np.fft.rfft(x))
    spectrum[0] = 0.0
    k = int(np.argmax(spectrum))
    if 0 < k < spectrum.size - 1:
        a, b, c = spectrum[k - 1], spectrum[k], spectrum[k + 1]
        denom = a - 2 * b + c
        shift = 0.5 * (a - c) / denom if denom != 0 else 0.0
    else:
        shift = 0.0
    return float((k + shift) * rate / x.size)


@dataclass(frozen=True)
class Heard:
    """What the agent measured in one stretch of the user's audio."""

    duration: float
    """Seconds of sound."""
    dbfs: float
    """RMS loudness."""
    frequency: float
    """Dominant frequency in Hz."""


def analyse(samples: Pcm, rate: int = SAMPLE_RATE, *, threshold_dbfs: float = -45.0) -> Heard:
    """Measure the sound in ``samples``: only its loud parts count.

    Duration is the time spent above ``threshold_dbfs`` (10 ms frames), loudness the RMS of
    those frames, and the frequency the median of the FFT peaks of its loud 100 ms blocks,
    so that network glitches (gaps, concealment noise) barely move any of the three.
    """
    step = rate // 100
    usable = samples[: samples.size - samples.size % step]
    if usable.size == 0:
        return Heard(0.0, -math.inf, 0.0)
    blocks = usable.reshape(-1, step).astype(np.float64) / 32768.0
    rms = np.sqrt(np.mean(blocks * blocks, axis=1))
    with np.errstate(divide="ignore"):
        loud_mask = 20 * np.log10(rms) > threshold_dbfs
    if not loud_mask.any():
        return Heard(0.0, -math.inf, 0.0)
    loud = usable.reshape(-1, step)[loud_mask].reshape(-1)
    peaks = []
    block = rate // 10
    for start in range(0, samples.size - block + 1, block):
        chunk = samples[start : start + block]
        if rms_dbfs(chunk) > threshold_dbfs:
            peaks.append(dominant_frequency(chunk, rate))
    frequency = float(np.median(peaks)) if peaks else dominant_frequency(loud, rate)
    return Heard(int(loud_mask.sum()) / 100, rms_dbfs(loud), frequency)


def describe(heard: Heard, *, final: bool) -> str:
    """The user transcript text for ``heard`` (interim: "hearing ...", final: "heard ...")."""
    verb = "heard" if final else "hearing"
    return (
        f"({verb} {heard.duration:.1f} s of sound at {heard.dbfs:.0f} dBFS, "
        f"mostly around {heard.frequency:.0f} Hz)"
    )


SPEECH_DBFS: Final = -45.0
"""Frames louder than this count as speech energy."""


@dataclass
class SpeechDetector:
    """Energy-based speech segmentation of a stream of frames (pure state machine).

    :meth:`push` returns ``"start"`` when speech begins, ``"continue"`` while it goes on,
    ``"end"`` once ``hangover`` seconds of quiet follow it, else ``None``. The samples of
    the current (or, after ``"end"``, the finished) utterance, without the trailing quiet,
    are in :attr:`utterance`.
    """

    threshold_dbfs: float = SPEECH_DBFS
    hangover: float = 0.8
    min_speech: float = 0.12
    _buf: list[Pcm] | None = None
    _quiet: float = 0.0
    _loud: float = 0.0
    _pending_quiet: list[Pcm] | None = None
    _last: Pcm | None = None

    @property
    def active(self) -> bool:
        """Whether an utterance is in progress."""
        return self._buf is not None and self._loud >= self.min_speech

    @property
    def utterance(self) -> Pcm:
        """The current (or just ended) utterance's samples."""
        if self._buf:
            return np.concatenate(self._buf)
        if self._last is not None:
            return self._last
        return np.zeros(0, dtype=np.int16)

    def push(self, frame: Pcm, rate: int = SAMPLE_RATE) -> str | None:
        """Feed one frame; see the class docstring for the return value."""
        seconds = frame.size / rate
        loud = rms_dbfs(frame) > self.threshold_dbfs
        if self._buf is None:
            if not loud:
                return None
            self._last = None
            self._buf, self._loud, self._quiet, self._pending_quiet = [frame], seconds, 0.0, []
            return None
        was_active = self.active
        if loud:
            assert self._pending_quiet is not None
            self._buf.extend(self._pending_quiet)
            self._pending_quiet = []
            self._buf.append(frame)
            self._loud += seconds
            self._quiet = 0.0
            if not was_active and self.active:
                return "start"
            return "continue" if self.active else None
        self._quiet += seconds
        assert self._pending_quiet is not None
        self._pending_quiet.append(frame)
        if self._quiet >= self.hangover:
            finished = np.concatenate(self._buf) if was_active else None
            self.reset()
            self._last = finished
            return "end" if was_active else None
        return "continue" if was_active else None

    def reset(self) -> None:
        """Forget the current utterance."""
        self._buf = None
        self._pending_quiet = None
        self._quiet = self._loud = 0.0


__all__ = [
    "FRAME_MS",
    "FRAME_SAMPLES",
    "SAMPLE_RATE",
    "SPEECH_DBFS",
    "EspeakVoice",
    "Heard",
    "Pcm",
    "SpeechDetector",
    "ToneVoice",
    "Voice",
    "analyse",
    "decode_wav",
    "describe",
    "dominant_frequency",
    "frames",
    "pick_voice",
    "rms_dbfs",
    "silence",
    "split_words",
    "tone",
]
