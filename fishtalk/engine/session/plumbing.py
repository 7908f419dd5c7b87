"""The session's reducer plumbing: inputs in, effects out (timers, tools, the outbox),
listeners and observers told, tasks owned; and the fixed waits (:class:`Timeouts`).

:class:`Core` holds what every part of the session shares; the room, media and grant parts
and the :class:`~fishtalk.engine.session.Session` itself build on it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from fishtalk.core import conversation as conv
from fishtalk.core.protocol import ClientToolCall
from fishtalk.engine import observe
from fishtalk.engine.aio import TaskSet
from fishtalk.engine.audio.base import AudioBackend
from fishtalk.engine.tools.registry import ToolRegistry
from fishtalk.engine.tools.runner import ToolRunner

if TYPE_CHECKING:
    from livekit import rtc

    from fishtalk.engine.session.outbox import Outbox

_log = logging.getLogger("fishtalk.engine.session")

CONNECT_TIMEOUT: Final = 15.0
"""Seconds for the whole room connect (signalling + WebRTC) before ``connection_failed``."""
SIGNAL_ATTEMPT_TIMEOUT: Final = 5.0
"""Seconds per signalling attempt inside the SDK's own retry loop."""
RECONNECT_BUDGET: Final = 20.0
"""Seconds a dropped link gets to come back (the SDK alone would try for about 25 s)."""


@dataclass(frozen=True, slots=True)
class Timeouts:
    """The fixed waits of a session (the web SDK's values by default); tests inject short ones."""

    connect: float = CONNECT_TIMEOUT
    """Seconds for the whole room connect (signalling + WebRTC) before ``connection_failed``."""
    agent_join: float = conv.AGENT_JOIN_TIMEOUT
    """Seconds after connecting for the agent to publish its first state."""
    ended_grace: float = conv.SESSION_ENDED_GRACE
    """Seconds after ``session.ended`` before the session tears down on its own."""
    signal_attempt: float = SIGNAL_ATTEMPT_TIMEOUT
    """Seconds per signalling attempt inside the SDK's own retry loop."""
    reconnect: float = RECONNECT_BUDGET
    """Seconds a call may stay ``reconnecting`` before it ends with ``connection_lost``."""


DEFAULT_TIMEOUTS: Final = Timeouts()

StateListener = Callable[[conv.State, Sequence[conv.Change]], None]
"""Called after every reduction with the new state and what changed in it: the events of
:func:`fishtalk.core.conversation.changes`, computed once per reduction for every reader
(the front ends, the journal, the Python API and ``fishtalk test``)."""


