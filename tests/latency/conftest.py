"""Fixtures for the heard-latency tests: a private PulseAudio server for this module.

The end-to-end tests drive the real session (:class:`fishtalk.engine.session.Session`) against
the sim agent through the virtual device chain of :mod:`support.virtual_audio`:
the agent's voice comes out of the virtual speaker, and speech played into the virtual
mic reaches the agent. Like tests/audio they need the network namespace and PulseAudio::

    .venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/latency -q

The server is started per test module (about 0.2 s) and PortAudio is pointed at it; at
the end PortAudio is pointed back at whatever was in use before (tests/audio's own server
when both run in one process).
"""

from __future__ import annotations

from collections.abc import Iterator

import audio_chain
import pytest
from support.virtual_audio import VirtualAudio


@pytest.fixture(scope="module")
def vaudio() -> Iterator[VirtualAudio]:
    """A virtual device chain, with this process (and PortAudio) pointed at it."""
    with audio_chain.for_this_process() as va:
        yield va
