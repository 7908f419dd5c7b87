"""Heard-latency budgets in ``fishtalk test``: the format, the checks, the reports, the WAV
microphone's timing taps, and one run against the sim whose figure lands in the JSON
report."""

from __future__ import annotations

import array
import asyncio
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fishtalk.cli.exits import exit_code_of, exit_code_of_run
from fishtalk.core.conversation.latency import Incomplete, Waterfall
from fishtalk.core.errors import TestFileError
from fishtalk.sim.runner import SimInfo
from fishtalk.workbench.agenttest.checks import check
from fishtalk.workbench.agenttest.command import RunOutcome
from fishtalk.workbench.agenttest.expect import Expect
from fishtalk.workbench.agenttest.report import json_report, junit_xml, summary_lines, write_reports
from fishtalk.workbench.agenttest.results import HeardTurn, TestResult
from fishtalk.workbench.agenttest.runner import (
    RunOptions,
    Target,
    _waterfalls,
    run_tests,
)
from fishtalk.workbench.agenttest.spec import STARTER, parse_test
from fishtalk.workbench.agenttest.summary import heard_budgets
from fishtalk.workbench.agenttest.wavmic import FRAME_BYTES, WavMicrophone, speech_end

from .conftest import FILES

SAY = "turn 1 (say 'hi')"


def error_of(text: str) -> str:
    with pytest.raises(TestFileError) as caught:
        parse_test(text, source="t.toml")
    return str(caught.value)


# --- the format -------------------------------------------------------------------------------


def test_heard_budgets_parse() -> None:
    test = parse_test(
        '[[turns]]\nsay = "hi"\nexpect.max_heard = 1.5\n\n[expect]\np95_heard = 1.2\n'
        "max_heard = 2\n",
        source="t.toml",
    )
    assert test.turns[0].expect.max_heard == 1.5
    assert test.expect.p95_heard == 1.2
    assert test.expect.max_heard == 2
    assert test.heard_budget
    assert not parse_test('[[turns]]\nsay = "hi"\n', source="t.toml").heard_budget
    assert parse_test(STARTER, source="s.toml").heard_budget is False  # commented out


def test_heard_budgets_are_validated() -> None:
    assert error_of("[[turns]]\nlisten = true\nexpect.max_heard = 1\n") == (
        "t.toml:1: turns[1]: expect.max_heard goes with a say or speak turn (only a user "
        "turn has a heard latency)"
    )
    assert error_of('[[turns]]\nsay = "hi"\nexpect.p95_heard = 1\n').startswith(
        "t.toml:1: turns[1]: expect.p95_heard goes in the file's [expect]"
    )
    assert error_of("[[turns]]\nlisten = true\n[expect]\np95_heard = 1\n") == (
        "t.toml:3: expect: p95_heard needs a say or speak turn to measure"
    )
    assert error_of('[[turns]]\nsay = "hi"\nexpect.max_heard = 0\n').startswith(
        "t.toml:3: turns[1].expect.max_heard: must be more than 0"
    )
    assert "unknown key" in error_of('[[turns]]\nsay = "hi"\nexpect.max_heard_ms = 1\n')


# --- the checks -------------------------------------------------------------------------------


def heard_check(expect: Expect, heard: list[HeardTurn], *, pooled: bool = False) -> list[str]:
    failures = check(
        expect,
        SAY if len(heard) == 1 and not pooled else "session",
        lines=["hello"],
        calls=[],
        errors=[],
        states=[],
        end_reason=None,
        first_text=0.1,
        heard=heard,
        pooled=pooled,
    )
    return [f"{f.expected} | {f.seen}" for f in failures]


def test_max_heard_per_turn() -> None:
    assert heard_check(Expect(max_heard=1.0), [HeardTurn(SAY, 0.42)]) == []
    assert heard_check(Expect(max_heard=0.4), [HeardTurn(SAY, 0.42)]) == [
        "heard within 0.4 s | heard: 0.420 s"
    ]
    # No figure fails, with the reason and what to do about it.
    assert heard_check(Expect(max_heard=1.0), [HeardTurn(SAY, None, "text-only")]) == [
        "heard within 1 s | no heard figure: text-only (the reply came as text: set "
        "text_only = false for spoken replies)"
    ]
    assert heard_check(Expect(max_heard=1.0), [HeardTurn(SAY, None, "not measured")]) == [
        "heard within 1 s | no heard figure: not measured (fishtalk measured nothing for this turn)"
    ]
    # Under [expect]: every say/speak turn, each named.
    two = [HeardTurn(SAY, 0.3), HeardTurn("turn 2 (say 'x')", 2.0)]
    assert heard_check(Expect(max_heard=1.0), two) == [
        "heard within 1 s | turn 2 (say 'x'): heard: 2.000 s"
    ]


