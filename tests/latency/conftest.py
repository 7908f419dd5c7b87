"""Fixtures for the heard-latency tests: a private PulseAudio server for this module.

The end-to-end tests drive the real session (:class:`fishtalk.session.Session`) against
the sim agent through the virtual device chain of :mod:`fishtalk.testing.virtual_audio`:
the agent's voice comes out of the virtual speaker, and speech played into the virtual
mic reaches the agent. Like tests/audio they need the network namespace and PulseAudio::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/latency -q

The server is started per test module (about 0.2 s) and PortAudio is pointed at it; at
the end PortAudio is pointed back at whatever was in use before (tests/audio's own server
when both run in one process).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fishtalk.testing.virtual_audio import VirtualAudio


@pytest.fixture(scope="module")
def vaudio() -> Iterator[VirtualAudio]:
    """A virtual device chain, with this process (and PortAudio) pointed at it."""
    missing = VirtualAudio.available()
    if missing is not None:
        pytest.fail(f"the latency tests need PulseAudio: {missing}", pytrace=False)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    # Short and under /tmp: the socket path must fit a sockaddr_un (108 bytes).
    root = Path(tempfile.mkdtemp(prefix=f"fishtalk-lat-{worker}-"))
    va = VirtualAudio(root)
    from fishtalk.audio.devices import rescan

    try:
        va.start()
        va.apply_env()
        rescan()
        yield va
    finally:
        va.restore_env()
        va.stop()
        rescan()
        shutil.rmtree(root, ignore_errors=True)
