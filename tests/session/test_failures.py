"""Sessions that never get going: API errors, expired grants, no usable network."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

import pytest
from session_harness import FAST_SLACK, WAIT, Sim, exit_code, until

from fishtalk.cli.launch import build_session
from fishtalk.cli.settings import Settings
from fishtalk.engine.session import Timeouts

pytestmark = pytest.mark.webrtc

CONNECT = 3.0
"""The injected connect timeout of the no-network test (the default is 15 s)."""
RECONNECT = 2.0
"""The injected reconnect budget of the dead-server test (the default is 20 s)."""


async def test_expired_grant_is_refused_before_connecting(sim: Sim) -> None:
    session = sim.session(sim.settings(agent_id="expired"))
    result = await asyncio.wait_for(session.run(), WAIT)
    assert (result.reason, exit_code(result)) == ("session_expired", 6)
    assert "expired" in result.message
    assert sim.server.participants(next(iter(sim.endpoint.sessions.values())).room) == []


@pytest.mark.parametrize(
    ("agent_id", "code"),
    [("err-404", 4), ("err-401", 3), ("err-422", 6), ("transport-webrtc", 6)],
)
async def test_api_errors_end_the_session_with_their_exit_code(
    sim: Sim, agent_id: str, code: int
) -> None:
    session = sim.session(sim.settings(agent_id=agent_id))
    result = await asyncio.wait_for(session.run(), WAIT)
    assert exit_code(result) == code
    assert result.message
    assert "\n" not in result.message
    assert session.state.ended


_NO_NETWORK_SCRIPT = textwrap.dedent(
    """
    import asyncio, subprocess, sys, time
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    from fishtalk.cli.settings import Settings
    from fishtalk.cli.exits import exit_code_for
    from fishtalk.cli.launch import build_session
    from fishtalk.engine.session import Timeouts
    from fishtalk.sim.runner import run_sim

    async def main():
        async with run_sim() as sim:
            settings = Settings.model_validate({
                "api": {"url": sim.api_url, "api_key": sim.dev_key},
                "session": {"agent_id": "demo", "text_only": True},
            })
            timeouts = Timeouts(connect=float(sys.argv[1]), signal_attempt=1.0)
            started = time.monotonic()
            result = await asyncio.wait_for(build_session(settings, timeouts=timeouts).run(), 60)
            elapsed = time.monotonic() - started
            print(result.reason, exit_code_for(result.reason, result.error))
            print(result.message)
            print(f"{elapsed:.2f}")

    asyncio.run(main())
    # Leave as the CLI does (see fishtalk.engine.native.exit_process): no interpreter finalization
    # racing the SDK's native threads.
    from fishtalk.engine.native import exit_process
    exit_process(0)
    """
)


def test_no_usable_network_fails_fast_with_a_reason() -> None:
    """Only loopback (WebRTC ignores it): connection_failed and one sentence, no hang."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "util-linux's unshare is required"
    env = dict(os.environ)
    proc = subprocess.run(
        [unshare, "-rn", sys.executable, "-c", _NO_NETWORK_SCRIPT, str(CONNECT)],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "connection_failed 7"
    assert "WebRTC" in lines[1]
    assert f"within {CONNECT:g} s" in lines[1]
    # Fails fast: the injected connect timeout, plus teardown, not the default 15 s.
    assert float(lines[2]) < CONNECT + FAST_SLACK


def _start_sim_process() -> tuple[subprocess.Popen[str], str, str]:
    """``fishtalk sim serve`` in its own process (so it can die as a crashed server does)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "fishtalk", "sim", "serve", "--port", "0", "--scenario", "converse"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    url = key = None
    while url is None or key is None:
        line = proc.stdout.readline()  # the banner comes at once; the test's timeout bounds it
        assert line, "the sim exited before printing its banner"
        if match := re.search(r"API URL:\s+(\S+)", line):
            url = match.group(1)
        if match := re.search(r"API key:\s+(\S+)", line):
            key = match.group(1)
    return proc, url, key


async def test_a_killed_server_ends_the_call_within_the_reconnect_budget() -> None:
    """The server process dies mid-call (no leave, no close): the SDK alone retries for
    about 25 s; the session gives up after its reconnect budget with connection_lost."""
    proc, url, key = await asyncio.wait_for(asyncio.to_thread(_start_sim_process), 60)
    try:
        settings = Settings.model_validate(
            {
                "api": {"url": url, "api_key": key},
                "session": {"agent_id": "converse", "text_only": True},
            }
        )
        session = build_session(settings, timeouts=Timeouts(reconnect=RECONNECT))
        statuses: list[str] = []
        session.add_listener(
            lambda s, _e: statuses.append(s.status) if statuses[-1:] != [s.status] else None
        )
        run = asyncio.ensure_future(session.run())
        await until(session, lambda s: s.status == "connected" and s.agent_ready, within=WAIT)
        proc.kill()  # SIGKILL: the server vanishes without a word
        killed = time.monotonic()
        result = await asyncio.wait_for(run, RECONNECT + FAST_SLACK)
        elapsed = time.monotonic() - killed
    finally:
        proc.kill()
        await asyncio.to_thread(proc.wait, 10)
    assert (result.reason, exit_code(result)) == ("connection_lost", 7)
    assert statuses[-2:] == ["reconnecting", "ended"]
    assert elapsed < RECONNECT + FAST_SLACK
