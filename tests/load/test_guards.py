"""``fishtalk load``'s guards and bad input, before any session: the worst-case session count
against ``--max-sessions``, the confirmation a real-agent run needs, a bad test file, and
Locust missing. Also the pure parts: run times, and one session's result as requests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fishtalk.core.errors import ConfigError, RunLimitError
from fishtalk.workbench.agenttest.results import Failure, HeardTurn, TestResult
from fishtalk.workbench.agenttest.spec import parse_test
from fishtalk.workbench.load.plan import LoadPlan, parse_run_time
from fishtalk.workbench.load.requests import failed_start, start_request, turn_requests

from .conftest import FILES, ROOT

HELLO = str(FILES / "hello.toml")


def fishtalk(tmp_path: Path, *args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """``fishtalk ARGS`` in a child process: no terminal, isolated config, no API key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    code = f"{prelude}\nfrom fishtalk.cli.app import main\nmain({list(args)!r})"
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


AGENT = ("load", HELLO, "--agent", "agent-1", "--api-url", "http://127.0.0.1:9")


def test_a_run_that_could_open_more_sessions_than_the_cap_is_refused(tmp_path: Path) -> None:
    line = one_line(fishtalk(tmp_path, *AGENT, "-u", "20", "-t", "1m", "--yes"))
    assert "could open 260 sessions" in line
    assert "--max-sessions 50" in line


def test_a_real_agent_run_needs_a_run_time(tmp_path: Path) -> None:
    assert "--run-time" in one_line(fishtalk(tmp_path, *AGENT, "-u", "1", "--yes"))


def test_without_a_terminal_a_real_agent_run_needs_yes(tmp_path: Path) -> None:
    line = one_line(fishtalk(tmp_path, *AGENT, "-u", "3", "-t", "30s"))
    assert "agent agent-1 with 3 users for 30 s: at most 21 sessions" in line
    assert "--yes" in line


def test_a_bad_test_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[turns]]\nsay = 3\n", "utf-8")
    line = one_line(fishtalk(tmp_path, "load", str(bad), "--sim", "-t", "5s"))
    assert "bad.toml" in line


def test_without_the_extra_one_line_names_it(tmp_path: Path) -> None:
    result = fishtalk(
        tmp_path, "load", HELLO, "--sim", prelude="import sys; sys.modules['locust'] = None"
    )
    assert "pip install 'fishtalk[load]'" in one_line(result)


def test_a_worker_needs_its_master(tmp_path: Path) -> None:
    assert "--master-host" in one_line(fishtalk(tmp_path, "load", "--worker"))


# --- the pure parts -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("30s", 30), ("5m", 300), ("1h30m", 5400)]
)
def test_run_times_read_like_locusts(text: str, seconds: int) -> None:
    assert parse_run_time(text) == seconds


def test_a_bad_run_time_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        parse_run_time("soon")


def test_the_worst_case_and_the_caps() -> None:
    plan = LoadPlan("a", users=3, run_time=60, pace=5.0)
    assert plan.worst_case() == 3 * 13
    assert plan.check() == 39
    assert LoadPlan("sim", users=400, run_time=60, sim=True).check() == 400 * 13
    assert LoadPlan("sim", users=4, run_time=None, sim=True).check() is None
    with pytest.raises(RunLimitError):
        LoadPlan("a", users=5, run_time=60).check()
    with pytest.raises(RunLimitError):
        LoadPlan("a", users=1, run_time=None).check()


def test_a_result_becomes_requests_named_by_test_turn_and_figure() -> None:
    test = parse_test(
        'text_only = false\n[[turns]]\nsay = "hi"\n[[turns]]\nsay = "bye"\n'
        "[[turns]]\nwait = 1\n"
        "[[turns]]\nhangup = true\n",
        source="t.toml",
    )
    one, two = "turn 1 (say 'hi')", "turn 2 (say 'bye')"
    result = TestResult("t", "t.toml", status="failed", duration=3.0)
    result.heard = [HeardTurn(one, 0.8), HeardTurn(two, None, "interrupted")]
    result.failures = [Failure(two, "a heard reply", "none"), Failure("session", "x", "y")]
    requests = turn_requests(test, result)
    assert [(r.kind, r.name, r.ms, r.error) for r in requests] == [
        ("turn", f"t: {one} [heard]", 800.0, None),
        ("turn", f"t: {two} [heard]", 0.0, "expected a heard reply, saw none"),
        ("session", "t: whole session", 3000.0, "expected x, saw y"),
    ]
    assert start_request(test, 1.5).ms == 1500.0
    errored = TestResult("t", "t.toml", status="error", error="HTTP 503", duration=0.2)
    assert failed_start(test, errored).error == "HTTP 503"


def test_text_only_turns_are_timed_by_first_text() -> None:
    test = parse_test('text_only = true\n[[turns]]\nsay = "hi"\n', source="t.toml")
    result = TestResult("t", "t.toml", status="passed", duration=1.0)
    result.first_text_by_turn = {"turn 1 (say 'hi')": 0.25}
    assert turn_requests(test, result)[0].name == "t: turn 1 (say 'hi') [first text]"
    assert turn_requests(test, result)[0].ms == 250.0


SECRET = "lk-secret-never-shown-0123456789abcdef"
LIVEKIT = ("--livekit-url", "ws://127.0.0.1:9", "--api-key", "k", "--api-secret", SECRET)


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--sim", *LIVEKIT, "--room", "r"), "not with --sim"),
        (("--worker", "--master-host", "127.0.0.1", *LIVEKIT), "not with --worker"),
        ((*LIVEKIT,), "(missing: --room)"),
        (("--livekit-url", "ws://", "--api-key", "k", "--room", "r"), "not a URL with a host"),
    ],
)
def test_bad_livekit_options_are_one_line(
    tmp_path: Path, flags: tuple[str, ...], says: str
) -> None:
    worker = "--worker" in flags
    line = one_line(fishtalk(tmp_path, "load", *([] if worker else [HELLO]), *flags, "--yes"))
    assert says in line
    assert SECRET not in line


def test_a_livekit_run_names_its_rooms_when_it_asks(tmp_path: Path) -> None:
    line = one_line(fishtalk(tmp_path, "load", HELLO, *LIVEKIT, "--room", "lt", "-t", "30s"))
    assert "load agent lt-* at ws://127.0.0.1:9 with 1 users" in line
    assert SECRET not in line
