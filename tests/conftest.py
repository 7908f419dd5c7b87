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

import contextlib
import os
import signal
import tempfile
import threading
from collections.abc import Generator

import pytest

from fishtalk.sim.netns import in_namespace
from fishtalk.sim.tracelog import ENV as SIM_TRACE_ENV

# tests/support (what tests and benchmarks share) is importable in every process the suite
# starts too: scripts run by path and ``python -m fishtalk`` children alike.
_TESTS = os.path.dirname(os.path.abspath(__file__))
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (_TESTS, os.environ.get("PYTHONPATH", "")) if p
)

# Shared fixtures: the loopback LiveKit server (sim_server, room_factory), the session
# harness (sim: the Fish endpoint + a scripted agent); livekit's harmless "unknown FFI
# handle" noise kept off the output (tests/quiet_livekit.py).
pytest_plugins = ["sim_fixtures", "session_harness", "quiet_livekit"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Real-time audio tests (echo cancellation, a sound server restart) measure timing-
    # sensitive signals: under `--dist loadgroup` they run one after another on one worker
    # instead of two at once on different workers, each with its own PulseAudio.
    for item in items:
        if item.get_closest_marker("audio") is not None:
            item.add_marker(pytest.mark.xdist_group("audio"))


def pytest_configure(config: pytest.Config) -> None:
    # A run started in the background of a non-interactive shell (`(cmd &)`, nohup in a
    # script) begins with Ctrl-C ignored, and every process it starts inherits that: the
    # tests that press Ctrl-C in a child then see it ignored. Give SIGINT its default.
    if (
        signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        and threading.current_thread() is threading.main_thread()
    ):
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # Every `fishtalk chat` / `demo` the tests run writes a journal to the state directory:
    # keep them out of the real one (child processes inherit the variable).
    if "FISHTALK_TEST_STATE" not in os.environ:
        state = tempfile.mkdtemp(prefix="fishtalk-test-state-")
        os.environ["FISHTALK_TEST_STATE"] = os.environ["XDG_STATE_HOME"] = state
        # ... and the speech that test files synthesise out of the real cache.
        os.environ["XDG_CACHE_HOME"] = os.path.join(state, "cache")
    # Every sim this process or its children start appends its trace here (one file per
    # xdist worker); a failing test shows the part written while it ran (see below).
    fd, trace = tempfile.mkstemp(prefix="fishtalk-sim-trace-", suffix=".log")
    os.close(fd)
    os.environ[SIM_TRACE_ENV] = trace


_TRACE_START = pytest.StashKey[int]()
TRACE_LINES = 400
"""How much of the sim's trace a failure shows: the last lines written during the test."""


def _trace_size() -> int:
    try:
        return os.path.getsize(os.environ[SIM_TRACE_ENV])
    except (KeyError, OSError):
        return 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    """A failure's report gains the sim trace its test wrote (fishtalk/sim/tracelog.py):
    what the sim's agents, signalling, ICE and DTLS did, beside the client's own output."""
    report = yield
    start = item.stash.get(_TRACE_START, None)
    if not report.get_result().failed or start is None:
        return
    with open(os.environ[SIM_TRACE_ENV], "rb") as trace:
        trace.seek(start)
        lines = trace.read().decode("utf-8", "replace").splitlines()
    if lines:
        shown = lines[-TRACE_LINES:]
        cut = f"(the last {len(shown)} of {len(lines)} lines)\n" if len(shown) < len(lines) else ""
        report.get_result().sections.append(("sim trace", cut + "\n".join(shown)))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_TRACE_START] = _trace_size()  # before the test's fixtures start a sim
    if item.get_closest_marker("webrtc") is not None and not in_namespace():
        pytest.fail(
            "this test needs WebRTC networking: run the suite through "
            "`python -m fishtalk.sim.netns -- python -m pytest`",
            pytrace=False,
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    with contextlib.suppress(KeyError, OSError):
        os.unlink(os.environ.pop(SIM_TRACE_ENV))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """In an xdist worker, ignore SIGINT once the session is over.

    When the run ends execnet gives each worker 5 s to finish, then sends it SIGINT (and
    10 s later ends it with os._exit). pytest's last garbage collection, in its clean-up
    after the summary, took longer than that on a loaded machine, and the KeyboardInterrupt
    landing in a finalizer printed a PytestUnraisableExceptionWarning after the summary.
    Every result has been reported by now; only the clean-up is left to interrupt.
    """
    if (
        os.environ.get("PYTEST_XDIST_WORKER")
        and threading.current_thread() is threading.main_thread()
    ):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
