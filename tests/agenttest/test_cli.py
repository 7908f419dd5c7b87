"""``fishtalk test`` as a user runs it: a real process against the in-process sim."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fishtalk.workbench.agenttest.spec import load_test

from .conftest import EXAMPLES, FILES, SCENARIOS

WAIT = 120.0
"""Bound for one `fishtalk test` process (seconds)."""


def fishtalk(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}
    return subprocess.run(
        [sys.executable, "-m", "fishtalk", "test", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=WAIT,
        env=env,
        cwd=cwd,
    )


CHAT = ("--sim", "--scenario", SCENARIOS / "chat.toml")


def test_bad_file_is_one_line_naming_file_line_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n\n[[turns]]\nsay = "hi"\nexpect.contans = "a"\n', "utf-8")
    done = fishtalk(bad, "--sim")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"fishtalk: {bad}:5: turns[1].expect.contans: unknown key\n"


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[turns]]\nsay = "hi\n', "utf-8")
    done = fishtalk(bad)
    assert done.returncode == 2
    assert done.stderr.startswith(f"fishtalk: {bad}:2: not valid TOML")
    assert done.stderr.count("\n") == 1


def test_init_writes_a_starter_that_loads(tmp_path: Path) -> None:
    path = tmp_path / "starter.toml"
    done = fishtalk("--init", path)
    assert done.returncode == 0, done.stderr
    assert "fishtalk test" in path.read_text("utf-8")
    assert load_test(path).turns
    again = fishtalk("--init", path)
    assert again.returncode == 2
    assert "exists" in again.stderr


def test_max_sessions_caps_the_run(tmp_path: Path) -> None:
    done = fishtalk(FILES / "pass" / "waits.toml", "--repeat", "3", "--max-sessions", "2", *CHAT)
    assert done.returncode == 2
    assert "would open 3 sessions, more than --max-sessions 2" in done.stderr


@pytest.mark.webrtc
def test_init_starter_passes_against_the_sim(tmp_path: Path) -> None:
    path = tmp_path / "starter.toml"
    assert fishtalk("--init", path).returncode == 0
    done = fishtalk(path, "--sim")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS greets and answers" in done.stdout


@pytest.mark.webrtc
def test_pass_fail_exit_codes_and_reports(tmp_path: Path) -> None:
    junit, report = tmp_path / "junit.xml", tmp_path / "report.json"
    good = FILES / "pass" / "waits.toml"
    bad = FILES / "fail" / "tool_params.toml"
    done = fishtalk(good, bad, *CHAT, "--junit", junit, "--json", report, "--concurrency", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("PASS waits ") for line in lines), lines
    assert any(line.startswith("FAIL tool_params ") for line in lines), lines
    assert (
        "  turn 1 (say 'call get_customer'): expected tool called: get_customer with params "
        '{"customer_id": "c-8"}'
    ) in lines
    assert "    seen tool calls: get_customer({}) [client]" in lines
    assert "    you: call get_customer" in lines
    assert "1 passed, 1 failed, 0 errors (2 sessions)" in lines
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["waits"].find("failure") is None
    failure = cases["tool_params"].find("failure")
    assert failure is not None
    assert "get_customer" in (failure.get("message") or "")
    data = json.loads(report.read_text("utf-8"))
    assert data["summary"]["passed"] == 1
    assert data["summary"]["failed"] == 1
    by_name = {r["name"]: r for r in data["results"]}
    assert by_name["tool_params"]["failures"][0]["seen"].startswith("tool calls:")
    assert by_name["waits"]["status"] == "passed"
    # Each session was journaled; the failure report names the failing session's journal.
    journal = Path(by_name["tool_params"]["journal"])
    assert journal.is_file()
    assert f"  journal: {journal}" in lines
    assert "call get_customer" in journal.read_text("utf-8")
    assert Path(by_name["waits"]["journal"]).is_file()
    only_good = fishtalk(good, *CHAT)
    assert only_good.returncode == 0, only_good.stdout + only_good.stderr


@pytest.mark.webrtc
def test_api_failure_exits_with_its_documented_code(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    done = fishtalk(FILES / "pass" / "waits.toml", "--sim", "--agent", "err-404", "--json", report)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "ERROR waits" in done.stdout
    assert json.loads(report.read_text("utf-8"))["results"][0]["exit_code"] == 4


@pytest.mark.webrtc
def test_repeat_gives_a_pass_rate(tmp_path: Path) -> None:
    done = fishtalk(
        FILES / "pass" / "agent_hangup.toml", *CHAT, "--repeat", "2", "--concurrency", "2"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 0 failed, 0 errors (2 sessions)" in done.stdout
    assert f"  pass rate 100%: {FILES / 'pass' / 'agent_hangup.toml'}" in done.stdout
    assert "PASS agent_hangup #2" in done.stdout


@pytest.mark.webrtc
def test_ctrl_c_stops_the_run_and_still_writes_reports(tmp_path: Path) -> None:
    # With --scenario every agent plays the quick chat, so the turn that hangs waits for
    # an event chat never sends.
    hung = tmp_path / "hung.toml"
    hung.write_text('[[turns]]\nwait_for_event = "error"\ntimeout = 100\n', "utf-8")
    junit = tmp_path / "junit.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "fishtalk", "test", str(FILES / "pass" / "waits.toml"),
         str(hung), *map(str, CHAT), "--junit", str(junit)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        seen: list[str] = []
        for line in process.stdout:
            seen.append(line.rstrip("\n"))
            if line.startswith("RUN  hung"):
                break
        assert any(s.startswith("PASS waits") for s in seen), seen
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=WAIT)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, rest
    assert "interrupted: the open sessions were hung up" in rest
    suite = ET.parse(junit).getroot()
    assert [c.get("name") for c in suite.iter("testcase")] == ["waits"]


def test_readme_example_is_the_shipped_example() -> None:
    """The README's support example is examples/agent-tests/support.toml, verbatim."""
    from .test_readme import readme_example

    assert readme_example() == (EXAMPLES / "support.toml").read_text("utf-8")


