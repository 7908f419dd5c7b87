"""A call's ``--record-audio`` file made ready for the page: a smaller WAV as a ``data:`` URL,
and the peaks of both channels for the waveform strip.

The recording is 48 kHz stereo 16-bit PCM (microphone left, agent right). The page carries
it at 16 kHz (each three samples averaged, which also filters what 16 kHz cannot hold):
a third of the size, still clear speech, and every browser plays WAV without a decoder.
"""

from __future__ import annotations

import base64
import io
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np

PAGE_RATE: Final = 16_000
"""The sample rate of the audio in the page."""
COLUMNS: Final = 1000
"""Peaks per channel in the waveform strip."""
CODEC: Final = "WAV, 16-bit PCM, 16 kHz stereo (microphone left, agent right)"


@dataclass(frozen=True)
class PageAudio:
    """The call's audio for the page."""

    data_url: str
    duration: float
    mic: list[float]
    agent: list[float]
    codec: str = CODEC


def _stereo(path: Path) -> tuple[np.ndarray, int]:
    with wave.open(str(path), "rb") as wav:
        if wav.getsampwidth() != 2 or wav.getnchannels() not in (1, 2):
            raise ValueError("not 16-bit mono or stereo PCM")
        rate = wav.getframerate()
        channels = wav.getnchannels()
        data = np.frombuffer(wav.readframes(wav.getnframes()), np.int16)
    frames = data.reshape(-1, channels)
    if channels == 1:
        frames = np.repeat(frames, 2, axis=1)
    return frames, rate


def _peaks(channel: np.ndarray) -> list[float]:
    if channel.size == 0:
        return []
    chunks = np.array_split(np.abs(channel.astype(np.int32)), min(COLUMNS, channel.size))
    return [round(float(c.max()) / 32768.0, 3) for c in chunks]


def load_audio(path: Path) -> PageAudio | None:
    """The page's audio from the WAV at ``path``; None when there is none or it is unreadable
    (the page is still useful without it)."""
    try:
        frames, rate = _stereo(path)
    except (OSError, EOFError, ValueError, wave.Error):
        return None
    if frames.shape[0] == 0:
        return None
    factor = rate // PAGE_RATE if rate % PAGE_RATE == 0 and rate > PAGE_RATE else 1
    if factor > 1:
        usable = frames[: frames.shape[0] // factor * factor].astype(np.int32)
        frames = (usable.reshape(-1, factor, 2).mean(axis=1)).astype(np.int16)
        rate //= factor
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(2)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(frames.astype("<i2").tobytes())
    url = "data:audio/wav;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    codec = CODEC if rate == PAGE_RATE else CODEC.replace("16 kHz", f"{rate / 1000:g} kHz")
    mic, agent = _peaks(frames[:, 0]), _peaks(frames[:, 1])
    loudest = max(max(mic), max(agent))
    if loudest > 0:  # the strip shows shape, not level: scale the loudest to full height
        mic = [round(p / loudest, 3) for p in mic]
        agent = [round(p / loudest, 3) for p in agent]
    return PageAudio(url, frames.shape[0] / rate, mic, agent, codec)


__all__ = ["CODEC", "PageAudio", "load_audio"]
