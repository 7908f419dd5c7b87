"""Push-to-talk in a real process on a pseudo-terminal, with the test as the terminal.

``fishtalk chat --talk-mode push`` runs the TUI on a pty against the in-process sim (with
a virtual microphone). Its driver asks the terminal for key releases (the kitty keyboard
protocol's event types); the test answers as a terminal would:

* like kitty (it takes the flag and reports it back): F5 held opens the microphone, its
  release closes it;
* like a terminal without the protocol (only the device attributes come back): the app
  says once that push-to-talk works as toggle here, and F5 toggles.

Each time the agent's side decides: the microphone track's mute flag as the agent sees it,
and ``user.activity`` when the microphone opens.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import sys
from collections.abc import AsyncIterator, Callable, Iterator

import audio_chain
import pytest
from support.virtual_audio import VirtualAudio

from fishtalk.core.conversation import ACTIVITY_THROTTLE
from fishtalk.core.talk import ASK_FOR_RELEASES
from fishtalk.sim.fish.agent import SimAgent
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle, run_sim

pytestmark = [pytest.mark.webrtc, pytest.mark.audio, pytest.mark.timeout(120)]

WAIT = 30.0
F5_DOWN = "\x1b[15~"
F5_UP = "\x1b[15;1:3~"
KITTY_ANSWER = "\x1b[?27u\x1b[?62;22c"  # flags 25 (Textual's) + 2 (event types); then DA1
PLAIN_ANSWER = "\x1b[?62;22c"  # DA1 only: no kitty keyboard protocol

_LISTENER = parse_scenario(
    """
    name = "listener"
    then = "listen"
    [agent]
    greeting = ""
    voice = "tones"
    idle_seconds = 0
    """,
    name="listener",
)


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    async with run_sim(scenarios={"listener": _LISTENER}) as handle:
        yield handle


@pytest.fixture
def audio() -> Iterator[VirtualAudio]:
    """A private PulseAudio device chain for the child (its environment only)."""
    with audio_chain.for_a_child() as va:
        yield va


class Terminal:
    """A child on a pseudo-terminal; answers the release question with ``answer``."""

    def __init__(self, argv: list[str], env: dict[str, str], answer: str) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become the command
            os.execve(argv[0], argv, env)
        self.buffer = ""
        self.answer = answer
        self.asked = False
        self._data = asyncio.Event()
        asyncio.get_running_loop().add_reader(self.fd, self._readable)

    def _readable(self) -> None:
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            asyncio.get_running_loop().remove_reader(self.fd)
            return
        self.buffer += chunk.decode("utf-8", "replace")
        if not self.asked and ASK_FOR_RELEASES in self.buffer:
            self.asked = True
            self.send(self.answer)
        self._data.set()

    def send(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    async def expect(self, text: str, within: float = WAIT) -> None:
        async def until() -> None:
            while text not in self.buffer:
                self._data.clear()
                await self._data.wait()

        try:
            await asyncio.wait_for(until(), within)
        except TimeoutError:
            pytest.fail(f"{text!r} not seen within {within} s; output: {self.buffer[-3000:]!r}")

    def close(self) -> None:
        loop = asyncio.get_running_loop()
        loop.remove_reader(self.fd)
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


async def _agent(sim: SimHandle) -> SimAgent:
    async with asyncio.timeout(WAIT):
        while not sim.endpoint.sessions:  # noqa: ASYNC110 - the sim offers no event for it
            await asyncio.sleep(0.05)
    return await sim.agent(next(iter(sim.endpoint.sessions)))


def _muted(agent: SimAgent) -> bool | None:
    from livekit import rtc

    for participant in agent.room.remote_participants.values():
        for publication in participant.track_publications.values():
            if publication.kind == rtc.TrackKind.KIND_AUDIO:
                return publication.muted
    return None


async def _until(what: str, predicate: Callable[[], bool], within: float = WAIT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not predicate():
        if loop.time() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def _activities(agent: SimAgent) -> int:
    return agent.journal.count("received user.activity")


@contextlib.asynccontextmanager
async def _chat(sim: SimHandle, audio: VirtualAudio, answer: str) -> AsyncIterator[Terminal]:
    env = dict(os.environ)
    env.update(audio.env)
    env.update(
        FISH_API_KEY=sim.dev_key,
        FISHTALK_CONFIG="/nonexistent-fishtalk-test.toml",
        TERM="xterm-256color",
        COLUMNS="120",
        LINES="30",
    )
    env.pop("FISHTALK_CONFIG")
    env["XDG_CONFIG_HOME"] = "/nonexistent-fishtalk-test"
    argv = [sys.executable, "-m", "fishtalk", "chat", "--agent", "listener"]
    argv += ["--api-url", sim.api_url, "--talk-mode", "push", "--no-journal"]
    term = Terminal(argv, env, answer)
    try:
        yield term
    finally:
        term.close()


async def test_push_to_talk_with_a_terminal_that_reports_releases(
    sim: SimHandle, audio: VirtualAudio
) -> None:
    async with _chat(sim, audio, KITTY_ANSWER) as term:
        await term.expect("hold F5 to talk")
        agent = await _agent(sim)
        await agent.wait_note("listening to", within=WAIT)
        await _until("the closed mic at the agent", lambda: _muted(agent) is True)
        for turn in (1, 2):
            term.send(F5_DOWN)
            await _until("the open mic at the agent", lambda: _muted(agent) is False)
            await _until("user.activity", lambda turn=turn: _activities(agent) == turn)
            term.send(F5_UP)
            await _until("the closed mic at the agent", lambda: _muted(agent) is True)
            # user.activity goes out at most once a second (as for typing).
            await asyncio.sleep(ACTIVITY_THROTTLE)
        assert "does not report key releases" not in term.buffer


async def test_push_to_talk_falls_back_to_toggle_without_releases(
    sim: SimHandle, audio: VirtualAudio
) -> None:
    async with _chat(sim, audio, PLAIN_ANSWER) as term:
        await term.expect("does not report key releases")
        await term.expect("press F5 to talk")
        agent = await _agent(sim)
        await agent.wait_note("listening to", within=WAIT)
        await _until("the closed mic at the agent", lambda: _muted(agent) is True)
        term.send(F5_DOWN)
        await _until("the open mic at the agent", lambda: _muted(agent) is False)
        await _until("user.activity", lambda: _activities(agent) == 1)
        term.send(F5_DOWN)
        await _until("the closed mic at the agent", lambda: _muted(agent) is True)
        assert term.buffer.count("does not report key releases") >= 1
