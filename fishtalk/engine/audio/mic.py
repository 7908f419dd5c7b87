"""The microphone path: voice processing on the capture thread and the hand-over to the loop.

The capture callback's blocks come here (:meth:`MicPath.on_block`): they are cut into 10 ms
frames, the rendered agent audio waiting in the render ring is fed to the APM's reverse
stream, each frame is processed in place, the end-of-speech detector sees it when someone
listens, and it is appended to a bounded deque that :meth:`MicPath.frames` drains on the
loop. The loop is woken once per two frames, and not at all while ``play()`` visits it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import numpy as np

from fishtalk.engine.audio.base import CHANNELS, SAMPLE_RATE, SAMPLES_PER_FRAME, SpeechEndedCallback
from fishtalk.engine.audio.buffers import Int16Array, Levels, Rechunker, RenderRing
from fishtalk.engine.audio.streams import Post
from fishtalk.engine.audio.vad import EnergyVad

if TYPE_CHECKING:
    from livekit import rtc

_log = logging.getLogger(__name__)

_FRAME_S = SAMPLES_PER_FRAME / SAMPLE_RATE
# 1 s of processed frames nobody has read yet (a loop stalled that long under load drops
# the oldest; the count is in the stats).
_MIC_QUEUE_FRAMES = 100
# A waiting frames() is woken when this many frames are ready: two 10 ms frames per
# wake halve the loop's wake-ups for at most 10 ms more mic latency.
_MIC_WAKE_FRAMES = 2
# While play() has run on the loop this recently (agent frames arrive every 10 ms while a
# track is subscribed), the capture thread leaves the wake to the next play() instead of
# waking the loop itself: the loop is about to run anyway, and a wake from another thread
# costs a self-pipe write and a context switch.
_LOOP_VISIT_S = 0.02


class MicPath:
    """Processed mic frames from the capture thread to a single consumer on the loop.

    ``apm_flags``: echo cancellation, noise suppression, high-pass filter, auto gain.
    ``post`` hands a call to the loop (the end-of-speech callback goes through it).
    """

    def __init__(self, apm_flags: tuple[bool, bool, bool, bool], post: Post) -> None:
        self._apm_flags = apm_flags
        self._post = post
        self._loop: asyncio.AbstractEventLoop | None = None
        self.apm: rtc.AudioProcessingModule | None = None
        self.apm_delay_ms = 0  # set on the loop, applied on the capture thread
        self._apm_delay_applied = -1
        self.apm_errors = 0
        self._chunks: Rechunker | None = None
        self._frame_type: type[rtc.AudioFrame] | None = None
        # With echo cancellation: rendered frames for the reverse stream, and its one
        # reusable frame (capture thread only) with a view of its samples.
        self.render_ring: RenderRing | None = None
        self._reverse_frame: rtc.AudioFrame | None = None
        self._reverse_samples: Int16Array | None = None
        # Processed mic frames, appended on the capture thread and taken on the loop.
        self._ready: deque[rtc.AudioFrame | None] = deque(maxlen=_MIC_QUEUE_FRAMES)
        self._waiter: asyncio.Future[None] | None = None
        self.dropped = 0
        self.thread_wakes = 0
        self.muted = False
        self._wake_pending = False
        self._loop_visited = 0.0  # monotonic time of the last play() (loop side)
        self.levels = Levels()
        # Heard latency: the capture-side detector runs only while someone listens.
        self.speech_ended: SpeechEndedCallback | None = None
        self._vad = EnergyVad()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Build the APM (and, with echo cancellation, the reverse stream's buffers)."""
        self._loop = loop
        from livekit import rtc

        self._frame_type = rtc.AudioFrame
        self.apm = self._make_apm()
        if self.apm is not None and self._apm_flags[0]:
            self._reverse_frame = rtc.AudioFrame.create(SAMPLE_RATE, CHANNELS, SAMPLES_PER_FRAME)
            self._reverse_samples = np.frombuffer(self._reverse_frame.data, dtype=np.int16)
            self.render_ring = RenderRing()

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

    def device_opened(self, rate: int) -> None:
        """A (new) microphone at ``rate`` Hz: fresh rechunking and detector state."""
        self._chunks = Rechunker(rate)
        self._vad.reset()

    async def frames(self) -> AsyncIterator[rtc.AudioFrame]:
        """Processed mic frames until :meth:`end`."""
        ready = self._ready
        loop = asyncio.get_running_loop()
        while True:
            while ready:
                frame = ready.popleft()
                if frame is None:
                    return
                if not self.muted:  # captured just before a mute: it must not leave
                    yield frame
            waiter = loop.create_future()
            self._waiter = waiter
            try:
                # The capture thread appends before it looks for a waiter, so a frame
                # that came in since the check above is either seen here or wakes us.
                if not ready:
                    await waiter
            finally:
                self._waiter = None

    def visited(self, now: float) -> None:
        """``play()`` runs on the loop: hand the waiting consumer its frames on the way."""
        self._loop_visited = now
        waiter = self._waiter
        if waiter is not None and len(self._ready) >= _MIC_WAKE_FRAMES and not waiter.done():
            waiter.set_result(None)  # the mic frames ride on this loop turn (no thread wake)

    def set_muted(self, muted: bool) -> None:
        """Mute (frames are dropped, queued ones too) or unmute."""
        self.muted = muted
        if muted:
            self._ready.clear()

    def on_block(self, block: Int16Array, now: float) -> None:
        """Capture thread: levels, 10 ms frames, the APM, the end-of-speech detector, the
        hand-over to frames(). ``now``: when the block's last sample was captured."""
        ring = self.render_ring
        chunker = self._chunks
        frame_type = self._frame_type
        if self.muted or chunker is None or frame_type is None:
            self.levels.store(block, now)  # also read by the watchdog, muted or not
            if self.muted:
                if ring is not None:
                    ring.skip()
                self._vad.reset()
            return
        apm = self.apm
        reverse, reverse_samples = self._reverse_frame, self._reverse_samples
        if ring is not None and apm is not None and reverse is not None:
            for rendered in ring.pending():  # what the speaker played since the last block
                if reverse_samples is not None:
                    reverse_samples[:] = rendered
                try:
                    apm.process_reverse_stream(reverse)
                except Exception as exc:
                    self._apm_failed(exc)
        if apm is not None and self._apm_flags[0] and self._apm_delay_applied != self.apm_delay_ms:
            delay = self.apm_delay_ms
            try:
                apm.set_stream_delay_ms(delay)
                self._apm_delay_applied = delay
            except Exception as exc:
                self._apm_failed(exc)
        ready = self._ready
        speech_ended = self.speech_ended
        chunks: tuple[Int16Array, ...] | list[Int16Array]
        whole: bytearray | None = None
        if block.size == SAMPLES_PER_FRAME and chunker.idle:
            # The usual 48 kHz, 10 ms-block case: one copy out of the device buffer is
            # the frame, and (unless the APM changes it in place) the meter's block too.
            whole = bytearray(block)
            self.levels.keep(whole if apm is None else bytes(whole), now)
            chunks = (block,)
        else:
            self.levels.store(block, now)
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
                self.dropped += 1  # the deque drops its oldest frame
            ready.append(frame)
        if (
            self._waiter is not None
            and len(ready) >= _MIC_WAKE_FRAMES
            and not self._wake_pending
            and time.monotonic() - self._loop_visited > _LOOP_VISIT_S
        ):
            self._wake_pending = True
            self.thread_wakes += 1
            loop = self._loop
            if loop is not None:
                # RuntimeError: the loop closed under us; there is nothing to deliver to.
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._wake_consumer)

    def _apm_failed(self, exc: Exception) -> None:
        self.apm_errors += 1
        if self.apm_errors == 1:
            _log.warning("audio processing failed (the frame passes unprocessed): %s", exc)

    # the loop side of the hand-over

    def _wake_consumer(self) -> None:
        self._wake_pending = False
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def end(self) -> None:
        """No more frames: :meth:`frames` returns once it has taken what is queued."""
        self._ready.append(None)
        self._wake_consumer()
