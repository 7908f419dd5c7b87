"""The PortAudio streams: the microphone and speaker callbacks, and closing a stream.

``Capture`` and ``Playback`` are the PortAudio-thread side of the two devices: each callback
stamps its block, hands it to a sink and counts what was lost; the playback callback also
renders the bounded agent-audio queue and reports marked and flushed frames to the loop
through ``post``. A stream that stops on its own calls ``failed`` (see ``recovery``).
Closing may hang in a broken driver, so it runs on a daemon thread with a time limit.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from fishtalk.engine import native
from fishtalk.engine.aio import in_daemon_thread
from fishtalk.engine.audio.base import SAMPLE_RATE, FlushedCallback, HandedCallback
from fishtalk.engine.audio.buffers import Int16Array
from fishtalk.engine.audio.devices import DeviceKind, StreamFormat, stream_closed, stream_opened

_log = logging.getLogger(__name__)

_BLOCK_MS = 10
_PLAYBACK_QUEUE_SECONDS = 20.0  # agent audio may arrive ahead of real time
_CLOSE_TIMEOUT_S = 2.0
_LATENCY_SAMPLES = 6000  # the last minute of frames, for percentiles


def _close_stream(stream: Any) -> None:
    try:
        stream.abort()
        stream.close()
    except Exception as exc:  # a failed device may refuse to close cleanly; it is gone anyway
        _log.debug("closing a failed stream: %s", exc)
    finally:
        stream_closed()


async def close_in_background(close: Callable[[], None], limit: float = _CLOSE_TIMEOUT_S) -> bool:
    """Run a blocking stream close on a daemon thread; give up waiting after ``limit`` s.

    Returns False when the close did not finish (the stream is abandoned, never awaited
    again, and the process can still exit).
    """
    done = in_daemon_thread(close, name="fishtalk-audio-close")
    try:
        await asyncio.wait_for(asyncio.shield(done), limit)
    except TimeoutError:
        native.note_wedged_audio_stream()
        _log.warning("an audio stream did not close within %.1f s; abandoning it", limit)
        return False
    except Exception as exc:  # it finished, badly: the stream is gone either way
        _log.debug("closing a stream failed: %s", exc)
    return True


def _block_size(rate: int) -> int:
    return max(1, rate * _BLOCK_MS // 1000)


BlockSink = Callable[[Int16Array, float], None]
"""Receives one mono device block (a view valid only during the call) on a PortAudio thread."""
Post = Callable[..., None]
"""Hands ``fn(*args)`` to the event loop from a PortAudio thread (call_soon_threadsafe)."""


def _stream_latency(stream: Any) -> float:
    """A stream's latency as reported at open, seconds (0.0 when it reports none)."""
    try:
        latency = float(stream.latency)
    except (AttributeError, TypeError, ValueError):  # a host API without it
        return 0.0
    return latency if latency >= 0.0 and math.isfinite(latency) else 0.0


class Capture:
    """The microphone stream: PortAudio thread side."""

    def __init__(
        self,
        sd: Any,
        device: int | None,
        fmt: StreamFormat,
        sink: BlockSink,
        failed: Callable[[], None],
    ) -> None:
        self.device = device
        self.format = fmt
        self.blocks = 0
        self.overflows = 0  # blocks the device lost before this process could read them
        now = time.monotonic()
        self.last_callback = now
        self.last_nonzero = now
        self.closing = False
        self.stamp = False
        """Whether blocks are stamped with their ADC time (only the detector needs it)."""
        self._sink = sink
        self._failed = failed
        self.stream: Any = sd.InputStream(
            device=device,
            samplerate=fmt.samplerate,
            channels=fmt.channels,
            dtype="int16",
            blocksize=_block_size(fmt.samplerate),
            latency="low",
            callback=self._callback,
            finished_callback=self._finished,
        )
        stream_opened()
        self.reported_latency = _stream_latency(self.stream)
        """Seconds from a sample reaching the device to its block's callback."""

    def _callback(self, indata: Any, frames: int, time_info: Any, status: Any) -> None:
        now = time.monotonic()
        self.last_callback = now
        self.blocks += 1
        if status and status.input_overflow:
            self.overflows += 1
        captured_at = self._captured_at(now, frames, time_info) if self.stamp else now
        # No per-block check for digital silence here (a numpy reduction is the dearest
        # thing a callback could do): the watchdog looks at the stored recent blocks.
        if indata.shape[1] == 1:
            self._sink(indata[:, 0], captured_at)
        else:
            self._sink(indata.mean(axis=1).astype(np.int16), captured_at)

    def _captured_at(self, now: float, frames: int, time_info: Any) -> float:
        """When the block's last sample reached the device: PortAudio's ADC time of its
        first sample (on the stream's clock, taken relative to its "now") plus the block,
        or the latency reported at open when the host API gives no ADC time."""
        try:
            behind = float(time_info.currentTime) - float(time_info.inputBufferAdcTime)
        except (AttributeError, TypeError, ValueError):  # a host API without it
            behind = -1.0
        if not 0.0 < behind < 1.0:
            behind = self.reported_latency + frames / self.format.samplerate
        return now - behind + frames / self.format.samplerate

    def _finished(self) -> None:
        if not self.closing:
            self._failed()

    def close(self) -> None:
        self.closing = True
        _close_stream(self.stream)


