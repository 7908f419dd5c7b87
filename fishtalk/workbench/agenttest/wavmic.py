"""A microphone that plays WAV files: the audio backend of spoken turns and of heard
latency budgets.

Between clips it sends silence, as a quiet room would; what the agent says is dropped.

For heard latency it has the session's timing taps (the ``LatencyTaps`` shape of
:mod:`fishtalk.engine.audio.base`): the end of each clip's speech is known exactly (the capture
time of the frame holding its last voiced sample, no detector needed), and its output is a
device with no latency that takes a frame the moment it is played. So in ``fishtalk test``
a turn's *heard* time is when the reply's first audible frame reached the client's output,
the device's own latency being zero.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import sys
import time
import wave
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from fishtalk.engine.audio.base import (
    CHANNELS,
    FRAME_MS,
    SAMPLE_RATE,
    SAMPLES_PER_FRAME,
    AudioLevels,
)

if TYPE_CHECKING:
    from livekit import rtc

    from fishtalk.engine.audio.base import NoticeCallback

FRAME_BYTES = SAMPLES_PER_FRAME * CHANNELS * 2
VOICED_LEVEL = 328
"""A sample above this magnitude (-40 dBFS) is voiced: the clip's speech ends after the
last one."""


def speech_end(pcm: bytes) -> int:
    """The byte offset just past the last voiced sample of ``pcm`` (0: all silent)."""
    samples = array.array("h")
    samples.frombytes(pcm[: len(pcm) - len(pcm) % 2])
    if sys.byteorder == "big":
        samples.byteswap()
    for index in range(len(samples) - 1, -1, -1):
        if abs(samples[index]) > VOICED_LEVEL:
            return 2 * (index + 1)
    return 0


class WavError(ValueError):
    """A WAV file that cannot be used (the message says why)."""


def load_wav(path: Path) -> bytes:
    """``path`` as 16-bit PCM at the session's rate and channel count (mono), resampled
    linearly when needed. Raises :class:`WavError`."""
    try:
        with wave.open(str(path), "rb") as wav:
            width, channels, rate = wav.getsampwidth(), wav.getnchannels(), wav.getframerate()
            raw = wav.readframes(wav.getnframes())
    except (OSError, EOFError, wave.Error) as exc:
        raise WavError(f"cannot read WAV {path}: {exc}") from None
    if width != 2:
        raise WavError(f"{path}: only 16-bit PCM WAV files are supported (got {8 * width}-bit)")
    samples = array.array("h")
    samples.frombytes(raw)
    if sys.byteorder == "big":
        samples.byteswap()
    if channels > 1:
        samples = array.array(
            "h",
            (sum(samples[i : i + channels]) // channels for i in range(0, len(samples), channels)),
        )
    if rate != SAMPLE_RATE and samples:
        ratio = rate / SAMPLE_RATE
        count = int(len(samples) / ratio)
        last = len(samples) - 1
        out = array.array("h", bytes(2 * count))
        for i in range(count):
            pos = i * ratio
            j = int(pos)
            frac = pos - j
            a, b = samples[min(j, last)], samples[min(j + 1, last)]
            out[i] = int(a + (b - a) * frac)
        samples = out
    if sys.byteorder == "big":
        samples.byteswap()
    return samples.tobytes()


class WavMicrophone:
    """An :class:`~fishtalk.engine.audio.base.AudioBackend` whose microphone plays the clips
    :meth:`speak` is given, in real time, and silence otherwise."""

    def __init__(self) -> None:
        self._clip = b""
        self._offset = 0
        self._voiced_end = 0
        """Byte offset just past the clip's last voiced sample (0: nothing to report)."""
        self._clip_done: asyncio.Event | None = None
        self._muted = False
        self._closed = False
        self._on_speech_ended: Callable[[float], None] | None = None

    @property
    def description(self) -> str:
        return "WAV-file microphone (fishtalk test)"

    @property
    def has_input(self) -> bool:
        return True

    def set_notice_callback(self, callback: NoticeCallback | None) -> None:
        return None

    async def start(self) -> None:
        return None

    async def mic_frames(self) -> AsyncIterator[rtc.AudioFrame]:
        from livekit import rtc

        silence = bytes(FRAME_BYTES)
        next_at = time.monotonic()
        while not self._closed:
            chunk = silence
            if self._offset < len(self._clip):
                chunk = self._clip[self._offset : self._offset + FRAME_BYTES]
                self._offset += len(chunk)
                if self._voiced_end and self._offset >= self._voiced_end:
                    # This frame holds the last voiced sample: its capture time is now.
                    self._voiced_end = 0
                    report = self._on_speech_ended
                    if report is not None and not self._muted:
                        report(time.monotonic())
                chunk = chunk.ljust(FRAME_BYTES, b"\0")
                if self._offset >= len(self._clip) and self._clip_done is not None:
                    self._clip_done.set()
            if self._muted:
                chunk = silence
            yield rtc.AudioFrame(bytearray(chunk), SAMPLE_RATE, CHANNELS, SAMPLES_PER_FRAME)
            next_at += FRAME_MS / 1000
            delay = next_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                next_at = time.monotonic()

    async def speak(self, pcm: bytes) -> None:
        """Play ``pcm`` (from :func:`load_wav`) as the microphone; returns once sent."""
        done = asyncio.Event()
        self._clip_done, self._clip, self._offset = done, pcm, 0
        self._voiced_end = speech_end(pcm)
        if not pcm:
            return
        await done.wait()

    def play(self, frame: rtc.AudioFrame) -> None:
        return None

    # --- timing taps (heard latency) -------------------------------------------------------

    @property
    def has_output(self) -> bool:
        """Replies reach an output: this one, with no latency."""
        return True

    def set_speech_ended_callback(self, callback: Callable[[float], None] | None) -> None:
        """Report the end of each clip's speech (called on the event loop, once a clip)."""
        self._on_speech_ended = callback

    def play_marked(self, frame: rtc.AudioFrame, on_handed: Callable[[float, float], None]) -> None:
        """Take ``frame`` now and report it handed over, with no output latency."""
        self.play(frame)
        handed_at = time.monotonic()
        asyncio.get_running_loop().call_soon(on_handed, handed_at, 0.0)

    def flush_playback_marked(self, on_flushed: Callable[[float], None]) -> None:
        """Nothing is buffered: the last agent sample has left at once."""
        self.flush_playback()
        left_at = time.monotonic()
        asyncio.get_running_loop().call_soon(on_flushed, left_at)

    def flush_playback(self) -> None:
        return None

    def set_muted(self, muted: bool) -> None:
        self._muted = muted

    def levels(self) -> AudioLevels:
        return AudioLevels()

    async def aclose(self) -> None:
        self._closed = True
        if self._clip_done is not None:
            with contextlib.suppress(Exception):
                self._clip_done.set()
