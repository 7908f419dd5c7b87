"""CPU and latency of fishtalk's audio path on the virtual PulseAudio device chain.

Runs of the same length; rows 1-5 are duplex, each capturing from the virtual mic and
playing a real-time stream of 10 ms agent frames to the virtual speaker:

1. bare: a sounddevice InputStream + OutputStream whose callbacks only copy blocks, fed
   and drained by the same 10 ms loop tick as the fishtalk rows (the tick hands each
   agent frame's samples to the output callback and takes the copied mic blocks): the
   least any client must do for the same I/O; and the same with the APM in its callbacks
   (reverse stream in the output callback, capture stream in the input callback), the
   floor under row 3;
2. fishtalk without processing: the backend with the AudioProcessingModule switched off;
3. fishtalk: the backend as shipped (echo cancellation, noise suppression, high-pass
   filter, auto gain), mic frames consumed from ``mic_frames()``;
4. heard-latency measurement (issue 14) off and on, as two rows: the backend as in row 3,
   the session's per-frame "armed?" comparison on every agent frame, and with measurement
   on the end-of-speech detector on every processed mic frame and one marked frame
   (play_marked) per second, as a turn a second would. The two alternate in three
   rounds of a third of the run each (the machine's load drifts), CPU summed per row;
5. the same as row 3, with each mic frame fed to an ``rtc.AudioSource`` as the session does;
6. anchor: livekit's ``MediaDevices`` (sounddevice + APM from the SDK), the same options
   and block size, its mic frames going into its ``rtc.AudioSource``;
7. the APM's own calls at the same pace on a thread of their own, without devices.

Below the table, the detector's own cost per frame, timed alone (silent and voiced frames).

A second anchor, livekit's ``PlatformAudio`` (WebRTC's native audio device module), is
checked and the section says why it is not a row (it opens devices only inside a call).

CPU is this process's user+system time (all threads, PortAudio's included) over the run.
The issue's goals are rows 2 and 3 against row 1 (APM off ≤1.15x, APM on ≤1.5x).
The hand-off latency is the time from ``play()`` to the device callback taking the frame.
Needs ``pulseaudio``/``pactl`` (apt install pulseaudio pulseaudio-utils
libasound2-plugins libportaudio2); no network. Prints one markdown section.

    .venv/bin/python bench/bench_audio.py [--seconds 60] [--rounds 8 --round-seconds 15]

One run of each row moves by tens of percent on a shared 2-core machine (the whole process
uses 2-3 % of one core, so a few milliseconds of someone else's work show). The goals are
therefore judged on the second table: ``--rounds`` rounds in which the bare duplex, fishtalk
with the APM off, the bare duplex with the APM in its callbacks and fishtalk with the APM on
run back to back (the order rotates every round), each row's ratio taken against the bare
run of its own round, and the median and range of those ratios reported.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from support.virtual_audio import MIC, SPEAKER, virtual_audio

from fishtalk.engine.audio.vad import is_audible

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


def _agent_frames(seconds: float) -> list[Any]:
    """The agent's stream as the session gets it: one ``rtc.AudioFrame`` per 10 ms."""
    from livekit import rtc

    audio = _agent_audio(seconds + 1)
    return [
        rtc.AudioFrame(audio[i * FRAME : (i + 1) * FRAME].tobytes(), RATE, 1, FRAME)
        for i in range(int(seconds * 100))
    ]


