"""Benchmark the browser's view of the simulator next to the Python SDK's; prints numbers,
asserts nothing. The same flow both ways: create a session (HTTP), connect with default
options, hear the agent's greeting (first audio), then a typed turn (first reply
transcript chunk, first reply audio).

Browser: livekit-client (package-lock.json) in Debian's headless Chromium, driven by
tests/browser/drive.mjs, page on a second origin. Needs ``npm ci`` and chromium. Run
inside the network namespace::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/python bench/bench_browser.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from aiohttp import web
from livekit import rtc
from support.sim_clients import wait_until

from fishtalk.core import protocol as p
from fishtalk.sim.fish.endpoint import SESSIONS_PATH
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.fish.voice import ToneVoice
from fishtalk.sim.runner import SimHandle, run_sim

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "tests" / "browser" / "page"
UMD = ROOT / "node_modules" / "livekit-client" / "dist" / "livekit-client.umd.js"
GREETING = "Hello from the simulator."
SCENARIO = f"""
    then = "converse"
    [agent]
    greeting = "{GREETING}"
    voice = "tones"
    idle_seconds = 0
"""
TURN = "hello from the browser"
LOUD = 0.001 * 32768


async def _page_server() -> tuple[web.AppRunner, str]:
    files = {"/": PAGE / "index.html", "/conformance.js": PAGE / "conformance.js"}
    files["/livekit-client.umd.js"] = UMD

    async def serve(request: web.Request) -> web.FileResponse:
        return web.FileResponse(files[request.path])

    app = web.Application()
    for path in files:
        app.router.add_get(path, serve)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


async def browser_run(sim: SimHandle, origin: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="fishtalk-chromium-") as profile:
        config = {
            "pageUrl": origin + "/",
            "apiUrl": sim.api_url,
            "agentId": "bench",
            "greeting": GREETING,
            "timeoutMs": 20000,
            "stopAfterTurn": True,
            "chromium": "/usr/bin/chromium",
            "userDataDir": profile,
        }
        proc = await asyncio.create_subprocess_exec(
            shutil.which("node") or "node",
            str(ROOT / "tests" / "browser" / "drive.mjs"),
            json.dumps(config),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 120)
    line = next(x for x in out.decode().splitlines() if x.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    if "error" in result:
        raise RuntimeError(result["error"])
    return {
        "session": result["session"]["requestMs"],
        "connect": result["connect"]["connectMs"],
        "first_audio": result["audio"]["firstAudioMs"],
        "reply_text": result["typedTurn"]["replyMs"],
        "reply_audio": result["typedTurn"]["replyAudioMs"],
    }


async def python_run(sim: SimHandle) -> dict[str, float]:
    figures: dict[str, float] = {}
    async with httpx.AsyncClient(base_url=sim.api_url, timeout=10) as http:
        started = time.perf_counter()
        r = await http.post(
            SESSIONS_PATH,
            json={"agent_id": "bench"},
            headers={"Authorization": f"Bearer {sim.dev_key}"},
        )
        figures["session"] = (time.perf_counter() - started) * 1000
    grant = r.json()
    room = rtc.Room()
    loop = asyncio.get_running_loop()
    sound: list[float] = []
    states: list[str] = []
    reply_chunk: asyncio.Future[float] = loop.create_future()
    tasks: set[asyncio.Task[None]] = set()

    async def hear(track: rtc.Track) -> None:
        async for event in rtc.AudioStream.from_track(track=track, sample_rate=48000):
            pcm = np.frombuffer(event.frame.data, dtype=np.int16)
            if pcm.size and float(np.sqrt(np.mean(pcm.astype(np.float64) ** 2))) > LOUD:
                sound.append(time.perf_counter())

    def on_track(track: rtc.Track, *_: Any) -> None:
        if track.kind == rtc.TrackKind.KIND_AUDIO:
            task = asyncio.ensure_future(hear(track))
            tasks.add(task)

    def on_attrs(changed: dict[str, str], _p: rtc.Participant) -> None:
        if p.ATTR_AGENT_STATE in changed:
            states.append(changed[p.ATTR_AGENT_STATE])

    async def read(reader: rtc.TextStreamReader, opened: float) -> None:
        # As in the page: the reply segment's stream opening is the first reply text.
        text = ""
        async for chunk in reader:
            text += chunk
            if "You said" in text and not reply_chunk.done():
                reply_chunk.set_result(opened)

    def on_text(reader: rtc.TextStreamReader, identity: str) -> None:
        task = asyncio.ensure_future(read(reader, time.perf_counter()))
        tasks.add(task)

    room.on("track_subscribed", on_track)
    room.on("participant_attributes_changed", on_attrs)
    room.register_text_stream_handler(p.TOPIC_TRANSCRIPTION, on_text)
    started = time.perf_counter()
    await room.connect(grant["livekit_url"], grant["token"])
    figures["connect"] = (time.perf_counter() - started) * 1000
    try:
        await wait_until(lambda: bool(sound), within=20, interval=0.005)
        figures["first_audio"] = (sound[0] - started) * 1000
        await wait_until(lambda: states[-1:] == ["listening"], within=20)
        # As in the page: the greeting's last audio may still be playing out.
        await wait_until(lambda: time.perf_counter() - sound[-1] > 0.3, within=20)
        sent = time.perf_counter()
        await room.local_participant.publish_data(
            p.encode_client_event(p.UserMessage(text=TURN)),
            reliable=True,
            topic=p.TOPIC_CLIENT_EVENT,
        )
        figures["reply_text"] = (await asyncio.wait_for(reply_chunk, 20) - sent) * 1000
        await wait_until(lambda: bool(sound) and sound[-1] > sent, within=20, interval=0.005)
        first_after = next(t for t in sound if t > sent)
        figures["reply_audio"] = (first_after - sent) * 1000
    finally:
        await room.disconnect()
        for task in tasks:
            task.cancel()
    return figures


def _row(runs: list[dict[str, float]], key: str) -> str:
    values = [r[key] for r in runs]
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


async def main(runs: int) -> None:
    runner, origin = await _page_server()
    scenarios = {"bench": parse_scenario(SCENARIO, name="bench")}
    try:
        async with run_sim(scenarios=scenarios, voice=ToneVoice(), allowed_origins=[origin]) as sim:
            browser = [await browser_run(sim, origin) for _ in range(runs)]
            python = [await python_run(sim) for _ in range(runs)]
    finally:
        await runner.cleanup()
    labels = {
        "session": "session request (HTTP)",
        "connect": "connect (default options)",
        "first_audio": "first agent audio after connect starts",
        "reply_text": "typed turn -> first reply transcript chunk",
        "reply_audio": "typed turn -> first reply audio",
    }
    print("## Browser (livekit-client) and Python SDK against the sim")
    print(
        "<!-- lead: A typed turn to the first reply audio, in headless Chromium "
        "(livekit-client) and in the Python SDK, against the sim. -->"
    )
    print()
    ours = statistics.median(r["reply_audio"] for r in python)
    peer = statistics.median(r["reply_audio"] for r in browser)
    print(
        f"<!-- summary: typed turn → first reply audio, Python SDK | {ours:.0f} ms | "
        f"browser (livekit-client) {peer:.0f} ms | {ours / peer:.2f}x | – -->"
    )
    print()
    print(f"Median (min-max) of {runs} runs each, in ms; the browser is livekit-client 2.23.0 in")
    print("headless Chromium (page on a second origin), the Python SDK is livekit 1.2.1.")
    print()
    print("| step | browser | Python SDK |")
    print("| --- | --- | --- |")
    for key, label in labels.items():
        print(f"| {label} | {_row(browser, key)} | {_row(python, key)} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.runs))
    sys.exit(0)
