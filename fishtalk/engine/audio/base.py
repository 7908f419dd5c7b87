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


HandedCallback = Callable[[float, float], None]
"""``(handed_at, output_latency)``: a marked frame's first sample was handed to the output
device at ``handed_at`` (monotonic seconds) and will be heard ``output_latency`` seconds
later (the device's reported latency for that sample). Called on the event loop, once."""
FlushedCallback = Callable[[float], None]
"""``(left_at)``: after a flush, the last agent sample left the speaker at ``left_at``
(monotonic seconds, the device's output latency included). Called on the event loop, once."""
SpeechEndedCallback = Callable[[float], None]
"""``(captured_at)``: the user's speech ended; the capture time (monotonic seconds) of the
last voiced microphone frame. Called on the event loop, once per utterance."""


@runtime_checkable
class LatencyTaps(Protocol):
    """Optional timing taps of a backend, for heard latency (issue 14).

    A backend that has them lets the session stamp what only the device threads see; one
    without them (any plain :class:`AudioBackend`) simply yields no audio latency marks.
    Every callback is handed to the event loop once per event, never per frame.
    """

    @property
    def has_output(self) -> bool:
        """Whether agent audio reaches an output device (no device: no audio marks)."""
        ...

    def set_speech_ended_callback(self, callback: SpeechEndedCallback | None) -> None:
        """Run the capture-side voice-activity detector and report each end of speech."""
        ...

    def play_marked(self, frame: rtc.AudioFrame, on_handed: HandedCallback) -> None:
        """``play(frame)``, and report when its first sample is handed to the device."""
        ...

    def flush_playback_marked(self, on_flushed: FlushedCallback) -> None:
        """``flush_playback()``, and report when the last agent sample left the speaker."""
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

    @property
    def has_output(self) -> bool:
        return False

    def set_speech_ended_callback(self, callback: SpeechEndedCallback | None) -> None:
        del callback  # no microphone: speech never ends

    def play_marked(self, frame: rtc.AudioFrame, on_handed: HandedCallback) -> None:
        del frame, on_handed  # discarded: never handed to a device, never reported

    def flush_playback_marked(self, on_flushed: FlushedCallback) -> None:
        del on_flushed  # nothing was playing

    def set_muted(self, muted: bool) -> None:
        del muted

    def levels(self) -> AudioLevels:
        return AudioLevels()

    async def aclose(self) -> None:
        return None
