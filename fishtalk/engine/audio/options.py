"""What opening the audio devices reads: the engine's own audio options.

:func:`fishtalk.engine.audio.open_backend` takes any :class:`AudioOptions`: the CLI's
``[audio]`` settings are one, :class:`DeviceOptions` (named devices, every filter on) is
the plain one the public API builds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class AudioOptions(Protocol):
    """The audio choices a backend is opened with."""

    @property
    def enabled(self) -> bool:
        """False: no devices at all (text-only)."""
        ...

    @property
    def input_device(self) -> int | str | None:
        """The microphone (an index, a name or part of one; None = the system default)."""
        ...

    @property
    def output_device(self) -> int | str | None:
        """The speaker (as :attr:`input_device`)."""
        ...

    @property
    def echo_cancellation(self) -> bool:
        """Cancel the speaker's sound from the microphone."""
        ...

    @property
    def noise_suppression(self) -> bool:
        """Suppress steady background noise."""
        ...

    @property
    def high_pass_filter(self) -> bool:
        """Cut rumble below speech."""
        ...

    @property
    def auto_gain(self) -> bool:
        """Level the microphone automatically."""
        ...


@dataclass(frozen=True, slots=True)
class DeviceOptions:
    """A plain :class:`AudioOptions`: the devices to use, every audio filter on."""

    input_device: int | str | None = None
    output_device: int | str | None = None
    enabled: bool = True
    echo_cancellation: bool = True
    noise_suppression: bool = True
    high_pass_filter: bool = True
    auto_gain: bool = True


__all__ = ["AudioOptions", "DeviceOptions"]
