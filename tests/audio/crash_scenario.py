"""A sound server dying under open streams, run in a process of its own.

PortAudio's ALSA capture thread sometimes spins instead of failing when the PulseAudio
server is killed under it; the backend then notices the stall and replaces the stream,
but the wedged thread can crash the interpreter at exit. So each scenario runs here, on
a private server, prints its observations as one JSON line and leaves with os._exit.

Usage: python crash_scenario.py restart|gone
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from typing import Any

import numpy as np
from support.virtual_audio import MIC, SPEAKER, VirtualAudio


async def _scenario(va: VirtualAudio, kind: str) -> dict[str, Any]:
    from fishtalk.cli.settings import AudioSettings
    from fishtalk.engine.audio.backend import SoundDeviceAudio, open_backend

    notices: list[str] = []
    backend = open_backend(
        AudioSettings(input_device=MIC, output_device=SPEAKER), notice=notices.append
    )
    assert isinstance(backend, SoundDeviceAudio), backend.description
    await backend.start()
    frames: list[bytes] = []
    ended = asyncio.Event()

    async def tap() -> None:
        async for frame in backend.mic_frames():
            frames.append(bytes(frame.data))
        ended.set()

    tap_task = asyncio.create_task(tap())
    await asyncio.sleep(0.3)
    va.kill()
    loop = asyncio.get_running_loop()
    result: dict[str, Any] = {}
    if kind == "restart":
        # Bring the server back once both streams were dropped.
        deadline = loop.time() + 10
        while backend.stats().input_format or backend.stats().output_format:
            if loop.time() > deadline:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        await asyncio.to_thread(va.start)
        deadline = loop.time() + 20
        while sum("switched to the default" in n for n in notices) < 2:
            if loop.time() > deadline:
                break
            await asyncio.sleep(0.05)
        frames.clear()
        t = np.arange(48_000 * 2) / 48_000
        feeder = va.feed_mic((np.sin(2 * np.pi * 440 * t) * 0.3 * 32767).astype(np.int16).tobytes())
        await asyncio.sleep(1.5)
        await asyncio.to_thread(feeder.wait, 10)
        samples = np.frombuffer(b"".join(frames), dtype=np.int16).astype(np.float64)
        result["mic_rms"] = float(np.sqrt(np.mean(samples**2)) / 32768) if samples.size else 0.0
        spectrum = np.abs(np.fft.rfft(samples * np.hanning(samples.size))) if samples.size else []
        result["mic_peak_hz"] = (
            float(np.argmax(spectrum) * 48_000 / samples.size) if samples.size else 0.0
        )
    else:
        deadline = loop.time() + 30
        while sum("continuing without" in n for n in notices) < 2:
            if loop.time() > deadline:
                break
            await asyncio.sleep(0.05)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ended.wait(), 5)
        result["mic_frames_ended"] = ended.is_set()
        from livekit import rtc

        backend.play(rtc.AudioFrame(bytes(960), 48_000, 1, 480))
        backend.flush_playback()
    result["notices"] = notices
    result["has_input"] = backend.has_input
    result["description"] = backend.description
    await backend.aclose()
    tap_task.cancel()
    return result


def main() -> None:
    kind = sys.argv[1]
    va = VirtualAudio()
    va.start()
    va.apply_env()
    try:
        result = asyncio.run(_scenario(va, kind))
    finally:
        va.stop()
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)  # skip PortAudio's exit handler: see the module docstring


if __name__ == "__main__":
    main()
