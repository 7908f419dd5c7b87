"""Signal helpers for the audio tests (tones, FFT peak, waiting with a timeout)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

RATE = 48_000


def tone(freq: float, seconds: float, amplitude: float = 0.3) -> npt.NDArray[np.int16]:
    """A sine at ``freq`` Hz, 48 kHz int16."""
    t = np.arange(int(seconds * RATE)) / RATE
    return (np.sin(2 * np.pi * freq * t) * amplitude * 32767).astype(np.int16)


def dominant_frequency(samples: npt.NDArray[np.int16], rate: int = RATE) -> float:
    """The strongest frequency in ``samples`` (Hann window, parabolic peak refinement)."""
    x = samples.astype(np.float64)
    spectrum = np.abs(np.fft.rfft(x * np.hanning(x.size)))
    spectrum[0] = 0.0
    k = int(np.argmax(spectrum))
    if 0 < k < spectrum.size - 1:
        a, b, c = np.log(spectrum[k - 1 : k + 2] + 1e-12)
        k_refined = k + 0.5 * (a - c) / (a - 2 * b + c)
    else:
        k_refined = float(k)
    return float(k_refined * rate / x.size)


def steady_frequency(samples: npt.NDArray[np.int16], rate: int = RATE, window: int = 4096) -> float:
    """The tone's frequency as the median over overlapping windows of ``samples``.

    Sound that crossed a WebRTC call can carry a few seams where the receiver's jitter
    buffer stretched or concealed audio (under load); one FFT over everything shifts its
    peak by a few hertz at such a seam, while most windows hold clean tone.
    """
    if samples.size <= window:
        return dominant_frequency(samples, rate)
    starts = range(0, samples.size - window + 1, window // 2)
    return float(np.median([dominant_frequency(samples[i : i + window], rate) for i in starts]))


def loud_samples(samples: npt.NDArray[np.int16], threshold: float = 0.02) -> npt.NDArray[np.int16]:
    """The 10 ms blocks of ``samples`` whose RMS exceeds ``threshold`` (full scale = 1)."""
    whole = samples.size // 480 * 480
    blocks = samples[:whole].reshape(-1, 480).astype(np.float64)
    rms = np.sqrt(np.mean(blocks**2, axis=1)) / 32768
    return samples[:whole].reshape(-1, 480)[rms > threshold].reshape(-1)


async def wait_for(predicate: Callable[[], bool], within: float, what: str) -> None:
    """Poll ``predicate()`` every 20 ms; fail the test with ``what`` after ``within`` s."""
    deadline = asyncio.get_running_loop().time() + within
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"timed out waiting for {what}", pytrace=False)
        await asyncio.sleep(0.02)
