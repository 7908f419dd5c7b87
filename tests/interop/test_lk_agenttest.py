"""``fishtalk test`` against a real livekit-agents agent (issue 27): typed and spoken
turns, a client tool from a fixture, heard latency measured, the user's spoken turn
transcribed interim then final (as RoomIO publishes it), and a hang-up."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from fishtalk.sim.runner import SimInfo
from fishtalk.workbench.agenttest.results import TestResult
from fishtalk.workbench.agenttest.runner import RunOptions, Target, run_tests
from fishtalk.workbench.agenttest.spec import load_test

pytestmark = pytest.mark.webrtc

TEST_FILE = """
agent = "lk-agents"
timeout = 30
text_only = false

[tools.get_time]
result = { time = "12:34" }

[[turns]]
listen = true
expect.contains = "Hello from livekit agents"

[[turns]]
say = "hello"
expect.contains = "nice to meet you"
expect.max_heard = 30

[[turns]]
say = "what time is it"
expect.tool_called = { name = "get_time", params = { zone = "UTC" } }
expect.contains = "12:34"

[[turns]]
hangup = true

[expect]
no_errors = true
end_reason = "user_hangup"
"""


def _run(lk_sim: SimInfo, tmp_path: Path, text: str) -> TestResult:
    path = tmp_path / "lk.toml"
    path.write_text(text, "utf-8")
    target = Target(None, api_url=lk_sim.api_url, api_key=lk_sim.dev_key, journal=True)
    (result,) = asyncio.run(run_tests([load_test(path)], target, RunOptions()))
    assert result.passed, ([str(f) for f in result.failures], result.error, result.transcript)
    return result


def test_a_test_file_passes_against_livekit_agents(lk_sim: SimInfo, tmp_path: Path) -> None:
    result = _run(lk_sim, tmp_path, TEST_FILE)
    assert result.end_reason == "user_hangup"
    heard = [h.heard for h in result.heard if h.heard is not None]
    assert heard, result.heard
    assert all(seconds > 0 for seconds in heard)


SPOKEN = """
agent = "lk-agents"
timeout = 30
text_only = false

[[turns]]
listen = true

[[turns]]
speak = "question.wav"
expect.contains = "I heard you"

[[turns]]
hangup = true
"""


def test_a_spoken_turn_is_transcribed_interim_then_final(lk_sim: SimInfo, tmp_path: Path) -> None:
    espeak = shutil.which("espeak-ng")
    assert espeak is not None, "the interop suite needs espeak-ng"
    subprocess.run(
        [espeak, "-w", str(tmp_path / "question.wav"), "what is the weather like today"],
        check=True,
    )
    result = _run(lk_sim, tmp_path, SPOKEN)
    # RoomIO sent the user's transcript interim ("hearing ...") and then final ("heard ...")
    # under one segment id.
    assert result.journal is not None
    lines = [json.loads(line) for line in Path(result.journal).read_text("utf-8").splitlines()]
    user = [
        ev
        for ev in lines
        if isinstance(ev.get("segment"), dict)
        and ev["segment"].get("role") == "user"
        and not ev["segment"].get("typed")
    ]
    assert any("hearing" in ev["segment"]["text"] and not ev["segment"]["final"] for ev in user), (
        user
    )
    finals = [ev for ev in user if ev["segment"]["final"]]
    assert finals, user
    assert finals[-1]["segment"]["text"].startswith("heard"), user
