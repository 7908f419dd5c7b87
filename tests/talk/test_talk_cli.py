"""``--talk-mode`` on ``fishtalk chat`` and ``fishtalk demo``: offered, checked, and
reaching the front end (the demo in line mode, as a real process)."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
from support.child import start_fishtalk

from fishtalk.cli.exits import EXIT_USAGE
from fishtalk.core.talk import NO_MIC_TALK

WAIT = 60.0


@pytest.mark.parametrize("command", ["chat", "demo"])
async def test_the_flag_is_offered_and_checked(command: str) -> None:
    env = dict(os.environ, XDG_CONFIG_HOME="/nonexistent-fishtalk-test")
    env.pop("FISHTALK_CONFIG", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "fishtalk", command, "--help",
        stdout=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), WAIT)
    assert b"--talk-mode" in out
    assert b"always|toggle|push" in out
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "fishtalk", command, "--talk-mode", "shout",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    _, err = await asyncio.wait_for(proc.communicate(), WAIT)
    assert proc.returncode == EXIT_USAGE
    assert b"'shout' is not one of 'always', 'toggle', 'push'" in err.replace(b"\n", b" ")


@pytest.mark.webrtc
@pytest.mark.timeout(120)
async def test_demo_takes_the_talk_mode() -> None:
    """``fishtalk demo --talk-mode toggle --no-audio`` piped (line mode): the microphone
    starts closed, and ``/talk`` says there is none to open (as the TUI does)."""
    env = dict(os.environ, XDG_CONFIG_HOME="/nonexistent-fishtalk-test")
    env.pop("FISHTALK_CONFIG", None)
    proc = await start_fishtalk(
        "demo", "--talk-mode", "toggle", "--no-audio", "--no-journal", env=env
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    lines: list[str] = []

    async def until(text: str) -> None:
        assert proc.stdout is not None
        while text not in lines:
            line = await proc.stdout.readline()
            if not line:
                pytest.fail(f"{text!r} never came: {lines}")
            lines.append(line.decode().rstrip("\n"))

    try:
        await asyncio.wait_for(until("* mic closed — /talk to talk"), WAIT)
        await asyncio.wait_for(until("* connected"), WAIT)
        proc.stdin.write(b"/talk\n")
        await proc.stdin.drain()
        await asyncio.wait_for(until(f"* {NO_MIC_TALK}"), WAIT)
        proc.stdin.write(b"/hangup\n")
        await proc.stdin.drain()
        await asyncio.wait_for(proc.wait(), WAIT)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, lines
