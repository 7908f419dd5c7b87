"""``fishtalk chat`` at a terminal (a pseudo-terminal): prompts, streaming, y/n approval."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle, run_sim

pytestmark = pytest.mark.webrtc

_ASKS = parse_scenario(
    """
    name = "asks"
    then = "converse"
    [agent]
    greeting = ""
    voice = "tones"
    [[steps]]
    do = "wait_for"
    event = "user.message"
    [[steps]]
    do = "client_tool"
    name = "stamp"
    params = { what = "approval" }
    """,
    name="asks",
)

_QUEUE = parse_scenario(
    """
    name = "queue"
    then = "converse"
    [agent]
    greeting = ""
    voice = "tones"
    [[steps]]
    do = "wait_for"
    event = "user.message"
    [[steps]]
    do = "client_tool"
    name = "stamp"
    params = { n = 1 }
    expects_response = false
    announce = false
    [[steps]]
    do = "client_tool"
    name = "stamp"
    params = { n = 2 }
    expects_response = false
    announce = false
    [[steps]]
    do = "wait_for"
    event = "user.message"
    [[steps]]
    do = "client_tool"
    name = "slow"
    params = { n = 3 }
    """,
    name="queue",
)


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    """The in-process sim with the scenario above."""
    async with run_sim(scenarios={"asks": _ASKS, "queue": _QUEUE}) as handle:
        yield handle


class Terminal:
    """A child process on a pseudo-terminal, read and written from the event loop."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become the command
            os.execve(argv[0], argv, env)
        self.buffer = ""
        self._data = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_reader(self.fd, self._readable)
        self.closed = False

    def _readable(self) -> None:
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            asyncio.get_running_loop().remove_reader(self.fd)
            self.closed = True
        self.buffer += chunk.decode("utf-8", "replace")
        self._data.set()

    async def expect(self, text: str, within: float = 30) -> None:
        """Wait until ``text`` has appeared in the output."""

        async def until() -> None:
            while text not in self.buffer:
                if self.closed:
                    raise AssertionError(f"closed before {text!r}: {self.buffer[-2000:]!r}")
                self._data.clear()
                await self._data.wait()

        try:
            await asyncio.wait_for(until(), within)
        except TimeoutError:
            pytest.fail(f"{text!r} not seen within {within} s; output: {self.buffer[-2000:]!r}")

    def type(self, line: str) -> None:
        """Type a line and press Enter."""
        os.write(self.fd, line.encode() + b"\r")

    async def wait(self, within: float = 30) -> int:
        """The child's exit code."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while loop.time() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)  # noqa: ASYNC222 - WNOHANG: no wait
            if pid:
                # What it wrote last may still sit in the terminal: read to the end (EIO).
                while not self.closed and loop.time() < deadline:
                    self._data.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._data.wait(), deadline - loop.time())
                return os.waitstatus_to_exitcode(status)
            await asyncio.sleep(0.05)
        pytest.fail("fishtalk chat did not exit")

    def close(self) -> None:
        """Release the terminal (kill the child if it still runs)."""
        loop = asyncio.get_running_loop()
        loop.remove_reader(self.fd)
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)


async def test_terminal_chat_with_tool_approval(sim: SimHandle, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    stamp = tmp_path / "stamp.py"
    stamp.write_text("import json, sys\nprint(json.dumps({'stamped': json.load(sys.stdin)}))\n")
    config.write_text(
        f'[tools.stamp]\ncommand = ["{sys.executable}", "{stamp}"]\napprove = "ask"\n'
    )
    env = dict(os.environ)
    env.update(
        FISH_API_KEY=sim.dev_key,
        FISHTALK_CONFIG=str(config),
        TERM="dumb",
    )
    argv = [sys.executable, "-m", "fishtalk", "chat", "--agent", "asks"]
    argv += ["--api-url", sim.api_url, "--text-only", "--plain"]
    term = Terminal(argv, env)
    try:
        await term.expect("/help lists commands")
        await term.expect("* connected")
        term.type("please stamp it")
        await term.expect("? allow client tool stamp")
        term.type("y")
        await term.expect("[tool] stamp (client) ok")
        await term.expect('{"stamped":{"what":"approval"}}')
        term.type("/hangup")
        code = await term.wait()
    finally:
        term.close()
    assert code == 0, term.buffer
    assert "You hung up." in term.buffer


async def test_terminal_approvals_queue_and_expire(sim: SimHandle, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    stamp = tmp_path / "stamp.py"
    stamp.write_text("import json, sys\nprint(json.dumps({'stamped': json.load(sys.stdin)}))\n")
    config.write_text(
        f'[tools.stamp]\ncommand = ["{sys.executable}", "{stamp}"]\napprove = "ask"\n'
        f'[tools.slow]\ncommand = ["{sys.executable}", "{stamp}"]\napprove = "ask"\n'
        "timeout = 2\n"
    )
    env = dict(os.environ)
    env.update(FISH_API_KEY=sim.dev_key, FISHTALK_CONFIG=str(config), TERM="dumb")
    argv = [sys.executable, "-m", "fishtalk", "chat", "--agent", "queue"]
    argv += ["--api-url", sim.api_url, "--text-only", "--plain"]
    term = Terminal(argv, env)
    try:
        await term.expect("* connected")
        term.type("two stamps please")
        # Two calls pending at once: one question at a time, oldest first.
        await term.expect('params: {"n": 1} [y/N]')
        await term.expect('[tool] stamp (client) running: {"n":2}')
        # The second call's question waits behind the first (said, not shown yet).
        await term.expect("? another approval is waiting (stamp)")
        assert '{"n": 2}' not in term.buffer
        term.type("y")
        await term.expect('{"stamped":{"n":1}}')
        await term.expect('params: {"n": 2} [y/N]')
        term.type("n")
        await term.expect("The user declined to run tool 'stamp'")
        assert '{"stamped":{"n":2}}' not in term.buffer
        # No question pending: a line is a chat turn again.
        term.type("now the slow one")
        await term.expect("you> now the slow one")
        await term.expect('params: {"n": 3} [y/N]')
        # Nobody answers within the tool's timeout: the user is told, and a late "y" is
        # an ordinary message, not an answer.
        await term.expect("approval for 'slow' timed out; declined")
        term.type("y")
        await term.expect("you> y")
        assert '{"stamped":{"n":3}}' not in term.buffer
        term.type("/hangup")
        code = await term.wait()
    finally:
        term.close()
    assert code == 0, term.buffer
