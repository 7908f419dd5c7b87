"""`fishtalk tools list|run`: the same registry, runner, limits and approval as a session."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
Run = Callable[..., Any]  # the run_cli fixture
PY = sys.executable

ECHO = "import json, sys; print(json.dumps({'got': json.load(sys.stdin)}))"
ENV_DUMP = "import json, os; print(json.dumps(sorted(os.environ)))"


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tools.toml"
    path.write_text(text, encoding="utf-8")
    return path


def toml_argv(*argv: str) -> str:
    return json.dumps(list(argv))  # a JSON array of strings is a TOML array too


@pytest.fixture
def answer(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Type an answer for the y/N approval prompt."""

    def give(text: str) -> None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(text))

    return give


def test_tools_list(run_cli: Run, tmp_path: Path) -> None:
    path = config(
        tmp_path,
        f"[tools.echo]\ncommand = {toml_argv(PY, '-c', ECHO)}\ndescription = 'Echo it'\n"
        "timeout = 5\n"
        "[tools.notify]\nbuiltin = true\n"
        "[tools.ghost]\ncommand = ['fishtalk-no-such-program-xyz']\n",
    )
    result = run_cli("--config", str(path), "tools", "list")
    assert result.code == 0, result.err
    assert "echo  [command]  approve=ask  timeout=5s  ok" in result.out
    assert "Echo it" in result.out
    assert "notify  [builtin]  approve=always" in result.out
    assert "ghost  [command]" in result.out
    assert "program not found" in result.out

    as_json = run_cli("--config", str(path), "tools", "list", "--json")
    tools = {t["name"]: t for t in json.loads(as_json.out)}
    assert set(tools) == {"echo", "notify", "ghost"}
    assert tools["ghost"]["problem"] is not None
    assert tools["ghost"]["fatal"] is False


def test_tools_list_reports_bad_declarations(run_cli: Run, tmp_path: Path) -> None:
    path = config(tmp_path, "[tools.clipboard]\nbuiltin = true\n")
    result = run_cli("--config", str(path), "tools", "list")
    assert result.code == 2
    assert "ERROR" in result.out
    assert "no built-in tool named 'clipboard'" in result.out


def test_tools_list_empty_and_invalid_name(run_cli: Run, tmp_path: Path) -> None:
    empty = run_cli("--config", str(config(tmp_path, "")), "tools", "list")
    assert empty.code == 0
    assert "no client tools" in empty.out
    bad = run_cli(
        "--config", str(config(tmp_path, "[tools.'bad name']\ncommand=['x']\n")), "tools", "list"
    )
    assert bad.code == 2
    assert "invalid tool name 'bad name'" in bad.err


def test_tools_run_asks_and_runs(
    run_cli: Run, tmp_path: Path, answer: Callable[[str], None]
) -> None:
    path = config(tmp_path, f"[tools.echo]\ncommand = {toml_argv(PY, '-c', ECHO)}\n")
    answer("y\n")
    params = {"q": "$(touch pwned); rm -rf ~ | sh", "n": 2}
    result = run_cli("--config", str(path), "tools", "run", "echo", "--params", json.dumps(params))
    assert result.code == 0, result.err
    assert json.loads(result.out) == {"got": params}
    assert "The agent wants to run client tool 'echo'" in result.err
    assert "Allow? [y/N]" in result.err
    assert not (REPO / "pwned").exists()


def test_tools_run_denied(run_cli: Run, tmp_path: Path, answer: Callable[[str], None]) -> None:
    marker = tmp_path / "ran"
    touch = f"open({str(marker)!r}, 'w')"
    path = config(tmp_path, f"[tools.touch]\ncommand = {toml_argv(PY, '-c', touch)}\n")
    answer("n\n")
    result = run_cli("--config", str(path), "tools", "run", "touch")
    assert result.code == 1
    assert "declined" in result.err.splitlines()[-1]
    assert not marker.exists()
    answer("")  # end of input: declined, never a hang
    assert run_cli("--config", str(path), "tools", "run", "touch").code == 1
    assert not marker.exists()


