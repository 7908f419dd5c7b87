"""The sim and the receiving agent in a process of their own, for the typed-turn benches.

In one process the sim server (a Python LiveKit-protocol server on aiortc) shares the event
loop with the client being measured, so every microsecond the client spends on the loop
after its bytes left (bookkeeping, listeners) also delays the sim's relaying of those bytes;
against a real, remote server it would not. With the sim and the agent here, the measured
process holds only the senders, as it would against a real server.

Run as a script it serves: one line of JSON (``ws_url`` and a token per identity asked for),
then one line ``IDENTITY SECONDS`` per client-event packet the agent receives, stamped with
``time.perf_counter()`` when its ``data_received`` fires (CLOCK_MONOTONIC on Linux, the same
clock in every process). It stops when its stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass

ROOM = "bench"


async def _serve(identities: list[str]) -> None:
    from livekit import rtc

    from fishtalk.core import protocol as p
    from fishtalk.sim.livekit.server import SimServer

    async with SimServer() as server:
        out = sys.stdout

        def on_data(packet: rtc.DataPacket) -> None:
            if packet.topic == p.TOPIC_CLIENT_EVENT and packet.participant is not None:
                arrived = time.perf_counter()
                out.write(f"{packet.participant.identity} {arrived!r}\n")
                out.flush()

        agent = rtc.Room()
        agent.on("data_received", on_data)
        await agent.connect(server.ws_url, server.mint_token(ROOM, "agent", kind="agent"))
        await agent.local_participant.set_attributes({p.ATTR_AGENT_STATE: "listening"})
        tokens = {name: server.mint_token(ROOM, name) for name in identities}
        out.write(json.dumps({"ws_url": server.ws_url, "tokens": tokens}) + "\n")
        out.flush()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes it
        await agent.disconnect()


@dataclass
class AgentProcess:
    """The parent's handle: where to connect, the tokens, and the arrivals."""

    ws_url: str
    tokens: dict[str, str]
    arrivals: asyncio.Queue[tuple[str, float]]
    _proc: asyncio.subprocess.Process
    _reader: asyncio.Task[None]

    async def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            await asyncio.wait_for(self._proc.wait(), 20)
        except TimeoutError:
            self._proc.kill()
            await self._proc.wait()
        self._reader.cancel()


async def start(identities: list[str]) -> AgentProcess:
    """Start the sim and the agent in a child process; connect as ``identities``."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        *identities,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    first = await asyncio.wait_for(proc.stdout.readline(), 60)
    hello = json.loads(first)
    arrivals: asyncio.Queue[tuple[str, float]] = asyncio.Queue()
    stdout = proc.stdout

    async def read() -> None:
        while line := await stdout.readline():
            identity, at = line.decode().split()
            arrivals.put_nowait((identity, float(at)))

    reader = asyncio.ensure_future(read())
    return AgentProcess(hello["ws_url"], hello["tokens"], arrivals, proc, reader)


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1:]))
