"""Handing a session's events to many readers: async streams, callbacks and waiters.

:class:`EventFanout` is the dispatch behind :class:`fishtalk.AgentSession`: each event (a
:data:`fishtalk.core.conversation.Change`) goes to every open :class:`EventStream`, to the
waiters whose predicate it satisfies, and to the callbacks registered for its kind (async
ones run as tasks that :meth:`EventFanout.close` cancels). A failing callback is logged,
never raised into the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fishtalk.core import conversation as conv
from fishtalk.core.events import KINDS

_log = logging.getLogger("fishtalk.agent_session")

Callback = Callable[[Any], object]


def kind_key(kind: str | type[Any]) -> str | None:
    """The kind name a callback listens for: from a kind name, an event class of
    :mod:`fishtalk.core.events`, or ``"*"`` (None: every kind). ValueError for others."""
    if isinstance(kind, type):
        key = getattr(kind, "kind", None)
        if not isinstance(key, str) or key not in KINDS:
            raise ValueError(f"{kind.__name__} is not an event class of fishtalk.core.events")
        return key
    if kind == "*":
        return None
    if kind in KINDS:
        return kind
    raise ValueError(f"unknown event kind {kind!r}; known: {', '.join(sorted(KINDS))}")


class EventStream:
    """An async iterator over the events dispatched after its creation, ending after
    ``ended`` (or when the fan-out closes)."""

    def __init__(self, fanout: EventFanout, *, done: bool) -> None:
        self._fanout = fanout
        self._queue: asyncio.Queue[conv.Change | None] = asyncio.Queue()
        self._done = done  # nothing more will come
        if not self._done:
            fanout._streams.append(self._queue)

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> conv.Change:
        if self._done:
            raise StopAsyncIteration
        event = await self._queue.get()
        if event is None:
            self._done = True
            self._fanout._unsubscribe(self._queue)
            raise StopAsyncIteration
        if isinstance(event, conv.Ended):
            self._done = True
            self._fanout._unsubscribe(self._queue)
        return event

    async def aclose(self) -> None:
        """Stop receiving events."""
        self._done = True
        self._fanout._unsubscribe(self._queue)


class EventFanout:
    """Streams, waiters and callbacks of one session's events."""

    def __init__(self) -> None:
        self._streams: list[asyncio.Queue[conv.Change | None]] = []
        self._callbacks: list[tuple[str | None, Callback]] = []
        self._waiters: list[tuple[Callable[[conv.Change], bool], asyncio.Future[conv.Change]]] = []
        self._callback_tasks: set[asyncio.Task[Any]] = set()

    def stream(self, *, done: bool = False) -> EventStream:
        """A new subscription (``done``: nothing will come, it ends at once)."""
        return EventStream(self, done=done)

    def add_callback(self, key: str | None, callback: Callback) -> Callable[[], None]:
        """Call ``callback`` for events of kind ``key`` (None: all); returns the remover."""
        entry = (key, callback)
        self._callbacks.append(entry)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(entry)

        return remove

    async def next_event(
        self,
        predicate: Callable[[conv.Change], bool],
        timeout: float | None,  # noqa: ASYNC109 - AgentSession.wait_for's, passed on
        *,
        or_ended: bool = False,
    ) -> conv.Change:
        """The next dispatched event ``predicate`` accepts, or (``or_ended``) the ``ended``
        event (TimeoutError after ``timeout`` seconds; CancelledError if the fan-out closes
        first)."""
        future: asyncio.Future[conv.Change] = asyncio.get_running_loop().create_future()

        def check(event: conv.Change) -> bool:
            return (or_ended and isinstance(event, conv.Ended)) or predicate(event)

        entry = (check, future)
        self._waiters.append(entry)
        try:
            async with asyncio.timeout(timeout):
                return await future
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(entry)

    def dispatch(self, event: conv.Change) -> None:
        """Hand ``event`` to every stream, waiter and callback."""
        for queue in self._streams:
            queue.put_nowait(event)
        for predicate, future in list(self._waiters):
            if future.done():
                continue
            try:
                hit = predicate(event)
            except Exception as exc:
                future.set_exception(exc)
                continue
            if hit:
                future.set_result(event)
        for key, callback in list(self._callbacks):
            if key is not None and key != event.kind:
                continue
            try:
                result = callback(event)
            except Exception:
                _log.exception("event callback %r failed", callback)
                continue
            if inspect.isawaitable(result):
                self._spawn_callback(result)

    async def close(self) -> None:
        """Cancel running callbacks, end every stream, cancel every waiter."""
        tasks = list(self._callback_tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for queue in self._streams:
            queue.put_nowait(None)
        self._streams.clear()
        for _predicate, future in self._waiters:
            if not future.done():
                future.cancel()
        self._waiters.clear()

    def _spawn_callback(self, awaitable: Awaitable[object]) -> None:
        async def run() -> None:
            try:
                await awaitable
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.exception("async event callback failed")

        task = asyncio.ensure_future(run())
        self._callback_tasks.add(task)
        task.add_done_callback(self._callback_tasks.discard)

    def _unsubscribe(self, queue: asyncio.Queue[conv.Change | None]) -> None:
        with contextlib.suppress(ValueError):
            self._streams.remove(queue)


__all__ = ["KINDS", "EventFanout", "EventStream", "kind_key"]
