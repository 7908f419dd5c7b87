"""Shared test configuration.

Tests marked ``webrtc`` need a network namespace with a non-loopback interface (libwebrtc
ignores ``lo``). Run the suite through ``python -m fishtalk.sim.netns -- python -m pytest``;
outside it those tests fail loudly instead of hanging in ICE or being skipped.
"""

from __future__ import annotations

import pytest

from fishtalk.sim.netns import in_namespace

# Shared fixtures: the loopback LiveKit server (sim_server, room_factory) and the session
# harness (sim: the Fish endpoint + a scripted agent).
pytest_plugins = ["sim_fixtures", "session_harness"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("webrtc") is not None and not in_namespace():
        pytest.fail(
            "this test needs WebRTC networking: run the suite through "
            "`python -m fishtalk.sim.netns -- python -m pytest`",
            pytrace=False,
        )
