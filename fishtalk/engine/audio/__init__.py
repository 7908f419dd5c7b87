"""Audio for fishtalk: capture, playback, echo cancellation, levels, device listing.

``base`` holds the backend contract the session drives and the no-audio backend; nothing
in this package is imported by ``fishtalk --help``. ``open_backend`` here is a thin lazy
entry point: numpy, livekit and sounddevice load only when it is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fishtalk.engine.audio.base import AudioBackend, NoticeCallback
    from fishtalk.engine.audio.options import AudioOptions


def open_backend(settings: AudioOptions, *, notice: NoticeCallback | None = None) -> AudioBackend:
    """Build the audio backend for ``settings``; never raises (see ``backend.open_backend``)."""
    from fishtalk.engine.audio.backend import open_backend as _open

    return _open(settings, notice=notice)


__all__ = ["open_backend"]
