"""What differs between Linux, macOS and Windows, in one place.

Every user-facing module imports on all three platforms; the few things only one family
of systems has (process groups and ``killpg``, ``loop.add_signal_handler``, ``O_NOCTTY``,
``fcntl`` and ``termios``) are reached through here, behind a ``sys.platform`` check that
mypy understands (CI type-checks ``fishtalk/`` with ``--platform win32`` and ``darwin``).

- Process trees: :func:`new_process_group` gives the spawn arguments that put a child in
  its own group (a new session on POSIX, ``CREATE_NEW_PROCESS_GROUP`` on Windows), and
  :func:`kill_process_tree` kills that child with everything it started (``killpg`` with
  SIGKILL on POSIX, ``taskkill /T /F`` on Windows).
- Ctrl-C: :func:`catch_sigint` runs a callback on the event loop for SIGINT, through
  ``loop.add_signal_handler`` where the loop has it (Unix) and ``signal.signal`` otherwise
  (Windows' proactor loop, or a loop outside the main thread's control).
- (Keeping the API key in memory from other processes of the same user is
  :mod:`fishtalk.engine.hardening`'s, which the CLI loads before any command.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any, Final

log = logging.getLogger(__name__)

IS_WINDOWS: Final = sys.platform == "win32"
IS_MACOS: Final = sys.platform == "darwin"

O_NOCTTY: Final[int] = getattr(os, "O_NOCTTY", 0)
"""``os.O_NOCTTY`` where it exists (POSIX), 0 elsewhere (a no-op flag)."""

TTY_PATH: Final = "CONOUT$" if sys.platform == "win32" else "/dev/tty"
"""The controlling terminal, opened for the bell and the terminal size even when stdout is
redirected (Windows: the console's screen buffer)."""

TASKKILL_TIMEOUT: Final = 10.0
"""The longest ``taskkill`` may take to end a tree (it normally takes milliseconds)."""


def new_process_group() -> dict[str, Any]:
    """Keyword arguments for ``subprocess``/``asyncio.create_subprocess_exec`` that start
    the child as the leader of its own process group, so :func:`kill_process_tree` reaches
    everything it starts and a Ctrl-C at the terminal does not reach it directly."""
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


def kill_process_tree(pid: int) -> None:
    """Kill the process ``pid`` started with :func:`new_process_group` and all it started.

    POSIX: SIGKILL to the whole group (children that left the group on purpose survive).
    Windows: ``taskkill /T /F``, which follows the parent links from ``pid`` (so children
    orphaned by an already exited ``pid`` are out of its reach); the process itself is
    terminated directly when taskkill is missing. A process already gone is not an error.
    """
    if sys.platform == "win32":
        taskkill = shutil.which("taskkill")
        if taskkill is not None:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(
                    [taskkill, "/T", "/F", "/PID", str(pid)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    timeout=TASKKILL_TIMEOUT,
                    check=False,
                )
        # Also the fallback without taskkill: os.kill is TerminateProcess on Windows.
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def catch_sigint(
    loop: asyncio.AbstractEventLoop, callback: Callable[[], None]
) -> Callable[[], None]:
    """Run ``callback`` on ``loop`` at the next Ctrl-C (SIGINT); return an "uninstall"
    function that gives SIGINT back to the handler it had before.

    Uses ``loop.add_signal_handler`` where the loop supports it (Unix event loops), else
    ``signal.signal`` with a handler that hands over to the loop thread-safely (Windows).
    Returns a no-op uninstaller when neither can be installed (not the main thread).
    """
    try:
        loop.add_signal_handler(signal.SIGINT, callback)
    except (NotImplementedError, RuntimeError, ValueError):
        pass
    else:

        def remove_loop_handler() -> None:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGINT)

        return remove_loop_handler

    def on_signal(signum: int, frame: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(callback)

    try:
        previous = signal.signal(signal.SIGINT, on_signal)
    except (ValueError, OSError):  # not the main thread: nothing to catch with
        log.debug("cannot catch SIGINT here (not the main thread)")
        return lambda: None

    def restore() -> None:
        with contextlib.suppress(ValueError, OSError, TypeError):
            if signal.getsignal(signal.SIGINT) is on_signal:
                signal.signal(signal.SIGINT, previous)

    return restore


__all__ = [
    "IS_MACOS",
    "IS_WINDOWS",
    "O_NOCTTY",
    "TTY_PATH",
    "catch_sigint",
    "kill_process_tree",
    "new_process_group",
]
