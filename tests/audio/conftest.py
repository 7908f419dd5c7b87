"""Fixtures for the audio tests: one private PulseAudio server per test session.

The server starts before anything imports sounddevice (PortAudio enumerates devices on
import); if sounddevice was imported earlier, PortAudio is re-initialised after the
server is up.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fishtalk.testing.virtual_audio import VirtualAudio


@pytest.fixture(scope="session")
def vaudio() -> Iterator[VirtualAudio]:
    """The virtual device chain, with this process pointed at it."""
    missing = VirtualAudio.available()
    if missing is not None:
        pytest.fail(f"the audio tests need PulseAudio: {missing}", pytrace=False)
    va = VirtualAudio()
    va.start()
    va.apply_env()
    from fishtalk.audio.devices import rescan

    rescan()
    try:
        yield va
    finally:
        va.restore_env()
        va.stop()
