"""A call's ``--record-audio`` file made ready for the page: Ogg Opus as a ``data:`` URL,
and the peaks of both channels for the waveform strip.

The recording is 48 kHz stereo 16-bit PCM (microphone left, agent right). The page carries
it at 16 kHz (each three samples averaged, which also filters what 16 kHz cannot hold),
encoded as Opus at 24 kbit/s in Ogg (libopus through PyAV, which the WebRTC stack already
installs): a 30-minute call is about 5 MB in the page instead of 146 MB of WAV, and opens in
well under a second (bench/bench_report.py). Every current browser plays Ogg Opus. Where
PyAV has no libopus, the page falls back to 16 kHz WAV, and says which codec it holds.
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
OPUS_BITRATE: Final = 24_000
"""Bits per second of the page's Opus stream (both channels): clear speech."""
CODEC: Final = "Ogg Opus, 24 kbit/s, stereo (microphone left, agent right)"
WAV_CODEC: Final = "WAV, 16-bit PCM, 16 kHz stereo (microphone left, agent right)"


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


_OPUS_RATES: Final = frozenset({8_000, 12_000, 16_000, 24_000, 48_000})


def _ogg_opus(frames: np.ndarray, rate: int) -> bytes | None:
    """Stereo 16-bit ``frames`` as Ogg Opus; None where PyAV or its libopus is missing (or
    the rate is one Opus does not take)."""
    if rate not in _OPUS_RATES:
        return None
    try:
        import av
    except ImportError:
        return None
    buffer = io.BytesIO()
    try:
        with av.open(buffer, "w", format="ogg") as container:
            options = {"application": "voip"}
            stream = container.add_stream("libopus", rate=rate, layout="stereo", options=options)
            stream.bit_rate = OPUS_BITRATE
            for start in range(0, frames.shape[0], rate):  # a second at a time
                chunk = np.ascontiguousarray(frames[start : start + rate], dtype="<i2")
                frame = av.AudioFrame.from_ndarray(
                    chunk.reshape(1, -1), format="s16", layout="stereo"
                )
                frame.sample_rate = rate
                frame.pts = start
                for packet in stream.encode(frame):
                    container.mux(packet)
            for packet in stream.encode(None):
                container.mux(packet)
    except (av.FFmpegError, ValueError):
        return None
    return buffer.getvalue()


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
    opus = _ogg_opus(frames, rate)
    if opus is not None:
        url = "data:audio/ogg;codecs=opus;base64," + base64.b64encode(opus).decode("ascii")
        codec = CODEC
    else:
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as out:
            out.setnchannels(2)
            out.setsampwidth(2)
            out.setframerate(rate)
            out.writeframes(frames.astype("<i2").tobytes())
        url = "data:audio/wav;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
        codec = WAV_CODEC.replace("16 kHz", f"{rate / 1000:g} kHz")
    mic, agent = _peaks(frames[:, 0]), _peaks(frames[:, 1])
    loudest = max(max(mic), max(agent))
    if loudest > 0:  # the strip shows shape, not level: scale the loudest to full height
        mic = [round(p / loudest, 3) for p in mic]
        agent = [round(p / loudest, 3) for p in agent]
    return PageAudio(url, frames.shape[0] / rate, mic, agent, codec)


__all__ = ["CODEC", "WAV_CODEC", "PageAudio", "load_audio"]