def test_p95_heard() -> None:
    turns = [HeardTurn(f"turn {i}", i / 10) for i in range(1, 21)]  # 0.1 .. 2.0 s
    assert heard_check(Expect(p95_heard=1.9), turns) == []
    assert heard_check(Expect(p95_heard=1.8), turns) == [
        "p95 heard within 1.8 s | p95 heard: 1.900 s over 20 turn(s)"
    ]
    missing = [*turns, HeardTurn("turn 21", None, "no audio")]
    assert heard_check(Expect(p95_heard=5), missing) == [
        "p95 heard within 5 s | turn 21: no heard figure: no audio (the reply came without audio)"
    ]
    assert heard_check(Expect(p95_heard=5), []) == [
        "p95 heard within 5 s | no say or speak turn was measured"
    ]
    # Checked across runs instead (--repeat): not in the run itself.
    assert heard_check(Expect(p95_heard=0.1), turns, pooled=True) == []


def waterfall(at: float, heard: float | None, incomplete: Incomplete | None = None) -> Waterfall:
    if heard is None:
        return Waterfall(turn=1, kind="typed", user_ended_at=at, incomplete=incomplete)
    return Waterfall(
        turn=1,
        kind="typed",
        user_ended_at=at,
        audio_received_at=at + heard,
        audio_handed_at=at + heard,
        output_latency=0.0,
    )


def test_waterfalls_go_to_the_turn_they_ended_in() -> None:
    starts = [10.0, 20.0, 30.0]
    early = waterfall(5.0, 0.1)  # before the first turn: the greeting's time
    first, second = waterfall(11.0, 0.4), waterfall(21.0, None, incomplete="text-only")
    split, last = waterfall(31.0, None, incomplete="no audio"), waterfall(33.0, 0.5)
    unprompted = Waterfall(turn=9, kind="unprompted", user_ended_at=12.0)
    found = _waterfalls(starts, (early, first, unprompted, second, split), last)
    assert found == {0: first, 1: second, 2: last}


# --- the reports ------------------------------------------------------------------------------


def result(run: int, *heard: float | None, budget: float | None = None) -> TestResult:
    r = TestResult("t", "t.toml", run=run, duration=1.0)
    r.heard = [
        HeardTurn(f"turn {i} (say 'x')", h, None if h is not None else "text-only")
        for i, h in enumerate(heard, start=1)
    ]
    r.p95_heard = budget
    return r


def test_reports_carry_the_heard_figures() -> None:
    r = result(1, 0.42, None)
    data = json.loads(json.dumps(json_report([r], exit_code_of)))
    assert data["results"][0]["heard"] == [
        {"turn": "turn 1 (say 'x')", "heard_ms": 420.0, "incomplete": None, "waterfall": None},
        {
            "turn": "turn 2 (say 'x')",
            "heard_ms": None,
            "incomplete": "text-only",
            "waterfall": None,
        },
    ]
    assert data["summary"]["heard_p50"] == 0.42
    assert data["summary"]["heard_p95"] == 0.42
    case = ET.fromstring(junit_xml([r])).find("testcase")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props == {
        "heard turn 1 (say 'x')": "420.0 ms",
        "heard turn 2 (say 'x')": "no figure: text-only",
    }
    assert "heard: p50 0.42 s, p95 0.42 s" in summary_lines([r])


def test_p95_across_repeats_is_its_own_check() -> None:
    fast = [result(n, 0.2, 0.3, budget=1.0) for n in range(1, 20)]
    slow = result(20, 0.2, 5.0, budget=1.0)  # one slow turn in 40: p95 still within
    (budget,) = heard_budgets([*fast, slow])
    assert budget.passed
    assert budget.runs == 20
    assert budget.p95 == pytest.approx(0.3)
    assert exit_code_of_run(RunOutcome([*fast, slow])) == 0
    # Too many slow turns: the budget fails, and so does the run (exit 1), though every
    # session passed on its own.
    slower = [result(n, 0.2, 5.0, budget=1.0) for n in range(1, 4)]
    (failing,) = heard_budgets(slower)
    assert not failing.passed
    assert failing.failure == ("p95 heard within 1 s", "p95 heard: 5.000 s over 6 turn(s)")
    assert exit_code_of_run(RunOutcome(slower)) == 1
    lines = summary_lines(slower)
    assert "FAIL t: heard p95 over 3 runs (p95 5.00 s, budget 1 s)  [t.toml]" in lines
    assert "    seen p95 heard: 5.000 s over 6 turn(s)" in lines
    suite = ET.fromstring(junit_xml(slower))
    assert (suite.get("tests"), suite.get("failures")) == ("4", "1")
    case = next(c for c in suite.iter("testcase") if c.get("name") == failing.label)
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == "expected p95 heard within 1 s"
    data = json.loads(json.dumps(json_report(slower, exit_code_of)))
    assert data["summary"]["heard_budgets"] == [
        {
            "name": "t",
            "path": "t.toml",
            "budget_ms": 1000.0,
            "runs": 3,
            "turns": 6,
            "measured": 6,
            "p95_ms": 5000.0,
            "passed": False,
            "failure": {
                "expected": "p95 heard within 1 s",
                "seen": "p95 heard: 5.000 s over 6 turn(s)",
            },
        }
    ]
    # A turn without a figure in any run fails it, naming the run and why.
    (gap,) = heard_budgets([result(1, 0.2, budget=1.0), result(2, None, budget=1.0)])
    assert gap.failure == (
        "p95 heard within 1 s",
        "run 2, turn 1 (say 'x'): no heard figure: text-only (the reply came as text: set "
        "text_only = false for spoken replies)",
    )


