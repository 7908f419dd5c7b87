"""`fishtalk tools list|run`: the same registry, runner, limits and approval as a session."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass
class TerminalRun:
    """A `fishtalk` process whose stdin and stderr were a real terminal (a pty)."""

    code: int
    out: str
    err: str
    """Everything the terminal showed (the prompt, the typed answer's echo, errors)."""


def on_terminal(
    *args: str, answer: bytes | None, env: dict[str, str] | None = None, cwd: Path | None = None
) -> TerminalRun:
    """Run `fishtalk ARGS` with stdin and stderr on a pty and stdout on a pipe, typing
    ``answer`` at the terminal once the y/N question shows (None: never answer)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [PY, "-m", "fishtalk", *args],
        stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=cwd,
    )  # fmt: skip
    os.close(slave)
    shown = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            shown += chunk
            if answer is not None and b"Allow? [y/N]" in shown:
                os.write(master, answer)
                answer = None
        assert proc.stdout is not None
        out = proc.stdout.read().decode()
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return TerminalRun(code, out, shown.decode(errors="replace"))


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


def test_tools_run_asks_and_runs(tmp_path: Path) -> None:
    path = config(tmp_path, f"[tools.echo]\ncommand = {toml_argv(PY, '-c', ECHO)}\n")
    params = {"q": "$(touch pwned); rm -rf ~ | sh", "n": 2}
    result = on_terminal(
        "--config", str(path), "tools", "run", "echo", "--params", json.dumps(params),
        answer=b"y\n",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert json.loads(result.out) == {"got": params}
    assert "The agent wants to run client tool 'echo'" in result.err
    assert "Allow? [y/N]" in result.err
    assert not (REPO / "pwned").exists()


def test_tools_run_denied(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    touch = f"open({str(marker)!r}, 'w')"
    path = config(tmp_path, f"[tools.touch]\ncommand = {toml_argv(PY, '-c', touch)}\n")
    result = on_terminal("--config", str(path), "tools", "run", "touch", answer=b"n\n")
    assert result.code == 1
    assert "declined" in result.err.splitlines()[-1]
    assert not marker.exists()
    # end of input (Ctrl-D at the terminal): declined, never a hang
    eof = on_terminal("--config", str(path), "tools", "run", "touch", answer=b"\x04")
    assert eof.code == 1
    assert not marker.exists()


def test_piped_yes_never_approves(tmp_path: Path) -> None:
    """`echo y | fishtalk tools run X` declines, as chat does through pipes; --yes approves."""
    marker = tmp_path / "ran"
    touch = f"open({str(marker)!r}, 'w'); print('{{}}')"
    path = config(tmp_path, f"[tools.touch]\ncommand = {toml_argv(PY, '-c', touch)}\n")
    argv = [PY, "-m", "fishtalk", "--config", str(path), "tools", "run", "touch"]
    piped = subprocess.run(argv, input="y\n", capture_output=True, text=True, timeout=60)
    assert piped.returncode == 1
    assert "Allow?" not in piped.stderr
    last = piped.stderr.splitlines()[-1]
    assert last.startswith("fishtalk: tool 'touch' declined: nobody at a terminal")
    assert "--yes" in last
    assert not marker.exists()
    # A terminal on stdin is not enough when the question would go nowhere visible.
    master, slave = pty.openpty()
    try:
        hidden = subprocess.run(argv, stdin=slave, capture_output=True, text=True, timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    assert hidden.returncode == 1
    assert not marker.exists()

    approved = subprocess.run(
        [*argv, "--yes"], input="", capture_output=True, text=True, timeout=60
    )
    assert approved.returncode == 0, approved.stderr
    assert marker.exists()


def test_tools_run_yes_is_documented(run_cli: Run) -> None:
    result = run_cli("tools", "run", "--help")
    assert result.code == 0
    assert "--yes" in result.out
    assert "piped input never" in " ".join(result.out.split())


def test_never_tools_stay_refused_with_yes(run_cli: Run, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    touch = f"open({str(marker)!r}, 'w')"
    path = config(
        tmp_path, f"[tools.touch]\ncommand = {toml_argv(PY, '-c', touch)}\napprove = 'never'\n"
    )
    result = run_cli("--config", str(path), "tools", "run", "touch", "--yes")
    assert result.code == 1
    assert "disabled on this client" in result.err
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
    assert unknown.code == 2  # bad usage; never 4, which is chat's "agent not found"
    assert unknown.err.count("\n") == 1
    assert unknown.err == (
        "fishtalk: no client tool named 'nope'; known: fail, slow "
        "(`fishtalk tools list` shows them)\n"
    )
    close = run_cli("--config", str(path), "tools", "run", "slwo")
    assert close.code == 2
    assert "did you mean 'slow'?" in close.err
    assert "`fishtalk tools list`" in close.err
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


def test_tools_run_child_never_sees_the_key_under_another_spelling(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fishtalk reads the key from FISHTALK_API__api_key (any case after the prefix): so no
    tool gets it under that name either, nor can a config allowlist it."""
    monkeypatch.setenv("FISHTALK_API__api_key", "sk-lower-spelling")
    monkeypatch.setenv("FISHTALK_Api__API_Key", "sk-mixed-spelling")
    dump = f"command = {toml_argv(PY, '-c', ENV_DUMP)}\napprove = 'always'\n"
    path = config(tmp_path, f"[tools.env]\n{dump}")
    result = run_cli("--config", str(path), "tools", "run", "env")
    assert result.code == 0, result.err
    names = json.loads(result.out)
    assert not [n for n in names if "API_KEY" in n.upper()]
    assert "-spelling" not in result.out + result.err
    leaky = tmp_path / "leaky.toml"
    leaky.write_text(f"[tools.leaky]\n{dump}env = ['FISHTALK_API__api_key']\n")
    listed = run_cli("--config", str(leaky), "tools", "list")
    assert listed.code == 2
    assert "FISHTALK_API__api_key is never passed to tools" in listed.out
    refused = run_cli("--config", str(leaky), "tools", "run", "leaky")
    assert refused.code == 2
    assert "-spelling" not in refused.out + refused.err


def test_tools_run_open_url_end_to_end(tmp_path: Path) -> None:
    """A real process, a real prompt answered at a terminal, the real webbrowser module
    ($BROWSER)."""
    opened = tmp_path / "opened.txt"
    recorder = tmp_path / "browser.py"
    recorder.write_text(
        f"import sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n", encoding="utf-8"
    )
    path = config(tmp_path, "[tools.open_url]\nbuiltin = true\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}
    env.update(BROWSER=f"{PY} {recorder} %s", DISPLAY="", WAYLAND_DISPLAY="")
    url = "https://example.com/docs?q=fish"
    done = on_terminal(
        "--config", str(path), "tools", "run", "open_url", "--params", json.dumps({"url": url}),
        answer=b"y\n", env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.code == 0, done.err
    assert json.loads(done.out) == {"opened": url}
    assert "open https://example.com/docs?q=fish" in done.err
    deadline = time.monotonic() + 10  # the browser command is started, not awaited
    while not opened.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert opened.read_text() == url

    refused = on_terminal(
        "--config", str(path), "tools", "run", "open_url",
        "--params", json.dumps({"url": "file:///etc/passwd"}),
        answer=b"y\n", env=env, cwd=tmp_path,
    )  # fmt: skip
    assert refused.code == 1
    assert "only http:// and https://" in refused.err


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
