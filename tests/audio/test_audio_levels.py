"""The level meter's ring: blocks are stored as-is and RMS/peak computed when read."""

from __future__ import annotations

import time

import numpy as np
import pytest

from fishtalk.audio.backend import _Levels


def _sine(amplitude: float, n: int = 480) -> np.ndarray:
    t = np.arange(n) / 48_000
    return (np.sin(2 * np.pi * 1000 * t) * amplitude * 32767).astype(np.int16)


def test_levels_are_computed_from_the_stored_blocks() -> None:
    levels = _Levels()
    assert levels.read() == (0.0, 0.0)
    block = _sine(0.5)
    now = time.monotonic()
    for _ in range(5):
        levels.store(block, now)
    rms, peak = levels.read()
    assert rms == pytest.approx(0.5 / np.sqrt(2), rel=0.01)
    assert peak == pytest.approx(0.5, rel=0.01)


def test_the_window_is_the_last_five_blocks() -> None:

    levels = _Levels()
    now = time.monotonic()
    for _ in range(5):
        levels.store(_sine(0.8), now)
    for _ in range(5):
        levels.store(np.zeros(480, np.int16), now)
    assert levels.read() == (0.0, 0.0)
    levels.store(_sine(0.4), now)
    rms, peak = levels.read()
    assert rms == pytest.approx(0.4 / np.sqrt(2) / np.sqrt(5), rel=0.01)
    assert peak == pytest.approx(0.4, rel=0.01)


def test_stored_blocks_are_copies_of_the_device_buffer() -> None:

    levels = _Levels()
    buffer = _sine(0.5)
    levels.store(buffer, time.monotonic())
    buffer[:] = 0  # PortAudio reuses its buffer after the callback returns
    assert levels.read()[1] == pytest.approx(0.5, rel=0.01)
    assert levels.has_signal()


def test_clear_stale_and_silence() -> None:

    levels = _Levels()
    levels.store(_sine(0.5), time.monotonic())
    levels.clear()
    assert levels.read() == (0.0, 0.0)
    assert not levels.has_signal()
    levels.store(_sine(0.5), time.monotonic() - 1.0)  # nothing newer for a second
    assert levels.read() == (0.0, 0.0)
    levels.store(np.zeros(480, np.int16), time.monotonic())
    levels.clear()
    levels.store(np.zeros(480, np.int16), time.monotonic())
    assert not levels.has_signal()


def test_a_new_block_size_starts_a_new_window() -> None:

    levels = _Levels()
    now = time.monotonic()
    levels.store(_sine(0.9), now)
    levels.store(_sine(0.3, n=441), now)  # a 44.1 kHz device after a fallback
    assert levels.read()[1] == pytest.approx(0.3, rel=0.02)
