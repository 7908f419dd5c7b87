"""The callbacks' preallocated rings: the level meter (blocks stored as-is, RMS and peak
computed when read) and the rendered frames on their way to the APM's reverse stream."""

from __future__ import annotations

import time

import numpy as np
import pytest

from fishtalk.engine.audio.buffers import RENDER_RING_FRAMES, Levels, RenderRing


def _sine(amplitude: float, n: int = 480) -> np.ndarray:
    t = np.arange(n) / 48_000
    return (np.sin(2 * np.pi * 1000 * t) * amplitude * 32767).astype(np.int16)


def test_levels_are_computed_from_the_stored_blocks() -> None:
    levels = Levels()
    assert levels.read() == (0.0, 0.0)
    block = _sine(0.5)
    now = time.monotonic()
    for _ in range(5):
        levels.store(block, now)
    rms, peak = levels.read()
    assert rms == pytest.approx(0.5 / np.sqrt(2), rel=0.01)
    assert peak == pytest.approx(0.5, rel=0.01)


def test_the_window_is_the_last_five_blocks() -> None:

    levels = Levels()
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

    levels = Levels()
    buffer = _sine(0.5)
    levels.store(buffer, time.monotonic())
    buffer[:] = 0  # PortAudio reuses its buffer after the callback returns
    assert levels.read()[1] == pytest.approx(0.5, rel=0.01)
    assert levels.has_signal()


def test_clear_stale_and_silence() -> None:

    levels = Levels()
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

    levels = Levels()
    now = time.monotonic()
    levels.store(_sine(0.9), now)
    levels.store(_sine(0.3, n=441), now)  # a 44.1 kHz device after a fallback
    assert levels.read()[1] == pytest.approx(0.3, rel=0.02)


def test_render_ring_hands_over_frames_in_order_as_copies() -> None:
    ring = RenderRing()
    assert ring.pending() == []
    block = np.zeros(480, np.int16)
    for value in (1, 2, 3):
        block[:] = value  # the device buffer is reused for every block
        ring.put(block)
    assert [int(frame[0]) for frame in ring.pending()] == [1, 2, 3]
    assert ring.pending() == []
    ring.put(block)
    ring.skip()  # muted: nothing to cancel, nothing to feed
    assert ring.pending() == []
    assert ring.dropped == 0


def test_render_ring_reader_that_fell_behind_skips_to_the_newest() -> None:
    ring = RenderRing()
    total = RENDER_RING_FRAMES + 10
    for value in range(total):
        ring.put(np.full(480, value, np.int16))
    frames = ring.pending()
    kept = RENDER_RING_FRAMES - 1
    assert [int(f[0]) for f in frames] == list(range(total - kept, total))
    assert ring.dropped == total - kept
