"""Child processes of a test: run a command or a Python snippet to its end, output captured.

A test that needs a fresh interpreter (what an import pulls in, what a process prints or
leaves behind at exit) runs it here; the exit code is the test's to judge.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
"""The tests folder: ``support`` is importable from a child started there."""


def run_child(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``argv`` run to its end with its output captured as text (no shell; never raises
    for its exit code, only for the timeout)."""
    return subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=None if env is None else dict(env),
        cwd=cwd,
        check=False,
    )


def run_python(
    code: str,
    *args: str,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``code`` (with ``args`` in ``sys.argv[1:]``) in a fresh interpreter, this one's."""
    return run_child([sys.executable, "-c", code, *args], timeout=timeout, env=env, cwd=cwd)


def env_without_fish() -> dict[str, str]:
    """This process's environment without the ``FISH_*`` and ``FISHTALK_*`` variables (no
    API key, no config path or API URL of the developer's own)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}


_LOADED = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(sys.modules)))
"""


def loaded_modules(module: str) -> set[str]:
    """Every module in ``sys.modules`` after a fresh interpreter imported ``module`` (an
    import pulled in by anything else in the test process cannot hide there)."""
    done = run_python(_LOADED, module, timeout=60, cwd=TESTS)
    assert done.returncode == 0, f"importing {module} failed:\n{done.stderr}"
    loaded: list[str] = json.loads(done.stdout)
    return set(loaded)


async def start_fishtalk(*args: str, env: Mapping[str, str]) -> asyncio.subprocess.Process:
    """``python -m fishtalk ARGS`` (this interpreter) with every standard stream piped."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "fishtalk",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
    )


async def finish(
    proc: asyncio.subprocess.Process, stdin: bytes, *, within: float
) -> tuple[int, str, str]:
    """Feed ``stdin`` to a piped child and wait up to ``within`` seconds for its end: exit
    code, stdout, stderr. A child still running then is killed, and that fails the test."""
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), within)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"child {proc.pid} did not exit within {within:g} s") from None
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()
