"""The audio callbacks' preallocated buffers: level meters, 10 ms rechunking, the render ring.

Everything here is touched on a PortAudio thread for every block, so nothing allocates per
sample: a level meter keeps its last blocks as bytes and computes RMS and peak when read, the
rechunker cuts blocks into 10 ms 48 kHz frames without copying in the usual case, and the
render ring carries rendered frames from the playback thread to the capture thread's APM.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from fishtalk.engine.audio.base import CHANNELS, SAMPLE_RATE, SAMPLES_PER_FRAME

if TYPE_CHECKING:
    from livekit import rtc

Int16Array = npt.NDArray[np.int16]

RENDER_RING_FRAMES = 50  # rendered frames the capture thread has not fed to the APM yet
_LEVEL_WINDOW = 5  # frames (50 ms) per level reading
_LEVEL_STALE_S = 0.25
_QUIET_RMS = 0.01 * 32768  # about -40 dBFS


class Levels:
    """The last few blocks of one signal, kept as raw bytes; RMS and peak computed on read.

    ``store`` runs on a PortAudio thread for every block and only copies the block's bytes
    (``keep`` takes a buffer the caller will not change again, without a copy); ``read``
    (the UI polls it at about 20 Hz) does the arithmetic. No numpy on the callback side.
    """

    def __init__(self) -> None:
        self._blocks: list[bytes | bytearray] = [b""] * _LEVEL_WINDOW
        self._size = -1
        self._next = 0
        self._filled = 0
        self._updated = 0.0

    def store(self, samples: Int16Array, now: float) -> None:
        """Copy a block (it may be a device buffer, reused after the callback)."""
        self.keep(samples.tobytes(), now)

    def keep(self, data: bytes | bytearray, now: float) -> None:
        """Keep ``data`` (int16 samples) as it is: the caller never changes it again."""
        if len(data) != self._size:  # the first block, or the device's block size changed
            self._size = len(data)
            self._filled = 0
            self._next = 0
        i = self._next
        self._blocks[i] = data
        self._next = 0 if i == _LEVEL_WINDOW - 1 else i + 1
        if self._filled < _LEVEL_WINDOW:
            self._filled += 1
        self._updated = now

    def clear(self) -> None:
        self._filled = 0
        self._next = 0

    def _window(self) -> Int16Array:
        filled = self._filled
        return np.frombuffer(b"".join(self._blocks[:filled]), dtype=np.int16)

    def has_signal(self) -> bool:
        """Whether any stored block has a sample that is not exactly zero."""
        return self._filled > 0 and bool(self._window().any())

    def read(self) -> tuple[float, float]:
        if not self._filled or time.monotonic() - self._updated > _LEVEL_STALE_S:
            return 0.0, 0.0
        window = self._window()
        if window.size == 0:
            return 0.0, 0.0
        as_float = window.astype(np.float32)
        mean_square = float(np.dot(as_float, as_float)) / as_float.size
        peak = float(np.max(np.abs(as_float)))
        return min(1.0, math.sqrt(mean_square) / 32768.0), min(1.0, peak / 32768.0)


class Rechunker:
    """Turns arbitrary-length int16 blocks (at any rate) into 10 ms 48 kHz chunks."""

    def __init__(self, rate: int) -> None:
        self._resampler: rtc.AudioResampler | None = None
        if rate != SAMPLE_RATE:
            from livekit import rtc

            self._resampler = rtc.AudioResampler(rate, SAMPLE_RATE, num_channels=CHANNELS)
        self._pending: list[Int16Array] = []
        self._pending_len = 0

    @property
    def idle(self) -> bool:
        """Whether a 10 ms 48 kHz block would come out as it went in (nothing held back)."""
        return self._resampler is None and not self._pending

    def push(self, block: Int16Array) -> list[Int16Array]:
        if self._resampler is not None:
            frames = self._resampler.push(bytearray(block.tobytes()))
            if not frames:
                return []
            block = np.concatenate([np.frombuffer(f.data, dtype=np.int16) for f in frames]).astype(
                np.int16, copy=False
            )
        if not self._pending and block.size == SAMPLES_PER_FRAME:
            return [block]  # the usual 48 kHz, 10 ms-block case: no copying
        self._pending.append(block.copy())  # the caller's block may be a device buffer
        self._pending_len += block.size
        if self._pending_len < SAMPLES_PER_FRAME:
            return []
        joined = np.concatenate(self._pending)
        whole = joined.size // SAMPLES_PER_FRAME * SAMPLES_PER_FRAME
        chunks = list(joined[:whole].reshape(-1, SAMPLES_PER_FRAME))
        rest = joined[whole:]
        self._pending = [rest] if rest.size else []
        self._pending_len = int(rest.size)
        return chunks


class RenderRing:
    """Rendered 10 ms frames on their way from the playback thread to the capture thread.

    One writer (``put``, playback thread) and one reader (``feed_reverse``, capture
    thread), each owning its own counter. A reader that fell more than the ring behind
    (a stalled mic) skips to the newest frames and counts what it skipped.
    """

    def __init__(self) -> None:
        self._rows = np.zeros((RENDER_RING_FRAMES, SAMPLES_PER_FRAME), dtype=np.int16)
        self.written = 0
        self.taken = 0
        self.dropped = 0

    def put(self, frame: Int16Array) -> None:
        self._rows[self.written % RENDER_RING_FRAMES] = frame
        self.written += 1

    def skip(self) -> None:
        self.taken = self.written

    def pending(self) -> list[Int16Array]:
        written = self.written
        behind = written - self.taken
        if behind <= 0:
            return []
        if behind > RENDER_RING_FRAMES - 1:  # keep clear of the row being written
            self.dropped += behind - (RENDER_RING_FRAMES - 1)
            self.taken = written - (RENDER_RING_FRAMES - 1)
        rows = [self._rows[i % RENDER_RING_FRAMES] for i in range(self.taken, written)]
        self.taken = written
        return rows


def is_quiet(samples: Int16Array) -> bool:
    """Whether ``samples`` are below about -40 dBFS (a pause that may be shortened)."""
    if samples.size == 0:
        return True
    as_float = samples.astype(np.float32)
    return float(np.dot(as_float, as_float)) < _QUIET_RMS**2 * samples.size
