"""Audio device discovery and selection through sounddevice/PortAudio.

``sounddevice`` is imported lazily (never when fishtalk itself is imported): loading it
needs the PortAudio shared library and makes PortAudio enumerate devices, which is slow
and must happen after a sound server is up.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

from fishtalk.core.errors import AudioDeviceError

DeviceKind = Literal["input", "output"]

# PortAudio error codes that mean "try another format" rather than "device unusable".
_FORMAT_ERRORS = (-9997, -9998)  # paInvalidSampleRate, paInvalidChannelCount

# Rates tried, after 48 kHz and the device's own default, when a device refuses 48 kHz.
_FALLBACK_RATES = (48_000, 44_100, 96_000, 32_000, 24_000, 16_000)


class AudioUnavailable(Exception):
    """Audio cannot work at all here; ``str(exc)`` is the one-line text-only reason."""


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """One PortAudio device as `fishtalk devices` shows it."""

    index: int
    name: str
    hostapi: str
    max_input_channels: int
    max_output_channels: int
    default_samplerate: float
    is_default_input: bool
    is_default_output: bool

    def usable_for(self, kind: DeviceKind) -> bool:
        """Whether the device has channels in that direction."""
        return (self.max_input_channels if kind == "input" else self.max_output_channels) > 0


@dataclass(frozen=True, slots=True)
class StreamFormat:
    """What a device will be opened with: rate and channel count (int16 samples)."""

    samplerate: int
    channels: int


def import_sounddevice() -> ModuleType:
    """Import sounddevice, or raise AudioUnavailable with the reason for the user."""
    global _imported_at
    if "sounddevice" not in sys.modules:
        _imported_at = time.monotonic()
    try:
        import sounddevice
    except OSError:
        raise AudioUnavailable(
            "text-only: PortAudio library not installed (apt install libportaudio2)"
        ) from None
    except ImportError:
        raise AudioUnavailable(
            "text-only: the sounddevice package is not installed (pip install sounddevice)"
        ) from None
    _quiet_alsa()
    module: ModuleType = sounddevice
    return module


_ALSA_HANDLER_TYPE = ctypes.CFUNCTYPE(
    None, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p
)
_alsa_handler: object | None = None


def _ignore_alsa_error(
    file: bytes | None, line: int, function: bytes | None, err: int, fmt: bytes | None
) -> None:
    del file, line, function, err, fmt


def _quiet_alsa() -> None:
    """Stop libasound printing to the terminal (e.g. every failed reconnect to a server).

    Those lines would land in the middle of the TUI; failures reach the user as notices.
    """
    global _alsa_handler
    if _alsa_handler is not None or not sys.platform.startswith("linux"):
        return
    name = ctypes.util.find_library("asound")
    if name is None:
        return
    try:
        lib = ctypes.CDLL(name)
        handler = _ALSA_HANDLER_TYPE(_ignore_alsa_error)
        lib.snd_lib_error_set_handler(handler)
    except (OSError, AttributeError):
        return
    _alsa_handler = handler  # the C side keeps only a pointer: keep the object alive


_imported_at = -1e9
"""When sounddevice was imported by us (PortAudio enumerates devices then)."""
_FRESH_S = 2.0

_open_streams = 0
"""Streams this process has open; PortAudio may only be re-initialised when it is zero."""


def stream_opened() -> None:
    """Record that a stream was opened (blocks :func:`rescan`)."""
    global _open_streams
    _open_streams += 1


def stream_closed() -> None:
    """Record that a stream was closed."""
    global _open_streams
    _open_streams = max(0, _open_streams - 1)


def rescan(*, skip_if_fresh: bool = False) -> bool:
    """Make PortAudio enumerate devices again (new server, device plugged in).

    Re-initialising PortAudio closes every stream, so this does nothing (and returns
    False) while a stream is open.
    """
    sd = sys.modules.get("sounddevice")
    if sd is None:
        return True  # the first import will enumerate
    if skip_if_fresh and time.monotonic() - _imported_at < _FRESH_S:
        return True  # imported moments ago: the list is current
    if _open_streams:
        return False
    # sounddevice has no public re-enumeration; its terminate/initialize pair is the way.
    sd._terminate()
    sd._initialize()
    return True


def _default_indexes(sd: ModuleType) -> tuple[int, int]:
    try:
        default = sd.default.device
        return int(default[0]), int(default[1])
    except (TypeError, ValueError, IndexError):
        return -1, -1


def list_devices(*, refresh: bool = False) -> list[DeviceInfo]:
    """All PortAudio devices (empty when there are none); raises AudioUnavailable."""
    sd = import_sounddevice()
    if refresh:
        rescan(skip_if_fresh=True)
    try:
        raw: Any = sd.query_devices()
        hostapis: Any = sd.query_hostapis()
    except Exception:  # PortAudio errors when the server vanished: treat as no devices
        return []
    default_in, default_out = _default_indexes(sd)
    devices = []
    for index, dev in enumerate(raw):
        hostapi = dev.get("hostapi", -1)
        api_name = hostapis[hostapi]["name"] if 0 <= hostapi < len(hostapis) else "?"
        devices.append(
            DeviceInfo(
                index=index,
                name=str(dev["name"]),
                hostapi=str(api_name),
                max_input_channels=int(dev["max_input_channels"]),
                max_output_channels=int(dev["max_output_channels"]),
                default_samplerate=float(dev["default_samplerate"]),
                is_default_input=index == default_in,
                is_default_output=index == default_out,
            )
        )
    return devices


def _choices(devices: list[DeviceInfo], kind: DeviceKind) -> str:
    usable = [f"{d.index} {d.name!r}" for d in devices if d.usable_for(kind)]
    return ", ".join(usable) if usable else "none"


def resolve_device(
    spec: int | str | None, kind: DeviceKind, *, devices: list[DeviceInfo] | None = None
) -> int | None:
    """Turn a device spec into a PortAudio index (None = the system default).

    ``spec`` is an index, or a case-insensitive part of a device name (an exact name wins
    over a partial one). Raises AudioDeviceError listing the choices when nothing (or more
    than one device) matches, and AudioUnavailable when PortAudio is missing.
    """
    if spec is None:
        return None
    if devices is None:
        devices = list_devices()
    if isinstance(spec, str) and spec.strip().isdigit():
        spec = int(spec.strip())
    if isinstance(spec, int):
        for dev in devices:
            if dev.index == spec and dev.usable_for(kind):
                return dev.index
        raise AudioDeviceError(
            f"no {kind} device with index {spec}; choices: {_choices(devices, kind)}"
        )
    wanted = spec.strip().casefold()
    usable = [d for d in devices if d.usable_for(kind)]
    exact = [d for d in usable if d.name.casefold() == wanted]
    if exact:
        return exact[0].index
    partial = [d for d in usable if wanted in d.name.casefold()]
    if len(partial) == 1:
        return partial[0].index
    if not partial:
        raise AudioDeviceError(
            f"no {kind} device matching {spec!r}; choices: {_choices(devices, kind)}"
        )
    raise AudioDeviceError(
        f"{kind} device {spec!r} is ambiguous; it matches: {_choices(partial, kind)}"
    )


def probe_format(
    device: int | None, kind: DeviceKind, *, preferred_rate: int = 48_000
) -> StreamFormat:
    """Find a rate and channel count the device accepts, preferring ``preferred_rate`` mono.

    Raises AudioDeviceError when nothing works (the device is gone or busy).
    """
    sd = import_sounddevice()
    check = sd.check_input_settings if kind == "input" else sd.check_output_settings
    rates: list[int] = [preferred_rate]
    try:
        info: Any = sd.query_devices(device, kind)
        rates.append(int(info["default_samplerate"]))
        max_channels = int(info[f"max_{kind}_channels"])
    except Exception as exc:
        raise AudioDeviceError(f"{kind} device {device} is not available: {exc}") from None
    rates.extend(_FALLBACK_RATES)
    channel_options = [1] if max_channels < 2 else [1, 2]
    last_error = "no channels"
    seen: set[int] = set()
    for rate in rates:
        if rate in seen or rate <= 0:
            continue
        seen.add(rate)
        for channels in channel_options:
            try:
                check(device=device, channels=channels, dtype="int16", samplerate=rate)
            except Exception as exc:
                last_error = str(exc.args[0]) if exc.args else str(exc)
                code = exc.args[1] if len(exc.args) > 1 else None
                if code in _FORMAT_ERRORS:
                    continue
                break  # the device itself is unusable; other formats will not help
            return StreamFormat(samplerate=rate, channels=channels)
        else:
            continue
        break
    name = "default" if device is None else str(device)
    raise AudioDeviceError(f"{kind} device {name} cannot be opened: {last_error}")


def format_device_table(devices: list[DeviceInfo]) -> str:
    """The `fishtalk devices` listing: one line per device, defaults marked."""
    if not devices:
        return "no audio devices found"
    header = f"{'':2}{'idx':>3}  {'name':<32} {'host API':<12} {'in':>3} {'out':>3} {'rate':>7}"
    lines = [header]
    for d in devices:
        mark = ("<" if d.is_default_input else " ") + (">" if d.is_default_output else " ")
        lines.append(
            f"{mark}{d.index:>3}  {d.name[:32]:<32} {d.hostapi[:12]:<12} "
            f"{d.max_input_channels:>3} {d.max_output_channels:>3} {d.default_samplerate:>7.0f}"
        )
    lines.append("< default input   > default output")
    return "\n".join(lines)
