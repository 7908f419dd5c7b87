"""Living with native libraries: their stderr chatter, GC-time asserts and shutdown.

Five workarounds: :func:`stderr_to_log` (C libraries' writes to fd 2 kept off the TUI),
:func:`quiet_livekit_handle_drops` (one known livekit assertion kept off the terminal),
:func:`exit_process` (leave without interpreter finalization), each installed by the CLI,
:func:`keep_sdk_logs_off_stderr` (the SDK's log records reach only logging a user set up;
CLI and ``AgentSession``), and :func:`note_wedged_audio_stream` (no PortAudio teardown at
exit once a stream hung), called by the audio backend.

On fd 2: PortAudio, ALSA and the WebRTC stack write diagnostics straight to file descriptor 2 (a
device that vanished, a failed reconnect to a sound server). While the TUI owns the
terminal such lines would land in the middle of the drawn screen, so :func:`stderr_to_log`
points fd 2 at a log file for the duration and puts it back afterwards, so the
one-line summary and error messages printed after the app exits reach the real stderr.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final, NoReturn, TextIO

from fishtalk.engine import paths

STDERR_FD = 2
MAX_LOG_BYTES = 1_000_000
"""A log already this big is started afresh, so it cannot grow without bound."""


def native_log_path(name: str = "tui") -> Path:
    """The file that receives fd 2 while the TUI runs (``<log_dir>/<name>-stderr.log``)."""
    return paths.log_dir() / f"{name}-stderr.log"


def _flush_all() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.flush()


@contextlib.contextmanager
def stderr_to_log(name: str = "tui") -> Iterator[Path | None]:
    """Send everything written to fd 2 into :func:`native_log_path` until the block ends.

    ``sys.__stderr__`` is swapped for a stream on a duplicate of the original fd 2 for the
    duration: Textual draws its screen on ``sys.__stderr__``, and it must keep reaching the
    terminal while the C libraries' writes go to the log. Yields the log's path, or None
    when no log could be opened (then nothing is redirected).
    """
    path = native_log_path(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        with contextlib.suppress(OSError):
            if path.stat().st_size >= MAX_LOG_BYTES:
                flags |= os.O_TRUNC
        log_fd = os.open(path, flags, 0o600)
    except OSError:
        yield None
        return
    _flush_all()
    try:
        saved_fd = os.dup(STDERR_FD)
    except OSError:  # no fd 2 at all (a daemon): nothing would reach a terminal anyway
        os.close(log_fd)
        yield None
        return
    original: TextIO | None = sys.__stderr__
    terminal = open(  # noqa: SIM115 - closed in the finally below, after fd 2 is back
        saved_fd,
        "w",
        encoding=getattr(original, "encoding", None) or "utf-8",
        errors=getattr(original, "errors", None) or "strict",
        closefd=False,
    )
    os.dup2(log_fd, STDERR_FD)
    os.close(log_fd)
    # typeshed marks sys.__stderr__ Final; replacing it is exactly what this block is for.
    vars(sys)["__stderr__"] = terminal
    try:
        yield path
    finally:
        _flush_all()
        vars(sys)["__stderr__"] = original
        with contextlib.suppress(Exception):
            terminal.close()
        os.dup2(saved_fd, STDERR_FD)
        os.close(saved_fd)


__all__ = [
    "MAX_LOG_BYTES",
    "STDERR_FD",
    "exit_process",
    "keep_sdk_logs_off_stderr",
    "native_log_path",
    "note_wedged_audio_stream",
    "quiet_livekit_handle_drops",
    "stderr_to_log",
]


SDK_LOGGER: Final = "livekit"
"""The logger the livekit SDK forwards its native core's log lines to."""


def keep_sdk_logs_off_stderr() -> None:
    """Keep the SDK's log records off stderr unless someone's logging asks for them.

    Where no logger on a record's way up has a handler, Python prints WARNING and above on
    stderr (``logging.lastResort``); the SDK's native core logs such warnings on routine
    events (its fall-back from the single-PC ``/rtc/v1`` path, a reconnect), which would
    break the silence promised to a library user and land on the terminal. A
    ``NullHandler`` on the SDK's logger counts as a handler, so that fallback never fires
    for it, while its records still propagate to the root logger: ``--debug``, or a
    user's own ``logging.basicConfig``, still gets every one. Idempotent.
    """
    sdk = logging.getLogger(SDK_LOGGER)
    if not any(isinstance(handler, logging.NullHandler) for handler in sdk.handlers):
        sdk.addHandler(logging.NullHandler())