async def bare(seconds: float, *, apm: bool = False) -> Run:
    """The least a client can do for the same I/O, through the same loop.

    The loop's 10 ms tick hands each agent frame (the same ``rtc.AudioFrame`` objects the
    fishtalk rows get) to the output callback through a deque, and takes the mic blocks the
    input callback copied into a list. The callbacks only copy. With ``apm``, the floor
    under fishtalk's APM-on row: the output callback also feeds each rendered block to the
    APM's reverse stream and the input callback processes each mic block (AEC+NS+HPF+AGC)
    before handing it over, as livekit's ``MediaDevices`` and fishtalk both do.
    """
    from collections import deque

    import sounddevice as sd
    from livekit import rtc

    from fishtalk.engine.audio.devices import resolve_device

    frames = _agent_frames(seconds)
    queued: deque[np.ndarray[Any, np.dtype[np.int16]]] = deque()
    pending: list[np.ndarray[Any, np.dtype[np.int16]]] = []
    counts = {"in": 0, "out": 0}
    processor = (
        rtc.AudioProcessingModule(
            echo_cancellation=True,
            noise_suppression=True,
            high_pass_filter=True,
            auto_gain_control=True,
        )
        if apm
        else None
    )
    mic = rtc.AudioFrame.create(RATE, 1, FRAME)
    mic_samples = np.frombuffer(mic.data, dtype=np.int16)
    render = rtc.AudioFrame.create(RATE, 1, FRAME)
    render_samples = np.frombuffer(render.data, dtype=np.int16)

    def on_input(indata: Any, frames: int, time_info: Any, status: Any) -> None:
        if processor is None:
            pending.append(indata[:, 0].copy())
        else:
            mic_samples[:] = indata[:, 0]
            processor.process_stream(mic)
            pending.append(mic_samples.copy())
        counts["in"] += 1

    def on_output(outdata: Any, frames: int, time_info: Any, status: Any) -> None:
        if queued:
            outdata[:, 0] = queued.popleft()
            counts["out"] += 1
        else:
            outdata.fill(0)
        if processor is not None:
            render_samples[:] = outdata[:, 0]
            processor.process_reverse_stream(render)

    common = {"samplerate": RATE, "channels": 1, "dtype": "int16", "blocksize": FRAME}
    inp = sd.InputStream(
        device=resolve_device(MIC, "input"), callback=on_input, latency="low", **common
    )
    out = sd.OutputStream(
        device=resolve_device(SPEAKER, "output"), callback=on_output, latency="low", **common
    )
    inp.start()
    out.start()

    def tick(i: int) -> None:
        queued.append(np.frombuffer(frames[i].data, dtype=np.int16))  # the agent's frame
        pending.clear()  # the consumer side: take what the input callback produced

    await asyncio.sleep(0.5)  # settle, as the fishtalk rows do
    counts["in"] = counts["out"] = 0
    cpu0, wall0 = time.process_time(), time.monotonic()
    await _paced(seconds, tick)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    for stream in (inp, out):
        stream.stop()
        stream.close()
    name = (
        "bare duplex + APM in its callbacks (AEC+NS+HPF+AGC)" if apm else "bare sounddevice duplex"
    )
    return Run(name, cpu, wall, counts["in"], counts["out"])


async def fishtalk(
    seconds: float, *, processing: bool, publish: bool = False, measure: bool = False
) -> tuple[Run, Any]:
    from livekit import rtc

    from fishtalk.engine.audio.backend import SoundDeviceAudio
    from fishtalk.engine.audio.devices import resolve_device

    backend = SoundDeviceAudio(
        input_device=resolve_device(MIC, "input"),
        output_device=resolve_device(SPEAKER, "output"),
        echo_cancellation=processing,
        noise_suppression=processing,
        high_pass_filter=processing,
        auto_gain=processing,
    )
    await backend.start()
    frames = _agent_frames(seconds)
    got = 0
    source = rtc.AudioSource(RATE, 1) if publish else None
    marks = {"speech": 0, "heard": 0}
    if measure:
        backend.set_speech_ended_callback(
            lambda at: marks.__setitem__("speech", 1 + marks["speech"])
        )
    armed = [False]

    def on_handed(at: float, latency: float) -> None:
        marks["heard"] += 1

    def play(i: int) -> None:
        frame = frames[i]
        # What Session._play does per frame: one comparison, a level check only while armed.
        if measure and i % 100 == 0:
            armed[0] = True  # a user turn ended: the next audible frame is the reply's first
        if armed[0] and is_audible(frame.data):
            armed[0] = False
            backend.play_marked(frame, on_handed)
        else:
            backend.play(frame)

    async def consume() -> None:
        nonlocal got
        async for frame in backend.mic_frames():
            got += 1
            if source is not None:  # what the session does with each mic frame
                await source.capture_frame(frame)

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0.5)  # settle
    cpu0, wall0 = time.process_time(), time.monotonic()
    got = 0
    await _paced(seconds, play)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    stats = backend.stats()
    consumer.cancel()
    await backend.aclose()
    if source is not None:
        await source.aclose()
    name = "fishtalk backend, APM on (AEC+NS+HPF+AGC)" if processing else "fishtalk, APM off"
    extra = f"{marks['heard']} heard marks"
    if publish:
        name = "fishtalk, APM on, mic into an AudioSource"
    return Run(name, cpu, wall, got, stats.playback_frames, extra), stats


