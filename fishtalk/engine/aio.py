"""Two asyncio helpers everything that owns background work shares.

- :class:`TaskSet`: the tasks one owner starts and cancels together (no untracked
  ``create_task``); a task that fails is reported once, not lost as "exception was never
  retrieved".
- :func:`in_daemon_thread`: run a blocking call on a daemon thread and await it; a caller
  that stops waiting abandons the thread instead of joining it, so a stuck call (a hung
  tool, a wedged audio device, a read from a terminal) never blocks shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

_log = logging.getLogger(__name__)

FailureHandler = Callable[[asyncio.Task[Any], BaseException], None]


class TaskSet:
    """Tasks started by one owner, cancelled together by :meth:`cancel_all`.

    ``on_error(task, exc)`` hears about every task that failed (default: logged as a
    warning under ``name``). Iterating yields the tasks still running.
    """

    def __init__(self, name: str = "fishtalk", on_error: FailureHandler | None = None) -> None:
        self.name = name
        self._on_error = on_error
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, T], name: str | None = None) -> asyncio.Task[T]:
        """Start ``coro`` as a task owned by this set."""
        task: asyncio.Task[T] = asyncio.ensure_future(coro)
        if name is not None:
            task.set_name(f"{self.name} {name}")
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        if self._on_error is not None:
            self._on_error(task, exc)
        else:
            _log.warning("%s: task %s failed: %r", self.name, task.get_name(), exc, exc_info=exc)

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter(list(self._tasks))

    def __len__(self) -> int:
        return len(self._tasks)

    async def cancel_all(self, *, keep: asyncio.Task[Any] | None = None) -> None:
        """Cancel every task (but ``keep``, e.g. the caller's own) and wait until they end."""
        tasks = [t for t in self._tasks if t is not keep]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def in_daemon_thread(fn: Callable[[], T], *, name: str = "fishtalk-io") -> asyncio.Future[T]:
    """Run blocking ``fn`` on a daemon thread; the returned future gets its result.

    An exception from ``fn`` is set on the future; a BaseException (SystemExit and the
    like) becomes a RuntimeError rather than escaping into the thread. Cancelling the
    future, or dropping it, abandons the thread (it is never joined) and a late result is
    dropped.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(value: T | None, error: BaseException | None) -> None:
        if future.done():
            return  # timed out or cancelled meanwhile: the late result is dropped
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)  # type: ignore[arg-type]  # a T when error is None

    def target() -> None:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = fn()
        except Exception as exc:
            error = exc
        except BaseException as exc:
            error = RuntimeError(f"{type(exc).__name__} raised in {name}")
        # The loop may be gone if its owner stopped waiting and shut down meanwhile.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=target, name=name, daemon=True).start()
    return future


__all__ = ["TaskSet", "in_daemon_thread"]
