"""Check the audio devices a user named before a call starts.

A device named on the command line or in the config that matches nothing is a usage
error: the command stops before connecting, with one line listing the choices (exit 2),
instead of quietly falling back to text-only mid-call. With no device named, nothing is
checked here: a missing PortAudio library or an empty device list still gives a
text-only session with its one-line explanation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from fishtalk.engine.audio.options import AudioOptions


class _TextOnly(Protocol):
    @property
    def text_only(self) -> bool: ...


class CallAudio(Protocol):
    """What the preflight reads: the audio options and whether the call is text-only
    (the CLI's settings are one)."""

    @property
    def audio(self) -> AudioOptions:
        """The audio options."""
        ...

    @property
    def session(self) -> _TextOnly:
        """The session options (only ``text_only`` is read)."""
        ...


def audio_wanted(settings: CallAudio) -> bool:
    """Whether the session will try to open the microphone and speaker at all."""
    return settings.audio.enabled and not settings.session.text_only


def check_named_devices(settings: CallAudio) -> None:
    """Resolve ``audio.input_device`` / ``audio.output_device`` when set and audio is on.

    Raises :class:`~fishtalk.core.errors.AudioDeviceError` (exit 2, the choices in its
    message) when a named device matches nothing. Imports sounddevice only when a device
    was named. Without PortAudio it returns quietly: the session explains text-only mode.
    """
    audio = settings.audio
    if not audio_wanted(settings) or (audio.input_device is None and audio.output_device is None):
        return
    from fishtalk.engine.audio.devices import AudioUnavailable, list_devices, resolve_device

    try:
        devices = list_devices(refresh=True)
    except AudioUnavailable:
        return
    resolve_device(audio.input_device, "input", devices=devices)
    resolve_device(audio.output_device, "output", devices=devices)


__all__ = ["CallAudio", "audio_wanted", "check_named_devices"]
