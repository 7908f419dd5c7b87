"""Shared test configuration.

Tests marked ``webrtc`` need a network namespace with a non-loopback interface (libwebrtc
ignores ``lo``). Run the suite through ``python -m fishtalk.sim.netns -- python -m pytest``;
outside it those tests fail loudly instead of hanging in ICE or being skipped.
"""

from __future__ import annotations

import os
import tempfile

import pytest

from fishtalk.sim.netns import in_namespace

# Shared fixtures for the loopback LiveKit server (sim_server, room_factory).
pytest_plugins = ["sim_fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    # Every `fishtalk chat` / `demo` the tests run writes a journal to the state directory:
    # keep them out of the real one (child processes inherit the variable).
    if "FISHTALK_TEST_STATE" not in os.environ:
        state = tempfile.mkdtemp(prefix="fishtalk-test-state-")
        os.environ["FISHTALK_TEST_STATE"] = os.environ["XDG_STATE_HOME"] = state


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("webrtc") is not None and not in_namespace():
        pytest.fail(
            "this test needs WebRTC networking: run the suite through "
            "`python -m fishtalk.sim.netns -- python -m pytest`",
            pytrace=False,
        )