def test_sim_without_a_usable_network_says_so() -> None:
    """A host with only loopback (a fresh network namespace, as in the demo's test)."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "util-linux unshare is needed for this test"
    waits = FILES / "pass" / "waits.toml"
    proc = subprocess.run(
        [unshare, "-rn", sys.executable, "-m", "fishtalk", "test", waits, "--sim"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 7, proc.stderr
    err = proc.stderr
    assert err.startswith("fishtalk: fishtalk test --sim needs a network interface other than")
    assert "-m fishtalk.sim.netns --" in err
    assert err.count("\n") == 1


@pytest.mark.webrtc
def test_config_tools_run_the_users_tools(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    script = "import json, sys; json.load(sys.stdin); print(json.dumps({'user': 'ada'}))"
    config.write_text(
        "[tools.whoami]\n"
        f'command = [{json.dumps(sys.executable)}, "-c", {json.dumps(script)}]\n'
        'approve = "always"\n',
        "utf-8",
    )
    test = tmp_path / "whoami.toml"
    test.write_text(
        'agent = "chat"\nconfig_tools = true\n\n[[turns]]\nsay = "call whoami"\n'
        'expect.contains = "Your whoami tool returned"\nexpect.contains_any = ["ada"]\n'
        'expect.tool_called = "whoami"\n',
        "utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}
    done = subprocess.run(
        [sys.executable, "-m", "fishtalk", "--config", str(config), "test", str(test),
         *map(str, CHAT)],
        capture_output=True, text=True, timeout=WAIT, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    without = tmp_path / "without.toml"
    without.write_text(test.read_text("utf-8").replace("config_tools = true\n", ""), "utf-8")
    failed = subprocess.run(
        [sys.executable, "-m", "fishtalk", "--config", str(config), "test", str(without),
         *map(str, CHAT)],
        capture_output=True, text=True, timeout=WAIT, env=env,
    )  # fmt: skip
    assert failed.returncode == 1
    assert "the agent called client tool 'whoami', which the test does not declare" in failed.stdout
