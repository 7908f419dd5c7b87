"""Shared test configuration.

Tests marked ``webrtc`` need a network namespace with a non-loopback interface (libwebrtc
ignores ``lo``). Run the suite through ``python -m fishtalk.sim.netns -- python -m pytest``;
outside it those tests fail loudly instead of hanging in ICE or being skipped.

The README's test command runs the tests in parallel (pytest-xdist, ``-n``): every worker
is a process of its own, so each has its own event loops, livekit runtime, sim servers (on
port 0) and PulseAudio server (``vaudio``, tests/audio/conftest.py). All workers share the
one network namespace the runner made.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import quiet_livekit

from fishtalk.sim.netns import in_namespace

# Shared fixtures for the loopback LiveKit server (sim_server, room_factory).
pytest_plugins = ["fishtalk.sim.testing"]

quiet_livekit.install()

_PREVIOUS_DIR = pytest.StashKey[Path]()
"""The directory of the test this process ran last."""


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("webrtc") is not None and not in_namespace():
        pytest.fail(
            "this test needs WebRTC networking: run the suite through "
            "`python -m fishtalk.sim.netns -- python -m pytest`",
            pytrace=False,
        )


def pytest_runtest_teardown(item: pytest.Item) -> None:
    item.config.stash[_PREVIOUS_DIR] = item.path.parent


@pytest.fixture(autouse=True)
def _portaudio_follows_vaudio(request: pytest.FixtureRequest) -> None:
    """Point this process (and PortAudio) at ``vaudio`` again after tests elsewhere ran.

    A test module may start a virtual audio server of its own and stop it; PortAudio still
    lists that server's devices until it is re-initialised. Which tests a worker runs, and
    in which order, is up to pytest-xdist, so a test using ``vaudio`` that follows a test of
    another directory re-points the process first (about 50 ms).
    """
    if "vaudio" not in request.fixturenames:
        return
    va = request.getfixturevalue("vaudio")
    if request.config.stash.get(_PREVIOUS_DIR, None) == request.path.parent:
        return
    va.apply_env()
    from fishtalk.audio.devices import rescan

    rescan()
