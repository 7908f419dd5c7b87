"""End-to-end harness: the real Session, the real SDK, the loopback sim, a scripted agent.

``sim`` starts a :class:`~fishtalk.sim.livekit.server.SimServer` with the Fish session endpoint on
it. A test builds a :class:`~fishtalk.engine.session.Session` pointed at that endpoint (the real
``fishtalk.engine.api`` path, through :func:`fishtalk.cli.launch.build_session`), starts it, then
drives the agent side step by step through a :class:`ScriptedAgent`: a second real
``livekit.rtc.Room`` joined as the ``agent`` participant of the room the endpoint created.
:meth:`Sim.connected` does all of that at once: the one connect-and-wait of these tests.
Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import pytest
from livekit import rtc
from pydantic import SecretStr

from fishtalk.cli.exits import exit_code_for
from fishtalk.cli.launch import build_session
from fishtalk.cli.settings import Settings
from fishtalk.core import protocol as p
from fishtalk.core.conversation import State
from fishtalk.engine.api import LiveKitGrant
from fishtalk.engine.session import EndResult, Session, Timeouts
from fishtalk.sim.fish.endpoint import AGENT_IDENTITY, DEFAULT_DEV_KEY, SessionEndpoint
from fishtalk.sim.fish.sessions import SimSession
from fishtalk.sim.livekit.server import SimServer

WAIT = 20.0
"""Default bound for every wait in these tests (seconds)."""

SHORT = Timeouts(connect=10.0, agent_join=2.0, ended_grace=1.0, signal_attempt=2.0, reconnect=20.0)
"""Short injected timeouts for the tests that wait for one to run out."""
FAST_SLACK = 8.0
"""What a fails-fast test allows beyond its injected timeout (teardown, a loaded machine)."""


def exit_code(result: EndResult) -> int:
    """The exit code the CLI would give for ``result`` (the one table in fishtalk.core.errors)."""
    return exit_code_for(result.reason, result.error)


async def until(
    session: Session, predicate: Callable[[State], bool], within: float = WAIT
) -> State:
    """Wait until ``predicate(session.state)`` holds; fail the test after ``within`` s."""
    if predicate(session.state):
        return session.state
    hit = asyncio.Event()

    def check(state: State, _events: object) -> None:
        if predicate(state):
            hit.set()

    remove = session.add_listener(check)
    try:
        await asyncio.wait_for(hit.wait(), within)
    except TimeoutError:
        pytest.fail(f"condition not reached within {within} s; state: {session.state}")
    finally:
        remove()
    return session.state


class ScriptedAgent:
    """The agent participant, driven by the test: a real ``livekit.rtc.Room``."""

    def __init__(self, server: SimServer, room: str, user_identity: str) -> None:
        self.server = server
        self.room_name = room
        self.user_identity = user_identity
        self.room = rtc.Room()
        self.events: asyncio.Queue[p.ClientEvent] = asyncio.Queue()
        self.raw: list[bytes] = []
        self.room.on("data_received", self._on_data)

    def _on_data(self, packet: rtc.DataPacket) -> None:
        if packet.topic != p.TOPIC_CLIENT_EVENT:
            return
        self.raw.append(packet.data)
        event = p.decode_client_event(packet.data)
        if event is not None:
            self.events.put_nowait(event)

    async def join(self, state: str | None = "listening") -> None:
        """Join as the agent; publish ``state`` as the sticky attribute unless None."""
        token = self.server.mint_token(self.room_name, AGENT_IDENTITY, kind="agent")
        await asyncio.wait_for(self.room.connect(self.server.ws_url, token), WAIT)
        if state is not None:
            await self.set_state(state)

    async def set_state(self, state: str) -> None:
        """Publish ``lk.agent.state``."""
        await asyncio.wait_for(
            self.room.local_participant.set_attributes({p.ATTR_AGENT_STATE: state}), WAIT
        )

    async def next_event(self, within: float = WAIT) -> p.ClientEvent:
        """The next client event the user sent."""
        try:
            return await asyncio.wait_for(self.events.get(), within)
        except TimeoutError:
            pytest.fail(f"the agent received no client event within {within} s")

    async def expect(self, kind: type[Any], within: float = WAIT) -> Any:
        """Skip other events until one of type ``kind`` arrives."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            event = await self.next_event(max(0.01, deadline - loop.time()))
            if isinstance(event, kind):
                return event

    async def send(self, event: p.AgentEvent | bytes | str) -> None:
        """Publish one agent event (or raw bytes) on the ``agent-event`` topic."""
        data = event if isinstance(event, bytes | str) else p.encode_agent_event(event)
        await self.room.local_participant.publish_data(data, topic=p.TOPIC_AGENT_EVENT)

    async def say(self, segment_id: str, chunks: Iterable[str], *, pause: float = 0.02) -> None:
        """Stream an agent transcript segment chunk by chunk, then close it."""
        writer = await self.open_segment(segment_id)
        for chunk in chunks:
            await writer.write(chunk)
            await asyncio.sleep(pause)
        await writer.aclose()

    async def open_segment(self, segment_id: str, **attrs: str) -> rtc.TextStreamWriter:
        """Open an agent transcript stream (the caller writes and closes it)."""
        return await self.room.local_participant.stream_text(
            topic=p.TOPIC_TRANSCRIPTION, attributes={p.ATTR_SEGMENT_ID: segment_id, **attrs}
        )

    async def user_transcript(self, segment_id: str, text: str, *, final: bool) -> None:
        """Send one user transcript update (whole text) under the user's identity."""
        attributes = {
            p.ATTR_SEGMENT_ID: segment_id,
            p.ATTR_TRANSCRIPTION_FINAL: "true" if final else "false",
        }
        writer = await self.room.local_participant.stream_text(
            topic=p.TOPIC_TRANSCRIPTION,
            attributes=attributes,
            sender_identity=self.user_identity,
        )
        await writer.write(text)
        await writer.aclose()

    async def leave(self) -> None:
        """Disconnect the agent participant."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.room.disconnect(), WAIT)


class Call(NamedTuple):
    """A connected session: the session, its run task, and the agent on the other side."""

    session: Session
    run: asyncio.Task[EndResult]
    agent: ScriptedAgent
    created: SimSession


@dataclass
class Sim:
    """The running sim: server + session endpoint, and what the endpoint created."""

    server: SimServer
    endpoint: SessionEndpoint
    sessions: asyncio.Queue[SimSession] = field(default_factory=asyncio.Queue)
    agents: list[ScriptedAgent] = field(default_factory=list)
    runs: list[asyncio.Task[EndResult]] = field(default_factory=list)

    @property
    def api_url(self) -> str:
        """The base URL for ``fishtalk.engine.api``."""
        return self.server.url

    def settings(self, **session: Any) -> Settings:
        """Settings for a text-only session against this sim (``agent_id`` "scripted")."""
        values: dict[str, Any] = {"agent_id": "scripted", "text_only": True}
        values.update(session)
        return Settings.model_validate(
            {"api": {"url": self.server.url, "api_key": DEFAULT_DEV_KEY}, "session": values}
        )

    def session(self, settings: Settings | None = None, **parts: Any) -> Session:
        """A session built as the CLI builds one (``parts``: tools, audio, grant, timeouts)."""
        return build_session(settings if settings is not None else self.settings(), **parts)

    async def connected(
        self, settings: Settings | None = None, *, state: str = "listening", **parts: Any
    ) -> Call:
        """Build and start a session, join its room as the agent (publishing ``state``), and
        wait until the session is connected with the agent ready."""
        session = self.session(settings, **parts)
        run = self.start(session)
        agent, created = await self.agent(state)
        await until(session, lambda s: s.status == "connected" and s.agent_ready)
        return Call(session, run, agent, created)

    def start(self, session: Session) -> asyncio.Task[EndResult]:
        """Run ``session`` in a task the fixture cancels at the end of the test."""
        task = asyncio.ensure_future(session.run())
        self.runs.append(task)
        return task

    async def next_session(self) -> SimSession:
        """The next session the endpoint created."""
        return await asyncio.wait_for(self.sessions.get(), WAIT)

    async def agent(self, state: str | None = "listening") -> tuple[ScriptedAgent, SimSession]:
        """Wait for the next created session and join its room as the agent."""
        created = await self.next_session()
        agent = ScriptedAgent(self.server, created.room, created.user_identity)
        self.agents.append(agent)
        await agent.join(state)
        return agent, created

    def grant_for(self, room: str, identity: str = "user-0000test") -> LiveKitGrant:
        """A grant for ``room`` minted directly (bypassing the endpoint)."""
        return LiveKitGrant(
            session_id="sess_direct",
            expires_at=datetime.now(UTC) + timedelta(minutes=5),
            max_duration_seconds=1800,
            livekit_url=self.server.ws_url,
            token=SecretStr(self.server.mint_token(room, identity)),
        )


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    """A started sim server with the session endpoint; everything is torn down after."""
    server = SimServer()
    holder: list[Sim] = []

    def on_session(created: SimSession) -> None:
        holder[0].sessions.put_nowait(created)

    endpoint = SessionEndpoint(
        server,
        occupied=lambda room, identity: identity in server.participants(room),
        on_session=on_session,
    )
    endpoint.install(server.app)
    state = Sim(server=server, endpoint=endpoint)
    holder.append(state)
    await server.start()
    try:
        yield state
    finally:
        for task in state.runs:
            if not task.done():
                task.cancel()
        if state.runs:
            await asyncio.wait(state.runs, timeout=WAIT)
        for agent in state.agents:
            await agent.leave()
        await asyncio.wait_for(server.stop(), WAIT)
