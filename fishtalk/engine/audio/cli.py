"""The body of ``fishtalk devices`` (imported only when that command runs)."""

from __future__ import annotations

import sys

from fishtalk.engine.audio.devices import AudioUnavailable, format_device_table, list_devices


def print_devices() -> int:
    """Print the device table (or why there is none); return the exit code."""
    try:
        devices = list_devices()
    except AudioUnavailable as exc:
        sys.stderr.write(f"fishtalk: {str(exc).removeprefix('text-only: ')}\n")
        return 1
    sys.stdout.write(format_device_table(devices) + "\n")
    if devices:
        sys.stdout.write(
            "choose with [audio] input_device / output_device in the config, or "
            "FISHTALK_AUDIO__INPUT_DEVICE / FISHTALK_AUDIO__OUTPUT_DEVICE (an index or part "
            "of a name)\n"
        )
    return 0
