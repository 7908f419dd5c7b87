"""A real spoken session against the sim, recorded with ``--record-audio``, exported with
``fishtalk export --format html`` and opened in headless Chromium.

Run inside the network namespace (marker ``webrtc``).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from support.child import env_without_fish, run_child, start_fishtalk

from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import run_sim
from fishtalk.workbench.reports.audio import load_audio

from .test_browser import assert_quiet, drive

pytestmark = [pytest.mark.webrtc, pytest.mark.timeout(300)]

SPOKEN = parse_scenario(
    """
    name = "report"
    then = "end"
    [agent]
    greeting = ""
    voice = "tones"
    [[steps]]
    do = "say"
    text = "Hello, here are some tones for the report."
    [[steps]]
    do = "tool"
    name = "lookup_weather"
    input = { city = "Lisbon" }
    output = { forecast = "sunny" }
    duration = 0.1
    [[steps]]
    do = "wait_for"
    event = "user.message"
    timeout = 20.0
    [[steps]]
    do = "say"
    text = "Goodbye now."
    [[steps]]
    do = "end"
    """,
    name="report",
)


async def _session(tmp: Path) -> Path:
    env = dict(os.environ, FISHTALK_CONFIG=str(tmp / "absent.toml"))
    env["XDG_STATE_HOME"] = str(tmp / "state")
    async with run_sim(scenarios={"report": SPOKEN}) as sim:
        env["FISH_API_KEY"] = sim.dev_key
        proc = await start_fishtalk(
            *("chat", "--agent", "report", "--api-url", sim.api_url),
            *("--no-audio", "--plain", "--record-audio"),
            env=env,
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        while b"agent: Hello" not in await asyncio.wait_for(proc.stdout.readline(), 60):
            pass
        proc.stdin.write(b"thanks for the tones\n")
        await proc.stdin.drain()
        out, err = await asyncio.wait_for(proc.communicate(), 90)
        assert proc.returncode == 0, err.decode() + out.decode()
    (journal,) = (tmp / "state" / "fishtalk" / "journal").glob("*.jsonl")
    return journal


async def test_a_recorded_session_page_plays_in_chromium(tmp_path: Path) -> None:
    journal = await _session(tmp_path)
    audio = load_audio(journal.with_suffix(".wav"))
    assert audio is not None
    assert max(audio.agent) > 0.5
    page = tmp_path / "recorded.html"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "fishtalk", "export", str(journal), "--format", "html", "-o", str(page)),
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    size = page.stat().st_size
    assert size < 2 * journal.stat().st_size + len(audio.data_url) + 60_000
    result = await asyncio.to_thread(drive, page, clickLine=2, search="goodbye")
    assert_quiet(result)
    assert abs(result["currentTime"] - result["clickedT"]) < 0.05
    assert result["playing"] == [f"{result['clickedT']:.3f}"]
    assert result["shownAfterSearch"] == 1
    assert "lookup_weather" in "\n".join(result["texts"])


AGENTTEST = Path(__file__).resolve().parents[1] / "agenttest"


def test_fishtalk_test_writes_the_run_page(tmp_path: Path) -> None:
    """``fishtalk test --html`` through the real CLI: a pass repeated and a failure, with
    each session's page beside the report."""
    report = tmp_path / "out" / "report.html"
    report.parent.mkdir()
    env = env_without_fish()
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    files = AGENTTEST / "files"
    proc = run_child(
        [
            *(sys.executable, "-m", "fishtalk", "test", str(files / "pass" / "converse.toml")),
            *(str(files / "fail" / "contains.toml"), "--repeat", "2", "--html", str(report)),
            *("--sim", "--scenario", str(AGENTTEST / "scenarios" / "chat.toml")),
        ],
        timeout=240,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr + proc.stdout
    page = report.read_text(encoding="utf-8")
    assert "2 failed, 2 passed of 4" in page
    sessions = sorted((report.parent / "report-sessions").glob("*.html"))
    assert len(sessions) == 4
    assert page.count('href="report-sessions/') == 4
    result = drive(report, uncheck=["passed"])
    assert_quiet(result)
    assert result["shownAfterUncheck"] == ["failed", "failed"]
