"""Speech audio as numpy: mono int16 PCM, WAV decoding and resampling between rates.

Everything in :mod:`fishtalk.speech` takes and returns mono int16 samples with an
explicit rate: speech-to-text wants 16 kHz, a LiveKit track carries 48 kHz.
"""

from __future__ import annotations

import io
import wave

import numpy as np
import numpy.typing as npt

Pcm = npt.NDArray[np.int16]
"""Mono 16-bit samples."""

STT_RATE = 16_000
"""The rate pocketsphinx's bundled acoustic model was trained at."""


def resample(samples: npt.NDArray[np.float64], rate: int, to_rate: int) -> npt.NDArray[np.float64]:
    """Linear-interpolation resampling (enough for speech going to a recogniser or a track)."""
    if rate == to_rate or samples.size == 0:
        return samples
    n_out = round(samples.size * to_rate / rate)
    x_out = np.arange(n_out, dtype=np.float64) * (rate / to_rate)
    return np.interp(x_out, np.arange(samples.size, dtype=np.float64), samples)


def to_pcm(samples: npt.NDArray[np.float64]) -> Pcm:
    """Round and clip float samples to int16."""
    return np.clip(np.round(samples), -32768, 32767).astype(np.int16)


def convert(samples: Pcm, rate: int, to_rate: int) -> Pcm:
    """``samples`` at ``rate`` as int16 at ``to_rate``."""
    if rate == to_rate:
        return samples
    return to_pcm(resample(samples.astype(np.float64), rate, to_rate))


def decode_wav(data: bytes, rate: int) -> Pcm:
    """A 16-bit PCM WAV (any rate, mono or its first channel) as mono int16 at ``rate``.

    Raises ``ValueError`` (or ``wave.Error``/``EOFError``) for anything else.
    """
    with wave.open(io.BytesIO(data)) as wav:
        if wav.getsampwidth() != 2:
            raise ValueError("expected 16-bit PCM")
        channels = wav.getnchannels()
        source_rate = wav.getframerate()
        frames = wav.readframes(wav.getnframes())
    pcm = np.frombuffer(frames, dtype="<i2")[::channels].astype(np.float64)
    return to_pcm(resample(pcm, source_rate, rate))


def silence(seconds: float, rate: int) -> Pcm:
    """``seconds`` of digital silence at ``rate``."""
    return np.zeros(round(seconds * rate), dtype=np.int16)


__all__ = ["STT_RATE", "Pcm", "convert", "decode_wav", "resample", "silence", "to_pcm"]
