"""Benchmark the loopback LiveKit server with real SDK clients; prints numbers, asserts nothing.

Run inside the network namespace (WebRTC ignores loopback)::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/bench_sim.py

Measures:
* connect time of a fresh ``rtc.Room`` (token to ``connect()`` returning), median/p90;
* data round trip A -> server -> B -> server -> A on the reliable channel, median/p99;
* audio latency: a tone's first frame into A's AudioSource until B hears it, median/max;
* server CPU per relayed Opus audio track: the server runs in a child process so its CPU
  time (from /proc) is not mixed with the clients' libwebrtc threads.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from livekit import rtc
from support.sim_clients import Client, connect_client, feed_sine

from fishtalk.sim.livekit.server import SimServer

SECRET = "bench-secret-" + "x" * 24
ROOM = "bench"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, round(q * (len(ordered) - 1)))
    return ordered[index]


class _RemoteServer:
    """A SimServer in a child process (so its CPU time can be read from /proc)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.client = SimServer(api_secret=SECRET)  # only used to mint tokens and format URLs

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        port = int(self.proc.stdout.readline().strip())
        self.client._port = port  # the helper only formats URLs; it never listens

    def cpu_seconds(self) -> float:
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime + stime
        return ticks / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)


async def _serve() -> None:
    server = SimServer(api_secret=SECRET)
    await server.start()
    print(server.port, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


async def bench_connect(server: SimServer, n: int) -> list[float]:
    times: list[float] = []
    for i in range(n):
        room = rtc.Room()
        token = server.mint_token(ROOM + "-connect", f"user-{i:04d}")
        start = time.perf_counter()
        await asyncio.wait_for(room.connect(server.ws_url, token), 20)
        times.append(time.perf_counter() - start)
        await room.disconnect()
    return times


async def bench_round_trip(server: SimServer, n: int) -> list[float]:
    a = await connect_client(server, ROOM + "-rtt", "a")
    b = await connect_client(server, ROOM + "-rtt", "b")
    echoes: asyncio.Queue[bytes] = asyncio.Queue()
    pending: set[asyncio.Task[None]] = set()

    def echo(packet: rtc.DataPacket) -> None:
        task = asyncio.ensure_future(b.local.publish_data(packet.data, topic="echo"))
        pending.add(task)
        task.add_done_callback(pending.discard)

    b.room.on("data_received", echo)
    a.room.on("data_received", lambda p: echoes.put_nowait(p.data))
    await a.local.publish_data(b"warm-up", topic="ping")  # first publish negotiates the PC
    await asyncio.wait_for(echoes.get(), 10)
    times: list[float] = []
    for i in range(n):
        payload = f"{i}".encode()
        start = time.perf_counter()
        await a.local.publish_data(payload, topic="ping")
        while await asyncio.wait_for(echoes.get(), 10) != payload:
            pass
        times.append(time.perf_counter() - start)
    await a.room.disconnect()
    await b.room.disconnect()
    return times


async def bench_audio_latency(server: SimServer, trials: int) -> list[float]:
    """Seconds from a tone's first frame entering A's AudioSource to B hearing it."""
    speaker = await connect_client(server, ROOM + "-latency", "speaker")
    listener = await connect_client(server, ROOM + "-latency", "listener")
    source = rtc.AudioSource(48000, 1)
    track = rtc.LocalAudioTrack.create_audio_track("mic", source)
    opts = rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
    await speaker.local.publish_track(track, opts)
    tone_on = asyncio.Event()
    onset = {"at": 0.0, "armed": 0.0}
    heard: asyncio.Queue[float] = asyncio.Queue()

    async def feed() -> None:
        per_frame, n, playing = 480, 0, False
        start = time.monotonic()
        while True:
            if tone_on.is_set():
                if not playing:  # the onset is the first tone frame handed to the SDK
                    onset["at"], onset["armed"], playing = time.perf_counter(), 1.0, True
                t = np.arange(n, n + per_frame) / 48000
                frame = (np.sin(2 * np.pi * 440 * t) * 10000).astype(np.int16)
            else:
                playing = False
                frame = np.zeros(per_frame, dtype=np.int16)
            await source.capture_frame(rtc.AudioFrame(frame.tobytes(), 48000, 1, per_frame))
            n += per_frame
            ahead = n / 48000 - (time.monotonic() - start)
            if ahead > 0.02:
                await asyncio.sleep(ahead - 0.02)

    async def listen(stream: rtc.AudioStream) -> None:
        async for event in stream:
            samples = np.frombuffer(event.frame.data, dtype=np.int16).astype(np.float64)
            if onset["armed"] and np.sqrt(np.mean(samples**2)) > 1000:
                onset["armed"] = 0.0
                heard.put_nowait(time.perf_counter() - onset["at"])

    feeding = asyncio.ensure_future(feed())
    listening: asyncio.Task[None] | None = None
    results: list[float] = []
    try:
        remote, _, _ = await listener.events.wait("track_subscribed", within=20)
        stream = rtc.AudioStream(remote, sample_rate=48000, num_channels=1)
        listening = asyncio.ensure_future(listen(stream))
        for _ in range(trials):
            tone_on.clear()
            await asyncio.sleep(1.0)  # silence first, so the onset is unambiguous
            tone_on.set()
            results.append(await asyncio.wait_for(heard.get(), 5))
            await asyncio.sleep(0.3)
        await stream.aclose()
    finally:
        for task in (feeding, listening):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        await source.aclose()
        await speaker.room.disconnect()
        await listener.room.disconnect()
    return results


async def _cpu_over(server: _RemoteServer, seconds: float) -> float:
    before, start = server.cpu_seconds(), time.monotonic()
    await asyncio.sleep(seconds)
    return (server.cpu_seconds() - before) / (time.monotonic() - start)


async def bench_audio_cpu(server: _RemoteServer, seconds: float) -> dict[str, float]:
    sim = server.client
    speaker = await connect_client(sim, ROOM + "-audio", "speaker")
    listeners: list[Client] = [await connect_client(sim, ROOM + "-audio", "listener-0")]
    await asyncio.sleep(1.0)
    results = {"idle": await _cpu_over(server, seconds)}
    source = rtc.AudioSource(48000, 1)
    track = rtc.LocalAudioTrack.create_audio_track("mic", source)
    opts = rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
    await speaker.local.publish_track(track, opts)
    feeding = asyncio.ensure_future(feed_sine(source, 440.0))
    try:
        await listeners[0].events.wait("track_subscribed", within=20)
        await asyncio.sleep(1.0)
        results["1 track -> 1 listener"] = await _cpu_over(server, seconds)
        for i in (1, 2):
            client = await connect_client(sim, ROOM + "-audio", f"listener-{i}")
            await client.events.wait("track_subscribed", within=20)
            listeners.append(client)
        await asyncio.sleep(1.0)
        results["1 track -> 3 listeners"] = await _cpu_over(server, seconds)
    finally:
        feeding.cancel()
        await asyncio.gather(feeding, return_exceptions=True)
        await source.aclose()
        for client in [speaker, *listeners]:
            await client.room.disconnect()
    return results


async def main(args: argparse.Namespace) -> None:
    async with SimServer() as server:
        print(  # run.py lifts this out of the section's code block
            "<!-- lead: The sim's LiveKit server with real SDK clients: connect time, data round "
            "trip, audio onset and the server's CPU per relayed track. -->"
        )
        connects = await bench_connect(server, args.connects)
        print(
            f"connect: n={len(connects)} median={statistics.median(connects) * 1000:.0f} ms "
            f"p90={_pct(connects, 0.9) * 1000:.0f} ms min={min(connects) * 1000:.0f} ms"
        )
        rtts = await bench_round_trip(server, args.pings)
        print(  # run.py lifts this out of the section's code block
            f"<!-- summary: sim data round trip A→B→A, median | "
            f"{statistics.median(rtts) * 1000:.1f} ms | – | – | – -->"
        )
        print(
            f"data round trip A->B->A: n={len(rtts)} "
            f"median={statistics.median(rtts) * 1000:.1f} ms p99={_pct(rtts, 0.99) * 1000:.1f} ms"
        )
        latencies = await bench_audio_latency(server, args.tones)
        print(
            f"audio tone onset A -> B: n={len(latencies)} "
            f"median={statistics.median(latencies) * 1000:.0f} ms "
            f"max={max(latencies) * 1000:.0f} ms"
        )
    remote = _RemoteServer()
    remote.start()
    try:
        cpu = await bench_audio_cpu(remote, args.audio_seconds)
    finally:
        remote.stop()
    for label, value in cpu.items():
        print(f"server CPU ({label}): {value * 100:.1f}% of one core")
    one = cpu["1 track -> 1 listener"] - cpu["idle"]
    extra = (cpu["1 track -> 3 listeners"] - cpu["1 track -> 1 listener"]) / 2
    print(f"server CPU per relayed audio track: {one * 100:.1f}% (first one)")
    print(f"server CPU per extra subscriber of that track: {extra * 100:.1f}%")


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        asyncio.run(_serve())
        raise SystemExit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connects", type=int, default=20)
    parser.add_argument("--pings", type=int, default=300)
    parser.add_argument("--audio-seconds", type=float, default=8.0)
    parser.add_argument("--tones", type=int, default=5)
    asyncio.run(main(parser.parse_args()))
