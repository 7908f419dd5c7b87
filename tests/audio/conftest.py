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

from collections.abc import Iterator

import audio_chain
import pytest
from support.virtual_audio import VirtualAudio


@pytest.fixture(scope="session")
def vaudio() -> Iterator[VirtualAudio]:
    """This process's virtual device chain, with this process pointed at it."""
    with audio_chain.for_this_process() as va:
        yield va
