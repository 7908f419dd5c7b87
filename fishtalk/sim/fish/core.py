"""What every part of the simulated agent shares: its room, session, journal and state.

:class:`AgentCore` is the base of :class:`~fishtalk.sim.fish.agent.SimAgent`; its parts
(:mod:`~fishtalk.sim.fish.speech`, :mod:`~fishtalk.sim.fish.listening`,
:mod:`~fishtalk.sim.fish.tools`, :mod:`~fishtalk.sim.fish.interpreter`) take it to write
to the journal, publish to the room and change the agent's ``lk.agent.state``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, Final

from livekit import rtc

from fishtalk.core import protocol as p
from fishtalk.engine.aio import TaskSet
from fishtalk.sim.fish.scenario import AgentSettings, Scenario
from fishtalk.sim.fish.sessions import SimSession

log = logging.getLogger(__name__)

USER_GRACE: Final = 20.0
"""How long the agent waits for a user whose connection dropped to come back."""


class Ended(Exception):
    """Raised inside the agent's own tasks once it has ended the session."""


class AgentCore:
    """The agent's room, session, scenario settings, journal and published state."""

    def __init__(self, session: SimSession, scenario: Scenario) -> None:
        self.session = session
        self.scenario = scenario
        self.settings: AgentSettings = scenario.agent
        self.journal: list[str] = []
        """A log of what the agent did and decided (read by tests)."""
        self.state = "initializing"
        self.room = rtc.Room()
        self.ending = False
        """Set once the agent has started to leave: nothing new is begun after it."""
        self._tasks = TaskSet("fishtalk-sim-agent", on_error=self._task_failed)
        self._note_changed = asyncio.Event()

    # --- journal ------------------------------------------------------------------------

    def note(self, text: str) -> None:
        """Record a decision in :attr:`journal`."""
        log.debug("agent %s: %s", self.session.session_id, text)
        self.journal.append(text)
        self._note_changed.set()

    async def wait_note(self, prefix: str, *, within: float = 10.0) -> str:
        """Wait until a journal entry starts with ``prefix``; return it (tests use this)."""

        async def until() -> str:
            while True:
                for entry in self.journal:
                    if entry.startswith(prefix):
                        return entry
                self._note_changed.clear()
                await self._note_changed.wait()

        return await asyncio.wait_for(until(), within)

    # --- background tasks ---------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` as a task the agent owns (cancelled when it leaves)."""
        return self._tasks.spawn(coro)

    def _task_failed(self, task: asyncio.Task[Any], exc: BaseException) -> None:
        log.warning("sim agent task failed: %r", exc)
        self.note(f"task failed: {exc!r}")

    # --- output -------------------------------------------------------------------------

    async def send(self, event: p.AgentEvent) -> None:
        """Publish one agent event on the agent-event topic."""
        await self.send_raw(p.encode_agent_event(event))

    async def send_raw(self, data: bytes, topic: str = p.TOPIC_AGENT_EVENT) -> None:
        """Publish one reliable data packet to the room."""
        await self.room.local_participant.publish_data(data, reliable=True, topic=topic)

    async def set_state(self, state: str) -> None:
        """Publish ``lk.agent.state`` (nothing when it is already ``state``)."""
        if state == self.state:
            return
        self.state = state
        self.note(f"state {state}")
        await self.room.local_participant.set_attributes({p.ATTR_AGENT_STATE: state})


__all__ = ["USER_GRACE", "AgentCore", "Ended"]
