"""Line mode's commands end to end, checked from the agent's side: ``/interrupt``,
``/spoken on|off``, ``/mute`` and ``/unmute``; and a reader that closes stdout early.

``fishtalk chat --plain`` runs as a subprocess against the in-process sim; the sim agent is
a real LiveKit participant, so what it received (its journal) and what it sees of the
user's microphone track (the publication's muted flag, relayed by the server) are facts
from the other side of the call, not local state.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
from collections.abc import AsyncIterator, Callable, Iterator

import audio_chain
import pytest
from line_mode import QUIET, chat_env, start_chat
from livekit import rtc

from fishtalk.cli.exits import exit_code_of
from fishtalk.cli.launch import build_session
from fishtalk.cli.settings import Settings
from fishtalk.core import conversation as conv
from fishtalk.engine.session import Session
from fishtalk.plain.chat import PlainChat
from fishtalk.sim.fish.agent import SimAgent
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle, run_sim

pytestmark = pytest.mark.webrtc

WAIT = 45.0

_CHATTY = parse_scenario(
    """
    name = "chatty"
    then = "converse"
    [agent]
    greeting = "Hello there, this is a fairly long greeting so that there is time to read it."
    greeting_audio = false
    voice = "tones"
    """,
    name="chatty",
)


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    async with run_sim(scenarios={"quiet": QUIET, "chatty": _CHATTY}) as handle:
        yield handle


class Chat:
    """``fishtalk chat --plain`` in a subprocess: lines in, lines out."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._changed = asyncio.Event()
        assert proc.stdout is not None
        self._reader = asyncio.ensure_future(self._read(proc.stdout))

    @classmethod
    async def start(
        cls, sim: SimHandle, agent: str, *extra: str, env: dict[str, str] | None = None
    ) -> Chat:
        proc = await start_chat(
            sim, "--agent", agent, "--plain", *extra, env=chat_env(sim, extra=env)
        )
        return cls(proc)

    async def _read(self, stdout: asyncio.StreamReader) -> None:
        while line := await stdout.readline():
            self.lines.append(line.decode().rstrip("\n"))
            self._changed.set()
        self._changed.set()

    async def expect(self, prefix: str, within: float = WAIT) -> str:
        """Wait for an output line starting with ``prefix``; return it."""

        async def until() -> str:
            while True:
                for line in self.lines:
                    if line.startswith(prefix):
                        return line
                if self._reader.done():
                    raise AssertionError(f"ended before {prefix!r}: {self.lines}")
                self._changed.clear()
                await self._changed.wait()

        try:
            return await asyncio.wait_for(until(), within)
        except TimeoutError:
            pytest.fail(f"{prefix!r} not seen within {within} s; output: {self.lines}")

    async def type(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()

    async def finish(self) -> tuple[int, str]:
        """Wait for the exit; the exit code and stderr."""
        assert self.proc.stderr is not None
        err = await asyncio.wait_for(self.proc.stderr.read(), WAIT)
        code = await asyncio.wait_for(self.proc.wait(), WAIT)
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        return code, err.decode()

    async def close(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()


async def _agent(sim: SimHandle) -> SimAgent:
    async with asyncio.timeout(WAIT):
        while not sim.endpoint.sessions:  # noqa: ASYNC110 - the sim offers no event for it
            await asyncio.sleep(0.05)
    return await sim.agent(next(iter(sim.endpoint.sessions)))


async def test_spoken_on_and_off_reach_the_agent(sim: SimHandle) -> None:
    chat = await Chat.start(sim, "quiet", "--text-only")
    try:
        await chat.expect("* connected")
        agent = await _agent(sim)
        await chat.type("/spoken on")
        await chat.expect("* typed turns get spoken replies")
        await chat.type("first")
        # The agent was asked for a spoken reply: it speaks it (audio), not just writes it.
        await agent.wait_note("said: You said: first", within=WAIT)
        await chat.expect("agent: You said: first")
        await chat.type("/spoken off")
        await chat.expect("* typed turns get text-only replies")
        await chat.type("second")
        await agent.wait_note("wrote: You said: second", within=WAIT)
        await chat.expect("agent: You said: second")
        await chat.type("/hangup")
        code, err = await chat.finish()
    finally:
        await chat.close()
    assert code == 0, err
    assert chat.lines[-1] == "* You hung up."


async def _until(session: Session, predicate: Callable[[conv.State], bool]) -> conv.State:
    hit = asyncio.Event()
    remove = session.add_listener(lambda state, _e: hit.set() if predicate(state) else None)
    try:
        if not predicate(session.state):
            await asyncio.wait_for(hit.wait(), WAIT)
    except TimeoutError:
        pytest.fail(f"not reached within {WAIT} s: {session.state}")
    finally:
        remove()
    return session.state


async def test_interrupt_cuts_the_reply_on_both_sides(sim: SimHandle) -> None:
    """``/interrupt`` typed while a reply is being spoken: the agent stops (it received
    ``user.interrupt`` and cut its speech) and the line shows ``[interrupted]``. In process,
    so the test can type the command exactly while the reply is on screen."""
    settings = Settings.model_validate(
        {
            "api": {"url": sim.api_url, "api_key": sim.dev_key},
            "session": {"agent_id": "quiet", "text_only": True},
        }
    )
    session = build_session(settings)
    read_end, write_end = os.pipe()
    stdin = os.fdopen(read_end, "r")
    out = io.StringIO()
    chat = PlainChat(session, stdin=stdin, stdout=out, stream_agent=False)
    run = asyncio.ensure_future(chat.run())
    try:
        await _until(session, lambda s: s.agent_ready)
        agent = await _agent(sim)
        chat._on_line("/spoken on")
        chat._on_line("please talk for a while")
        state = await _until(
            session, lambda s: s.speaking_segment is not None and bool(s.speaking_segment.text)
        )
        assert state.speaking_segment is not None
        reply = state.speaking_segment.segment_id
        chat._on_line("/interrupt")
        await agent.wait_note("received user.interrupt", within=WAIT)
        await agent.wait_note("interrupted", within=WAIT)
        state = await _until(session, lambda s: bool((seg := s.segment(reply)) and seg.final))
        chat._on_line("/hangup")
        result = await asyncio.wait_for(run, WAIT)
    finally:
        os.close(write_end)
        if not run.done():
            run.cancel()
    assert exit_code_of(result) == 0
    cut = state.segment(reply)
    assert cut is not None
    assert cut.interrupted
    assert "Try 'call get_local_context'" not in cut.text  # the rest was never spoken
    assert f"agent: {cut.text} [interrupted]" in out.getvalue().splitlines()


async def test_a_typed_line_prints_once_after_connected(sim: SimHandle) -> None:
    """Typed before the call is up: printed once, when it is sent (after ``* connected``),
    and the greeting and the end are printed once each."""
    chat = await Chat.start(sim, "chatty", "--text-only")
    try:
        await chat.type("hi")
        await chat.expect("you> hi")
        await chat.expect("agent: You said: hi")
        await chat.type("/hangup")
        code, err = await chat.finish()
    finally:
        await chat.close()
    assert code == 0, err
    lines = chat.lines
    greetings = [line for line in lines if line.startswith("agent: Hello there")]
    assert len(greetings) == 1, lines
    assert lines.index("* connected") < lines.index("you> hi")
    assert lines.count("you> hi") == 1
    assert lines.count("* You hung up.") == 1


@pytest.mark.parametrize(
    ("extra", "first", "stderr"),
    [
        pytest.param((), "* connected", "", id="plain"),
        # The events stream is an output like line mode's stdout; the conversation's lines
        # are on stderr with --events.
        pytest.param(("--events",), '{"type":"header"', "* You hung up.\n", id="events"),
    ],
)
async def test_a_reader_that_goes_away_ends_the_call_cleanly(
    sim: SimHandle, extra: tuple[str, ...], first: str, stderr: str
) -> None:
    """``fishtalk chat --plain | head -3`` (or ``--events | head -2``): once stdout is
    closed the call is hung up although stdin stays open, and the process exits 0 with
    nothing more on stderr."""
    chat = await Chat.start(sim, "chatty", "--text-only", *extra)
    try:
        await chat.expect(first)
        agent = await _agent(sim)
        # A text-only call negotiates its publishing side on its first packet (seconds on a
        # loaded machine): done before the reader goes, so what is timed below is the
        # hang-up, not the negotiation (the session gives user.hangup 2 s to leave).
        await chat.type("hello")
        await agent.wait_note("received user.message", within=WAIT)
        chat._reader.cancel()
        assert chat.proc.stdout is not None
        # Close our end of the pipe: the next write fails with EPIPE in the child.
        transport = chat.proc._transport  # type: ignore[attr-defined]
        transport.get_pipe_transport(1).close()
        await chat.type("are you there?")
        await agent.wait_note("received user.hangup", within=WAIT)
        code, err = await chat.finish()
    finally:
        await chat.close()
    assert code == 0, err
    assert err.endswith(stderr) if stderr else err == "", err


async def test_without_a_microphone_mute_and_talk_say_so(sim: SimHandle) -> None:
    """No audio devices: ``/mute``, ``/unmute`` and ``/talk`` say there is no microphone
    (as the TUI does), never ``microphone muted`` or ``TALKING``."""
    chat = await Chat.start(sim, "quiet", "--text-only")
    try:
        await chat.expect("* connected")
        for command in ("/mute", "/unmute", "/talk"):
            await chat.type(command)
        await chat.type("/hangup")
        code, err = await chat.finish()
    finally:
        await chat.close()
    assert code == 0, err
    assert chat.lines.count("* There is no microphone: nothing to mute (type your messages).") == 2
    assert "* There is no microphone to talk into (type your messages)." in chat.lines
    assert not [line for line in chat.lines if "TALKING" in line or "muted" in line]


# --- mute, as the agent sees the microphone track ------------------------------------------


@pytest.fixture
def audio_env() -> Iterator[dict[str, str]]:
    """A private PulseAudio device chain for the subprocess (its environment only)."""
    with audio_chain.for_a_child() as va:
        yield dict(va.env)


def _mic_publication(agent: SimAgent) -> rtc.RemoteTrackPublication | None:
    for participant in agent.room.remote_participants.values():
        for publication in participant.track_publications.values():
            if publication.kind == rtc.TrackKind.KIND_AUDIO:
                return publication
    return None


async def _until_muted(agent: SimAgent, muted: bool) -> None:
    async with asyncio.timeout(WAIT):
        while True:
            publication = _mic_publication(agent)
            if publication is not None and publication.muted == muted:
                return
            await asyncio.sleep(0.05)


@pytest.mark.audio
async def test_mute_and_unmute_as_the_agent_sees_the_microphone(
    sim: SimHandle, audio_env: dict[str, str]
) -> None:
    chat = await Chat.start(sim, "quiet", env=audio_env)
    try:
        await chat.expect("* connected")
        agent = await _agent(sim)
        await agent.wait_note("listening to", within=WAIT)
        await _until_muted(agent, False)
        await chat.type("/mute")
        await chat.expect("* microphone muted")
        await _until_muted(agent, True)
        await chat.type("/unmute")
        await chat.expect("* microphone on")
        await _until_muted(agent, False)
        await chat.type("/hangup")
        code, err = await chat.finish()
    finally:
        await chat.close()
    assert code == 0, err
