"""``fishtalk chat --plain`` as a script would use it: a subprocess fed through a pipe."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator

import pytest
from line_mode import QUIET, run_chat
from support.child import start_fishtalk

from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import SimHandle, run_sim

pytestmark = pytest.mark.webrtc

_NASTY = parse_scenario(
    """
    name = "nasty"
    then = "listen"
    [agent]
    greeting = ""
    voice = "tones"
    [[steps]]
    do = "say"
    text = "Look \\u001b[31mred\\u001b[0m and \\u001b]0;pwned\\u0007 title"
    audio = false
    [[steps]]
    do = "end"
    """,
    name="nasty",
)


@pytest.fixture
async def sim() -> AsyncIterator[SimHandle]:
    """The whole sim in-process: every agent id plays its scenario."""
    async with run_sim(scenarios={"quiet": QUIET, "nasty": _NASTY}) as handle:
        yield handle


async def _chat(
    sim: SimHandle, agent: str, stdin: bytes, *extra: str, within: float = 60, key: bool = True
) -> tuple[int, str, str]:
    return await run_chat(
        sim, stdin, "--agent", agent, "--text-only", *extra, key=key, within=within
    )


async def test_pipe_prints_the_reply_and_exits_zero(sim: SimHandle) -> None:
    code, out, err = await _chat(sim, "quiet", b"hello there\n")
    assert code == 0, err
    lines = out.splitlines()
    assert "you> hello there" in lines
    replies = [line for line in lines if line.startswith("agent: ")]
    assert replies, out
    assert lines.index("you> hello there") < lines.index(replies[0])
    assert "* connected" in lines
    assert lines[-1] == "* You hung up."
    assert "\x1b" not in out


async def test_pipe_commands_and_blank_lines(sim: SimHandle) -> None:
    code, out, err = await _chat(sim, "quiet", b"\n/help\n/spoken on\n/bogus\n/hangup\n")
    assert code == 0, err
    assert "*   /interrupt        stop the agent's current reply" in out
    assert "* typed turns get spoken replies" in out
    assert "unknown command '/bogus'" in out
    assert out.splitlines()[-1] == "* You hung up."
    assert "you>" not in out


async def test_remote_text_is_rendered_without_escapes(sim: SimHandle) -> None:
    code, out, err = await _chat(sim, "nasty", b"")
    assert code == 0, err
    assert "\x1b" not in out
    assert "\x07" not in out
    assert any(line.startswith("agent: Look red and") for line in out.splitlines()), out
    assert out.splitlines()[-1] == "* The agent ended the call."
    assert out.count("The agent ended the call.") == 1  # one line per fact


async def test_api_error_exit_code_and_one_line(sim: SimHandle) -> None:
    code, out, err = await _chat(sim, "err-404", b"hello\n")
    assert code == 4
    assert err.count("\n") == 1
    assert err.startswith("fishtalk: ")
    assert "!" not in out  # said once, on stderr, not again on stdout
    assert "Traceback" not in err + out


async def test_expired_session_exit_code(sim: SimHandle) -> None:
    code, _out, err = await _chat(sim, "expired", b"hello\n")
    assert code == 6
    assert "expired" in err


async def test_ctrl_c_hangs_up_and_exits_130(sim: SimHandle) -> None:
    env = dict(os.environ)
    env["FISH_API_KEY"] = sim.dev_key
    env["XDG_CONFIG_HOME"] = "/nonexistent-fishtalk-test"
    env.pop("FISHTALK_CONFIG", None)
    proc = await start_fishtalk(
        "chat", "--agent", "quiet", "--api-url", sim.api_url, "--text-only", env=env
    )
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(30):
            while (line := await proc.stdout.readline()) != b"* connected\n":
                assert line, "fishtalk chat exited before connecting"
            agent = await sim.agent(next(iter(sim.endpoint.sessions)))
            proc.send_signal(signal.SIGINT)
            _out, err = await proc.communicate()
            await agent.wait_note("received user.hangup")
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 130, err.decode()[-3000:]
    assert b"interrupted" in err
    assert b"Traceback" not in err


async def test_public_agent_with_an_origin(sim: SimHandle) -> None:
    code, out, err = await _chat(
        sim, "quiet", b"hi\n", "--public", "--origin", "http://localhost", key=False
    )
    assert code == 0, (out, err[-3000:])
    assert any(line.startswith("agent: ") for line in out.splitlines()), (out, err[-3000:])


async def test_public_agent_needs_an_origin(sim: SimHandle) -> None:
    code, _out, err = await _chat(sim, "quiet", b"hi\n", "--public", key=False)
    assert code == 2
    assert "origin" in err


async def test_public_agent_with_a_foreign_origin_is_refused(sim: SimHandle) -> None:
    code, _out, err = await _chat(
        sim, "quiet", b"hi\n", "--public", "--origin", "https://evil.example", key=False
    )
    assert code == 3
    assert err.startswith("fishtalk: ")
