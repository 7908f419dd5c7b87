"""Device failure and recovery: the watchdog, and reopening a lost device on the default.

A stream that stops on its own, stops calling back, or (the mic) delivers only digital
silence is noticed here; a failed device is closed off the loop and replaced by the system
default a few times with growing pauses (a restarting sound server or a re-enumerating USB
device needs a moment), else the backend carries on without it and says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Protocol

from fishtalk.engine.audio.devices import DeviceKind
from fishtalk.engine.audio.streams import Capture, Playback, close_in_background

_WATCHDOG_PERIOD_S = 0.5
_MAX_REOPENS = 3
_REOPEN_DELAYS = (0.2, 0.5, 1.0, 2.0)  # seconds before each attempt to reopen a device


class RecoveryHost(Protocol):
    """What recovery needs from the backend that owns the streams."""

    @property
    def closed(self) -> bool:
        """Whether the backend was closed (nothing is reopened then)."""
        ...

    def stream(self, kind: DeviceKind) -> Capture | Playback | None:
        """The open stream of this kind."""
        ...

    def detach(self, kind: DeviceKind) -> Capture | Playback | None:
        """Stop using the stream of this kind and return it (to be closed)."""
        ...

    def reopen_default(self, kind: DeviceKind) -> Capture | Playback | None:
        """Open and start the default device (blocking: runs off the loop)."""
        ...

    def attach(self, stream: Capture | Playback) -> None:
        """Use this (reopened) stream."""
        ...

    def lost(self, kind: DeviceKind, why: str) -> None:
        """Carry on without a device of this kind."""
        ...

    def mic_has_signal(self) -> bool:
        """Whether the recent mic blocks hold a sample that is not exactly zero."""
        ...

    def emit(self, text: str) -> None:
        """Report a notice to the user."""
        ...


class Recovery:
    """Watches both streams and replaces a failed one; all methods run on the loop."""

    def __init__(self, host: RecoveryHost, watchdog_seconds: float) -> None:
        self._host = host
        self._watchdog_seconds = watchdog_seconds
        self._watchdog: asyncio.Task[None] | None = None
        self._recovering: set[asyncio.Task[None]] = set()
        self._reopens = {"input": 0, "output": 0}
        self._warned_zeros = False

    def start(self) -> None:
        """Start the watchdog."""
        self._watchdog = asyncio.create_task(self._watch(), name="fishtalk-audio-watchdog")

    async def aclose(self) -> None:
        """Stop the watchdog and any recovery under way."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        for task in list(self._recovering):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def failed(self, kind: DeviceKind, why: str) -> None:
        """The stream of this kind failed: replace it (once, however often it is reported)."""
        if self._host.closed:
            return
        stream = self._host.stream(kind)
        if stream is None or stream.closing:
            return
        stream.closing = True
        task = asyncio.create_task(self._recover(kind, why), name=f"fishtalk-audio-{kind}")
        self._recovering.add(task)
        task.add_done_callback(self._recovering.discard)

    async def _recover(self, kind: DeviceKind, why: str) -> None:
        host = self._host
        label = "microphone" if kind == "input" else "speaker"
        old = host.detach(kind)
        if old is not None:
            await close_in_background(old.close)
        replacement: Capture | Playback | None = None
        if self._reopens[kind] < _MAX_REOPENS and not host.closed:
            self._reopens[kind] += 1
            # A restarting sound server or a re-enumerating USB device needs a moment.
            for delay in _REOPEN_DELAYS:
                await asyncio.sleep(delay)
                if host.closed:
                    break
                replacement = await asyncio.to_thread(host.reopen_default, kind)
                if replacement is not None:
                    break
        if host.closed:
            if replacement is not None:
                await close_in_background(replacement.close)
            return
        if replacement is not None:
            host.attach(replacement)
            host.emit(f"{label} failed ({why}); switched to the default {label}")
            return
        host.lost(kind, why)

    async def _watch(self) -> None:
        host = self._host
        limit = self._watchdog_seconds
        while True:
            await asyncio.sleep(_WATCHDOG_PERIOD_S)
            now = time.monotonic()
            capture = host.stream("input")
            if isinstance(capture, Capture) and not capture.closing:
                # Sampled, not per block: 50 ms of every half second. A working mic's
                # noise floor is never exactly zero for that long.
                if host.mic_has_signal():
                    capture.last_nonzero = now
                if not capture.stream.active:
                    self.failed("input", "the stream stopped")
                elif now - capture.last_callback > limit:
                    host.emit(
                        f"the microphone delivered no audio for {limit:.0f} s "
                        "(is it in use elsewhere or disconnected?)"
                    )
                    # A stalled stream is as good as a failed one: replace it.
                    self.failed("input", f"no audio for {limit:.0f} s")
                elif now - capture.last_nonzero > limit:
                    if not self._warned_zeros:
                        self._warned_zeros = True
                        host.emit(
                            f"the microphone delivered only digital silence for {limit:.0f} s "
                            "(is it muted, or is microphone permission denied?)"
                        )
                else:
                    self._warned_zeros = False
            playback = host.stream("output")
            if playback is not None and not playback.closing:
                if not playback.stream.active:
                    self.failed("output", "the stream stopped")
                elif now - playback.last_callback > limit:
                    self.failed("output", f"no callbacks for {limit:.0f} s")
