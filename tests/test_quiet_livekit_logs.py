"""The test processes keep livekit's "Attempted to drop unknown FFI handle" line quiet.

The real case runs in a fresh interpreter with the real livekit SDK and no logging
configuration, as at interpreter exit after pytest's summary, where Python's last-resort
handler prints warnings on stderr. A handle id the native side does not know is dropped,
so the native library logs the line; an observing filter waits until the record has
arrived, so its absence from stderr is not a matter of timing.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import quiet_livekit
from support.child import run_child, run_python

TESTS = Path(__file__).resolve().parent
LINE = "Attempted to drop unknown FFI handle"

DROP_UNKNOWN_HANDLE = """
    import gc, logging, threading
    from livekit.rtc._ffi_client import FfiClient, FfiHandle
    from fishtalk.engine.native import quiet_livekit_handle_drops

    quiet_livekit_handle_drops()  # the GC-time assertion (another workaround, tested elsewhere)
    FfiClient.instance
    {install}
    arrived = threading.Event()

    def observe(record):  # a filter, not a handler: the last-resort handler still applies
        if "unknown FFI handle" in record.getMessage():
            print("arrived as", record.levelname, flush=True)
            arrived.set()
        return True

    livekit = logging.getLogger("livekit")
    livekit.addFilter(observe)
    FfiHandle(987654321)  # unknown to the native side
    gc.collect()
    if not arrived.wait(20):
        print("the native library logged nothing", flush=True)
    livekit.removeFilter(observe)
    # Everything else still reaches stderr:
    livekit.warning("%s:%s:%s - %s", "t", 1, "m", "Something else went wrong")
    livekit.error("%s:%s:%s - %s", "t", 2, "m", "Attempted to drop unknown FFI handle: 5")
    logging.getLogger("other").warning("x - Attempted to drop unknown FFI handle: 6")
"""


def _run(install: str) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(DROP_UNKNOWN_HANDLE).format(install=install)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), *sys.path]))
    return run_python(code, timeout=60, env=env)


def _others_present(stderr: str) -> None:
    assert "t:1:m - Something else went wrong" in stderr
    assert "t:2:m - Attempted to drop unknown FFI handle: 5" in stderr
    assert "x - Attempted to drop unknown FFI handle: 6" in stderr


def test_without_the_filter_the_sdk_line_reaches_stderr() -> None:
    done = _run("")
    assert done.stdout.strip() == "arrived as WARNING", done.stderr
    assert f"{LINE}: 987654321" in done.stderr
    _others_present(done.stderr)


def test_the_filter_keeps_only_that_line_off_stderr() -> None:
    done = _run("import quiet_livekit; quiet_livekit.install(); quiet_livekit.install()")
    assert done.stdout.strip() == "arrived as DEBUG", done.stderr
    assert "987654321" not in done.stderr
    _others_present(done.stderr)
    assert done.stderr.count(LINE) == 2  # the two lookalikes, nothing more


def test_the_test_processes_have_the_filter_and_the_hook_installed() -> None:
    filters = logging.getLogger("livekit").filters
    assert sum(isinstance(f, quiet_livekit.UnknownHandleDropToDebug) for f in filters) == 1
    assert getattr(sys.unraisablehook, "_fishtalk_quiet_handles", False)


A_TEST_RUN = """
    import gc

    from livekit.rtc._ffi_client import FfiClient, FfiHandle

    FfiClient.instance


    class Other:
        def __del__(self):
            raise RuntimeError("someone else's bug")


    def test_drops_an_unknown_handle():
        FfiHandle(987654321)
        gc.collect()


    def test_someone_elses_finalizer_fails():
        Other()
        gc.collect()
"""

AFTER_THE_SUMMARY = """
    from livekit.rtc._ffi_client import FfiHandle


    def pytest_unconfigure(config):
        FfiHandle(987654322)  # as a handle the last garbage collection finds
"""


def _pytest_run(tmp_path: Path, *plugin: str) -> str:
    (tmp_path / "test_noise.py").write_text(textwrap.dedent(A_TEST_RUN), "utf-8")
    (tmp_path / "conftest.py").write_text(textwrap.dedent(AFTER_THE_SUMMARY), "utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), *sys.path]))
    done = run_child(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "test_noise.py"],
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    return done.stdout + done.stderr


def test_a_pytest_run_without_the_plugin_shows_the_noise(tmp_path: Path) -> None:
    output = _pytest_run(tmp_path)
    assert "FfiHandle.__del__" in output
    assert f"{LINE}: 987654322" in output.split("2 passed")[1]  # after the summary
    assert "someone else's bug" in output


def test_a_pytest_run_with_the_plugin_shows_only_the_other_failure(tmp_path: Path) -> None:
    output = _pytest_run(tmp_path, "-p", "quiet_livekit")
    assert "FfiHandle" not in output
    assert LINE not in output
    assert "someone else's bug" in output


def _record(name: str, level: int, *args: object) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, "%s:%s:%s - %s", args, None)


SDK_ARGS = ("livekit_ffi::server", 279, "livekit_ffi::server", f"{LINE}: 42")


def test_the_filter_demotes_exactly_the_sdk_warning() -> None:
    record = _record("livekit", logging.WARNING, *SDK_ARGS)
    assert quiet_livekit.UnknownHandleDropToDebug().filter(record)
    assert (record.levelno, record.levelname) == (logging.DEBUG, "DEBUG")


@pytest.mark.parametrize(
    ("name", "level", "args"),
    [
        ("livekit", logging.ERROR, SDK_ARGS),
        ("livekit", logging.INFO, SDK_ARGS),
        ("livekit.rtc", logging.WARNING, SDK_ARGS),
        ("fishtalk", logging.WARNING, SDK_ARGS),
        ("livekit", logging.WARNING, (*SDK_ARGS[:3], f"{LINE}: 42 and more")),
        ("livekit", logging.WARNING, (*SDK_ARGS[:3], f"{LINE}: none")),
        ("livekit", logging.WARNING, (*SDK_ARGS[:3], "Attempted to drop handle: 42")),
    ],
)
def test_the_filter_leaves_everything_else_alone(
    name: str, level: int, args: tuple[object, ...]
) -> None:
    record = _record(name, level, *args)
    assert quiet_livekit.UnknownHandleDropToDebug().filter(record)
    assert record.levelno == level
    assert record.levelname == logging.getLevelName(level)
