"""The contract between the session and an audio backend, and the no-audio backend.

The session owns the LiveKit side (the published ``rtc.AudioSource`` and the agent's
``rtc.AudioStream``); a backend owns the devices. Frames crossing this boundary are
48 kHz, mono, int16, 10 ms (480 samples) ``rtc.AudioFrame`` objects.

A backend must never block the event loop: ``play`` and ``flush_playback`` are called
from it and return at once; capture frames arrive through ``mic_frames``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from livekit import rtc

SAMPLE_RATE = 48_000
CHANNELS = 1
FRAME_MS = 10
SAMPLES_PER_FRAME = SAMPLE_RATE * FRAME_MS // 1000


@dataclass(frozen=True, slots=True)
class AudioLevels:
    """Recent signal levels, linear full-scale units in [0, 1]."""

    mic_rms: float = 0.0
    mic_peak: float = 0.0
    agent_rms: float = 0.0
    agent_peak: float = 0.0


NoticeCallback = Callable[[str], None]
"""Receives one human sentence when something about audio changes (device lost, ...)."""


@runtime_checkable
class AudioBackend(Protocol):
    """What the session needs from audio."""

    @property
    def description(self) -> str:
        """One line for the UI, e.g. 'mic: USB Audio, speaker: default' or 'text-only: ...'."""
        ...

    @property
    def has_input(self) -> bool:
        """Whether a microphone track should be published."""
        ...

    def set_notice_callback(self, callback: NoticeCallback | None) -> None:
        """Where to report device failures, fallbacks and watchdog warnings."""
        ...

    async def start(self) -> None:
        """Open the devices. Failing devices degrade (notice + text-only), never raise."""
        ...

    def mic_frames(self) -> AsyncIterator[rtc.AudioFrame]:
        """Processed (echo-cancelled) microphone frames while started and not muted."""
        ...

    def play(self, frame: rtc.AudioFrame) -> None:
        """Queue one agent frame for playback (bounded; drops are counted)."""
        ...

    def flush_playback(self) -> None:
        """Drop all queued agent audio now (local interrupt)."""
        ...

    def set_muted(self, muted: bool) -> None:
        """Mute or unmute the microphone (muted: no frames leave)."""
        ...

    def levels(self) -> AudioLevels:
        """Current mic and agent levels (cheap; polled at about 20 Hz)."""
        ...

    async def aclose(self) -> None:
        """Stop and close the devices; safe to call twice."""
        ...


class NullAudio:
    """Text-only: no devices, no microphone track, agent audio is discarded."""

    def __init__(self, reason: str = "text-only") -> None:
        self._reason = reason

    @property
    def description(self) -> str:
        return self._reason

    @property
    def has_input(self) -> bool:
        return False

    def set_notice_callback(self, callback: NoticeCallback | None) -> None:
        del callback

    async def start(self) -> None:
        return None

    async def mic_frames(self) -> AsyncIterator[rtc.AudioFrame]:
        return
        yield  # pragma: no cover - makes this an (empty) async generator

    def play(self, frame: rtc.AudioFrame) -> None:
        del frame

    def flush_playback(self) -> None:
        return None

    def set_muted(self, muted: bool) -> None:
        del muted

    def levels(self) -> AudioLevels:
        return AudioLevels()

    async def aclose(self) -> None:
        return None
