"""The CLI keeps livekit's GC-time FfiHandle assertion off the terminal, and only that.

Each case runs in a fresh interpreter with the real livekit SDK: a handle id the native
side does not know is dropped by the garbage collector, exactly what happens after a room
closed, and we look at what reaches stderr.
"""

from __future__ import annotations

import subprocess
import textwrap

from support.child import run_python

DROP_UNKNOWN_HANDLE = """
    import gc
    from livekit.rtc._ffi_client import FfiClient, FfiHandle
    FfiClient.instance  # the native library is loaded as the SDK does on first use
    {install}
    FfiHandle(987654321)  # unknown to the native side: its __del__ asserts
    gc.collect()

    class Other:
        def __del__(self):
            raise RuntimeError("someone else's bug")

    Other()
    gc.collect()
    print("done", flush=True)
"""


def _run(install: str) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(DROP_UNKNOWN_HANDLE).format(install=install)
    return run_python(code, timeout=60)


def test_without_the_hook_python_prints_the_sdk_assertion() -> None:
    done = _run("")
    assert done.stdout.strip() == "done"
    assert "FfiHandle.__del__" in done.stderr
    assert "AssertionError" in done.stderr


def test_the_hook_silences_only_the_handle_drop() -> None:
    install = (
        "from fishtalk.engine.native import quiet_livekit_handle_drops; "
        "quiet_livekit_handle_drops(); quiet_livekit_handle_drops()"
    )
    done = _run(install)
    assert done.stdout.strip() == "done"
    assert "FfiHandle" not in done.stderr
    assert "AssertionError" not in done.stderr
    # Anything else that is raised in a finalizer is still reported, once.
    assert done.stderr.count("someone else's bug") == 1