# --- the WAV microphone's timing taps ---------------------------------------------------------


def pcm(*samples: int) -> bytes:
    data = array.array("h", samples)
    if sys.byteorder == "big":
        data.byteswap()
    return data.tobytes()


def test_speech_end_is_after_the_last_voiced_sample() -> None:
    assert speech_end(pcm(0, 0, 0)) == 0
    assert speech_end(pcm(0, 5000, -4000, 10, 0, 0)) == 6
    assert speech_end(pcm(-30000)) == 2


async def test_wav_microphone_reports_speech_end_and_hands_frames_at_once() -> None:
    from livekit import rtc

    mic = WavMicrophone()
    ended: list[float] = []
    mic.set_speech_ended_callback(ended.append)
    # Three frames: voiced, voiced up to its middle, then silence (trailing).
    clip = b"\x10\x27" * (FRAME_BYTES // 2) * 2 + b"\x00" * FRAME_BYTES
    frames = mic.mic_frames()
    speaking = asyncio.ensure_future(mic.speak(clip))
    times: list[float] = []
    async with asyncio.timeout(10):
        for _ in range(4):
            await anext(frames)
            times.append(asyncio.get_running_loop().time())
        await speaking
    assert len(ended) == 1  # once, at the second frame (the last voiced one)
    assert times[0] <= ended[0] <= times[2]
    handed: list[tuple[float, float]] = []
    got = asyncio.Event()

    def on_handed(at: float, latency: float) -> None:
        handed.append((at, latency))
        got.set()

    frame = rtc.AudioFrame(bytearray(FRAME_BYTES), 48000, 1, FRAME_BYTES // 2)
    mic.play_marked(frame, on_handed)
    assert handed == []  # reported from the event loop, not from inside the call
    async with asyncio.timeout(5):
        await got.wait()
    assert len(handed) == 1
    assert handed[0][1] == 0.0
    await mic.aclose()
    await frames.aclose()


# --- against the sim --------------------------------------------------------------------------


@pytest.mark.webrtc
def test_heard_figures_reach_the_json_report(sim: SimInfo, tmp_path: Path) -> None:
    """A spoken-reply turn with a heard budget, run against the sim: its figure (or, where
    this build measures none, the reason) is in the JSON report, and agrees with the turn's
    waterfall."""
    path = tmp_path / "heard.toml"
    path.write_text(
        'agent = "chat"\ntimeout = 60\ntext_only = false\n\n'
        '[[turns]]\nsay = "Hello there"\nexpect.max_heard = 60\n\n'
        '[[turns]]\nsay = "again"\n\n[[turns]]\nhangup = true\n\n'
        "[expect]\np95_heard = 60\n",
        "utf-8",
    )
    from fishtalk.workbench.agenttest.spec import load_test

    target = Target(None, api_url=sim.api_url, api_key=sim.dev_key)
    results = asyncio.run(run_tests([load_test(path)], target, RunOptions()))
    report = tmp_path / "report.json"
    write_reports(results, json_path=report, code_for_error=exit_code_of)
    data = json.loads(report.read_text("utf-8"))
    (run,) = data["results"]
    heard = run["heard"]
    assert [h["turn"] for h in heard] == ["turn 1 (say 'Hello there')", "turn 2 (say 'again')"]
    for entry in heard:
        wf = entry["waterfall"]
        assert wf is not None, entry  # the reducer measured the turn
        assert wf["kind"] == "typed"
        assert entry["heard_ms"] == wf["heard_ms"]
        if entry["heard_ms"] is None:
            assert entry["incomplete"] == wf["incomplete"]
            assert entry["incomplete"] in ("no audio", "not heard")
        else:
            assert entry["heard_ms"] > 0
            assert entry["incomplete"] is None
    import fishtalk.engine.audio.base as base

    if hasattr(base, "LatencyTaps"):
        # With the session's timing taps, a spoken reply is heard: figures, and they pass.
        assert all(isinstance(h["heard_ms"], float) and h["heard_ms"] > 0 for h in heard), heard
        assert run["status"] == "passed", run["failures"]
        assert data["summary"]["heard_p95"] is not None
    else:
        # Without them nothing is heard: the budgets fail and say why.
        assert run["status"] == "failed"
        assert any("no heard figure" in f["seen"] for f in run["failures"]), run["failures"]


def test_the_must_fail_files_cover_heard_budgets() -> None:
    names = {p.stem for p in (FILES / "fail").glob("*.toml")}
    assert {"max_heard", "p95_heard", "max_heard_spoken"} <= names


def test_the_readme_documents_every_expectation() -> None:
    from .test_readme import readme_section

    section = readme_section()
    missing = [name for name in Expect.model_fields if f"`{name}" not in section]
    assert missing == []
