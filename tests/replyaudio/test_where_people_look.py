"""Where people look (issue 29, outcome 4), end to end against the sim with injected defects:
``fishtalk chat --plain --latency`` notes each reply's audio and closes with the worst
problem, ``fishtalk export`` (txt, md, json) of the journal that call recorded lists the
checks per reply, and the TUI's ended screen and exit line name the worst problem.

The agent under test answers each turn with a gap of :data:`GAP` s mid-reply and a voice
:data:`GAIN_DB` dB too loud (clipping): two problems by the default budgets, the clipping far
the worse (4 % and more against 1 %), so which one is worst does not hang on timing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest
from support.child import env_without_fish
from support.ended import leave_ended

from fishtalk.cli.config import load_settings
from fishtalk.cli.launch import build_session
from fishtalk.core.conversation.reply_audio import DEFAULT_BUDGETS, problems
from fishtalk.engine.paths import CONFIG_PATH_ENV
from fishtalk.sim.process import SimProcess
from fishtalk.sim.runner import SimInfo
from fishtalk.tui.app import FishtalkApp

from .conftest import WAIT, scenario

pytestmark = pytest.mark.webrtc

NO_CONFIG: Final = "/nonexistent-fishtalk-test"
GAP: Final = 1.6
GAIN_DB: Final = 20.0
TIME_STRETCH: Final = 0.1
"""A silence may arrive this much shorter than sent (see test_measures.TIME_STRETCH)."""

FLAWED = scenario("flawed", f"gap_seconds = {GAP}\nvoice_gain_db = {GAIN_DB}", steps=False)
"""Answers each turn (a typed line queued before the agent joined, too: the sim's converse
shows ``thinking`` first, so its line is the turn's answer, not an opening)."""

GAP_TEXT = re.compile(r"gap of (\d+\.\d\d) s at (\d+\.\d\d) s into the reply \(max_gap 1\)")
CLIP_TEXT = re.compile(r"clipping in (\d+\.\d)% of samples \(max_clipping 0\.01\)")
WORST = re.compile(r"worst of (\d+) problems: reply 1: " + CLIP_TEXT.pattern, re.IGNORECASE)


@pytest.fixture(scope="module")
def flawed() -> Iterator[SimInfo]:
    with SimProcess(FLAWED) as info:
        yield info


@dataclass(frozen=True, slots=True)
class Call:
    """A line-mode call to the flawed agent: what it printed and the journal it recorded."""

    out: list[str]
    journal: Path


def _fishtalk(sim: SimInfo, *args: str, stdin: str = "") -> str:
    """``fishtalk ARGS`` as a real process (no user config, the sim's key): its stdout;
    it must exit 0."""
    env = {**env_without_fish(), "FISH_API_KEY": sim.dev_key, "XDG_CONFIG_HOME": NO_CONFIG}
    done = subprocess.run(
        [sys.executable, "-m", "fishtalk", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, f"fishtalk {' '.join(args)}: {done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def call(flawed: SimInfo, tmp_path_factory: pytest.TempPathFactory) -> Call:
    journal = tmp_path_factory.mktemp("call") / "flawed.jsonl"
    out = _fishtalk(
        flawed,
        *("chat", "--plain", "--latency", "--no-audio", "--agent", "flawed"),
        *("--api-url", flawed.api_url, "--journal", str(journal)),
        stdin="hello there\n",
    )
    return Call(out.splitlines(), journal)


def _export(sim: SimInfo, call: Call, fmt: str) -> str:
    return _fishtalk(sim, "export", str(call.journal), "--format", fmt)


def _figures(text: str) -> tuple[float, float, float, int]:
    """The gap (length, where), the clipping share (%) and the problem count of the worst
    note in ``text``; checks them against what the sim injected."""
    gap = GAP_TEXT.search(text)
    clip = CLIP_TEXT.search(text)
    worst = WORST.search(text)
    assert gap is not None, text
    assert clip is not None, text
    assert worst is not None, text
    length, at, share = float(gap[1]), float(gap[2]), float(clip[1])
    assert length >= GAP - TIME_STRETCH, text
    assert at > 0.0, text  # mid-reply
    assert share > 1.0, text  # over its budget of 1 %: the loud voice clips
    return length, at, share, int(worst[1])


def test_line_mode_notes_each_reply_and_closes_with_the_worst(call: Call) -> None:
    out = call.out
    [reply] = [i for i, line in enumerate(out) if line.startswith("agent: You said: hello")]
    [note] = [line for line in out if line.startswith("* audio (reply 1): ")]
    assert out.index(note) > reply, out
    length, at, share, count = _figures("\n".join(out))
    assert f"gap of {length:.2f} s at {at:.2f} s into the reply (max_gap 1)" in note
    assert f"clipping in {share:.1f}% of samples (max_clipping 0.01)" in note
    assert count >= 2
    assert out[-1] == "* You hung up."
    assert out[-2].startswith("* audio: worst of "), out
    assert WORST.fullmatch(out[-2].removeprefix("* audio: ")), out


def test_the_txt_export_lists_each_reply_s_checks(flawed: SimInfo, call: Call) -> None:
    text = _export(flawed, call, "txt")
    lines = text.splitlines()
    closing = call.out[-2].removeprefix("* audio: ")
    head = lines.index(f"audio: {closing}")  # the same words as line mode's closing note
    [row] = [line for line in lines[head + 1 :] if line.startswith("  reply 1: ")]
    length, at, share, _ = _figures(text)
    assert f"longest gap {length:.2f} s, clipping {share:.1f}%" in row
    assert f"; gap of {length:.2f} s at {at:.2f} s into the reply (max_gap 1)" in row
    assert f"; clipping in {share:.1f}% of samples (max_clipping 0.01)" in row


def test_the_md_export_lists_each_reply_s_checks(flawed: SimInfo, call: Call) -> None:
    text = _export(flawed, call, "md")
    lines = text.splitlines()
    closing = call.out[-2].removeprefix("* audio: ")
    head = lines.index("## How the replies sounded")
    assert lines[head + 2] == f"W{closing[1:]}."
    [row] = [line for line in lines[head:] if line.startswith("- reply 1: ")]
    length, at, share, _ = _figures(text)
    assert f"longest gap {length:.2f} s, clipping {share:.1f}%" in row
    assert f"gap of {length:.2f} s at {at:.2f} s into the reply (max_gap 1)" in row


def test_the_json_export_lists_each_reply_s_report_and_problems(
    flawed: SimInfo, call: Call
) -> None:
    data = json.loads(_export(flawed, call, "json"))
    closing = call.out[-2].removeprefix("* audio: ")
    assert data["audio_worst"] == closing
    [report] = [r for r in data["reply_audio"] if r["reply"] == 1]
    said = [p["text"] for p in data["audio_problems"]]
    length, at, share, count = _figures("\n".join([closing, *said]))
    assert report["longest_gap"] == pytest.approx(length, abs=0.005)
    assert report["longest_gap_at"] == pytest.approx(at, abs=0.005)
    assert report["clipping"] * 100 == pytest.approx(share, abs=0.05)
    checks = [(p["reply"], p["check"]) for p in data["audio_problems"]]
    assert (1, "max_gap") in checks
    assert (1, "max_clipping") in checks
    assert len(checks) == count


async def test_the_ended_screen_and_the_exit_line_name_the_worst_problem(flawed: SimInfo) -> None:
    settings = load_settings(
        env={CONFIG_PATH_ENV: "/nonexistent/fishtalk.toml"},
        overrides={
            "api.url": flawed.api_url,
            "api.api_key": flawed.dev_key,
            "session.agent_id": "flawed",
            "audio.enabled": False,  # spoken replies, received and measured; no device
        },
    )
    session = build_session(settings)
    app = FishtalkApp(session, title="sim", ended_linger=None)
    async with app.run_test(size=(160, 30)) as pilot:

        async def until(what: str, done: Callable[[], bool]) -> None:
            for _ in range(int(WAIT / 0.05)):
                if done():
                    return
                await pilot.pause(0.05)
            raise AssertionError(f"timed out waiting for {what}")

        await until(
            "the agent",
            lambda: session.state.status == "connected" and session.state.agent_state is not None,
        )
        await pilot.press(*"hello there", "enter")
        await until("the reply's audio report", lambda: bool(session.state.reply_audio))
        await pilot.press("ctrl+x")
        screen, shown, line = await leave_ended(pilot)
    worst = screen.summary.audio_worst
    assert worst is not None
    assert screen.summary.audio == worst
    said = [p.text for r in session.state.reply_audio for p in problems(r, DEFAULT_BUDGETS)]
    _figures("\n".join([worst, *said]))
    assert f"audio {worst}" in shown.splitlines()
    assert line.startswith("fishtalk: call ended — you hung up · ")
    assert line.endswith(f" · audio: {worst}")