class Core:
    """What the parts of a session share: the state, the reducer loop, timers, tasks."""

    def _init_core(
        self, tools: ToolRunner | None, spoken: bool, timeouts: Timeouts, clock: Callable[[], float]
    ) -> None:
        self._tools = tools if tools is not None else ToolRunner(ToolRegistry())
        self.timeouts = timeouts
        self._clock = clock
        self._state = conv.initial_state(spoken=spoken)
        self._listeners: list[StateListener] = []
        self._observers: list[observe.Observer] = []
        self._pending: deque[conv.Input] = deque()
        self._reducing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ended: asyncio.Event | None = None
        self._tasks = TaskSet("fishtalk-session", on_error=_task_failed)
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._outbox: Outbox | None = None
        """The one ordered publisher (made by ``run()``)."""
        self._audio: AudioBackend | None = None
        self._mic_track: rtc.LocalAudioTrack | None = None
        self._agent_speaking = False
        self._speaking_since = 0.0
        """When the agent's state last became (or stopped being) ``speaking``."""

    def _observe(self, item: observe.Observation) -> None:
        for fn in self._observers:
            try:
                fn(item)
            except Exception:
                _log.exception("session observer failed")

    def _feed(self, inp: conv.Input) -> None:
        """Reduce ``inp`` (and whatever its effects feed back, after it), then notify."""
        self._pending.append(inp)
        if self._reducing:
            return  # re-entrant feed from an effect: the outer loop picks it up in order
        self._reducing = True
        try:
            while self._pending:
                inp = self._pending.popleft()
                if self._observers:
                    self._observe(inp)
                previous = self._state
                self._state, effects = conv.reduce(previous, inp)
                for effect in effects:
                    self._execute(effect)
                state = self._state
                events: Sequence[conv.Change] = ()
                if self._observers or self._listeners:
                    events = conv.changes(previous, state)
                speaking = state.agent_state == "speaking"
                if speaking is not self._agent_speaking:
                    self._agent_speaking = speaking
                    self._speaking_since = inp.at
                if self._observers:
                    self._observe(observe.Reduced(state, inp.at, events))
                for listener in list(self._listeners):
                    try:
                        listener(state, events)
                    except Exception:
                        _log.exception("state listener failed")
        finally:
            self._reducing = False

    def _execute(self, effect: conv.Effect) -> None:
        match effect:
            case conv.SendClientEvent(event=event):
                # The reducer's event, as it returned it, goes the one way out.
                if self._outbox is not None:
                    self._outbox.put(event)
            case conv.RunClientTool(call=call):
                if self._loop is not None:
                    self._spawn(self._run_tool(call), f"tool {call.call_id}")
            case conv.ScheduleTimer(name=name, deadline=deadline):
                self._schedule(name, deadline)
            case conv.CancelTimer(name=name):
                handle = self._timers.pop(name, None)
                if handle is not None:
                    handle.cancel()
            case conv.SetMicrophoneMuted(muted=muted):
                if self._audio is not None:
                    self._audio.set_muted(muted)
                if self._mic_track is not None:
                    if muted:
                        self._mic_track.mute()
                    else:
                        self._mic_track.unmute()
            case conv.Teardown():
                if self._ended is not None:
                    self._ended.set()

    def _schedule(self, name: str, deadline: float) -> None:
        loop = self._loop
        if loop is None:
            return
        old = self._timers.pop(name, None)
        if old is not None:
            old.cancel()

        def fire() -> None:
            self._timers.pop(name, None)
            self._feed(conv.TimerFired(name=name, at=max(self._clock(), deadline)))

        # The reducer sets its deadlines with the web SDK's fixed waits; an injected
        # timeout moves when the timer fires (it fires "at" the reducer's deadline).
        delay = deadline - self._clock()
        if name == conv.TIMER_AGENT_JOIN:
            delay -= conv.AGENT_JOIN_TIMEOUT - self.timeouts.agent_join
        elif name == conv.TIMER_ENDED_GRACE:
            delay -= conv.SESSION_ENDED_GRACE - self.timeouts.ended_grace
        self._timers[name] = loop.call_later(max(0.0, delay), fire)

    def _cancel_timers(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()

    def _call_soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` now when on the session's loop (or before it runs), else hand it over."""
        loop = self._loop
        if loop is None:
            fn()
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            fn()
        else:
            loop.call_soon_threadsafe(fn)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        return self._tasks.spawn(coro, name)

    def _mark(self, kind: conv.MarkKind, at: float, value: float | None = None) -> None:
        if self._state.ended:
            return
        self._feed(conv.LatencyMark(kind, at, value))

    def _send_failed(self, event: conv.ClientEventOut, exc: Exception) -> None:
        why = one_line(str(exc)) or type(exc).__name__
        _log.warning("could not send %s: %s", event.type, why)
        self._feed(
            conv.LocalError(
                code="send_failed", at=self._clock(), detail=f"Could not send {event.type}: {why}"
            )
        )

    async def _run_tool(self, call: ClientToolCall) -> None:
        outcome = await self._tools.run(call)
        if self._observers:
            self._observe(
                observe.ToolRan(call.call_id, call.tool_name, call.params, outcome, self._clock())
            )
        self._feed(outcome.as_input(self._clock()))


def _task_failed(task: asyncio.Task[Any], exc: BaseException) -> None:
    _log.error("session task %s failed: %s", task.get_name(), exc, exc_info=exc)


def one_line(text: str) -> str:
    """``text`` on one line, at most 300 characters (for one-sentence reasons)."""
    return " ".join(text.split())[:300]


__all__ = [
    "CONNECT_TIMEOUT",
    "DEFAULT_TIMEOUTS",
    "Core",
    "StateListener",
    "Timeouts",
    "one_line",
]
