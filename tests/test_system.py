"""Every user-facing path imports without the POSIX-only modules (as on Windows), and the
platform helpers in :mod:`fishtalk.engine.system` work for real on this machine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fishtalk.engine import system

PY = sys.executable

# A meta path finder that refuses fcntl, termios and pwd (and tty, which needs termios):
# what an import of them does on Windows. Installed before fishtalk is imported.
BLOCKER = textwrap.dedent(
    """
    import importlib, importlib.abc, pkgutil, sys
    POSIX_ONLY = ("fcntl", "termios", "pwd", "tty")
    for name in POSIX_ONLY:
        sys.modules.pop(name, None)
    class NoPosix(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in POSIX_ONLY:
                raise ImportError(f"No module named {name!r} (blocked: not on Windows)")
            return None
    sys.meta_path.insert(0, NoPosix())
    """
)

USER_FACING = (
    "fishtalk",
    "fishtalk.cli.app",
    "fishtalk.cli.launch",
    "fishtalk.plain.line",
    "fishtalk.engine.session",
    "fishtalk.cli.config",
    "fishtalk.cli.doctor",
    "fishtalk.engine.system",
    "fishtalk.engine.api",
    "fishtalk.engine.native",
    "fishtalk.tui.app",
    "fishtalk.tui.run",
    "fishtalk.engine.audio",
    "fishtalk.engine.audio.backend",
    "fishtalk.engine.audio.devices",
    "fishtalk.engine.tools",
    "fishtalk.engine.tools.command",
    "fishtalk.engine.tools.builtins",
)
"""Named on purpose (the walk below finds the rest): a rename must not go unnoticed."""

LINUX_ONLY = ("fishtalk.sim.netns",)
"""Linux by nature (network namespaces); nothing else may import it at module level."""


def run_blocked(body: str, *, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-c", BLOCKER + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_every_module_imports_without_fcntl_termios_pwd() -> None:
    body = f"""
    import fishtalk
    failed = []
    names = list({USER_FACING!r})
    names += [m.name for m in pkgutil.walk_packages(fishtalk.__path__, "fishtalk.")]
    for name in dict.fromkeys(names):
        if name in {LINUX_ONLY!r}:
            continue
        try:
            importlib.import_module(name)
        except Exception as exc:
            failed.append(f"{{name}}: {{type(exc).__name__}}: {{exc}}")
    print("\\n".join(failed) or "ALL IMPORTED")
    leaked = [m for m in ("fcntl", "termios", "pwd", *{LINUX_ONLY!r}) if m in sys.modules]
    print("LEAKED", leaked)
    """
    done = run_blocked(body, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "ALL IMPORTED" in lines, done.stdout
    assert "LEAKED []" in lines, done.stdout


def test_the_cli_runs_without_fcntl_termios_pwd(tmp_path: Path) -> None:
    # Not just imports: the commands a new user types first run to completion.
    config = tmp_path / "config.toml"
    config.write_text('[agents.helper]\nagent_id = "agent-1"\n', encoding="utf-8")
    body = f"""
    from fishtalk.cli.app import main
    for argv in (["--help"], ["chat", "--help"], ["agents"], ["config", "show"]):
        try:
            main(["--config", {str(config)!r}, *argv])
        except SystemExit as exc:
            assert exc.code == 0, (argv, exc.code)
    print("RAN")
    """
    done = run_blocked(body)
    assert done.returncode == 0, done.stderr
    assert "RAN" in done.stdout
    assert "helper" in done.stdout


def test_the_blocker_really_blocks() -> None:
    done = run_blocked("import fcntl\n")
    assert done.returncode != 0
    assert "blocked: not on Windows" in done.stderr


def test_o_noctty_is_a_flag_everywhere() -> None:
    assert isinstance(system.O_NOCTTY, int)
    if sys.platform != "win32":
        assert system.O_NOCTTY == os.O_NOCTTY


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_process_tree_reaches_grandchildren(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(300)\n"
    )
    parent = subprocess.Popen([PY, "-c", code], **system.new_process_group())
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.02)
        grandchild = int(pid_file.read_text())
        assert _alive(grandchild)
        system.kill_process_tree(parent.pid)
        assert parent.wait(timeout=10) == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while _alive(grandchild) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(grandchild)
    finally:
        system.kill_process_tree(parent.pid)
        parent.wait(timeout=10)


def test_kill_process_tree_of_a_finished_process_is_quiet() -> None:
    done = subprocess.Popen([PY, "-c", "pass"], **system.new_process_group())
    done.wait(timeout=30)
    system.kill_process_tree(done.pid)  # gone already: no error


SIGINT_PROBE = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from fishtalk.engine import system

    class NoSignalLoop(asyncio.SelectorEventLoop):
        # A loop without add_signal_handler, as Windows' proactor loop is.
        def add_signal_handler(self, sig, callback, *args):
            raise NotImplementedError

    loop = asyncio.new_event_loop() if sys.argv[1] == "unix" else NoSignalLoop()
    before = signal.getsignal(signal.SIGINT)

    async def main():
        caught = asyncio.Event()
        release = system.catch_sigint(asyncio.get_running_loop(), caught.set)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.wait_for(caught.wait(), 10)
            return "caught"
        finally:
            release()

    print(loop.run_until_complete(main()))
    loop.close()
    # The uninstaller gave SIGINT back: a later Ctrl-C is the default KeyboardInterrupt.
    print("restored", signal.getsignal(signal.SIGINT) is before)
    """
)


@pytest.mark.parametrize("loop_kind", ["unix", "windows-like"])
def test_catch_sigint_runs_the_callback_on_the_loop(loop_kind: str) -> None:
    # In a process of its own: the signal goes to the whole process, and only a main
    # thread may install handlers (a test runner's worker may run tests elsewhere).
    done = subprocess.run(
        [PY, "-c", SIGINT_PROBE, loop_kind], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["caught", "restored True"]
