"""CPU and latency of fishtalk's audio path on the virtual PulseAudio device chain.

Three duplex runs of the same length, each capturing from the virtual mic and playing a
real-time stream of 10 ms agent frames to the virtual speaker:

1. bare: a sounddevice InputStream + OutputStream whose callbacks only copy blocks
   (the least any client must do for the same I/O);
2. fishtalk without processing: the backend with the AudioProcessingModule switched off;
3. fishtalk: the backend as shipped (echo cancellation, noise suppression, high-pass
   filter, auto gain), mic frames consumed from ``mic_frames()``.

CPU is this process's user+system time (all threads, PortAudio's included) over the run.
The hand-off latency is the time from ``play()`` to the device callback taking the frame.
Needs ``pulseaudio``/``pactl`` (apt install pulseaudio pulseaudio-utils
libasound2-plugins libportaudio2); no network. Prints one markdown section.

    .venv/bin/python bench/bench_audio.py [--seconds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from fishtalk.testing.virtual_audio import MIC, SPEAKER, virtual_audio

RATE = 48_000
FRAME = 480


@dataclass
class Run:
    name: str
    cpu_s: float
    wall_s: float
    mic_frames: int
    played_frames: int
    extra: str = ""

    @property
    def cpu_percent(self) -> float:
        return 100 * self.cpu_s / self.wall_s


def _agent_audio(seconds: float) -> np.ndarray[Any, np.dtype[np.int16]]:
    t = np.arange(int(seconds * RATE)) / RATE
    # A 220 Hz tone with a 3 Hz "syllable" envelope: a stand-in for speech.
    wave = np.sin(2 * np.pi * 220 * t) * 0.5 * (1 + np.sin(2 * np.pi * 3 * t)) * 0.3
    return (wave * 32767).astype(np.int16)


async def _paced(seconds: float, each: Any) -> int:
    """Call ``each(i)`` every 10 ms (in real time, as frames arrive from a track)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    n = int(seconds * 100)
    for i in range(n):
        each(i)
        await asyncio.sleep(max(0.0, start + (i + 1) / 100 - loop.time()))
    return n


async def bare(seconds: float) -> Run:
    import sounddevice as sd

    from fishtalk.audio.devices import resolve_device

    audio = _agent_audio(seconds + 1)
    pending: list[np.ndarray[Any, np.dtype[np.int16]]] = []
    counts = {"in": 0, "out": 0}

    def on_input(indata: Any, frames: int, time_info: Any, status: Any) -> None:
        pending.append(indata[:, 0].copy())
        counts["in"] += 1

    def on_output(outdata: Any, frames: int, time_info: Any, status: Any) -> None:
        i = counts["out"]
        outdata[:, 0] = audio[i * FRAME : (i + 1) * FRAME]
        counts["out"] += 1

    common = {"samplerate": RATE, "channels": 1, "dtype": "int16", "blocksize": FRAME}
    inp = sd.InputStream(
        device=resolve_device(MIC, "input"), callback=on_input, latency="low", **common
    )
    out = sd.OutputStream(
        device=resolve_device(SPEAKER, "output"), callback=on_output, latency="low", **common
    )
    inp.start()
    out.start()

    def drain(_: int) -> None:
        pending.clear()  # the consumer side: take what the callback produced

    cpu0, wall0 = time.process_time(), time.monotonic()
    await _paced(seconds, drain)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    for stream in (inp, out):
        stream.stop()
        stream.close()
    return Run("bare sounddevice duplex", cpu, wall, counts["in"], counts["out"])


async def fishtalk(seconds: float, *, processing: bool) -> tuple[Run, Any]:
    from livekit import rtc

    from fishtalk.audio.backend import SoundDeviceAudio
    from fishtalk.audio.devices import resolve_device

    backend = SoundDeviceAudio(
        input_device=resolve_device(MIC, "input"),
        output_device=resolve_device(SPEAKER, "output"),
        echo_cancellation=processing,
        noise_suppression=processing,
        high_pass_filter=processing,
        auto_gain=processing,
    )
    await backend.start()
    audio = _agent_audio(seconds + 1)
    frames = [
        rtc.AudioFrame(audio[i * FRAME : (i + 1) * FRAME].tobytes(), RATE, 1, FRAME)
        for i in range(int(seconds * 100))
    ]
    got = 0

    async def consume() -> None:
        nonlocal got
        async for _ in backend.mic_frames():
            got += 1

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0.5)  # settle
    cpu0, wall0 = time.process_time(), time.monotonic()
    got = 0
    await _paced(seconds, lambda i: backend.play(frames[i]))
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    stats = backend.stats()
    consumer.cancel()
    await backend.aclose()
    name = "fishtalk backend, APM on (AEC+NS+HPF+AGC)" if processing else "fishtalk, APM off"
    return Run(name, cpu, wall, got, stats.playback_frames), stats


async def main(seconds: float) -> str:
    baseline = await bare(seconds)
    plain, _ = await fishtalk(seconds, processing=False)
    full, stats = await fishtalk(seconds, processing=True)
    rows = [baseline, plain, full]
    lines = [
        "## Audio path (virtual PulseAudio devices)",
        "",
        f"{seconds:.0f} s duplex per run: capture from the virtual mic and play real-time 10 ms "
        "agent frames, 48 kHz mono, 10 ms device blocks. CPU = this process (all threads).",
        "",
        "| run | CPU s | CPU % of one core | mic frames | played frames | ratio to bare |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for run in rows:
        lines.append(
            f"| {run.name} | {run.cpu_s:.2f} | {run.cpu_percent:.1f} | {run.mic_frames} | "
            f"{run.played_frames} | {run.cpu_s / baseline.cpu_s:.2f}x |"
        )
    lines += [
        "",
        "Hand-off latency, `play()` until the device callback takes the frame "
        f"(APM-on run, {stats.playback_frames} frames): mean {stats.handoff_latency_mean_ms:.2f} "
        f"ms, p50 {stats.handoff_latency_p50_ms:.2f} ms, p95 {stats.handoff_latency_p95_ms:.2f} "
        f"ms, max {stats.handoff_latency_max_ms:.2f} ms. Underruns: {stats.playback_underruns}; "
        f"dropped: mic blocks {stats.mic_dropped_blocks}, mic frames {stats.mic_dropped_frames}, "
        f"playback frames {stats.playback_dropped_frames}; quiet frames skipped to hold the "
        f"delay down: {stats.playback_trimmed_frames}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    with virtual_audio():
        print(asyncio.run(main(args.seconds)))
