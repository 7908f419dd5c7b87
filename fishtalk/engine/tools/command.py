"""Command-backed client tools: the agent's call runs one of the user's programs.

Contract of a command tool (declared as ``[tools.NAME] command = [...]``):

* The program is started from an argv list, never through a shell, so nothing in the
  params can become shell syntax. The params arrive as one JSON object on stdin.
* stdout is the result: parsed as JSON when it parses, otherwise sent as text (empty
  stdout sends ``{}``). More than 60 KB of output kills the tool and fails the call.
* A non-zero exit fails the call with the tail of stderr.
* The child gets a fresh environment: a few harmless basics (PATH, HOME, LANG, ...), the
  names the declaration's ``env`` allowlists, and ``FISHTALK_TOOL``/``FISHTALK_CALL_ID``.
  The Fish API key is never passed, even if allowlisted, under any name fishtalk reads it
  from (``FISH_API_KEY``, ``FISHTALK_API__API_KEY`` in any case).
* The tool runs in its own session and process group. On timeout, hangup or cancellation
  the whole group is killed (SIGKILL; on Windows ``taskkill /T /F`` ends the process
  tree), so children it forked die with it. After a normal
  exit, a leftover process that still holds the tool's stdout/stderr open past a short
  grace period is killed too; programs that should outlive the call must detach their
  output (e.g. ``setsid -f prog >/dev/null 2>&1``).
* The call's timeout is enforced by the :class:`~fishtalk.engine.tools.runner.ToolRunner`
  (per-tool ``timeout``, at most 120 s), which cancels the handler: that is what kills it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import JsonValue

from fishtalk.engine.system import kill_process_tree, new_process_group
from fishtalk.engine.tools.approval import ApproveMode, require_approval
from fishtalk.engine.tools.registry import ToolContext, ToolError
from fishtalk.engine.tools.runner import MAX_RESULT_BYTES
from fishtalk.engine.tools.secret_env import SECRET_ENV_NAMES, is_secret_env_name

MAX_OUTPUT_BYTES: Final = MAX_RESULT_BYTES
"""stdout beyond this many bytes kills the tool and fails the call."""
STDERR_TAIL_BYTES: Final = 2000
"""How much of the end of stderr an error result carries."""
EXIT_GRACE_SECONDS: Final = 1.0
"""After the tool exits, how long leftover processes may keep its output open."""
SETTLE_SECONDS: Final = 10.0
"""Upper bound for reaping a killed tool (normally milliseconds, slower on a loaded box)."""

BASE_ENV: Final = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
)
"""Passed to every command tool when set: what ordinary programs need to behave."""
NEVER_PASSED: Final = frozenset(SECRET_ENV_NAMES)
"""Never given to a tool, whatever the allowlist says: in any case of their letters
(every name :func:`~fishtalk.engine.tools.secret_env.is_secret_env_name` accepts)."""


class CommandToolError(ToolError):
    """A command tool failed: could not start, exited non-zero, or flooded its output."""


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """One command tool, as declared."""

    name: str
    argv: tuple[str, ...]
    cwd: Path | None = None
    env_allowlist: tuple[str, ...] = ()
    approve: ApproveMode = "ask"
    description: str = ""
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """Fixed variables for the child (tests and embedding; not from config)."""

    def __post_init__(self) -> None:
        if not self.argv or not self.argv[0]:
            raise ValueError(f"command tool {self.name!r}: empty command")
        forbidden = {name for name in self.env_allowlist if is_secret_env_name(name)}
        if forbidden:
            raise ValueError(
                f"command tool {self.name!r}: {', '.join(sorted(forbidden))} "
                "is never passed to tools"
            )

    @property
    def command_line(self) -> str:
        """The argv as a copy-pasteable line, for display only (it is never run by a shell)."""
        return shlex.join(self.argv)

    def child_env(
        self, environ: Mapping[str, str], ctx: ToolContext | None = None
    ) -> dict[str, str]:
        """The environment the child gets: basics + allowlist, minus anything secret."""
        env: dict[str, str] = {}
        for name in (*BASE_ENV, *self.env_allowlist):
            if is_secret_env_name(name):
                continue
            value = environ.get(name)
            if value is not None:
                env[name] = value
        env.setdefault("PATH", os.defpath)
        env.update(self.extra_env)
        env["FISHTALK_TOOL"] = self.name
        if ctx is not None:
            env["FISHTALK_CALL_ID"] = ctx.call_id
        for name in [name for name in env if is_secret_env_name(name)]:
            del env[name]
        return env

    def problem(self, environ: Mapping[str, str] | None = None) -> str | None:
        """Why this tool cannot run right now (program or cwd missing), or None."""
        environ = os.environ if environ is None else environ
        if self.cwd is not None and not self.cwd.is_dir():
            return f"working directory not found: {self.cwd}"
        program = self.argv[0]
        path = self.child_env(environ).get("PATH")
        if os.sep in program:
            base = self.cwd if self.cwd is not None else Path.cwd()
            candidate = base / program
            if not (candidate.is_file() and os.access(candidate, os.X_OK)):
                return f"program not found or not executable: {program}"
        elif shutil.which(program, path=path) is None:
            return f"program not found on PATH: {program}"
        return None


class CommandTool:
    """The handler for one command tool (register it in a ToolRegistry)."""

    def __init__(self, spec: CommandSpec, *, environ: Mapping[str, str] | None = None) -> None:
        self.spec = spec
        self._environ = environ

    async def __call__(self, params: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
        """Ask for approval (per the spec's mode), then run the command with ``params``."""
        await require_approval(self.spec.approve, ctx, params, self.spec.command_line)
        environ = os.environ if self._environ is None else self._environ
        return await run_command(self.spec, params, env=self.spec.child_env(environ, ctx))


async def run_command(
    spec: CommandSpec, params: Mapping[str, JsonValue], *, env: Mapping[str, str]
) -> JsonValue:
    """Run ``spec`` once: params as JSON on stdin, stdout parsed as JSON or text.

    Raises CommandToolError on failure. Cancelling the caller kills the process group.
    """
    if spec.cwd is not None and not spec.cwd.is_dir():
        raise CommandToolError(f"working directory not found: {spec.cwd}")
    payload = json.dumps(params, ensure_ascii=False).encode("utf-8")
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *spec.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=spec.cwd,
            env=dict(env),
            **new_process_group(),  # one kill reaches every child (see fishtalk.engine.system)
        )
    )
    try:
        proc = await asyncio.shield(spawn)
    except FileNotFoundError:
        raise CommandToolError(f"program not found: {spec.argv[0]}") from None
    except PermissionError:
        raise CommandToolError(f"program is not executable: {spec.argv[0]}") from None
    except OSError as exc:
        raise CommandToolError(f"cannot start {spec.argv[0]}: {exc.strerror or exc}") from None
    except asyncio.CancelledError:
        # Cancelled mid-spawn (a short timeout on a busy machine): the child may exist
        # already. Let the spawn finish, then kill the group before giving up.
        await _ride_out(spawn.done, SETTLE_SECONDS)
        if spawn.done() and not spawn.cancelled() and spawn.exception() is None:
            started = spawn.result()
            _kill_group(started.pid)
            await _settle(started)
        raise

    # Pipes were requested above, so all three streams exist.
    assert proc.stdin is not None
    assert proc.stdout is not None
    assert proc.stderr is not None
    out = _Capture(limit=MAX_OUTPUT_BYTES)
    err = _Capture(limit=STDERR_TAIL_BYTES, keep_tail=True)
    feeder = asyncio.ensure_future(_feed(proc.stdin, payload))
    readers: asyncio.Future[object] = asyncio.ensure_future(
        asyncio.gather(out.read(proc.stdout), err.read(proc.stderr))
    )
    # Process.wait() only resolves once the pipes close too, so exit is watched separately.
    exited: asyncio.Future[object] = asyncio.ensure_future(_exit_of(proc))
    try:
        watch = {readers, exited, out.overflowed}
        await asyncio.wait(watch, return_when=asyncio.FIRST_COMPLETED)
        if not out.overflowed.done() and not readers.done():
            # The tool has exited; its output ends when every holder of the pipes is gone.
            await asyncio.wait({readers, out.overflowed}, timeout=EXIT_GRACE_SECONDS)
            if not readers.done():
                _kill_group(proc.pid)
        if out.overflowed.done():
            _kill_group(proc.pid)
            raise CommandToolError(
                f"output exceeded {MAX_OUTPUT_BYTES // 1000} KB; the tool was stopped"
            )
        await readers
        await proc.wait()
    except BaseException:
        # Timeout (the runner cancels us), hangup, or our own error: nothing survives.
        _kill_group(proc.pid)
        raise
    finally:
        await _settle(proc, readers, feeder, exited)

    code = proc.returncode
    if code != 0:
        tail = err.text().strip()
        if code is not None and code < 0:
            reason = f"killed by signal {_signal_name(-code)}"
        else:
            reason = f"exited with status {code}"
        raise CommandToolError(f"{reason}: {tail}" if tail else reason)
    return _parse_output(out.text())


