"""The floor under ``fishtalk load``'s client CPU: bare livekit SDK participants.

Each of N participants on one event loop does what a ``fishtalk load`` user's text session
does on the wire, with nothing of fishtalk: ask the sim's session API for a grant (httpx),
join the room (subscribed to everything, draining any audio track as fishtalk does), wait
for the agent's opening line, publish ``user.message``, read the reply's transcript stream
to its end, wait 3 s, publish ``user.hangup`` and leave; a session starts at most every
``PACE`` seconds, for ``RUN_SECONDS``. Prints one JSON line: sessions, CPU seconds (this
process), wall seconds, peak RSS MB. Run by ``bench_load.py``, inside the network namespace.

Usage: ``python bench/load_floor.py API_URL API_KEY AGENT USERS``
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import resource
import sys
import time

import httpx
from livekit import rtc

RUN_SECONDS = 20.0
PACE = 4.0
WAIT = 3.0
TRANSCRIPTION = "lk.transcription"
CLIENT_EVENT = "client-event"


async def _session(http: httpx.AsyncClient, url: str, key: str, agent: str) -> None:
    reply = await http.post(
        f"{url}/v1/agent/sessions",
        headers={"Authorization": f"Bearer {key}"},
        json={"agent_id": agent},
    )
    reply.raise_for_status()
    grant = reply.json()
    room = rtc.Room()
    lines: asyncio.Queue[str] = asyncio.Queue()
    tasks: set[asyncio.Task[None]] = set()

    async def read(reader: rtc.TextStreamReader) -> None:
        lines.put_nowait(await reader.read_all())  # a line, once its stream closed

    async def drain(track: rtc.Track) -> None:
        async for _ in rtc.AudioStream(track):
            pass

    def spawn(coro: object) -> None:
        task = asyncio.ensure_future(coro)  # type: ignore[arg-type]
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    room.register_text_stream_handler(TRANSCRIPTION, lambda r, _who: spawn(read(r)))

    @room.on("track_subscribed")
    def _subscribed(track: rtc.Track, *_: object) -> None:
        if track.kind == rtc.TrackKind.KIND_AUDIO:
            spawn(drain(track))

    await room.connect(grant["livekit_url"], grant["token"], rtc.RoomOptions(auto_subscribe=True))
    try:
        await asyncio.wait_for(lines.get(), 30)  # the opening line
        message = {"type": "user.message", "text": "Hello there", "audio": False}
        await room.local_participant.publish_data(
            json.dumps(message), reliable=True, topic=CLIENT_EVENT
        )
        while "Hello there" not in await asyncio.wait_for(lines.get(), 30):
            pass
        await asyncio.sleep(WAIT)
        await room.local_participant.publish_data(
            json.dumps({"type": "user.hangup"}), reliable=True, topic=CLIENT_EVENT
        )
    finally:
        await room.disconnect()
        for task in list(tasks):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


async def _user(url: str, key: str, agent: str, until: float, done: list[int]) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        loop = asyncio.get_running_loop()
        while loop.time() < until:
            started = loop.time()
            await _session(http, url, key, agent)
            done.append(1)
            await asyncio.sleep(max(0.0, PACE - (loop.time() - started)))


async def main(url: str, key: str, agent: str, users: int) -> int:
    """Sessions completed by ``users`` participants in :data:`RUN_SECONDS`."""
    done: list[int] = []
    until = asyncio.get_running_loop().time() + RUN_SECONDS
    await asyncio.gather(*(_user(url, key, agent, until, done) for _ in range(users)))
    return len(done)


if __name__ == "__main__":
    api_url, api_key, agent_id, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    logging.getLogger("livekit").addHandler(logging.NullHandler())  # its v1 fallback notes
    wall = time.monotonic()
    sessions = asyncio.run(main(api_url, api_key, agent_id, n))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "sessions": sessions,
                "cpu": usage.ru_utime + usage.ru_stime,
                "wall": time.monotonic() - wall,
                "rss_mb": usage.ru_maxrss / 1024,
            }
        )
    )
