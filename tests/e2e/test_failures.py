"""Sessions that never get going: API errors, expired grants, no usable network."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from .conftest import WAIT, Sim, exit_code

pytestmark = pytest.mark.webrtc


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
    import asyncio, subprocess, sys
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    from fishtalk.config import Settings
    from fishtalk.errors import exit_code_for
    from fishtalk.launch import build_session
    from fishtalk.sim import run_sim

    async def main():
        async with run_sim() as sim:
            settings = Settings.model_validate({
                "api": {"url": sim.api_url, "api_key": sim.dev_key},
                "session": {"agent_id": "demo", "text_only": True},
            })
            result = await asyncio.wait_for(build_session(settings).run(), 60)
            print(result.reason, exit_code_for(result.reason, result.error))
            print(result.message)

    asyncio.run(main())
    # Leave as the CLI does (see fishtalk.native.exit_process): no interpreter finalization
    # racing the SDK's native threads.
    from fishtalk.native import exit_process
    exit_process(0)
    """
)


def test_no_usable_network_fails_fast_with_a_reason() -> None:
    """Only loopback (WebRTC ignores it): connection_failed and one sentence, no hang."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "util-linux's unshare is required"
    env = dict(os.environ)
    proc = subprocess.run(
        [unshare, "-rn", sys.executable, "-c", _NO_NETWORK_SCRIPT],
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
