"""The sim's runner: the loopback LiveKit server, the session endpoint and an agent per session.

* :func:`run_sim` (async context manager) starts :class:`~fishtalk.sim.livekit.server.SimServer`,
  mounts :class:`~fishtalk.sim.fish.endpoint.SessionEndpoint` on it, and starts a
  :class:`~fishtalk.sim.fish.agent.SimAgent` for every session created; it yields a
  :class:`SimHandle` (``api_url``, ``dev_key``, the server, endpoint and agents).
* :class:`SimThread` runs the same thing on a background thread with its own event loop,
  for ``fishtalk demo``: ``start()`` returns :class:`SimInfo` (``api_url``, ``dev_key``),
  ``stop()`` tears it down.

Which scenario a session's agent plays: ``scenarios[agent_id]`` when given, else the
``scenario`` argument, else the built-in scenario named like the agent id (``demo``),
else the built-in ``converse``. ``agent_overrides`` (e.g. ``{"think_seconds": 0.8}``)
replace ``[agent]`` settings in whichever it is, the built-ins included: that is how
tests and benchmarks inject the agent's timings.

``agent`` replaces the simulated agent: ``agent(session, server, on_end)`` is run for every
session created instead (the interop suite runs a livekit-agents agent this way); it
calls ``on_end()`` when its session is over.

Importing this module is light; livekit loads when the sim starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fishtalk.sim.tracelog import traced

if TYPE_CHECKING:
    from fishtalk.sim.fish.agent import SimAgent
    from fishtalk.sim.fish.endpoint import SessionEndpoint
    from fishtalk.sim.fish.listening import IdleClock
    from fishtalk.sim.fish.scenario import (
        Scenario,
    )
    from fishtalk.sim.fish.sessions import SimSession
    from fishtalk.sim.fish.voice import Voice
    from fishtalk.sim.livekit.server import SimServer

AgentRunner = Callable[["SimSession", "SimServer", Callable[[], None]], Awaitable[None]]
"""Another agent for every session: ``agent(session, server, on_end)`` (see the module docs)."""

DEV_KEY = "fishtalk-sim-dev-key"
"""The API key the sim accepts by default (the same as ``endpoint.DEFAULT_DEV_KEY``)."""


@dataclass(frozen=True)
class SimInfo:
    """What a client needs to use a running sim."""

    api_url: str
    """Base URL of the session API (``http://127.0.0.1:PORT``)."""
    dev_key: str
    """The API key it accepts."""


@dataclass
class SimHandle:
    """A running sim: its parts, and the agents it has started (by session id)."""

    server: SimServer
    endpoint: SessionEndpoint
    dev_key: str
    agents: dict[str, SimAgent] = field(default_factory=dict)
    _agent_started: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def api_url(self) -> str:
        """Base URL of the session API."""
        return self.server.url

    @property
    def info(self) -> SimInfo:
        """``api_url`` and ``dev_key`` together."""
        return SimInfo(self.api_url, self.dev_key)

    async def agent(self, session_id: str, *, within: float = 10.0) -> SimAgent:
        """The agent serving ``session_id`` (waits for it to be started)."""

        async def until() -> SimAgent:
            while session_id not in self.agents:
                self._agent_started.clear()
                await self._agent_started.wait()
            return self.agents[session_id]

        return await asyncio.wait_for(until(), within)


def _resolve(scenario: Scenario | str | Path | None) -> Scenario | None:
    from fishtalk.sim.fish.scenario import Scenario, load_scenario

    if scenario is None or isinstance(scenario, Scenario):
        return scenario
    return load_scenario(scenario)


@contextlib.asynccontextmanager
async def run_sim(
    scenario: Scenario | str | Path | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    scenarios: Mapping[str, Scenario] | None = None,
    dev_key: str = DEV_KEY,
    allowed_origins: Iterable[str] | None = None,
    max_duration_seconds: int = 1800,
    voice: Voice | None = None,
    idle_clock: IdleClock | None = None,
    agent_overrides: Mapping[str, object] | None = None,
    agent: AgentRunner | None = None,
) -> AsyncIterator[SimHandle]:
    """Run server + endpoint + agent spawner until the block exits.

    ``scenario`` may be a :class:`~fishtalk.sim.fish.scenario.Scenario`, a file path or a
    built-in name. Raises :class:`~fishtalk.sim.fish.scenario.ScenarioError` for a bad file
    or a bad ``agent_overrides`` entry (``[agent]`` settings applied to every scenario
    played, e.g. ``{"think_seconds": 0.3}``; checked before anything listens).
    ``voice`` and ``idle_clock`` (where the agents' idle time comes from) default to the
    real ones; tests pass their own. ``agent`` runs instead of the simulated agent.
    """
    from fishtalk.sim.fish.agent import SimAgent
    from fishtalk.sim.fish.endpoint import DEFAULT_ALLOWED_ORIGINS, SessionEndpoint
    from fishtalk.sim.fish.scenario import BUILTIN, builtin_scenario, check_agent_overrides
    from fishtalk.sim.livekit.server import SimServer

    overrides = check_agent_overrides(agent_overrides or {})
    default = _resolve(scenario)
    per_agent = dict(scenarios or {})
    # Apply the overrides once, up front: a scenario whose own values clash fails here.
    if default is not None:
        default = default.with_agent(overrides)
    per_agent = {name: played.with_agent(overrides) for name, played in per_agent.items()}

    def scenario_for(agent_id: str) -> Scenario:
        if agent_id in per_agent:
            return per_agent[agent_id]
        if default is not None:
            return default
        return builtin_scenario(agent_id if agent_id in BUILTIN else "converse").with_agent(
            overrides
        )

    server = SimServer(host, port)
    tasks: set[asyncio.Task[None]] = set()
    endpoint = SessionEndpoint(
        server,
        dev_key=dev_key,
        allowed_origins=allowed_origins or DEFAULT_ALLOWED_ORIGINS,
        max_duration_seconds=max_duration_seconds,
        occupied=server.is_connected,
        max_duration_for=lambda agent_id: scenario_for(agent_id).agent.max_duration_seconds,
    )
    handle = SimHandle(server=server, endpoint=endpoint, dev_key=dev_key)

    def spawn(session: SimSession) -> None:
        if agent is not None:
            other = asyncio.ensure_future(
                agent(session, server, lambda: endpoint.end_session(session.session_id))
            )
            tasks.add(other)
            other.add_done_callback(tasks.discard)
            return
        sim_agent = SimAgent(
            session,
            scenario_for(session.agent_id),
            server,
            on_end=lambda s: endpoint.end_session(s.session_id),
            voice=voice,
            idle_clock=idle_clock,
        )
        handle.agents[session.session_id] = sim_agent
        handle._agent_started.set()
        task = asyncio.ensure_future(sim_agent.run())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    endpoint.on_session = spawn
    endpoint.install(server.app)
    with traced():
        await server.start()
        try:
            yield handle
        finally:
            for task in list(tasks):
                task.cancel()
            for task in list(tasks):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            await server.stop()


class SimThread:
    """The whole sim on a background thread (for ``fishtalk demo``).

    ::

        with SimThread("demo") as info:
            run_client(api_url=info.api_url, api_key=info.dev_key, agent_id="demo")
    """

    def __init__(
        self,
        scenario: Scenario | str | Path | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        **options: Any,
    ) -> None:
        self._args = (scenario,)
        self._kwargs = dict(options, host=host, port=port)
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._info: SimInfo | None = None
        self._error: BaseException | None = None

    def start(self, *, within: float = 20.0) -> SimInfo:
        """Start the sim and return where it listens; raises what startup raised."""
        if self._info is not None:
            return self._info
        self._thread = threading.Thread(target=self._run, name="fishtalk-sim", daemon=True)
        self._thread.start()
        if not self._ready.wait(within):
            self.stop()
            raise TimeoutError("the simulator did not start in time")
        if self._error is not None:
            error, self._error = self._error, None
            self.stop()
            raise error
        assert self._info is not None
        return self._info

    def stop(self, *, within: float = 10.0) -> None:
        """Stop the sim (agents leave, server stops) and join the thread."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(within)
            self._thread = None
        self._info = None

    def __enter__(self) -> SimInfo:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to start(); the thread must not die loudly
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with run_sim(*self._args, **self._kwargs) as handle:
            self._info = handle.info
            self._ready.set()
            await self._stop.wait()