def test_tools_run_errors(run_cli: Run, tmp_path: Path) -> None:
    fail = "import sys; sys.exit('bad input')"
    path = config(
        tmp_path,
        f"[tools.slow]\ncommand = {toml_argv(PY, '-c', 'import time; time.sleep(60)')}\n"
        "approve = 'always'\ntimeout = 1\n"
        f"[tools.fail]\ncommand = {toml_argv(PY, '-c', fail)}\n"
        "approve = 'always'\n",
    )
    slow = run_cli("--config", str(path), "tools", "run", "slow")
    assert slow.code == 1
    assert "timed out after 1 s" in slow.err
    fail = run_cli("--config", str(path), "tools", "run", "fail")
    assert fail.code == 1
    assert "exited with status 1: bad input" in fail.err
    unknown = run_cli("--config", str(path), "tools", "run", "nope")
    assert unknown.code == 4
    bad_json = run_cli("--config", str(path), "tools", "run", "fail", "--params", "{nope")
    assert bad_json.code == 2


def test_tools_run_child_never_sees_the_api_key(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISH_API_KEY", "sk-secret-for-cli-test")
    monkeypatch.setenv("PASSED_ON", "1")
    path = config(
        tmp_path,
        f"[tools.env]\ncommand = {toml_argv(PY, '-c', ENV_DUMP)}\napprove = 'always'\n"
        "env = ['PASSED_ON']\n",
    )
    result = run_cli("--config", str(path), "tools", "run", "env")
    assert result.code == 0, result.err
    names = json.loads(result.out)
    assert "FISH_API_KEY" not in names
    assert "PASSED_ON" in names
    assert "sk-secret-for-cli-test" not in result.out + result.err


def test_tools_run_open_url_end_to_end(tmp_path: Path) -> None:
    """A real process, a real prompt answered on stdin, the real webbrowser module ($BROWSER)."""
    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.py"
    recorder.write_text(
        f"import sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n", encoding="utf-8"
    )
    path = config(tmp_path, "[tools.open_url]\nbuiltin = true\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}
    env.update(BROWSER=f"{PY} {recorder} %s", DISPLAY="", WAYLAND_DISPLAY="")
    url = "https://example.com/docs?q=fish"
    done = subprocess.run(
        [PY, "-m", "fishtalk", "--config", str(path), "tools", "run", "open_url",
         "--params", json.dumps({"url": url})],
        input="y\n", capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"opened": url}
    assert "open https://example.com/docs?q=fish" in done.stderr
    deadline = time.monotonic() + 10  # the browser command is started, not awaited
    while not opened.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert opened.read_text() == url

    refused = subprocess.run(
        [PY, "-m", "fishtalk", "--config", str(path), "tools", "run", "open_url",
         "--params", json.dumps({"url": "file:///etc/passwd"})],
        input="y\n", capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 1
    assert "only http:// and https://" in refused.stderr


FORKER = """
import os, subprocess, sys, time
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]) for _ in range(2)]
open(sys.argv[1], "w").write(" ".join(str(x) for x in [os.getpid(), *(k.pid for k in kids)]))
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_ctrl_c_kills_the_tool_and_its_children(tmp_path: Path) -> None:
    import signal

    (tmp_path / "forker.py").write_text(FORKER, encoding="utf-8")
    pidfile = tmp_path / "pids"
    path = config(
        tmp_path,
        f"[tools.hangs]\ncommand = {toml_argv(PY, str(tmp_path / 'forker.py'), str(pidfile))}\n"
        "approve = 'always'\ntimeout = 100\n",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}
    proc = subprocess.Popen(
        [PY, "-m", "fishtalk", "--config", str(path), "tools", "run", "hangs"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            pids = pidfile.read_text().split() if pidfile.exists() else []
            if len(pids) == 3:
                break
            time.sleep(0.05)
        assert len(pids) == 3, "the tool never started"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.communicate(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(_gone(int(x)) for x in pids):
        time.sleep(0.05)
    assert [x for x in pids if not _gone(int(x))] == []
