"""The bridge between Locust's gevent greenlets and fishtalk's asyncio engine.

Locust runs its users as gevent greenlets on one hub in the process's main thread. The
engine (asyncio, and livekit's native client, whose networking gevent cannot patch) runs on
:class:`EngineThread`: one real OS thread per process with its own event loop, where every
user's session is an asyncio task. A greenlet hands a coroutine over with
:meth:`EngineThread.submit` and waits for it with :func:`wait_green`: the engine thread's
done-callback wakes the hub through ``loop.run_callback_threadsafe`` (gevent's one
thread-safe entry), and the greenlet yields to the hub meanwhile, so heartbeats, stats and
the web UI keep running.

No monkey-patching reaches the engine: ``fishtalk load`` and the shipped locustfile run
Locust with ``LOCUST_SKIP_MONKEY_PATCH`` set, so sockets, locks, selectors and threads stay
the standard library's own in every thread. Locust's own code needs one thing patched: its
main loop waits with ``time.sleep``, which must yield to the hub. :func:`hub_aware_sleep`
replaces ``time.sleep`` with a function that yields on the hub's thread only and is the
original sleep on every other thread, the engine's and livekit's included.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

T = TypeVar("T")

_log = logging.getLogger(__name__)

DRAIN_TIMEOUT: Final = 20.0
"""Seconds :meth:`EngineThread.close` gives the open sessions to hang up."""


class EngineThread:
    """One asyncio event loop on one real OS thread (started on first use, so a process
    that forks, like Locust's ``--processes``, starts its own after the fork)."""

    def __init__(self, name: str = "fishtalk-engine") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.used = False
        """Whether the loop ever ran in this process (livekit's native threads may too)."""
        self._sessions: set[asyncio.Task[Any]] = set()

    @property
    def running(self) -> bool:
        """Whether the loop's thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (started here the first time)."""
        with self._lock:
            if self._loop is None or not self.running:
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                thread = threading.Thread(
                    target=self._run, args=(loop, ready), name=self._name, daemon=True
                )
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
                self.used = True
            return self._loop

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` as a task on the engine's loop; cancelling the future cancels it."""
        return asyncio.run_coroutine_threadsafe(self._tracked(coro), self.loop())

    async def _tracked(self, coro: Coroutine[Any, Any, T]) -> T:
        task = asyncio.current_task()
        assert task is not None
        self._sessions.add(task)
        try:
            return await coro
        finally:
            self._sessions.discard(task)

    def close(self, timeout: float = DRAIN_TIMEOUT) -> None:
        """Cancel the submitted tasks (each session hangs up as it unwinds; the SDK's and
        the sessions' own tasks are left to do that), wait up to ``timeout`` for them, stop
        the loop and join its thread. Safe to call twice."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None or not thread.is_alive():
            return
        drained = asyncio.run_coroutine_threadsafe(_drain(self._sessions, timeout), loop)
        with contextlib.suppress(Exception):
            wait_green(drained, timeout + 1.0)
        with contextlib.suppress(RuntimeError):  # the loop already closed
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)


async def _drain(sessions: set[asyncio.Task[Any]], within: float) -> None:
    tasks = set(sessions)  # copied here, on the loop that changes it
    for task in tasks:
        # Once only: a second cancel would cut short the hangup the first one started.
        if not task.cancelling():
            task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=within)


def wait_green(future: concurrent.futures.Future[T], timeout: float | None = None) -> T:
    """``future``'s result, waited for without blocking gevent's hub (from a greenlet, or
    the main greenlet). If the wait is interrupted (the greenlet is killed: Locust stopping
    a user; Ctrl-C) or times out, the future is cancelled, so the session task unwinds and
    hangs up on the engine's thread, and the interruption propagates."""
    import gevent
    import gevent.event

    hub = gevent.get_hub()
    done = gevent.event.Event()
    # The callback runs on the engine's thread (or here, if already done); only the
    # thread-safe entry may touch the hub from there.
    future.add_done_callback(lambda _f: hub.loop.run_callback_threadsafe(done.set))
    try:
        finished = done.wait(timeout)
    except BaseException as exc:
        _log.info("the wait for a session was interrupted (%r): cancelling it", exc)
        future.cancel()
        raise
    if not finished:
        future.cancel()
        raise TimeoutError(f"the engine did not answer within {timeout:g} s")
    return future.result()


def hub_poster() -> Callable[[Callable[[], None]], None]:
    """Call this on a greenlet: it returns ``post(function)``, which any thread may call to
    run ``function`` on that greenlet's hub soon after (where Locust's stats live)."""
    import gevent

    loop = gevent.get_hub().loop  # this thread's hub: never look one up on the engine's
    return lambda function: loop.run_callback_threadsafe(function)


def hub_aware_sleep() -> None:
    """Make ``time.sleep`` yield to gevent's hub when called on this (the hub's) thread, and
    stay the original sleep on any other thread. Idempotent."""
    import gevent

    original = time.sleep
    if getattr(original, "hub_thread", None) is not None:
        return
    hub_thread = threading.get_ident()

    def sleep(seconds: float) -> None:
        if threading.get_ident() == hub_thread:
            gevent.sleep(seconds)
        else:
            original(seconds)

    sleep.hub_thread = hub_thread  # type: ignore[attr-defined]
    time.sleep = sleep  # type: ignore[assignment]  # typeshed's takes SupportsIndex too
