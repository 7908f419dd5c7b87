"""The caller and judge commands: their output contract, and the tool runtime's limits on
real scripts that hang, crash and print garbage (no sim; whole runs against the sim are
``files/pass/caller.toml`` and ``files/fail/{caller,judge}_*.toml`` in :mod:`.test_suite`)."""

from __future__ import annotations

import asyncio
import sys

import pytest
from pydantic import JsonValue

from fishtalk.core.errors import TestFileError
from fishtalk.workbench.agenttest.external import (
    ExternalError,
    Verdict,
    caller_line,
    run_external,
    verdict,
)
from fishtalk.workbench.agenttest.spec import parse_test

from .conftest import FILES

SCRIPTS = FILES / "scripts"
PAYLOAD: dict[str, JsonValue] = {"test": "t", "turn": 1, "criteria": "c", "transcript": []}


def run(script: str, *args: str, timeout: float = 30.0) -> JsonValue:
    return asyncio.run(
        run_external(
            "judge",
            [sys.executable, script, *args],
            PAYLOAD,
            cwd=SCRIPTS,
            timeout=timeout,
        )
    )


def test_a_caller_says_a_line_or_hangs_up() -> None:
    assert caller_line("What can you do?\n") == "What can you do?"
    assert caller_line({"say": " Hi "}) == "Hi"
    assert caller_line("Hang up.") is None
    assert caller_line({"hang_up": True}) is None
    for bad, why in [
        (None, "printed no line"),
        (42, "printed no line"),
        ({"say": 3}, "printed no line"),
        ("   ", "printed no line"),
        ("one\ntwo", "more than one line"),
        ("\ufffd\ufffd\x00junk", "a line that is not text"),
    ]:
        with pytest.raises(ExternalError, match=why):
            caller_line(bad)


def test_a_judge_returns_a_verdict_and_a_reason() -> None:
    assert verdict({"verdict": "PASS", "reason": "ok"}) == Verdict(True, "ok")
    assert verdict({"verdict": False}) == Verdict(False, "(no reason given)")
    for bad in [None, "pass", {"verdict": "maybe"}, {"verdict": True, "reason": 3}, [1]]:
        with pytest.raises(ExternalError, match=r"printed no verdict \(expected JSON"):
            verdict(bad)


def test_a_judge_script_gets_the_transcript_on_stdin() -> None:
    assert verdict(run("judge.py")) == Verdict(True, "roles []")
    assert verdict(run("judge.py", "--strict")) == Verdict(False, "too strict to pass: c")


def test_a_hung_command_is_killed_at_its_timeout() -> None:
    with pytest.raises(ExternalError, match=r"^the judge command timed out after 0.5 s$"):
        run("caller_hangs.py", timeout=0.5)


def test_a_crash_is_a_failure_with_its_stderr() -> None:
    with pytest.raises(ExternalError) as caught:
        run("caller_crashes.py")
    assert str(caught.value) == (
        "the judge command failed: exited with status 1: caller exploded: no persona"
    )


def test_garbage_is_a_failure_never_a_crash() -> None:
    out = run("garbage.py")
    with pytest.raises(ExternalError, match="printed no verdict"):
        verdict(out)
    with pytest.raises(ExternalError, match="a line that is not text"):
        caller_line(out)


def test_a_missing_program_is_a_failure() -> None:
    with pytest.raises(ExternalError, match=r"^the caller command failed: program not found"):
        asyncio.run(run_external("caller", ["no-such-caller-xyz"], PAYLOAD, cwd=SCRIPTS, timeout=5))


def test_no_api_key_reaches_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FISH_API_KEY", "sk-secret")
    monkeypatch.setenv("FISHTALK_API__API_KEY", "sk-secret")
    names = verdict(run("env.py")).reason.split()
    assert "PATH" in names
    assert not [n for n in names if "API_KEY" in n.upper()]


def test_caller_and_judge_are_validated() -> None:
    test = parse_test('caller = ["my-caller", "--persona", "rude"]\n', source="t.toml")
    assert test.caller == ["my-caller", "--persona", "rude"]
    assert test.turns == []
    for text, why in [
        ('name = "x"\n', "t.toml: (top level): a test needs [[turns]], a caller, or both"),
        ('caller = "my-caller"\n', "t.toml:1: caller: must be a list"),
        ("caller = []\n", "t.toml:1: caller: must not be empty"),
        (
            '[[turns]]\nsay = "hi"\nexpect.judge = { command = ["j"], criteria = "c" }\n',
            "t.toml:1: turns[1]: expect.judge goes in the file's [expect]",
        ),
        (
            '[[turns]]\nsay = "hi"\n[expect]\njudge = { command = [""], criteria = "c" }\n',
            "t.toml:4: expect.judge.command: the command's program (its first item) is empty",
        ),
        (
            '[[turns]]\nsay = "hi"\n[expect]\njudge = { command = ["j"] }\n',
            "t.toml:4: expect.judge.criteria: is required",
        ),
    ]:
        with pytest.raises(TestFileError) as caught:
            parse_test(text, source="t.toml")
        assert str(caught.value).startswith(why.removesuffix(": Value error")), str(caught.value)