def _is_livekit_handle_drop(unraisable: sys.UnraisableHookArgs) -> bool:
    where = unraisable.object
    return (
        isinstance(unraisable.exc_value, AssertionError)
        and getattr(where, "__module__", None) == "livekit.rtc._ffi_client"
        and getattr(where, "__qualname__", None) == "FfiHandle.__del__"
    )


def quiet_livekit_handle_drops() -> None:
    """Keep one known livekit SDK complaint from printing a traceback on the terminal.

    livekit 1.2.1 asserts in ``FfiHandle.__del__`` when the native side has already
    released a handle (its own log says "Attempted to drop unknown FFI handle"). That
    happens when the garbage collector reaches such a handle after a room closed, it is
    harmless, and Python would print it as "Exception ignored in ..." with a traceback
    over whatever the user is looking at. That one case is logged at debug level; every
    other unraisable exception still reaches the previous hook. Installed once, by the CLI.
    """
    previous = sys.unraisablehook
    if getattr(previous, "_fishtalk_quiet_handles", False):
        return

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if _is_livekit_handle_drop(unraisable):
            logging.getLogger("fishtalk.livekit").debug("livekit dropped an unknown FFI handle")
            return
        previous(unraisable)

    hook._fishtalk_quiet_handles = True  # type: ignore[attr-defined]  # marks our own hook
    sys.unraisablehook = hook


_wedged_audio_streams = 0
"""Audio streams whose close never returned (PortAudio's ALSA thread can spin after a sound
server crash). While any exist, PortAudio must not be terminated at exit: that would hang
too."""


def _skip_portaudio_terminate_at_exit() -> None:
    sd = sys.modules.get("sounddevice")
    handler = getattr(sd, "_exit_handler", None)
    if _wedged_audio_streams and handler is not None:
        atexit.unregister(handler)


def note_wedged_audio_stream() -> None:
    """An audio stream was abandoned because its close hung: keep PortAudio alive at exit.

    sounddevice registers ``Pa_Terminate`` as an atexit handler when it is imported; with a
    wedged stream that call blocks forever, so the process would never exit. The first
    wedged stream registers a handler that unregisters sounddevice's (atexit runs handlers
    last-registered first, so ours runs before it).
    """
    global _wedged_audio_streams
    if not _wedged_audio_streams:
        atexit.register(_skip_portaudio_terminate_at_exit)
    _wedged_audio_streams += 1


SDK_LATE_EVENTS_GRACE: Final = 0.3
"""Seconds :func:`let_sdk_settle` waits after a room has disconnected."""


async def let_sdk_settle() -> None:
    """Give livekit's native threads a moment to deliver their last events.

    Tied to livekit==1.2.1, like :func:`exit_process`: after a room has disconnected, the
    SDK's Rust threads still hand a last batch of events (its forwarded log lines among
    them) to Python through the FFI callback. A script that returns from ``asyncio.run``
    and exits at once can be finalizing by then; Python ends a foreign thread that calls in
    during finalization, which Rust cannot unwind, so the process aborts (exit -6) after a
    good session (seen in 1 of 12 runs under load; none in 16 with this wait). A library
    cannot skip finalization as the CLI does, so :class:`~fishtalk.AgentSession` waits here
    while the loop is still running.
    """
    import asyncio

    await asyncio.sleep(SDK_LATE_EVENTS_GRACE)


def exit_process(code: int) -> NoReturn:
    """Flush and leave the process now, skipping interpreter finalization.

    Tied to livekit==1.2.1 (the SDK release pinned in pyproject.toml): the session is over
    and disconnected by now, but that release's native (Rust) threads can still call back
    into Python through its FFI callbacks while the interpreter is being finalized; under
    load that aborts the process (a Rust panic, exit -6) after a perfectly good session.
    Nothing is left to clean up at this point, so the CLI leaves without finalizing. Check
    again when upgrading livekit: once the SDK joins its threads before finalization, this
    can become a plain ``sys.exit``.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    logging.shutdown()
    os._exit(code)
