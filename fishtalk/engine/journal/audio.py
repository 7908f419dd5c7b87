"""``--record-audio``: the call as one stereo WAV file, microphone left, agent right.

:class:`AudioRecorder` is a session observer that keeps only :class:`~fishtalk.engine.observe.
AudioFrame` observations: on the loop it appends the frame to a bounded deque; a daemon
thread places each frame on the timeline of the session clock (sample ``(at - start) *
rate``), fills what neither side said with silence, and writes stereo 16-bit frames with
the standard library's :mod:`wave` module. Sample 0 of the file is the journal header's
``t = 0`` when both are started together, so the two line up.

A frame that arrives a little early for its slot (jitter) is placed right after the
previous one of its side rather than on top of it; a gap longer than a frame is silence.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import wave
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Final

import numpy as np

from fishtalk.engine.journal.worker import WriterThread
from fishtalk.engine.observe import AudioFrame, Observation

_log = logging.getLogger(__name__)

RATE: Final = 48_000
"""The file's sample rate (the session's)."""
ROUND: Final = 0.2
"""Seconds between the writer thread's rounds."""
LATENESS: Final = 0.5
"""Seconds of audio kept unwritten so late frames still find their place."""
MAX_FRAMES: Final = 3_000
"""Frames that may wait for the writer before new ones are dropped (30 s of both sides)."""


class AudioRecorder:
    """Records a session's audio to ``path`` (stereo WAV, mode 0600)."""

    def __init__(
        self,
        path: Path,
        *,
        clock: Callable[[], float] = time.monotonic,
        rate: int = RATE,
    ) -> None:
        self.path = path
        self.rate = rate
        self.dropped = 0
        self._clock = clock
        self._start = clock()
        self._items: deque[AudioFrame] = deque()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.chmod(path, 0o600)
        self._file = os.fdopen(fd, "wb")
        self._wav = wave.open(self._file, "wb")  # noqa: SIM115 (closed by the thread)
        self._wav.setnchannels(2)
        self._wav.setsampwidth(2)
        self._wav.setframerate(rate)
        self._pending = [np.zeros(0, np.int16), np.zeros(0, np.int16)]
        """Per side: samples from ``self._written`` on, not yet in the file."""
        self._written = 0
        self._worker = WriterThread(self._run, "fishtalk-audio")
        self._worker.start()

    def observe(self, item: Observation) -> None:
        """The session observer: keeps audio frames (never blocks; counts drops)."""
        if not isinstance(item, AudioFrame):
            return
        if len(self._items) >= MAX_FRAMES:
            self.dropped += 1
        else:
            self._items.append(item)

    def close(self, timeout: float = 5.0) -> None:
        """Write everything received and close the file; safe twice."""
        self._worker.stop(timeout)

    # --- the writer thread ---------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._worker.stopping.wait(ROUND):
                self._take()
                upto = int((self._clock() - self._start - LATENESS) * self.rate)
                self._write(upto)
            self._take()
            self._write(max(len(p) for p in self._pending) + self._written)
        except Exception:
            _log.exception("the audio recorder failed; %s stops here", self.path)
        finally:
            with contextlib.suppress(Exception):
                self._wav.close()
                self._file.close()

    def _take(self) -> None:
        items = self._items
        while items:
            frame = items.popleft()
            side = 0 if frame.channel == "mic" else 1
            samples = np.frombuffer(frame.data, dtype=np.int16)
            if frame.num_channels > 1:
                samples = samples.reshape(-1, frame.num_channels).mean(axis=1).astype(np.int16)
            if frame.sample_rate != self.rate and len(samples):
                count = round(len(samples) * self.rate / frame.sample_rate)
                positions = np.linspace(0, len(samples) - 1, count)
                samples = np.interp(positions, np.arange(len(samples)), samples).astype(np.int16)
            # The frame ends at ``at``: it starts one frame's length earlier.
            slot = int((frame.at - self._start) * self.rate) - len(samples) - self._written
            pending = self._pending[side]
            start = max(slot, len(pending))
            if start < 0:
                samples = samples[-start:]
                start = 0
            if start > len(pending):
                pending = np.concatenate([pending, np.zeros(start - len(pending), np.int16)])
            self._pending[side] = np.concatenate([pending, samples])

    def _write(self, upto: int) -> None:
        count = upto - self._written
        if count <= 0:
            return
        stereo = np.zeros((count, 2), np.int16)
        for side in (0, 1):
            pending = self._pending[side]
            n = min(count, len(pending))
            stereo[:n, side] = pending[:n]
            self._pending[side] = pending[n:]
        self._wav.writeframes(stereo.tobytes())
        self._file.flush()
        self._written = upto


__all__ = ["LATENESS", "RATE", "AudioRecorder"]
