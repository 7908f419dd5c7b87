"""Fixtures for the audio tests: one private PulseAudio server per test process.

Under pytest-xdist every worker is its own process with its own ``vaudio``: its own
runtime directory (named after the worker), socket, cookie and ALSA config, and its own
``PULSE_SERVER`` in that process's environment. The device names (``fishtalk_mic``, ...)
live inside each server, so workers never see each other's devices.

The server starts before anything imports sounddevice (PortAudio enumerates devices on
import); if sounddevice was imported earlier, PortAudio is re-initialised after the
server is up.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fishtalk.testing.virtual_audio import VirtualAudio


def worker_id() -> str:
    """``gw0``, ``gw1``, ... under pytest-xdist; ``main`` in a plain pytest run."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


@pytest.fixture(scope="session")
def vaudio() -> Iterator[VirtualAudio]:
    """This process's virtual device chain, with this process pointed at it."""
    missing = VirtualAudio.available()
    if missing is not None:
        pytest.fail(f"the audio tests need PulseAudio: {missing}", pytrace=False)
    # Short and under /tmp: the socket path must fit a sockaddr_un (108 bytes).
    root = Path(tempfile.mkdtemp(prefix=f"fishtalk-pulse-{worker_id()}-"))
    va = VirtualAudio(root)
    try:
        va.start()
        va.apply_env()
        from fishtalk.audio.devices import rescan

        rescan()
        yield va
    finally:
        va.restore_env()
        va.stop()
        shutil.rmtree(root, ignore_errors=True)