class Playback:
    """The speaker stream: PortAudio thread side plus the bounded agent-audio queue."""

    def __init__(
        self,
        sd: Any,
        device: int | None,
        fmt: StreamFormat,
        sink: BlockSink,
        failed: Callable[[], None],
        post: Post,
    ) -> None:
        self.device = device
        self.format = fmt
        block = _block_size(fmt.samplerate)
        max_frames = int(_PLAYBACK_QUEUE_SECONDS * 1000 / _BLOCK_MS)
        # (samples at the device rate, monotonic time play() queued them, who to tell when
        # the first sample is handed to the device)
        self.queue: deque[tuple[Int16Array, float, HandedCallback | None]] = deque(
            maxlen=max_frames
        )
        self.pending_marker: HandedCallback | None = None
        """A marker whose frame produced no samples yet (resampler warm-up)."""
        self.on_flushed: FlushedCallback | None = None
        self.dropped = 0
        self.trimmed = 0
        self.underruns = 0
        self.flush_generation = 0
        self._seen_generation = 0
        self._rest: Int16Array | None = None
        self.latency_sum = 0.0
        self.latency_max = 0.0
        self.latency_count = 0
        self.latency_recent: deque[float] = deque(maxlen=_LATENCY_SAMPLES)
        self.last_callback = time.monotonic()
        self.closing = False
        self._sink = sink
        self._failed = failed
        self._post = post
        self.stream: Any = sd.OutputStream(
            device=device,
            samplerate=fmt.samplerate,
            channels=fmt.channels,
            dtype="int16",
            blocksize=block,
            latency="low",
            callback=self._callback,
            finished_callback=self._finished,
        )
        stream_opened()
        self.reported_latency = _stream_latency(self.stream)

    def enqueue(
        self, samples: Int16Array, queued_at: float, marker: HandedCallback | None = None
    ) -> None:
        if len(self.queue) == self.queue.maxlen:
            self.dropped += 1
        self.queue.append((samples, queued_at, marker))

    def output_latency(self, time_info: Any) -> float:
        """Seconds from this callback to the block's first sample leaving the device.

        PortAudio's per-callback figure (DAC time minus now, on the stream's clock) when
        the host API reports one, else the stream's latency reported at open.
        """
        try:
            ahead = float(time_info.outputBufferDacTime) - float(time_info.currentTime)
        except (AttributeError, TypeError, ValueError):  # a host API without it
            ahead = 0.0
        return ahead if 0.0 < ahead < 1.0 else self.reported_latency

    def _callback(self, outdata: Any, frames: int, time_info: Any, status: Any) -> None:
        del status
        now = time.monotonic()
        self.last_callback = now
        if self._seen_generation != self.flush_generation:
            self._seen_generation = self.flush_generation
            self._rest = None
            flushed = self.on_flushed
            if flushed is not None:
                # What the device already holds still plays: the last agent sample leaves
                # when this (silent) block would start to.
                self.on_flushed = None
                self._post(flushed, now + self.output_latency(time_info))
        out = outdata[:, 0]
        filled = 0
        rest = self._rest
        queue = self.queue
        while filled < frames:
            if rest is None:
                if not queue:
                    break
                try:
                    rest, queued_at, marker = queue.popleft()
                except IndexError:  # flushed on the loop between the check and the pop
                    break
                if marker is not None:
                    # The marked frame starts `filled` samples into this block.
                    latency = self.output_latency(time_info) + filled / self.format.samplerate
                    self._post(marker, now, latency)
                waited = now - queued_at
                self.latency_sum += waited
                self.latency_count += 1
                if waited > self.latency_max:
                    self.latency_max = waited
                self.latency_recent.append(waited)
            take = min(frames - filled, rest.size)
            out[filled : filled + take] = rest[:take]
            filled += take
            rest = rest[take:] if take < rest.size else None
        self._rest = rest
        if filled < frames:
            out[filled:] = 0
            if filled:
                self.underruns += 1
        if outdata.shape[1] > 1:
            outdata[:, 1:] = outdata[:, :1]
        self._sink(out, now)

    def _finished(self) -> None:
        if not self.closing:
            self._failed()

    def flush(self, on_flushed: FlushedCallback | None = None) -> None:
        self.pending_marker = None
        if on_flushed is not None:
            self.on_flushed = on_flushed  # before the generation: the callback reads it after
        self.queue.clear()
        self.flush_generation += 1

    def close(self) -> None:
        self.closing = True
        _close_stream(self.stream)


def stream_label(sd: Any, stream: Capture | Playback | None, kind: DeviceKind) -> str:
    """The device a stream has open, with its rate when it is resampled."""
    if stream is None:
        return "none"
    name = device_label(sd, stream.device, kind)
    rate = stream.format.samplerate
    return name if rate == SAMPLE_RATE else f"{name} ({rate} Hz, resampled)"


def device_label(sd: Any, device: int | None, kind: DeviceKind) -> str:
    """A device's name (``default`` for the default device), or ``?``."""
    try:
        info: Any = sd.query_devices(device, kind)
        name = str(info["name"])
    except Exception:
        name = "?"
    return "default" if device is None and name in ("default", "?") else name
