"""The sounddevice backend: microphone and speaker with WebRTC voice processing.

The parts: ``streams`` (the PortAudio callbacks), ``buffers`` (their preallocated meters
and rings), ``mic`` (voice processing and the hand-over to the loop), ``recovery`` (the
watchdog and reopening a lost device); this module puts them together behind the
:class:`~fishtalk.engine.audio.base.AudioBackend` contract and picks the backend.

Threads: PortAudio calls ``Capture._callback`` and ``Playback._callback`` on its own
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
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fishtalk.core.errors import AudioDeviceError
from fishtalk.engine.audio.base import (
    CHANNELS,
    SAMPLE_RATE,
    AudioBackend,
    AudioLevels,
    FlushedCallback,
    HandedCallback,
    NoticeCallback,
    NullAudio,
    SpeechEndedCallback,
)
from fishtalk.engine.audio.buffers import Int16Array, Levels, Rechunker, is_quiet
from fishtalk.engine.audio.devices import (
    AudioUnavailable,
    DeviceKind,
    StreamFormat,
    import_sounddevice,
    list_devices,
    probe_format,
    resolve_device,
)
from fishtalk.engine.audio.mic import MicPath
from fishtalk.engine.audio.recovery import Recovery
from fishtalk.engine.audio.streams import (
    Capture,
    Playback,
    close_in_background,
    device_label,
    stream_label,
)

if TYPE_CHECKING:
    from livekit import rtc

    from fishtalk.engine.audio.options import AudioOptions

_BACKLOG_FRAMES = 3  # above this much queued agent audio (~30 ms), quiet frames are skipped


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
        self._notice = notice
        self._preferred_rate = preferred_rate
        self._loop: asyncio.AbstractEventLoop | None = None
        self._capture: Capture | None = None
        self._playback: Playback | None = None
        self._render_chunks: Rechunker | None = None
        self._play_resampler: rtc.AudioResampler | None = None
        self._play_resampler_rates = (0, 0)
        apm_flags = (echo_cancellation, noise_suppression, high_pass_filter, auto_gain)
        self._mic = MicPath(apm_flags, self._post)
        self._agent_levels = Levels()
        self._recovery = Recovery(self, watchdog_seconds)
        self._started = False
        self._closed = False
        self._failed_note: dict[str, str] = {}

    # --- contract ---------------------------------------------------------------------

    @property
    def description(self) -> str:
        """One line: the devices in use, or why there are none."""
        if not self._started:
            mic = device_label(self._sd, self._input_device, "input")
            speaker = device_label(self._sd, self._output_device, "output")
            return (
                f"mic: {mic if self._use_input else 'none'}, "
                f"speaker: {speaker if self._use_output else 'none'}"
            )
        if self._capture is None and self._playback is None:
            return self._failed_note.get("all", "text-only: audio devices unavailable")
        return (
            f"mic: {stream_label(self._sd, self._capture, 'input')}, "
            f"speaker: {stream_label(self._sd, self._playback, 'output')}"
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
        self._mic.start(self._loop)
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
            self._mic.end()
        self._recovery.start()

    def mic_frames(self) -> AsyncIterator[rtc.AudioFrame]:
        """Processed mic frames until the backend closes or the microphone is lost."""
        return self._mic.frames()

    def play(self, frame: rtc.AudioFrame) -> None:
        """Queue one agent frame (returns at once; the oldest audio goes when full)."""
        self._play(frame, None)

    def _play(self, frame: rtc.AudioFrame, marker: HandedCallback | None) -> None:
        now = time.monotonic()
        self._mic.visited(now)
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
        if len(playback.queue) > _BACKLOG_FRAMES and is_quiet(samples):
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
        self._mic.speech_ended = callback
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
        self._mic.set_muted(muted)

    def levels(self) -> AudioLevels:
        """Mic (raw, before processing; zero while muted) and agent (as rendered) levels."""
        mic_rms, mic_peak = (0.0, 0.0) if self._mic.muted else self._mic.levels.read()
        agent_rms, agent_peak = self._agent_levels.read()
        return AudioLevels(mic_rms, mic_peak, agent_rms, agent_peak)

    async def aclose(self) -> None:
        """Stop and close both streams; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        await self._recovery.aclose()
        capture, self._capture = self._capture, None
        playback, self._playback = self._playback, None
        for stream in (capture, playback):
            if stream is not None:
                await close_in_background(stream.close)
        self._mic.end()
        self._mic.levels.clear()
        self._agent_levels.clear()

    # --- extras -----------------------------------------------------------------------

    def stats(self) -> AudioStats:
        """Counters: blocks, drops, underruns and the play()-to-device hand-off latency."""
        cap, pb = self._capture, self._playback
        ring = self._mic.render_ring
        count = pb.latency_count if pb else 0
        recent = sorted(pb.latency_recent) if pb else []
        p50 = recent[len(recent) // 2] * 1000 if recent else 0.0
        p95 = recent[min(len(recent) - 1, int(len(recent) * 0.95))] * 1000 if recent else 0.0
        return AudioStats(
            mic_blocks=cap.blocks if cap else 0,
            mic_dropped_blocks=cap.overflows if cap else 0,
            mic_dropped_frames=self._mic.dropped,
            playback_frames=count,
            playback_dropped_frames=pb.dropped if pb else 0,
            playback_trimmed_frames=pb.trimmed if pb else 0,
            playback_underruns=pb.underruns if pb else 0,
            render_dropped_blocks=ring.dropped if ring else 0,
            apm_errors=self._mic.apm_errors,
            handoff_latency_mean_ms=(pb.latency_sum / count * 1000) if pb and count else 0.0,
            handoff_latency_p50_ms=p50,
            handoff_latency_p95_ms=p95,
            handoff_latency_max_ms=pb.latency_max * 1000 if pb else 0.0,
            input_format=cap.format if cap else None,
            output_format=pb.format if pb else None,
            mic_thread_wakes=self._mic.thread_wakes,
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

    def emit(self, text: str) -> None:
        """Report a notice (device failures, fallbacks, watchdog warnings)."""
        if self._notice is not None:
            self._notice(text)

    def _update_apm_delay(self) -> None:
        # Render-to-capture path: both device latencies (the APM sees each block in its
        # device callback). AEC3 refines this itself; it needs a start.
        total = 0.0
        for stream in (self._capture, self._playback):
            if stream is not None:
                with contextlib.suppress(Exception):
                    total += float(stream.stream.latency)
        self._mic.apm_delay_ms = round(total * 1000)

    def _open_input(self, device: int | None, *, first: bool) -> Capture | None:
        try:
            fmt = probe_format(device, "input", preferred_rate=self._preferred_rate)
            capture = Capture(self._sd, device, fmt, self._mic.on_block, self._input_failed)
        except Exception as exc:
            if first and device is not None:
                self.emit(f"microphone {device} could not be opened ({exc}); trying the default")
                return self._open_input(None, first=False)
            if first:
                self.emit(f"no microphone: {_one_line(exc)}")
            return None
        self._mic.device_opened(fmt.samplerate)
        capture.stamp = self._mic.speech_ended is not None
        now = time.monotonic()
        capture.last_callback = now
        capture.last_nonzero = now
        return capture

    def _open_output(self, device: int | None, *, first: bool) -> Playback | None:
        try:
            fmt = probe_format(device, "output", preferred_rate=self._preferred_rate)
            playback = Playback(
                self._sd, device, fmt, self._on_render, self._output_failed, self._post
            )
        except Exception as exc:
            if first and device is not None:
                self.emit(f"speaker {device} could not be opened ({exc}); trying the default")
                return self._open_output(None, first=False)
            if first:
                self.emit(f"no speaker: {_one_line(exc)}")
            return None
        self._render_chunks = Rechunker(fmt.samplerate)
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

    def _on_render(self, block: Int16Array, now: float) -> None:
        """Render thread: the agent level and, with echo cancellation, the render ring."""
        self._agent_levels.store(block, now)
        ring = self._mic.render_ring
        chunker = self._render_chunks
        if ring is None or chunker is None:
            return
        for chunk in chunker.push(block):
            ring.put(chunk)

    # failures (the recovery's host)

    def _input_failed(self) -> None:
        self._post(self._recovery.failed, "input", "the stream stopped")

    def _output_failed(self) -> None:
        self._post(self._recovery.failed, "output", "the stream stopped")

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._closed

    def stream(self, kind: DeviceKind) -> Capture | Playback | None:
        """The open stream of this kind."""
        return self._capture if kind == "input" else self._playback

    def detach(self, kind: DeviceKind) -> Capture | Playback | None:
        """Stop using the stream of this kind and return it."""
        old: Capture | Playback | None
        if kind == "input":
            old, self._capture = self._capture, None
        else:
            old, self._playback = self._playback, None
        return old

    def attach(self, stream: Capture | Playback) -> None:
        """Use this reopened stream."""
        if isinstance(stream, Capture):
            self._capture = stream
        else:
            self._playback = stream
        self._update_apm_delay()

    def lost(self, kind: DeviceKind, why: str) -> None:
        """Carry on without the device of this kind, and say so."""
        if kind == "input":
            self._mic.levels.clear()
            self._mic.end()
            self.emit(f"microphone failed ({why}); continuing without a microphone (type instead)")
        else:
            self._agent_levels.clear()
            self.emit(f"speaker failed ({why}); continuing without sound (text only)")
        if self._capture is None and self._playback is None:
            self._failed_note["all"] = f"text-only: audio devices failed ({why})"

    def mic_has_signal(self) -> bool:
        """Whether the recent mic blocks hold a sample that is not exactly zero."""
        return self._mic.levels.has_signal()

    def reopen_default(self, kind: DeviceKind) -> Capture | Playback | None:
        """Open and start the default device of this kind (blocking: off the loop)."""
        stream: Capture | Playback | None
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
