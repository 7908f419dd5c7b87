"""A pytest plugin: livekit's harmless "unknown FFI handle" noise kept off the test output.

When the garbage collector reaches an ``FfiHandle`` the native side already released
(after a room closed; at the latest when the interpreter exits, after pytest's summary),
livekit 1.2.1's native library logs a warning through the ``livekit`` logger:
``<target>:<line>:<module> - Attempted to drop unknown FFI handle: <id>``. With no handler
configured Python prints it on stderr. It is the log side of the GC-time assertion that
:func:`fishtalk.engine.native.quiet_livekit_handle_drops` keeps quiet, and as harmless.

:func:`install` puts a filter on the ``livekit`` logger that turns exactly that record
into a debug record (still there for a test's captured log and for ``--log-level=DEBUG``)
and leaves every other record alone.

As a plugin (the root conftest loads it, so every xdist worker has it) it installs that
filter and the CLI's own hook for the assertion,
:func:`fishtalk.engine.native.quiet_livekit_handle_drops`, which otherwise shows up now and then as
a ``PytestUnraisableExceptionWarning`` for whichever test the garbage collector ran in.
Every other unraisable exception still reaches pytest.
"""

from __future__ import annotations

import logging
import re

import pytest

from fishtalk.engine.native import quiet_livekit_handle_drops

LOGGER = "livekit"
UNKNOWN_HANDLE = re.compile(r" - Attempted to drop unknown FFI handle: \d+\Z")
"""The end of the SDK's formatted message (``"%s:%s:%s - %s"``), handle id included."""


class UnknownHandleDropToDebug(logging.Filter):
    """Demote livekit's "Attempted to drop unknown FFI handle" warning to debug."""

    def filter(self, record: logging.LogRecord) -> bool:
        if (
            record.name == LOGGER
            and record.levelno == logging.WARNING
            and UNKNOWN_HANDLE.search(record.getMessage()) is not None
        ):
            record.levelno = logging.DEBUG
            record.levelname = logging.getLevelName(logging.DEBUG)
        return True


def install() -> None:
    """Put the filter on the ``livekit`` logger (once, however often this is called)."""
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(f, UnknownHandleDropToDebug) for f in logger.filters):
        logger.addFilter(UnknownHandleDropToDebug())


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    # trylast: after pytest's own unraisable-exception hook is in place, so ours wraps it.
    install()
    quiet_livekit_handle_drops()
