"""The audio analysis helpers other tests rely on."""

from __future__ import annotations

import numpy as np
from support.sim_clients import dominant_frequency, tone_frequency


def _sine(frequency: float, seconds: float, rate: int = 48000) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (np.sin(2 * np.pi * frequency * t) * 10000).astype(np.int16)


def test_dominant_frequency_resolves_below_one_bin() -> None:
    assert abs(dominant_frequency(_sine(440.3, 1.0), 48000) - 440.3) < 0.1
    assert dominant_frequency(np.zeros(0, dtype=np.int16), 48000) == 0.0


def test_tone_frequency_ignores_splices() -> None:
    tone = _sine(440.0, 1.0)
    spliced = np.concatenate([tone[:10000], tone[10500:30000], tone[100:20000]])
    assert abs(tone_frequency(spliced, 48000) - 440.0) < 1.0
