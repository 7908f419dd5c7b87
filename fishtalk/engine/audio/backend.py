"""The sounddevice backend: microphone and speaker with WebRTC voice processing.

Threads: PortAudio calls ``_Capture._callback`` and ``_Playback._callback`` on its own
threads, and the per-block work happens there, as WebRTC's own audio device module does
it: the capture callback cuts 10 ms frames, runs them through the AudioProcessingModule
and appends them to a bounded deque (a full deque drops its oldest frame, which is
counted). The playback callback stays as short as bare PortAudio's: it renders queued
agent audio and, with echo cancellation on, copies the rendered 10 ms frames into a
preallocated ring, which the capture callback feeds to the APM's reverse stream right
before it processes its own frames. So the APM sees render and capture in time order on
one thread, and nothing slow ever runs on the thread that must keep the speaker fed.

The event loop is woken only when ``mic_frames()`` is waiting, once per two 10 ms frames
(frames that arrive while the consumer is busy are taken without a wake), and not by the
capture thread at all while agent audio is being played: ``play()`` runs on the loop every
10 ms then and hands the waiting consumer its frames on the way. Levels are not computed
per block: each callback keeps its last few blocks as bytes (the mic's is the frame's own
copy when no APM changes it afterwards), and RMS and peak are computed when ``levels()``
is read. Flushing playback clears the queue and tells the callback to drop its partial
frame, so queued agent audio stops within one device block.

Heard latency (the :class:`~fishtalk.engine.audio.base.LatencyTaps`): while the session listens
for the end of speech, capture blocks are stamped with the time their last sample reached
the device (PortAudio's ADC time) and the end-of-speech detector (:mod:`fishtalk.engine.audio.vad`)
runs on each processed frame. A marked agent frame carries its callback through the
playback queue; the playback callback that hands its first sample to the device reports
that moment and the device's output latency for it (DAC time minus now, or the latency
reported at open). A flush reports the next playback callback's time plus that latency.
Every report reaches the loop with one call_soon_threadsafe, never one per frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from fishtalk.core.errors import AudioDeviceError
from fishtalk.engine import native
from fishtalk.engine.aio import in_daemon_thread
from fishtalk.engine.audio.base import (
    CHANNELS,
    SAMPLE_RATE,
    SAMPLES_PER_FRAME,
    AudioBackend,
    AudioLevels,
    FlushedCallback,
    HandedCallback,
    NoticeCallback,
    NullAudio,
    SpeechEndedCallback,
)
from fishtalk.engine.audio.devices import (
    AudioUnavailable,
    DeviceKind,
    StreamFormat,
    import_sounddevice,
    list_devices,
    probe_format,
    resolve_device,
    stream_closed,
    stream_opened,
)
from fishtalk.engine.audio.vad import EnergyVad

if TYPE_CHECKING:
    from livekit import rtc

    from fishtalk.engine.audio.options import AudioOptions

Int16Array = npt.NDArray[np.int16]
_log = logging.getLogger(__name__)

_BLOCK_MS = 10
_FRAME_S = SAMPLES_PER_FRAME / SAMPLE_RATE
# 1 s of processed frames nobody has read yet (a loop stalled that long under load drops
# the oldest; the count is in the stats).
_MIC_QUEUE_FRAMES = 100
# A waiting mic_frames() is woken when this many frames are ready: two 10 ms frames per
# wake halve the loop's wake-ups for at most 10 ms more mic latency.
_MIC_WAKE_FRAMES = 2
# While play() has run on the loop this recently (agent frames arrive every 10 ms while a
# track is subscribed), the capture thread leaves the wake to the next play() instead of
# waking the loop itself: the loop is about to run anyway, and a wake from another thread
# costs a self-pipe write and a context switch.
_LOOP_VISIT_S = 0.02
_RENDER_RING_FRAMES = 50  # rendered frames the capture thread has not fed to the APM yet
_PLAYBACK_QUEUE_SECONDS = 20.0  # agent audio may arrive ahead of real time
_LEVEL_WINDOW = 5  # frames (50 ms) per level reading
_LEVEL_STALE_S = 0.25
_WATCHDOG_PERIOD_S = 0.5
_MAX_REOPENS = 3
_CLOSE_TIMEOUT_S = 2.0
_BACKLOG_FRAMES = 3  # above this much queued agent audio (~30 ms), quiet frames are skipped
_QUIET_RMS = 0.01 * 32768  # about -40 dBFS
_LATENCY_SAMPLES = 6000  # the last minute of frames, for percentiles
_REOPEN_DELAYS = (0.2, 0.5, 1.0, 2.0)  # seconds before each attempt to reopen a device


@dataclass(frozen=True, slots=True)
class AudioStats:
    """Counters for the debug view and the benchmarks."""

    mic_blocks: int
    mic_dropped_blocks: int
    mic_dropped_frames: int
    playback_frames: int
    playback_dropped_frames: int
    playback_trimmed_frames: int
    playback_underruns: int
    render_dropped_blocks: int
    apm_errors: int
    handoff_latency_mean_ms: float
    handoff_latency_p50_ms: float
    handoff_latency_p95_ms: float
    handoff_latency_max_ms: float
    input_format: StreamFormat | None
    output_format: StreamFormat | None
    mic_thread_wakes: int = 0
    """Times the capture thread woke the loop for mic_frames() (play() does it otherwise)."""


class _Levels:
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


class _Rechunker:
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


class _RenderRing:
    """Rendered 10 ms frames on their way from the playback thread to the capture thread.

    One writer (``put``, playback thread) and one reader (``feed_reverse``, capture
    thread), each owning its own counter. A reader that fell more than the ring behind
    (a stalled mic) skips to the newest frames and counts what it skipped.
    """

    def __init__(self) -> None:
        self._rows = np.zeros((_RENDER_RING_FRAMES, SAMPLES_PER_FRAME), dtype=np.int16)
        self.written = 0
        self.taken = 0
        self.dropped = 0

    def put(self, frame: Int16Array) -> None:
        self._rows[self.written % _RENDER_RING_FRAMES] = frame
        self.written += 1

    def skip(self) -> None:
        self.taken = self.written

    def pending(self) -> list[Int16Array]:
        written = self.written
        behind = written - self.taken
        if behind <= 0:
            return []
        if behind > _RENDER_RING_FRAMES - 1:  # keep clear of the row being written
            self.dropped += behind - (_RENDER_RING_FRAMES - 1)
            self.taken = written - (_RENDER_RING_FRAMES - 1)
        rows = [self._rows[i % _RENDER_RING_FRAMES] for i in range(self.taken, written)]
        self.taken = written
        return rows


def _is_quiet(samples: Int16Array) -> bool:
    if samples.size == 0:
        return True
    as_float = samples.astype(np.float32)
    return float(np.dot(as_float, as_float)) < _QUIET_RMS**2 * samples.size


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


class _Capture:
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


class _Playback:
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


def _stream_label(sd: Any, stream: _Capture | _Playback | None, kind: DeviceKind) -> str:
    if stream is None:
        return "none"
    name = _device_label(sd, stream.device, kind)
    rate = stream.format.samplerate
    return name if rate == SAMPLE_RATE else f"{name} ({rate} Hz, resampled)"


def _device_label(sd: Any, device: int | None, kind: DeviceKind) -> str:
    try:
        info: Any = sd.query_devices(device, kind)
        name = str(info["name"])
    except Exception:
        name = "?"
    return "default" if device is None and name in ("default", "?") else name


class SoundDeviceAudio:
    """Microphone and speaker through PortAudio, with livekit's AudioProcessingModule.

    Build it with :func:`fishtalk.engine.audio.open_backend`. ``has_input`` and ``description``
    are meaningful after :meth:`start`. ``mic_frames`` has a single consumer.
    """

    def __init__(
        self,
        *,
        input_device: int | None,
        output_device: int | None,
        use_input: bool = True,
        use_output: bool = True,
        echo_cancellation: bool = True,
        noise_suppression: bool = True,
        high_pass_filter: bool = True,
        auto_gain: bool = True,
        notice: NoticeCallback | None = None,
        watchdog_seconds: float = 3.0,
        preferred_rate: int = SAMPLE_RATE,
    ) -> None:
        self._sd = import_sounddevice()
        self._input_device = input_device
        self._output_device = output_device
        self._use_input = use_input
        self._use_output = use_output
        self._apm_flags = (echo_cancellation, noise_suppression, high_pass_filter, auto_gain)
        self._notice = notice
        self._watchdog_seconds = watchdog_seconds
        self._preferred_rate = preferred_rate
        self._loop: asyncio.AbstractEventLoop | None = None
        self._capture: _Capture | None = None
        self._playback: _Playback | None = None
        self._apm: rtc.AudioProcessingModule | None = None
        self._apm_delay_ms = 0  # set on the loop, applied on the capture thread
        self._apm_delay_applied = -1
        self._apm_errors = 0
        self._cap_chunks: _Rechunker | None = None
        self._render_chunks: _Rechunker | None = None
        self._play_resampler: rtc.AudioResampler | None = None
        self._play_resampler_rates = (0, 0)
        self._frame_type: type[rtc.AudioFrame] | None = None
        # With echo cancellation: rendered frames for the reverse stream, and its one
        # reusable frame (capture thread only) with a view of its samples.
        self._render_ring: _RenderRing | None = None
        self._reverse_frame: rtc.AudioFrame | None = None
        self._reverse_samples: Int16Array | None = None
        # Processed mic frames, appended on the capture thread and taken on the loop.
        self._mic_ready: deque[rtc.AudioFrame | None] = deque(maxlen=_MIC_QUEUE_FRAMES)
        self._mic_waiter: asyncio.Future[None] | None = None
        self._mic_dropped = 0
        self._mic_thread_wakes = 0
        self._muted = False
        self._wake_pending = False
        self._loop_visited = 0.0  # monotonic time of the last play() (loop side)
        self._mic_levels = _Levels()
        self._agent_levels = _Levels()
        self._watchdog: asyncio.Task[None] | None = None
        self._recovering: set[asyncio.Task[None]] = set()
        self._reopens = {"input": 0, "output": 0}
        self._warned_zeros = False
        self._started = False
        self._closed = False
        self._failed_note: dict[str, str] = {}
        # Heard latency: the capture-side detector runs only while someone listens.
        self._speech_ended: SpeechEndedCallback | None = None
        self._vad = EnergyVad()

    # --- contract ---------------------------------------------------------------------

    @property
    def description(self) -> str:
        """One line: the devices in use, or why there are none."""
        if not self._started:
            mic = _device_label(self._sd, self._input_device, "input")
            speaker = _device_label(self._sd, self._output_device, "output")
            return (
                f"mic: {mic if self._use_input else 'none'}, "
                f"speaker: {speaker if self._use_output else 'none'}"
            )
        if self._capture is None and self._playback is None:
            return self._failed_note.get("all", "text-only: audio devices unavailable")
        return (
            f"mic: {_stream_label(self._sd, self._capture, 'input')}, "
            f"speaker: {_stream_label(self._sd, self._playback, 'output')}"
        )

    @property
    def has_input(self) -> bool:
        """Whether a microphone is open (after start) or will be opened (before)."""
        if not self._started:
            return self._use_input
        return self._capture is not None

    def set_notice_callback(self, callback: NoticeCallback | None) -> None:
        """Where device failures, fallbacks and watchdog warnings are reported."""
        self._notice = callback

    async def start(self) -> None:
        """Open the devices; a device that fails to open degrades with a notice."""
        if self._started:
            return
        self._started = True
        self._loop = asyncio.get_running_loop()
        from livekit import rtc

        self._frame_type = rtc.AudioFrame
        self._apm = self._make_apm()
        if self._apm is not None and self._apm_flags[0]:
            self._reverse_frame = rtc.AudioFrame.create(SAMPLE_RATE, CHANNELS, SAMPLES_PER_FRAME)
            self._reverse_samples = np.frombuffer(self._reverse_frame.data, dtype=np.int16)
            self._render_ring = _RenderRing()
        # Probing and opening devices can take a while (ALSA, a sound server): off the loop.
        if self._use_output:
            self._playback = await asyncio.to_thread(
                self._open_output, self._output_device, first=True
            )
        if self._use_input:
            self._capture = await asyncio.to_thread(
                self._open_input, self._input_device, first=True
            )
        for stream in (self._playback, self._capture):
            if stream is not None:
                await asyncio.to_thread(stream.stream.start)
        self._update_apm_delay()
        if self._capture is None and self._playback is None:
            self._failed_note["all"] = "text-only: the audio devices could not be opened"
        if self._capture is None:
            self._end_mic_frames()
        self._watchdog = asyncio.create_task(self._watch(), name="fishtalk-audio-watchdog")

    async def mic_frames(self) -> AsyncIterator[rtc.AudioFrame]:
        """Processed mic frames until the backend closes or the microphone is lost."""
        ready = self._mic_ready
        loop = asyncio.get_running_loop()
        while True:
            while ready:
                frame = ready.popleft()
                if frame is None:
                    return
                if not self._muted:  # captured just before a mute: it must not leave
                    yield frame
            waiter = loop.create_future()
            self._mic_waiter = waiter
            try:
                # The capture thread appends before it looks for a waiter, so a frame
                # that came in since the check above is either seen here or wakes us.
                if not ready:
                    await waiter
            finally:
                self._mic_waiter = None

    def play(self, frame: rtc.AudioFrame) -> None:
        """Queue one agent frame (returns at once; the oldest audio goes when full)."""
        self._play(frame, None)

    def _play(self, frame: rtc.AudioFrame, marker: HandedCallback | None) -> None:
        now = self._loop_visited = time.monotonic()
        waiter = self._mic_waiter
        if waiter is not None and len(self._mic_ready) >= _MIC_WAKE_FRAMES and not waiter.done():
            waiter.set_result(None)  # the mic frames ride on this loop turn (no thread wake)
        playback = self._playback
        if playback is None:
            return
        if playback.pending_marker is not None and marker is None:
            marker, playback.pending_marker = playback.pending_marker, None
        samples = np.frombuffer(frame.data, dtype=np.int16)
        if frame.num_channels > 1:
            samples = samples.reshape(-1, frame.num_channels).mean(axis=1).astype(np.int16)
        device_rate = playback.format.samplerate
        if frame.sample_rate != device_rate:
            samples = self._resample_for_playback(samples, frame.sample_rate, device_rate)
            if samples.size == 0:
                playback.pending_marker = marker  # the resampler's first output carries it
                return
        if marker is not None:
            playback.enqueue(samples, now, marker)  # never trimmed: it is the frame to time
            return
        if len(playback.queue) > _BACKLOG_FRAMES and _is_quiet(samples):
            # The device clock runs a little slower than the frames arrive (or the loop
            # stalled and frames came in a burst): shorten a pause instead of letting the
            # delay grow for the rest of the utterance.
            playback.trimmed += 1
            return
        playback.enqueue(samples, now)

    def flush_playback(self) -> None:
        """Drop queued agent audio now: the next device block is silent."""
        if self._playback is not None:
            self._playback.flush()

    # --- latency taps (fishtalk.engine.audio.base.LatencyTaps) --------------------------------

    @property
    def has_output(self) -> bool:
        """Whether a speaker is open (after start) or will be opened (before)."""
        if not self._started:
            return self._use_output
        return self._playback is not None

    def set_speech_ended_callback(self, callback: SpeechEndedCallback | None) -> None:
        """Run the voice-activity detector (:mod:`fishtalk.engine.audio.vad`) on the processed mic
        frames and call ``callback(captured_at)`` on the loop when an utterance ends."""
        self._speech_ended = callback
        capture = self._capture
        if capture is not None:
            capture.stamp = callback is not None

    def play_marked(self, frame: rtc.AudioFrame, on_handed: HandedCallback) -> None:
        """Queue ``frame`` and call ``on_handed(handed_at, output_latency)`` on the loop
        when the playback callback hands its first sample to the device: ``handed_at`` is
        that callback's monotonic time, ``output_latency`` the device's reported latency
        for the block plus the frame's offset into it. Never called if the frame is
        flushed first or there is no speaker."""
        self._play(frame, on_handed)

    def flush_playback_marked(self, on_flushed: FlushedCallback) -> None:
        """Flush, and call ``on_flushed(left_at)`` on the loop from the next playback
        callback: ``left_at`` is that callback's monotonic time plus the device's output
        latency, when the last agent sample already in the device leaves the speaker."""
        if self._playback is not None:
            self._playback.flush(on_flushed)

    def set_muted(self, muted: bool) -> None:
        """Mute (no frames leave; the mic level reads zero) or unmute."""
        self._muted = muted
        if muted:
            self._mic_ready.clear()

    def levels(self) -> AudioLevels:
        """Mic (raw, before processing; zero while muted) and agent (as rendered) levels."""
        mic_rms, mic_peak = (0.0, 0.0) if self._muted else self._mic_levels.read()
        agent_rms, agent_peak = self._agent_levels.read()
        return AudioLevels(mic_rms, mic_peak, agent_rms, agent_peak)

    async def aclose(self) -> None:
        """Stop and close both streams; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        for task in list(self._recovering):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        capture, self._capture = self._capture, None
        playback, self._playback = self._playback, None
        for stream in (capture, playback):
            if stream is not None:
                await close_in_background(stream.close)
        self._end_mic_frames()
        self._mic_levels.clear()
        self._agent_levels.clear()

    # --- extras -----------------------------------------------------------------------

    def stats(self) -> AudioStats:
        """Counters: blocks, drops, underruns and the play()-to-device hand-off latency."""
        cap, pb = self._capture, self._playback
        count = pb.latency_count if pb else 0
        recent = sorted(pb.latency_recent) if pb else []
        p50 = recent[len(recent) // 2] * 1000 if recent else 0.0
        p95 = recent[min(len(recent) - 1, int(len(recent) * 0.95))] * 1000 if recent else 0.0
        return AudioStats(
            mic_blocks=cap.blocks if cap else 0,
            mic_dropped_blocks=cap.overflows if cap else 0,
            mic_dropped_frames=self._mic_dropped,
            playback_frames=count,
            playback_dropped_frames=pb.dropped if pb else 0,
            playback_trimmed_frames=pb.trimmed if pb else 0,
            playback_underruns=pb.underruns if pb else 0,
            render_dropped_blocks=self._render_ring.dropped if self._render_ring else 0,
            apm_errors=self._apm_errors,
            handoff_latency_mean_ms=(pb.latency_sum / count * 1000) if pb and count else 0.0,
            handoff_latency_p50_ms=p50,
            handoff_latency_p95_ms=p95,
            handoff_latency_max_ms=pb.latency_max * 1000 if pb else 0.0,
            input_format=cap.format if cap else None,
            output_format=pb.format if pb else None,
            mic_thread_wakes=self._mic_thread_wakes,
        )

    @property
    def queued_playback_seconds(self) -> float:
        """Agent audio waiting for the speaker."""
        pb = self._playback
        if pb is None:
            return 0.0
        samples = sum(item[0].size for item in list(pb.queue))
        return samples / pb.format.samplerate

    # --- internals --------------------------------------------------------------------

    def _emit(self, text: str) -> None:
        if self._notice is not None:
            self._notice(text)

    def _make_apm(self) -> rtc.AudioProcessingModule | None:
        if not any(self._apm_flags):
            return None
        from livekit import rtc

        aec, ns, hpf, agc = self._apm_flags
        return rtc.AudioProcessingModule(
            echo_cancellation=aec,
            noise_suppression=ns,
            high_pass_filter=hpf,
            auto_gain_control=agc,
        )

    def _update_apm_delay(self) -> None:
        # Render-to-capture path: both device latencies (the APM sees each block in its
        # device callback). AEC3 refines this itself; it needs a start.
        total = 0.0
        for stream in (self._capture, self._playback):
            if stream is not None:
                with contextlib.suppress(Exception):
                    total += float(stream.stream.latency)
        self._apm_delay_ms = round(total * 1000)

    def _open_input(self, device: int | None, *, first: bool) -> _Capture | None:
        try:
            fmt = probe_format(device, "input", preferred_rate=self._preferred_rate)
            capture = _Capture(self._sd, device, fmt, self._on_capture, self._input_failed)
        except Exception as exc:
            if first and device is not None:
                self._emit(f"microphone {device} could not be opened ({exc}); trying the default")
                return self._open_input(None, first=False)
            if first:
                self._emit(f"no microphone: {_one_line(exc)}")
            return None
        self._cap_chunks = _Rechunker(fmt.samplerate)
        self._vad.reset()
        capture.stamp = self._speech_ended is not None
        now = time.monotonic()
        capture.last_callback = now
        capture.last_nonzero = now
        return capture

    def _open_output(self, device: int | None, *, first: bool) -> _Playback | None:
        try:
            fmt = probe_format(device, "output", preferred_rate=self._preferred_rate)
            playback = _Playback(
                self._sd, device, fmt, self._on_render, self._output_failed, self._post
            )
        except Exception as exc:
            if first and device is not None:
                self._emit(f"speaker {device} could not be opened ({exc}); trying the default")
                return self._open_output(None, first=False)
            if first:
                self._emit(f"no speaker: {_one_line(exc)}")
            return None
        self._render_chunks = _Rechunker(fmt.samplerate)
        self._play_resampler = None
        return playback

    def _resample_for_playback(self, samples: Int16Array, src: int, dst: int) -> Int16Array:
        from livekit import rtc

        res = self._play_resampler
        if res is None or self._play_resampler_rates != (src, dst):
            res = rtc.AudioResampler(src, dst, num_channels=CHANNELS)
            self._play_resampler = res
            self._play_resampler_rates = (src, dst)
        frames = res.push(bytearray(samples.tobytes()))
        if not frames:
            return np.zeros(0, dtype=np.int16)
        return np.concatenate([np.frombuffer(f.data, dtype=np.int16) for f in frames])

    # PortAudio threads

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None or self._closed:
            return
        # RuntimeError: the loop closed under us; there is nothing to deliver to.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(fn, *args)

    def _on_capture(self, block: Int16Array, now: float) -> None:
        """Capture thread: levels, 10 ms frames, the APM, the end-of-speech detector, the
        hand-over to mic_frames(). ``now``: when the block's last sample was captured."""
        ring = self._render_ring
        chunker = self._cap_chunks
        frame_type = self._frame_type
        if self._muted or chunker is None or frame_type is None:
            self._mic_levels.store(block, now)  # also read by the watchdog, muted or not
            if self._muted:
                if ring is not None:
                    ring.skip()
                self._vad.reset()
            return
        apm = self._apm
        reverse, reverse_samples = self._reverse_frame, self._reverse_samples
        if ring is not None and apm is not None and reverse is not None:
            for rendered in ring.pending():  # what the speaker played since the last block
                if reverse_samples is not None:
                    reverse_samples[:] = rendered
                try:
                    apm.process_reverse_stream(reverse)
                except Exception as exc:
                    self._apm_failed(exc)
        if apm is not None and self._apm_flags[0] and self._apm_delay_applied != self._apm_delay_ms:
            delay = self._apm_delay_ms
            try:
                apm.set_stream_delay_ms(delay)
                self._apm_delay_applied = delay
            except Exception as exc:
                self._apm_failed(exc)
        ready = self._mic_ready
        speech_ended = self._speech_ended
        chunks: tuple[Int16Array, ...] | list[Int16Array]
        whole: bytearray | None = None
        if block.size == SAMPLES_PER_FRAME and chunker.idle:
            # The usual 48 kHz, 10 ms-block case: one copy out of the device buffer is
            # the frame, and (unless the APM changes it in place) the meter's block too.
            whole = bytearray(block)
            self._mic_levels.keep(whole if apm is None else bytes(whole), now)
            chunks = (block,)
        else:
            self._mic_levels.store(block, now)
            chunks = chunker.push(block)
        for i, chunk in enumerate(chunks):
            data = whole if whole is not None else bytearray(chunk)
            frame = frame_type(data, SAMPLE_RATE, CHANNELS, SAMPLES_PER_FRAME)
            if apm is not None:
                try:
                    apm.process_stream(frame)  # in place
                except Exception as exc:
                    self._apm_failed(exc)
            if speech_ended is not None:
                # `now` is when the block's last sample reached the device; the frames
                # cut after this one from the same block came later.
                captured_at = now - (len(chunks) - 1 - i) * _FRAME_S
                samples = np.frombuffer(frame.data, dtype=np.int16)
                raw = chunk if apm is not None else None
                ended_at = self._vad.push(samples, captured_at, raw)
                if ended_at is not None:
                    self._post(speech_ended, ended_at)
            if len(ready) == _MIC_QUEUE_FRAMES:
                self._mic_dropped += 1  # the deque drops its oldest frame
            ready.append(frame)
        if (
            self._mic_waiter is not None
            and len(ready) >= _MIC_WAKE_FRAMES
            and not self._wake_pending
            and time.monotonic() - self._loop_visited > _LOOP_VISIT_S
        ):
            self._wake_pending = True
            self._mic_thread_wakes += 1
            loop = self._loop
            if loop is not None:
                # RuntimeError: the loop closed under us; there is nothing to deliver to.
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._wake_mic_consumer)

    def _on_render(self, block: Int16Array, now: float) -> None:
        """Render thread: the agent level and, with echo cancellation, the render ring."""
        self._agent_levels.store(block, now)
        ring = self._render_ring
        chunker = self._render_chunks
        if ring is None or chunker is None:
            return
        for chunk in chunker.push(block):
            ring.put(chunk)

    def _apm_failed(self, exc: Exception) -> None:
        self._apm_errors += 1
        if self._apm_errors == 1:
            _log.warning("audio processing failed (the frame passes unprocessed): %s", exc)

    # the loop side of the hand-over

    def _wake_mic_consumer(self) -> None:
        self._wake_pending = False
        waiter = self._mic_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _end_mic_frames(self) -> None:
        self._mic_ready.append(None)
        self._wake_mic_consumer()

    # failures and the watchdog

    def _input_failed(self) -> None:
        self._post_failure("input")

    def _output_failed(self) -> None:
        self._post_failure("output")

    def _post_failure(self, kind: DeviceKind) -> None:
        loop = self._loop
        if loop is None or self._closed:
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._on_failure, kind, "the stream stopped")

    def _on_failure(self, kind: DeviceKind, why: str) -> None:
        if self._closed:
            return
        stream = self._capture if kind == "input" else self._playback
        if stream is None or stream.closing:
            return
        stream.closing = True
        task = asyncio.create_task(self._recover(kind, why), name=f"fishtalk-audio-{kind}")
        self._recovering.add(task)
        task.add_done_callback(self._recovering.discard)

    async def _recover(self, kind: DeviceKind, why: str) -> None:
        label = "microphone" if kind == "input" else "speaker"
        old: _Capture | _Playback | None
        if kind == "input":
            old, self._capture = self._capture, None
        else:
            old, self._playback = self._playback, None
        if old is not None:
            await close_in_background(old.close)
        replacement: _Capture | _Playback | None = None
        if self._reopens[kind] < _MAX_REOPENS and not self._closed:
            self._reopens[kind] += 1
            # A restarting sound server or a re-enumerating USB device needs a moment.
            for delay in _REOPEN_DELAYS:
                await asyncio.sleep(delay)
                if self._closed:
                    break
                replacement = await asyncio.to_thread(self._reopen_default, kind)
                if replacement is not None:
                    break
        if self._closed:
            if replacement is not None:
                await close_in_background(replacement.close)
            return
        if isinstance(replacement, _Capture):
            self._capture = replacement
        elif isinstance(replacement, _Playback):
            self._playback = replacement
        if replacement is not None:
            self._update_apm_delay()
            self._emit(f"{label} failed ({why}); switched to the default {label}")
            return
        if kind == "input":
            self._mic_levels.clear()
            self._end_mic_frames()
            self._emit(f"{label} failed ({why}); continuing without a microphone (type instead)")
        else:
            self._agent_levels.clear()
            self._emit(f"{label} failed ({why}); continuing without sound (text only)")
        if self._capture is None and self._playback is None:
            self._failed_note["all"] = f"text-only: audio devices failed ({why})"

    def _reopen_default(self, kind: DeviceKind) -> _Capture | _Playback | None:
        stream: _Capture | _Playback | None
        if kind == "input":
            stream = self._open_input(None, first=False)
        else:
            stream = self._open_output(None, first=False)
        if stream is None:
            return None
        try:
            stream.stream.start()
        except Exception:
            stream.close()
            return None
        return stream

    async def _watch(self) -> None:
        limit = self._watchdog_seconds
        while True:
            await asyncio.sleep(_WATCHDOG_PERIOD_S)
            now = time.monotonic()
            capture = self._capture
            if capture is not None and not capture.closing:
                # Sampled, not per block: 50 ms of every half second. A working mic's
                # noise floor is never exactly zero for that long.
                if self._mic_levels.has_signal():
                    capture.last_nonzero = now
                if not capture.stream.active:
                    self._on_failure("input", "the stream stopped")
                elif now - capture.last_callback > limit:
                    self._emit(
                        f"the microphone delivered no audio for {limit:.0f} s "
                        "(is it in use elsewhere or disconnected?)"
                    )
                    # A stalled stream is as good as a failed one: replace it.
                    self._on_failure("input", f"no audio for {limit:.0f} s")
                elif now - capture.last_nonzero > limit:
                    if not self._warned_zeros:
                        self._warned_zeros = True
                        self._emit(
                            f"the microphone delivered only digital silence for {limit:.0f} s "
                            "(is it muted, or is microphone permission denied?)"
                        )
                else:
                    self._warned_zeros = False
            playback = self._playback
            if playback is not None and not playback.closing:
                if not playback.stream.active:
                    self._on_failure("output", "the stream stopped")
                elif now - playback.last_callback > limit:
                    self._on_failure("output", f"no callbacks for {limit:.0f} s")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def open_backend(settings: AudioOptions, *, notice: NoticeCallback | None = None) -> AudioBackend:
    """Build the audio backend for these settings; never raises.

    Falls back to :class:`NullAudio` with a one-line reason when audio is disabled,
    PortAudio is missing, there are no devices, or a configured device matches nothing.
    """
    if not settings.enabled:
        return NullAudio("text-only: audio disabled")
    try:
        devices = list_devices(refresh=True)
        has_in = any(d.usable_for("input") for d in devices)
        has_out = any(d.usable_for("output") for d in devices)
        if not has_in and not has_out:
            return NullAudio("text-only: no audio devices found")
        input_device = resolve_device(settings.input_device, "input", devices=devices)
        output_device = resolve_device(settings.output_device, "output", devices=devices)
        return SoundDeviceAudio(
            input_device=input_device,
            output_device=output_device,
            use_input=has_in,
            use_output=has_out,
            echo_cancellation=settings.echo_cancellation,
            noise_suppression=settings.noise_suppression,
            high_pass_filter=settings.high_pass_filter,
            auto_gain=settings.auto_gain,
            notice=notice,
        )
    except AudioUnavailable as exc:
        return NullAudio(str(exc))
    except AudioDeviceError as exc:
        return NullAudio(f"text-only: {exc}")
    except Exception as exc:  # never let a broken audio stack stop a text chat
        return NullAudio(f"text-only: audio could not start ({_one_line(exc)})")
