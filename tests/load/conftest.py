"""Harness for ``fishtalk load``'s tests: one sim per module on its own thread (the chat
scenario: text greetings, no idle nudges), the shipped locustfile, and Locust processes."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Final

import pytest

from fishtalk.sim.fish.scenario import load_scenario
from fishtalk.sim.runner import SimHandle, run_sim

HERE: Final = Path(__file__).parent
FILES: Final = HERE / "files"
ROOT: Final = HERE.parent.parent
CHAT: Final = HERE.parent / "agenttest" / "scenarios" / "chat.toml"
LOCUSTFILE: Final = ROOT / "fishtalk" / "workbench" / "load" / "locustfile.py"
WAIT: Final = 120.0


class Sim:
    """The sim on a thread, with its handle (the agents it started, by session id)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._ready: Future[SimHandle] = Future()
        self._stop = asyncio.Event()
        self._thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),))
        self._thread.start()
        self.handle = self._ready.result(30)

    async def _main(self) -> None:
        try:
            async with run_sim(load_scenario(CHAT)) as handle:
                self._ready.set_result(handle)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def sessions(self) -> set[str]:
        """The ids of the sessions it has seen."""
        return set(self.handle.agents)

    def all_noted(self, ids: set[str], note: str, within: float = 30.0) -> None:
        """Wait until each of those sessions' agents noted ``note`` (``received
        user.hangup``)."""

        async def check() -> None:
            for session_id in ids:
                await self.handle.agents[session_id].wait_note(note, within=within)

        asyncio.run_coroutine_threadsafe(check(), self.loop).result(within * len(ids) + 5)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


@pytest.fixture(scope="module")
def sim() -> Iterator[Sim]:
    """One sim for the module."""
    running = Sim()
    try:
        yield running
    finally:
        running.close()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def locust_env(sim: Sim, **extra: str) -> dict[str, str]:
    """The environment of a Locust process: this worktree first, the sim's key."""
    env = dict(os.environ, FISH_API_KEY=sim.handle.dev_key, **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def locust(*args: str) -> list[str]:
    """Plain ``locust -f`` with the shipped locustfile."""
    return [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), *args]
