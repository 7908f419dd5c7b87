"""The one way a test gets a virtual PulseAudio device chain (support.virtual_audio).

Two uses: :func:`for_this_process` points this process (and PortAudio's device list) at a
private server, for tests that open devices here; :func:`for_a_child` only runs one, for
tests that hand its ``env`` to a subprocess. Both fail (never skip) with the reason when
PulseAudio is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.virtual_audio import VirtualAudio


def _require_pulseaudio() -> None:
    missing = VirtualAudio.available()
    if missing is not None:
        pytest.fail(f"this test needs PulseAudio: {missing}", pytrace=False)


@contextlib.contextmanager
def for_this_process() -> Iterator[VirtualAudio]:
    """A private server with this process's environment and PortAudio pointed at it (both
    put back afterwards)."""
    _require_pulseaudio()
    from fishtalk.engine.audio.devices import rescan

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    # Short and under /tmp: the socket path must fit a sockaddr_un (108 bytes).
    root = Path(tempfile.mkdtemp(prefix=f"fishtalk-pulse-{worker}-"))
    va = VirtualAudio(root)
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


@contextlib.contextmanager
def for_a_child() -> Iterator[VirtualAudio]:
    """A private server for a subprocess (pass it ``env``); this process is untouched."""
    _require_pulseaudio()
    with VirtualAudio() as va:
        yield va
