"""The interop suite's harness: the sim's server and session endpoint, with a real
livekit-agents agent (:mod:`support.lk_agent`) in every session's room instead of the
simulated one (``lk_sim``), or a bare LiveKit server where a livekit-agents agent joins a
room as livekit-server dispatches one (``lk_host``, for direct joins). Each runs on a thread
of its own, one per module; tests need the network namespace (marker ``webrtc``) and the
``interop`` extra.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import secrets
import threading
from collections.abc import Iterator
from typing import Any, Final

import pytest
from support.lk_agent import GREETING, TABLE, join, run_agent, vad

from fishtalk.sim.livekit.server import SimServer
from fishtalk.sim.runner import SimInfo, SimThread

WAIT: Final = 30.0
"""Bound for every wait in these tests (seconds)."""


HELLO_TEST: Final = f"""
timeout = 30

[[turns]]
listen = true
expect.contains = "{GREETING}"

[[turns]]
say = "hello"
expect.contains = "{TABLE["hello"]}"

[[turns]]
hangup = true
"""
"""A test file for the agent of :meth:`RoomHost.agent`: its greeting, a typed turn, a
hang-up."""


@pytest.fixture(scope="module")
def lk_sim() -> Iterator[SimInfo]:
    """The sim's LiveKit server and session API, a livekit-agents agent per session."""
    vad()  # the model loads once, here, not in the first call's time
    thread = SimThread(agent=run_agent)
    info = thread.start()
    try:
        yield info
    finally:
        thread.stop()


def options(sim: SimInfo, **more: Any) -> dict[str, Any]:
    """AgentSession options pointed at ``sim`` (text only: no audio devices)."""
    base: dict[str, Any] = {
        "agent_id": "lk-agents",
        "api_url": sim.api_url,
        "api_key": sim.dev_key,
        "text_only": True,
    }
    base.update(more)
    return base


class RoomHost:
    """A bare LiveKit server (the sim's, no Fish session API) on its own thread, where
    :meth:`agent` starts a livekit-agents agent in a room as livekit-server dispatches one:
    an agent participant named ``agent-AJ_...``."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="lk-host", daemon=True)
        self.thread.start()
        self.server = SimServer()
        self.call(self.server.start())
        self.tasks: list[concurrent.futures.Future[None]] = []

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(WAIT)

    @property
    def url(self) -> str:
        return self.server.ws_url

    def agent(self, room: str, *, greet: bool = True) -> None:
        """A livekit-agents agent joins ``room`` and greets whoever joins first (unless
        ``greet`` is False)."""
        token = self.server.mint_token(room, "agent-AJ_" + secrets.token_hex(6), kind="agent")
        joined = join(self.url, token, None, greet=greet)
        self.tasks.append(asyncio.run_coroutine_threadsafe(joined, self.loop))

    def dispatch(self, prefix: str) -> dict[str, list[str]]:
        """As livekit-server's automatic dispatch: an agent (:meth:`agent`) joins every new
        room whose name starts with ``prefix``. Returns, as it grows, each such room with
        who was in it when the agent was sent (its first participants)."""
        rooms: dict[str, list[str]] = {}

        async def watch() -> None:
            while True:
                for name, room in list(self.server.rooms.rooms.items()):
                    if name.startswith(prefix) and name not in rooms:
                        rooms[name] = list(room.participants)
                        self.agent(name)
                await asyncio.sleep(0.05)

        self.tasks.append(asyncio.run_coroutine_threadsafe(watch(), self.loop))
        return rooms

    def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        self.call(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def lk_host() -> Iterator[RoomHost]:
    """A LiveKit server with livekit-agents agents on demand (:class:`RoomHost`)."""
    vad()
    host = RoomHost()
    try:
        yield host
    finally:
        host.close()
