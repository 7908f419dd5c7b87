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

import pytest

from fishtalk.sim.netns import in_namespace

# Shared fixtures for the loopback LiveKit server (sim_server, room_factory); livekit's
# harmless "unknown FFI handle" noise kept off the output (tests/quiet_livekit.py).
pytest_plugins = ["fishtalk.sim.testing", "quiet_livekit"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("webrtc") is not None and not in_namespace():
        pytest.fail(
            "this test needs WebRTC networking: run the suite through "
            "`python -m fishtalk.sim.netns -- python -m pytest`",
            pytrace=False,
        )