async def measurement(seconds: float, rounds: int = 3) -> tuple[Run, Run]:
    """APM on, latency measurement off and on, alternating; CPU and frames summed."""
    runs: dict[bool, list[Run]] = {False: [], True: []}
    for _ in range(rounds):
        for measure in (False, True):
            run, _ = await fishtalk(seconds / rounds, processing=True, measure=measure)
            runs[measure].append(run)

    def total(name: str, parts: list[Run]) -> Run:
        return Run(
            name,
            sum(r.cpu_s for r in parts),
            sum(r.wall_s for r in parts),
            sum(r.mic_frames for r in parts),
            sum(r.played_frames for r in parts),
            f"{sum(int(r.extra.split()[0]) for r in parts)} heard marks",
        )

    return (
        total("fishtalk APM on, measurement off", runs[False]),
        total("fishtalk APM on, measurement on", runs[True]),
    )


def vad_cost(frames: int = 20_000) -> tuple[float, float, float]:
    """Microseconds per 10 ms frame: the detector on silence, on voice, and is_audible."""
    from fishtalk.engine.audio.vad import EnergyVad

    silent = np.zeros(FRAME, np.int16)
    voiced = _agent_audio(0.02)[:FRAME]
    vad = EnergyVad()
    results = []
    for frame in (silent, voiced):
        start = time.perf_counter()
        for i in range(frames):
            vad.push(frame, i * 0.01, frame)
        results.append((time.perf_counter() - start) / frames * 1e6)
    data = memoryview(voiced.tobytes()).cast("h")
    start = time.perf_counter()
    for _ in range(frames):
        is_audible(data)
    results.append((time.perf_counter() - start) / frames * 1e6)
    return results[0], results[1], results[2]


async def media_devices(seconds: float) -> Run:
    """livekit's own sounddevice helper, with the same APM options and 10 ms blocks.

    ``MediaDevices.open_input`` runs the APM in the capture callback and hands each frame
    to the loop (``call_soon_threadsafe`` into an asyncio queue), where a task feeds it to
    an ``rtc.AudioSource``; that capture is part of its cost (fishtalk's rows above only
    consume ``mic_frames()``, the comparable fishtalk row below also feeds an AudioSource).
    ``open_output`` gives an ``OutputPlayer`` whose callback feeds the APM's reverse stream.
    Its mixer is bypassed: the paced frames go into the player's buffer exactly as its
    own playback loop would put them there (``_buffer`` is the only way in without a
    remote track), the same hand-over fishtalk's ``play()`` gets.
    """
    from livekit import rtc

    from fishtalk.engine.audio.devices import resolve_device

    devices = rtc.MediaDevices(blocksize=FRAME)
    capture = devices.open_input(
        enable_aec=True,
        noise_suppression=True,
        high_pass_filter=True,
        auto_gain_control=True,
        input_device=resolve_device(MIC, "input"),
    )
    player = devices.open_output(output_device=resolve_device(SPEAKER, "output"))
    counts = {"mic": 0, "dropped": 0}
    source = capture.source
    capture_frame = source.capture_frame

    async def counted(frame: Any) -> None:
        counts["mic"] += 1
        await capture_frame(frame)

    source.capture_frame = counted  # type: ignore[method-assign]
    loop = asyncio.get_running_loop()

    def on_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # Its capture callback checks q.full() and then schedules put_nowait: when the
        # queue fills in between, the frame is dropped with a QueueFull on the loop.
        if isinstance(context.get("exception"), asyncio.QueueFull):
            counts["dropped"] += 1
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(on_error)
    frames = _agent_frames(seconds)
    stream = player._stream
    buffer = player._buffer
    stream.start()
    await asyncio.sleep(0.5)  # settle
    cpu0, wall0 = time.process_time(), time.monotonic()
    counts["mic"] = 0
    await _paced(seconds, lambda i: buffer.extend(frames[i].data.tobytes()))
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    mic = counts["mic"]
    await capture.aclose()
    await player.aclose()
    await source.aclose()
    loop.set_exception_handler(None)
    name = "livekit MediaDevices, APM on, mic into an AudioSource"
    return Run(name, cpu, wall, mic, -1, extra=f"dropped mic frames {counts['dropped']}")


