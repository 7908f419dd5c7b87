"""The test-file format and the pure parts of the runner (no sim)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fishtalk.cli.exits import exit_code_for, exit_code_of, exit_code_of_run
from fishtalk.core import conversation as conv
from fishtalk.core.errors import NotFoundError, RunLimitError, TestFileError
from fishtalk.workbench.agenttest.checks import check, normalise, params_match, percentile
from fishtalk.workbench.agenttest.command import RunOutcome
from fishtalk.workbench.agenttest.expect import Expect
from fishtalk.workbench.agenttest.report import json_report, junit_xml, result_lines, summary_lines
from fishtalk.workbench.agenttest.results import Failure, SeenCall, TestResult
from fishtalk.workbench.agenttest.runner import (
    RunOptions,
    plan,
)
from fishtalk.workbench.agenttest.spec import STARTER, parse_test


def error_of(text: str) -> str:
    with pytest.raises(TestFileError) as caught:
        parse_test(text, source="t.toml")
    assert exit_code_for(None, caught.value) == 2
    return str(caught.value)


def test_errors_name_file_line_and_key() -> None:
    text = '[[turns]]\nsay = "a"\n\n[[turns]]\nsay = "b"\nexpect.regex = "("\n'
    assert error_of(text).startswith("t.toml:6: turns[2].expect: regex does not compile")
    assert error_of('[[turns]]\nsay = "a"\nsya = 1\n') == "t.toml:3: turns[1].sya: unknown key"
    assert error_of("timeout = -1\n[[turns]]\nhangup = true\n").startswith(
        "t.toml:1: timeout: must be more than 0"
    )
    assert error_of("[[turns]]\nsay = 'a'\nhangup = true\n") == (
        "t.toml:1: turns[1]: a turn needs exactly one of say, speak, listen, wait, wait_for_state, "
        "wait_for_event, hangup (got say, hangup)"
    )
    assert error_of("[tools.x]\n[[turns]]\nhangup = true\n").startswith(
        "t.toml:1: tools.x: a tool fixture needs exactly one of result, error"
    )
    assert "unknown event kind 'nope'" in error_of("[[turns]]\nwait_for_event = 'nope'\n")
    assert error_of("name = \n").startswith("t.toml:1: not valid TOML")
    assert "turns" in error_of('name = "no turns"\n')


def test_starter_parses_and_shapes_are_normalised() -> None:
    test = parse_test(STARTER, source="starter.toml")
    assert [t.action for t in test.turns] == ["listen", "say", "hangup"]
    expect = (
        parse_test(
            '[[turns]]\nsay = "a"\nexpect.tool_called = "x"\n'
            'expect.tool_not_called = ["y", { name = "z", params = { a = 1 } }]\n'
        )
        .turns[0]
        .expect
    )
    assert [c.name for c in expect.tool_called or []] == ["x"]
    assert [(c.name, c.params) for c in expect.tool_not_called or []] == [
        ("y", None),
        ("z", {"a": 1}),
    ]


def test_normalise_and_params_match() -> None:
    assert normalise("  You SAID:  Hello,   there! ") == "you said hello there"
    assert normalise("A.b", case_sensitive=True, exact_punctuation=True) == "A.b"
    assert params_match({"a": 1}, {"a": 1, "b": 2})
    assert params_match({"a": {"b": [1]}}, {"a": {"b": [1], "c": 0}})
    assert not params_match({"a": 1}, {"a": "1"})
    assert not params_match({"a": 1}, {"b": 1})
    assert not params_match({"a": 1}, None)
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == 4.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0


def seen(expect: Expect, **more: object) -> list[Failure]:
    base: dict[str, object] = {
        "lines": ["You said: hello."],
        "calls": [SeenCall("lookup", {"id": "1", "x": 2}, "webhook", client=False)],
        "errors": [],
        "states": ["thinking", "speaking", "listening"],
        "end_reason": "user_hangup",
        "first_text": 0.5,
    }
    base.update(more)
    return check(expect, "turn 1", **base)  # type: ignore[arg-type]


def test_each_expectation_passes_and_fails() -> None:
    cases: list[tuple[dict[str, object], dict[str, object]]] = [
        ({"contains": "YOU SAID hello"}, {"contains": "bye"}),
        ({"not_contains": "bye"}, {"not_contains": "hello"}),
        ({"contains_any": ["bye", "hello"]}, {"contains_any": ["bye"]}),
        ({"one_of": ["you said hello", "x"]}, {"one_of": ["you said"]}),
        ({"regex": "^You said"}, {"regex": "^said"}),
        ({"tool_called": {"name": "lookup", "params": {"id": "1"}}},
         {"tool_called": {"name": "lookup", "params": {"id": "2"}}}),
        ({"tool_not_called": "cancel"}, {"tool_not_called": "lookup"}),
        ({"agent_states": ["thinking", "listening"]}, {"agent_states": ["listening", "thinking"]}),
        ({"end_reason": "user_hangup"}, {"end_reason": "agent_hangup"}),
        ({"max_first_text": 1}, {"max_first_text": 0.1}),
        ({"contains": "You said", "case_sensitive": True},
         {"contains": "you said", "case_sensitive": True}),
        ({"contains": "said: hello", "exact_punctuation": True},
         {"contains": "said hello", "exact_punctuation": True}),
    ]  # fmt: skip
    for good, bad in cases:
        assert seen(Expect.model_validate(good)) == [], good
        failures = seen(Expect.model_validate(bad))
        assert len(failures) == 1, bad
    errors = [conv.ErrorEntry("provider_error", "boom", 0.0)]
    assert seen(Expect(no_errors=True)) == []
    assert seen(Expect(no_errors=True), errors=errors)[0].seen == "errors: provider_error: boom"
    assert seen(Expect(p95_first_text=1), latencies=[0.1, 0.2]) == []
    assert seen(Expect(p95_first_text=1), latencies=[0.1, 2.0])[0].seen.startswith(
        "p95 first text: 2.00 s"
    )
    assert seen(Expect(max_first_text=1), first_text=None)[0].seen == "first text: no agent text"


def test_plan_caps_and_repeats() -> None:
    test = parse_test("[[turns]]\nhangup = true\n", source="a.toml")
    assert [r for _, r in plan([test], RunOptions(repeat=3))] == [1, 2, 3]
    with pytest.raises(RunLimitError, match="would open 3 sessions"):
        plan([test], RunOptions(repeat=3, max_sessions=2))


def test_reports_and_exit_codes() -> None:
    good = TestResult("a", "a.toml", duration=1.0, first_text=[0.2])
    bad = TestResult(
        "b", "b.toml", run=2, status="failed",
        failures=[Failure("turn 1 (say 'x')", "reply contains 'y'", "reply: 'z'")],
        transcript=["you: x", "agent: z"], tool_calls=["t({}) [client]"],
    )  # fmt: skip
    missing = NotFoundError("Agent not found", status=404)
    broken = TestResult("c", "c.toml", status="error", error=str(missing), failure=missing)
    lines = result_lines(bad)
    assert lines[0].startswith("FAIL b #2 ")
    assert "  turn 1 (say 'x'): expected reply contains 'y'" in lines
    assert "    seen reply: 'z'" in lines
    assert "    agent: z" in lines
    assert result_lines(broken)[0].startswith("ERROR c ")
    assert summary_lines([good, bad])[0] == "1 passed, 1 failed, 0 errors (2 sessions)"
    suite = ET.fromstring(junit_xml([good, bad, broken]))
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    data = json.loads(json.dumps(json_report([good, bad, broken], exit_code_of)))
    assert data["results"][1]["failures"][0]["expected"] == "reply contains 'y'"
    assert [r["exit_code"] for r in data["results"]] == [None, None, 4]
    assert exit_code_of_run(RunOutcome([good])) == 0
    assert exit_code_of_run(RunOutcome([good, bad])) == 1
    assert exit_code_of_run(RunOutcome([good, bad, broken])) == 4
    assert exit_code_of_run(RunOutcome([good], interrupted=True)) == 130


def test_live_view_shows_results_literally() -> None:
    import io

    from rich.console import Console

    from fishtalk.workbench.agenttest.progress import LiveView, PlainView

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100, color_system=None)
    bad = TestResult(
        "b", "b.toml", status="failed",
        failures=[Failure("turn 1", "reply contains 'y'", "reply: '[bold]z[/bold]'")],
    )  # fmt: skip
    with LiveView(console, 2) as view:
        view.started("a")
        view.finished(TestResult("a", "a.toml"))
        view.started("b")
        view.finished(bad)
    text = buffer.getvalue()
    assert "PASS a" in text
    assert "FAIL b" in text
    assert "seen reply: '[bold]z[/bold]'" in text
    lines: list[str] = []
    with PlainView(lines.append) as plain:
        plain.started("a")
        plain.finished(TestResult("a", "a.toml"))
    assert lines[0] == "RUN  a"
    assert lines[1].startswith("PASS a ")


def test_a_spoken_turn_needs_a_usable_wav(tmp_path: Path) -> None:
    from fishtalk.workbench.agenttest.spec import load_test

    path = tmp_path / "t.toml"
    path.write_text('agent = "a"\n\n[[turns]]\nspeak = "missing.wav"\n', "utf-8")
    with pytest.raises(TestFileError) as caught:
        load_test(path)
    assert str(caught.value).startswith(f"{path}:4: turns[1].speak: cannot read WAV ")
    (tmp_path / "eight.wav").write_bytes(b"RIFF")
    path.write_text('[[turns]]\nspeak = "eight.wav"\n', "utf-8")
    with pytest.raises(TestFileError, match=r":2: turns\[1\].speak: cannot read WAV"):
        load_test(path)


def test_load_wav_resamples_to_the_session_rate(tmp_path: Path) -> None:
    import array
    import wave

    from fishtalk.workbench.agenttest.wavmic import load_wav

    path = tmp_path / "s.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(16_000)
        wav.writeframes(array.array("h", [100, 300] * 1600).tobytes())  # 0.1 s, stereo
    pcm = array.array("h")
    pcm.frombytes(load_wav(path))
    assert len(pcm) == 4800  # 0.1 s at 48 kHz, mono
    assert set(pcm) == {200}  # the channels averaged
