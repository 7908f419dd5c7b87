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

import gc
import os

import pytest

from fishtalk.sim.netns import in_namespace

# Shared fixtures for the loopback LiveKit server (sim_server, room_factory); livekit's
# harmless "unknown FFI handle" noise kept off the output (tests/quiet_livekit.py).
pytest_plugins = ["fishtalk.sim.testing", "quiet_livekit"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Real-time audio tests (echo cancellation, a sound server restart) measure timing-
    # sensitive signals: under `--dist loadgroup` they run one after another on one worker
    # instead of two at once on different workers, each with its own PulseAudio.
    for item in items:
        if item.get_closest_marker("audio") is not None:
            item.add_marker(pytest.mark.xdist_group("audio"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("webrtc") is not None and not in_namespace():
        pytest.fail(
            "this test needs WebRTC networking: run the suite through "
            "`python -m fishtalk.sim.netns -- python -m pytest`",
            pytrace=False,
        )


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """In an xdist worker, collect the garbage before the worker reports that it finished.

    Once it has, execnet gives the worker 5 s to exit and then interrupts it with SIGINT,
    while pytest's last garbage collection (its unraisable-exception check) may still be
    running finalizers (livekit handles, event loops): that took 6 s on a loaded machine and
    printed a KeyboardInterrupt warning after the summary. Collected here, while the
    controller waits without a deadline, little is left for that last collection.
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for _ in range(3):
            gc.collect()
