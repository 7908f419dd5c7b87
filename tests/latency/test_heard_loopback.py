"""The heard time is when the sound comes out: a marked frame through the virtual speaker.

The audio backend plays agent frames in real time to the virtual speaker; one loud frame
among silent ones is played marked (:meth:`SoundDeviceAudio.play_marked`, what the session
does with a reply's first audible frame), and the backend reports when it handed that
frame's first sample to the device and the device's output latency: their sum is the
*heard* time the waterfalls use. Meanwhile the speaker's monitor is recorded with
PortAudio, each captured block stamped with its capture time (PortAudio's ADC time for the
block, moved onto the monotonic clock with the same callback's ``currentTime``). The
sample where the loud frame starts in that recording must be within one device block
(10 ms) plus the reported output latency of the reported heard time: the issue's bar for
"the reported heard time matches the capture".

Needs PulseAudio only (no network)::

    .venv/bin/pytest tests/latency/test_heard_loopback.py -q
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from fishtalk.testing.virtual_audio import SPEAKER, SPEAKER_MONITOR, VirtualAudio

pytestmark = [pytest.mark.audio, pytest.mark.timeout(60)]

RATE = 48_000
BLOCK = 480
"""One 10 ms frame, and the backend's device block."""
BLOCK_SECONDS = BLOCK / RATE
ONSET_LEVEL = 3000
"""A captured sample louder than this is the marked frame (it is a -6 dBFS sine)."""
TRIALS = 5


@dataclass(frozen=True)
class Captured:
    samples: np.ndarray[Any, np.dtype[np.int16]]
    first_sample_at: float
    """Monotonic time the block's first sample was captured."""


def _frame(samples: np.ndarray[Any, np.dtype[np.int16]]) -> Any:
    from livekit import rtc

    return rtc.AudioFrame(samples.tobytes(), RATE, 1, BLOCK)


async def test_reported_heard_time_matches_the_speaker(vaudio: VirtualAudio) -> None:
    import sounddevice as sd

    from fishtalk.audio.backend import SoundDeviceAudio
    from fishtalk.audio.devices import resolve_device

    captured: list[Captured] = []

    def on_block(indata: Any, frames: int, time_info: Any, status: Any) -> None:
        now = time.monotonic()
        adc = float(time_info.inputBufferAdcTime)
        current = float(time_info.currentTime)
        if adc > 0 and current > 0 and abs(current - adc) < 1.0:
            # PortAudio's stream clock is not the monotonic one: move it across.
            first = now + (adc - current)
        else:  # no timing from the host API: the block ended when the callback ran
            first = now - frames / RATE - monitor_latency
        captured.append(Captured(indata[:, 0].copy(), first))

    monitor = sd.InputStream(
        device=resolve_device(SPEAKER_MONITOR, "input"),
        samplerate=RATE,
        channels=1,
        dtype="int16",
        blocksize=BLOCK,
        latency="low",
        callback=on_block,
    )
    monitor_latency = float(monitor.latency)
    backend = SoundDeviceAudio(
        input_device=None,
        output_device=resolve_device(SPEAKER, "output"),
        use_input=False,
        echo_cancellation=False,
        noise_suppression=False,
        high_pass_filter=False,
        auto_gain=False,
    )
    silent = _frame(np.zeros(BLOCK, np.int16))
    t = np.arange(BLOCK) / RATE
    loud = _frame((np.sin(2 * np.pi * 1000 * t) * 16000).astype(np.int16))
    loop = asyncio.get_running_loop()
    monitor.start()
    await backend.start()
    try:
        for trial in range(TRIALS):
            reported: asyncio.Future[tuple[float, float]] = loop.create_future()

            def handed(at: float, latency: float, fut: Any = reported) -> None:
                fut.set_result((at, latency))

            start = loop.time()
            for i in range(60):  # 0.3 s silence, 0.1 s tone (marked first frame), silence
                if i == 30:
                    backend.play_marked(loud, handed)
                else:
                    backend.play(loud if 30 < i < 40 else silent)
                await asyncio.sleep(max(0.0, start + (i + 1) / 100 - loop.time()))
            handed_at, output_latency = await asyncio.wait_for(reported, 5)
            heard_at = handed_at + output_latency
            assert output_latency > 0
            await asyncio.sleep(0.1)  # the monitor's last blocks
            onset = next(
                (
                    block.first_sample_at + int(loud_at[0]) / RATE
                    for block in list(captured)
                    if block.first_sample_at > handed_at - 0.1
                    and (loud_at := np.flatnonzero(np.abs(block.samples) > ONSET_LEVEL)).size
                ),
                None,
            )
            assert onset is not None, f"trial {trial}: the marked frame never reached the speaker"
            off = onset - heard_at
            print(f"trial {trial}: heard {heard_at:.4f}, captured {onset:.4f}, {off * 1e3:.1f} ms")
            assert abs(off) <= BLOCK_SECONDS + output_latency, (trial, off, output_latency)
            captured.clear()
    finally:
        monitor.stop()
        monitor.close()
        await backend.aclose()