async def apm_alone(seconds: float) -> Run:
    """The AudioProcessingModule's own cost: the floor under fishtalk's APM-on row.

    A thread makes the calls the two device callbacks make per 10 ms (the reverse stream
    with the agent audio, the capture stream with the silent mic, AEC+NS+HPF+AGC) at the
    same real-time pace, with no devices and no hand-over. Paced calls cost about twice
    what the same calls cost back to back (caches and clocks go cold in between), so a
    tight loop would understate the floor.
    """
    import threading

    from livekit import rtc

    apm = rtc.AudioProcessingModule(
        echo_cancellation=True,
        noise_suppression=True,
        high_pass_filter=True,
        auto_gain_control=True,
    )
    audio = _agent_audio(seconds + 1)
    render = rtc.AudioFrame.create(RATE, 1, FRAME)
    render_samples = np.frombuffer(render.data, dtype=np.int16)
    mic = rtc.AudioFrame.create(RATE, 1, FRAME)
    mic_samples = np.frombuffer(mic.data, dtype=np.int16)
    n = int(seconds * 100)

    def run() -> None:
        start = time.monotonic()
        for i in range(n):
            render_samples[:] = audio[i * FRAME : (i + 1) * FRAME]
            apm.process_reverse_stream(render)
            mic_samples[:] = 0
            apm.process_stream(mic)
            time.sleep(max(0.0, start + (i + 1) / 100 - time.monotonic()))

    cpu0, wall0 = time.process_time(), time.monotonic()
    thread = threading.Thread(target=run)
    thread.start()
    await asyncio.to_thread(thread.join)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    return Run("APM alone, paced at 10 ms, no devices (AEC+NS+HPF+AGC)", cpu, wall, n, n)


def platform_audio_status() -> str:
    """Whether livekit's PlatformAudio (WebRTC's native device module) can be a row here."""
    from livekit import rtc

    if not hasattr(rtc, "PlatformAudio"):
        return "this livekit has no `rtc.PlatformAudio`"
    try:
        platform = rtc.PlatformAudio()
    except Exception as exc:
        return f"`rtc.PlatformAudio()` failed: {exc}"
    try:
        mics = [d.name for d in platform.recording_devices()]
        speakers = [d.name for d in platform.playout_devices()]
    finally:
        platform.close()
    return (
        f"`rtc.PlatformAudio()` starts and sees the virtual devices (microphones {mics}, "
        f"speakers {speakers}), but it opens no device on its own: WebRTC's device module "
        "starts recording only when a track of its `PlatformAudioSource` is published in a "
        "connected room, and plays out only the remote tracks it receives there. Creating "
        "the source and a local track leaves the sound server with no client stream (checked "
        "with `pactl`). There is no frame-level way in or out (no `capture_frame`, no "
        "`play`), so it cannot run this device-only duplex; a fair row needs a whole call "
        "(Opus encode/decode and the network stack on both sides) against the same call "
        "through fishtalk"
    )