async def _ride_out(condition: Callable[[], bool], limit: float) -> bool:
    """Poll until ``condition()`` holds or ``limit`` seconds pass, riding out
    cancellations; return whether one arrived (the caller re-raises it after cleanup).

    Polling rather than awaiting a task on purpose: at shutdown ``asyncio.run`` cancels
    every task, including any we would wait on."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    interrupted = False
    while not condition() and loop.time() < deadline:
        try:
            await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            interrupted = True
    return interrupted


async def _settle(proc: asyncio.subprocess.Process, *tasks: asyncio.Future[Any]) -> None:
    """Make sure the child is reaped and its pipes closed before we return, so nothing
    outlives the call (a loop closing right after would leak the transports). Bounded and
    not interruptible: after a SIGKILL this is quick. A cancellation arriving meanwhile is
    re-raised at the end."""
    readers = tasks[:1]
    interrupted = await _ride_out(
        lambda: proc.returncode is not None and all(t.done() for t in readers), SETTLE_SECONDS
    )
    for task in tasks:
        if not task.done():
            task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if proc.returncode is not None and proc.returncode < 0:
        # Killed: the pipe transports close in callbacks scheduled just after the exit is
        # reported; give them a moment so none outlives a loop that is about to close.
        until = asyncio.get_running_loop().time() + 0.05
        interrupted = (
            await _ride_out(lambda: asyncio.get_running_loop().time() >= until, 1.0) or interrupted
        )
    if interrupted:
        raise asyncio.CancelledError


async def _exit_of(proc: asyncio.subprocess.Process) -> int:
    while proc.returncode is None:  # noqa: ASYNC110 - asyncio has no "exited" event while pipes stay open
        await asyncio.sleep(0.05)
    return proc.returncode


def _parse_output(text: str) -> JsonValue:
    stripped = text.strip()
    if not stripped:
        return None
    try:
        value: JsonValue = json.loads(stripped)
    except ValueError:
        return text.rstrip("\n")
    return value


class _Capture:
    """Collects one pipe: the first ``limit`` bytes (flagging overflow) or the last ones."""

    def __init__(self, limit: int, *, keep_tail: bool = False) -> None:
        self.limit = limit
        self.keep_tail = keep_tail
        self.data = bytearray()
        self.overflowed: asyncio.Future[object] = asyncio.get_running_loop().create_future()

    async def read(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.data += chunk
            if len(self.data) <= self.limit:
                continue
            if self.keep_tail:
                del self.data[: len(self.data) - self.limit]
            else:
                # Keep draining (and discarding) so the pipe reaches EOF once the tool is
                # killed; a paused pipe would keep the subprocess transport open.
                del self.data[self.limit :]
                if not self.overflowed.done():
                    self.overflowed.set_result(None)

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


async def _feed(stdin: asyncio.StreamWriter, payload: bytes) -> None:
    # A tool may ignore stdin and exit early: a broken pipe is not an error.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(payload)
        await stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
        stdin.close()


def _kill_group(pgid: int) -> None:
    kill_process_tree(pgid)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
