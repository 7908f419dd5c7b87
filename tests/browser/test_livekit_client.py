"""Conformance with the official JS SDK: ``livekit-client`` (pinned in package-lock.json)
in Debian's headless Chromium, driven by playwright-core, against the simulator.

The test page is served from a second origin (another port on 127.0.0.1), so every
request the SDK and the page make to the sim is cross-origin, as for a web app in
development. Needs ``apt-get install chromium`` and ``npm ci`` at the repository root
(``.ci/run`` does both), and the network namespace (marker ``webrtc``).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.fish.voice import ToneVoice
from fishtalk.sim.runner import SimHandle, run_sim

pytestmark = pytest.mark.webrtc

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PAGE = HERE / "page"
UMD = ROOT / "node_modules" / "livekit-client" / "dist" / "livekit-client.umd.js"
CHROMIUM = os.environ.get("FISHTALK_CHROMIUM", "/usr/bin/chromium")
NODE = shutil.which("node") or "node"

GREETING = "Hello from the simulator."
SCENARIO = f"""
    then = "converse"
    [agent]
    greeting = "{GREETING}"
    voice = "tones"
    idle_seconds = 0
"""


def _require_tools() -> None:
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(f"{CHROMIUM} (apt-get install chromium)")
    if not UMD.exists() or not (ROOT / "node_modules" / "playwright-core").exists():
        missing.append("node_modules (npm ci at the repository root)")
    if missing:
        pytest.fail("the browser conformance suite needs " + ", ".join(missing))


@pytest.fixture
async def page_origin() -> AsyncIterator[str]:
    """A second origin serving the test page and the SDK's own UMD build."""
    app = web.Application()
    files = {
        "/": PAGE / "index.html",
        "/conformance.js": PAGE / "conformance.js",
        "/livekit-client.umd.js": UMD,
    }

    async def serve(request: web.Request) -> web.FileResponse:
        return web.FileResponse(files[request.path])

    for path in files:
        app.router.add_get(path, serve)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def sim(page_origin: str) -> AsyncIterator[SimHandle]:
    scenarios = {"browser": parse_scenario(SCENARIO, name="browser")}
    async with run_sim(
        scenarios=scenarios, voice=ToneVoice(), allowed_origins=[page_origin]
    ) as handle:
        yield handle
        for session_id, agent in handle.agents.items():
            print(f"agent journal for {session_id}:", *agent.journal, sep="\n  ")


async def _drive(config: dict[str, Any], *, within: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="fishtalk-chromium-") as profile:
        config = dict(config, chromium=CHROMIUM, userDataDir=profile)
        proc = await asyncio.create_subprocess_exec(
            NODE,
            str(HERE / "drive.mjs"),
            json.dumps(config),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), within)
        except TimeoutError:
            proc.kill()
            out, err = await proc.communicate()
            pytest.fail(f"the browser run took over {within} s:\n{err.decode()[-4000:]}")
    lines = [line for line in out.decode().splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        pytest.fail(f"drive.mjs failed ({proc.returncode}):\n{err.decode()[-4000:]}")
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    print("browser console (tail):", err.decode()[-3000:], sep="\n")
    return result


async def test_livekit_client_in_chromium(sim: SimHandle, page_origin: str) -> None:
    _require_tools()
    result = await _drive(
        {
            "pageUrl": page_origin + "/",
            "apiUrl": sim.api_url,
            "agentId": "browser",
            "greeting": GREETING,
            "timeoutMs": 20000,
            "reconnects": True,
        },
        within=150.0,
    )
    print("browser result:", json.dumps(result, indent=1))
    assert "error" not in result, result["error"]
    assert result["sdkVersion"] == "2.23.0"
    assert result["origin"] == page_origin != sim.api_url

    # Session creation from the browser: a public agent (no key), cross-origin.
    assert result["session"]["status"] == 201
    # Connect with default options from another origin.
    assert result["connect"]["state"] == "connected"
    assert result["connect"]["identity"].startswith("user-")
    # Agent state, audio received (WebAudio), transcripts.
    assert result["agentState"]["history"][-1] == "listening"
    assert {"thinking", "speaking", "listening"} <= set(result["states"])
    assert result["audio"]["maxRms"] > 0.001
    assert result["greeting"] == {"ms": result["greeting"]["ms"], "text": GREETING, "final": True}
    # Server-side signals: the agent as active speaker while it talks, and quality.
    assert ["agent"] in result["speakers"], result["speakers"]
    assert [] in result["speakers"], result["speakers"]
    assert [result["connect"]["identity"], "excellent"] in result["qualities"]
    assert ["agent", "excellent"] in result["qualities"]
    # A typed turn, answered with words and audio.
    turn = result["typedTurn"]
    assert turn["text"].startswith("You said: hello from the browser")
    assert turn["final"]
    assert {"thinking", "speaking"} <= set(turn["states"])
    # Interrupt: the segment closes early, final, without the later words.
    assert result["interrupt"]["final"]
    assert not result["interrupt"]["complete"]
    # A client tool, answered by the page.
    tool = result["clientTool"]
    assert tool["toolName"] == "get_color"
    assert tool["expectsResponse"]
    assert "teal" in tool["text"]
    # Resume keeps the participant; a full reconnect rejoins with a new one.
    assert result["resume"]["sameSid"]
    assert result["fullReconnect"]["newSid"]
    # The same token in a second tab is refused while the first is connected.
    reuse = result["tokenReuse"]
    assert reuse["refused"], reuse
    assert "single-use" in reuse["error"]["message"], reuse
    assert reuse["firstState"] == "connected"
    # Hangup ends the session; its token no longer joins.
    assert result["hangup"]["reason"] == "user_hangup"
    ended = result["endedTokenRefused"]
    assert ended["refused"], ended
    assert "ended" in ended["error"]["message"], ended
    session = next(iter(sim.endpoint.sessions.values()))
    assert session.status == "completed"