async def alternating(rounds: int, seconds: float) -> list[str]:
    """The goal rows, each against the bare duplex of its own round, rotated every round."""

    async def plain() -> Run:
        return (await fishtalk(seconds, processing=False))[0]

    async def full() -> Run:
        return (await fishtalk(seconds, processing=True))[0]

    async def floor() -> Run:
        return await bare(seconds, apm=True)

    async def baseline() -> Run:
        return await bare(seconds)

    rows: list[tuple[str, Callable[[], Awaitable[Run]]]] = [
        ("bare", baseline),
        ("fishtalk, APM off", plain),
        ("bare + APM in its callbacks (floor for APM on)", floor),
        ("fishtalk, APM on", full),
    ]
    cpu: dict[str, list[float]] = {name: [] for name, _ in rows}
    load_before = os.getloadavg()[0]
    for r in range(rounds):
        for name, run in rows[r % len(rows) :] + rows[: r % len(rows)]:
            cpu[name].append((await run()).cpu_s)
    load_after = os.getloadavg()[0]

    def ratios(name: str, against: str = "bare") -> list[float]:
        return [a / b for a, b in zip(cpu[name], cpu[against], strict=True)]

    def cell(values: list[float]) -> str:
        return f"**{statistics.median(values):.2f}x** ({min(values):.2f}–{max(values):.2f}x)"

    def summary(name: str, against: str, label: str, goal: str) -> str:
        return (
            f"<!-- summary: audio CPU, {rounds} × {seconds:.0f} s rounds, {name} | "
            f"{statistics.median(cpu[name]):.3f} s | {label} "
            f"{statistics.median(cpu[against]):.3f} s | "
            f"{statistics.median(ratios(name, against)):.2f}x | {goal} -->"
        )

    floor_name = "bare + APM in its callbacks (floor for APM on)"
    lines = [
        summary("fishtalk, APM off", "bare", "bare duplex", "≤1.15x"),
        summary("fishtalk, APM on", "bare", "bare duplex", "≤1.5x"),
        summary("fishtalk, APM on", floor_name, "bare duplex + APM", "at the floor"),
        "",
        f"### Alternating rounds: the goal figures ({rounds} rounds of {seconds:.0f} s per row)",
        "",
        "Each round runs the four rows back to back, the order rotated every round; each "
        "ratio is against the bare duplex of the same round; median (range) over the rounds. "
        f"Load average (1 min) {load_before:.1f} before, {load_after:.1f} after.",
        "",
        "| row | CPU s per run, median | ratio to bare | goal |",
        "|---|---:|---:|---|",
    ]
    goals = {
        "fishtalk, APM off": "≤1.15x",
        "fishtalk, APM on": "≤1.5x",
    }
    for name, _ in rows:
        ratio = "1x" if name == "bare" else cell(ratios(name))
        lines.append(
            f"| {name} | {statistics.median(cpu[name]):.3f} | {ratio} | {goals.get(name, '')} |"
        )
    lines += [
        "",
        f"fishtalk with the APM on against the floor with the APM on: "
        f"{cell(ratios('fishtalk, APM on', 'bare + APM in its callbacks (floor for APM on)'))}.",
        "",
    ]
    return lines


def _drops(stats: Any) -> str:
    return (
        f"underruns {stats.playback_underruns}, dropped mic blocks {stats.mic_dropped_blocks}, "
        f"dropped mic frames {stats.mic_dropped_frames}, dropped playback frames "
        f"{stats.playback_dropped_frames}, quiet frames skipped to hold the delay down "
        f"{stats.playback_trimmed_frames}, rendered frames the APM skipped "
        f"{stats.render_dropped_blocks}, APM errors {stats.apm_errors}, loop wakes from the "
        f"capture thread {stats.mic_thread_wakes}"
    )


def _count(n: int) -> str:
    return str(n) if n >= 0 else "–"


