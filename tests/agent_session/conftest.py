"""Harness for the Python API's end-to-end tests: the sim on a thread of its own.

The sim (server, session endpoint, simulated agent) runs in a
:class:`~fishtalk.sim.runner.SimThread` with its own event loop, so the test's loop holds
only what :class:`fishtalk.AgentSession` starts: that is what lets a test check that
nothing is left running after ``close()``.
Tests need the private network namespace (marker ``webrtc``).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Final

import pytest

from fishtalk.sim.fish.scenario import Scenario, parse_scenario
from fishtalk.sim.runner import SimInfo, SimThread

WAIT = 30.0
"""Bound for every wait in these tests (seconds)."""

QUIET = """
name = "quiet"
then = "converse"
[agent]
greeting = "Hello from the sim."
greeting_audio = false
voice = "tones"
idle_seconds = 0
"""

TOOL = """
name = "tool"
then = "converse"
[agent]
greeting = ""
voice = "tones"
idle_seconds = 0
[[steps]]
do = "wait_for"
event = "user.message"
[[steps]]
do = "client_tool"
name = "get_time"
params = { zone = "UTC" }
timeout = 20.0
"""


def scenario(text: str) -> Scenario:
    """A scenario from TOML text."""
    return parse_scenario(text)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimInfo]:
    """The sim on its own thread: agent ids ``quiet`` and ``tool`` play the scenarios
    above, any other id the built-in ``converse``; reserved ids inject API errors."""
    thread = SimThread(
        scenario(QUIET), scenarios={"quiet": scenario(QUIET), "tool": scenario(TOOL)}
    )
    info = thread.start()
    try:
        yield info
    finally:
        thread.stop()


def options(sim: SimInfo, **more: Any) -> dict[str, Any]:
    """AgentSession options pointed at ``sim`` (text only, no audio)."""
    base: dict[str, Any] = {
        "agent_id": "quiet",
        "api_url": sim.api_url,
        "api_key": sim.dev_key,
        "text_only": True,
    }
    base.update(more)
    return base


def in_order(kinds: Sequence[str], expected: Sequence[str]) -> bool:
    """Whether ``expected`` occurs in ``kinds`` as a subsequence (in that order)."""
    it = iter(kinds)
    return all(any(k == want for k in it) for want in expected)


SIM_THREADS: Final = frozenset({"audio-decoder", "video-decoder"})
"""Threads the sim's media stack (aiortc, on the server side of the call) starts per
received track; they are the sim's, not the client's."""


def our_threads() -> set[threading.Thread]:
    """The live Python threads, but those that belong to someone else: the sim's media
    threads; native threads that only called into Python (``_DummyThread``: the SDK's
    process-wide runtime, started with the first room of the process and shared by every
    later one); and the idle workers of an event loop's default executor (``asyncio_N``:
    pooled and reused by the loop, shut down by ``asyncio.run``)."""
    return {
        t
        for t in threading.enumerate()
        if t.name not in SIM_THREADS
        and not isinstance(t, threading._DummyThread)
        and not re.fullmatch(r"asyncio_\d+", t.name)
    }


def our_tasks() -> set[asyncio.Task[Any]]:
    """The running loop's unfinished tasks, but the current one."""
    current = asyncio.current_task()
    return {t for t in asyncio.all_tasks() if t is not current and not t.done()}