async def main(seconds: float, rounds: int, round_seconds: float) -> str:
    load_before = os.getloadavg()
    baseline = await bare(seconds)
    floor = await bare(seconds, apm=True)
    plain, plain_stats = await fishtalk(seconds, processing=False)
    full, stats = await fishtalk(seconds, processing=True)
    unmeasured, measured = await measurement(seconds)
    published, published_stats = await fishtalk(seconds, processing=True, publish=True)
    sdk = await media_devices(seconds)
    apm_only = await apm_alone(seconds)
    platform = platform_audio_status()
    load_after = os.getloadavg()
    rows = [baseline, floor, plain, full, unmeasured, measured, published, sdk, apm_only]
    vad_silent, vad_voiced, audible = vad_cost()
    lines = [
        "## Audio path (virtual PulseAudio devices)",
        "<!-- lead: CPU of the audio path (mic capture and agent playback on virtual PulseAudio "
        "devices), APM off and on, against a bare duplex stream and the APM's own floor. -->",
        "",
        f"{seconds:.0f} s duplex per run: capture from the virtual mic and play real-time 10 ms "
        "agent frames, 48 kHz mono, 10 ms device blocks. CPU = this process's user+system "
        "seconds (all threads, PortAudio's included), which depends much less on what else "
        "the machine runs than wall time does; still, compare the ratios, which are from one "
        f"run. Load average (1 min) {load_before[0]:.1f} before, {load_after[0]:.1f} after.",
        "",
        "| run | CPU s | CPU % of one core | mic frames | played frames | ratio to bare |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for run in rows:
        lines.append(
            f"| {run.name} | {run.cpu_s:.2f} | {run.cpu_percent:.1f} | {_count(run.mic_frames)} | "
            f"{_count(run.played_frames)} | {run.cpu_s / baseline.cpu_s:.2f}x |"
        )
    lines += [
        "| livekit PlatformAudio (WebRTC's device module) | – | – | – | – | not run: see below |",
        "",
        "What the bare rows include: the same loop tick every 10 ms that feeds the fishtalk "
        "rows (it hands each agent `rtc.AudioFrame`'s samples to the output callback through "
        "a deque and takes the mic blocks the input callback copied out), the same frames, "
        "the same streams (`low` latency, 10 ms blocks) and the same half-second settle "
        "before CPU is counted. Floor for the APM-on row: the bare duplex with the APM in "
        f"its callbacks = {floor.cpu_s / baseline.cpu_s:.2f}x bare; fishtalk's APM-on row is "
        f"{full.cpu_s / floor.cpu_s:.2f}x that floor (the APM alone, paced on a thread of "
        f"its own: {apm_only.cpu_s / baseline.cpu_s:.2f}x bare, which includes that "
        "thread's 100 wake-ups a second).",
        "",
        f"Heard-latency measurement (issue 14): APM on with measurement costs "
        f"{measured.cpu_s - unmeasured.cpu_s:+.2f} CPU s per {seconds:.0f} s against without "
        f"({measured.cpu_s / unmeasured.cpu_s:.3f}x; {measured.extra}; the runs' own spread "
        "on a shared machine is larger than that). Its only per-frame work is "
        f"the end-of-speech detector on each mic frame, timed alone at {vad_silent:.1f} µs "
        f"per silent and {vad_voiced:.1f} µs per voiced 10 ms frame "
        f"({vad_voiced / 100:.2f}% of one core while speaking), and one comparison per agent "
        f"frame; the level of an agent frame ({audible:.1f} µs) is checked only between the "
        "end of a user turn and the reply's first audible frame.",
        "",
        f"Anchors: fishtalk with its mic frames fed to an AudioSource costs "
        f"{published.cpu_s / sdk.cpu_s:.2f}x livekit's `MediaDevices` doing the same "
        f"(both with AEC+NS+HPF+AGC, 10 ms blocks; `MediaDevices` opens its streams at "
        "sounddevice's default latency, fishtalk at `low`). PlatformAudio: "
        f"{platform}.",
        "",
        "Hand-off latency, `play()` until the device callback takes the frame "
        f"(APM-on run, {stats.playback_frames} frames): mean {stats.handoff_latency_mean_ms:.2f} "
        f"ms, p50 {stats.handoff_latency_p50_ms:.2f} ms, p95 {stats.handoff_latency_p95_ms:.2f} "
        f"ms, max {stats.handoff_latency_max_ms:.2f} ms.",
        "",
        f"Losses. APM off: {_drops(plain_stats)}. APM on: {_drops(stats)}. APM on, into an "
        f"AudioSource: {_drops(published_stats)}. livekit MediaDevices: {sdk.extra}.",
        "",
    ]
    if rounds:
        lines += await alternating(rounds, round_seconds)
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each single run")
    parser.add_argument("--rounds", type=int, default=8, help="alternating rounds (0: none)")
    parser.add_argument("--round-seconds", type=float, default=15.0, help="length of each row")
    args = parser.parse_args()
    with virtual_audio():
        print(asyncio.run(main(args.seconds, args.rounds, args.round_seconds)))
