"""``fishtalk demo`` and ``fishtalk chat`` as a person runs them: in a terminal (tmux)."""

from __future__ import annotations

import asyncio
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fishtalk.cli.demo import NO_WEBRTC_NETWORK
from fishtalk.cli.front_ends import wants_tui
from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import run_sim

TMUX = shutil.which("tmux")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_wants_tui_only_on_a_terminal() -> None:
    assert wants_tui(None, stdin=_Tty(), stdout=_Tty())
    assert not wants_tui(True, stdin=_Tty(), stdout=_Tty())
    assert not wants_tui(None, stdin=io.StringIO(), stdout=_Tty())
    assert not wants_tui(None, stdin=_Tty(), stdout=io.StringIO())


def test_demo_without_a_webrtc_network_says_so_at_once() -> None:
    """A host with only loopback (a fresh network namespace): one sentence, exit 7."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "util-linux unshare is needed for this test"
    proc = subprocess.run(
        [unshare, "-rn", sys.executable, "-m", "fishtalk", "demo"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 7, proc.stderr
    assert proc.stderr == f"fishtalk: {NO_WEBRTC_NETWORK}\n"
    # The hint runs as given from a venv that was never activated: full interpreter paths.
    assert f"`{sys.executable} -m fishtalk.sim.netns -- {sys.executable} -m fishtalk demo`" in (
        proc.stderr
    )
    assert proc.stdout == ""


def _demo(*args: str, unshare: bool = False) -> subprocess.CompletedProcess[str]:
    prefix: list[str] = []
    if unshare:
        tool = shutil.which("unshare")
        assert tool is not None, "util-linux unshare is needed for this test"
        prefix = [tool, "-rn"]
    return subprocess.run(
        [*prefix, sys.executable, "-m", "fishtalk", "demo", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "100"},
    )


def test_demo_scenario_option_is_documented() -> None:
    proc = _demo("--help")
    assert proc.returncode == 0, proc.stderr
    assert "--scenario" in proc.stdout
    assert "NAME|FILE" in proc.stdout
    assert "converse" in proc.stdout


def _help(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "fishtalk", *args, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "240", "NO_COLOR": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _paragraphs_on_one_line(text: str, *sentences: str) -> None:
    lines = [" ".join(line.strip(" │").split()) for line in text.splitlines()]
    for sentence in sentences:
        assert any(sentence in line for line in lines), (sentence, text)


def test_help_texts_flow_as_paragraphs_not_hard_broken_lines() -> None:
    """On a wide terminal every help paragraph is one line: no break mid-sentence."""
    _paragraphs_on_one_line(
        _help("chat"),
        "Talk to an agent: the full-screen TUI on a terminal, line mode otherwise.",
        "each input line is a typed turn; /help lists the commands (/interrupt, /hangup, /mute,",
        "Ctrl+C hangs up and exits with 130",
    )
    _paragraphs_on_one_line(
        _help("demo"),
        "a client (speech and transcripts, tool calls, client tools, states, errors, a dropped",
    )
    _paragraphs_on_one_line(
        _help(),
        "chat Talk to an agent (TUI on a terminal, line mode otherwise).",
        "demo Talk to a simulated agent on this machine (no account needed).",
    )
    _paragraphs_on_one_line(
        _help("sim"),
        "serve Run the simulator in the foreground; prints the API URL and key. Ctrl-C stops it.",
    )


def test_demo_with_a_bad_scenario_file_says_so_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    proc = _demo("--scenario", str(missing))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"fishtalk: cannot read scenario {missing}")
    assert proc.stderr.count("\n") == 1
    assert proc.stdout == ""

    broken = tmp_path / "broken.toml"
    broken.write_text('[[steps]]\ndo = "dance"\n', "utf-8")
    proc = _demo("--scenario", str(broken))
    assert proc.returncode == 2
    assert proc.stderr.startswith("fishtalk: ")
    assert "broken.toml" in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr


def test_demo_accepts_a_scenario_file_and_a_builtin_name(tmp_path: Path) -> None:
    """A good scenario gets past its check; without a WebRTC network the demo then stops
    at the next one (exit 7), so this needs no network at all."""
    good = tmp_path / "hello.toml"
    good.write_text('[agent]\ngreeting = "Hello from a file."\n', "utf-8")
    for scenario in (str(good), "converse"):
        proc = _demo("--scenario", scenario, unshare=True)
        assert proc.returncode == 7, proc.stderr
        assert proc.stderr == f"fishtalk: {NO_WEBRTC_NETWORK}\n"


class Tmux:
    """One private tmux server (its own socket) running one window."""

    def __init__(self) -> None:
        assert TMUX is not None, "tmux is needed for this test (apt-get install tmux)"
        self.socket = f"fishtalk-test-{uuid.uuid4().hex[:8]}"

    def run(self, *args: str) -> str:
        assert TMUX is not None
        out = subprocess.run(
            [TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=15, check=True
        )
        return out.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "main")

    def wait_for(self, text: str, within: float) -> str:
        deadline = time.monotonic() + within
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} did not appear; the screen:\n{screen}")
            time.sleep(0.5)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    session = Tmux()
    try:
        yield session
    finally:
        subprocess.run(
            [TMUX or "tmux", "-L", session.socket, "kill-server"],
            capture_output=True,
            timeout=15,
            check=False,
        )


@pytest.mark.webrtc
@pytest.mark.timeout(240)
def test_demo_in_a_terminal(tmux: Tmux) -> None:
    env = {
        "XDG_CONFIG_HOME": "/nonexistent-fishtalk-test",
        "FISHTALK_CONFIG": "",
        "PATH": os.environ.get("PATH", ""),
    }
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    command = (
        f"env -u FISHTALK_CONFIG {exports} {shlex.quote(sys.executable)} -m fishtalk demo; "
        "echo FISHTALK-EXIT=$?; sleep 60"
    )
    tmux.run("new-session", "-d", "-x", "100", "-y", "30", "-s", "main", command)
    first = tmux.wait_for("Hi! I'm a simulated Fish agent", within=60)
    assert "fishtalk · demo (simulated agent)" in first
    assert "● connected" in tmux.wait_for("● connected", within=30)
    tmux.run("send-keys", "-t", "main", "-l", "hello from tmux")
    tmux.run("send-keys", "-t", "main", "Enter")
    tmux.wait_for("you ⌨ hello from tmux", within=10)
    # The tour answers a typed turn between two of its steps, not after the whole tour.
    screen = tmux.wait_for("You said: hello from tmux", within=150)
    assert "That's the tour" not in screen
    # A tool card is on screen: a status glyph and a tool's name (the panel's title,
    # "tools", is there all along and proves nothing).
    screen = tmux.wait_for("lookup_weather", within=90)
    assert "no tool calls yet" not in screen
    assert re.search(r"[◔✓] lookup_weather", screen), screen
    tmux.run("send-keys", "-t", "main", "C-x")
    ended = tmux.wait_for("Session ended", within=30)
    assert "You hung up." in ended
    tmux.run("send-keys", "-t", "main", "q")
    after = tmux.wait_for("FISHTALK-EXIT=0", within=30)
    # The full screen is gone; one line in the terminal says how the call went.
    assert "fishtalk: call ended — you hung up · " in after
    assert "turns · " in after


_GREETER = parse_scenario(
    """
    then = "converse"
    [agent]
    greeting = "Hello from the sim."
    voice = "tones"
    idle_seconds = 0
    """,
    name="greeter",
)


@pytest.mark.webrtc
@pytest.mark.timeout(180)
async def test_chat_opens_the_tui_on_a_terminal(tmux: Tmux) -> None:
    async with run_sim(scenarios={"greeter": _GREETER}) as sim:
        command = (
            f"env -u FISHTALK_CONFIG XDG_CONFIG_HOME=/nonexistent-fishtalk-test "
            f"FISH_API_KEY={shlex.quote(sim.dev_key)} {shlex.quote(sys.executable)} -m fishtalk "
            f"chat --agent greeter --api-url {shlex.quote(sim.api_url)} --text-only; "
            "echo FISHTALK-EXIT=$?; sleep 60"
        )
        await asyncio.to_thread(
            tmux.run, "new-session", "-d", "-x", "80", "-y", "24", "-s", "main", command
        )
        screen = await asyncio.to_thread(tmux.wait_for, "agent ▸ Hello from the sim.", 60)
        assert "╭─ transcript" in screen  # the full-screen TUI, not the line mode
        await asyncio.to_thread(tmux.run, "send-keys", "-t", "main", "-l", "ping")
        await asyncio.to_thread(tmux.run, "send-keys", "-t", "main", "Enter")
        await asyncio.to_thread(tmux.wait_for, "You said: ping", 60)
        await asyncio.to_thread(tmux.run, "send-keys", "-t", "main", "C-q")
        await asyncio.to_thread(tmux.wait_for, "FISHTALK-EXIT=0", 30)


@pytest.mark.webrtc
@pytest.mark.timeout(180)
async def test_ctrl_c_in_the_tui_hangs_up_and_exits_130(tmux: Tmux) -> None:
    async with run_sim(scenarios={"greeter": _GREETER}) as sim:
        command = (
            f"env -u FISHTALK_CONFIG XDG_CONFIG_HOME=/nonexistent-fishtalk-test "
            f"FISH_API_KEY={shlex.quote(sim.dev_key)} {shlex.quote(sys.executable)} -m fishtalk "
            f"chat --agent greeter --api-url {shlex.quote(sim.api_url)} --text-only; "
            "echo FISHTALK-EXIT=$?; sleep 60"
        )
        await asyncio.to_thread(
            tmux.run, "new-session", "-d", "-x", "80", "-y", "24", "-s", "main", command
        )
        await asyncio.to_thread(tmux.wait_for, "agent ▸ Hello from the sim.", 60)
        await asyncio.to_thread(tmux.run, "send-keys", "-t", "main", "C-c")
        after = await asyncio.to_thread(tmux.wait_for, "FISHTALK-EXIT=130", 30)
        assert "fishtalk: interrupted; hung up · " in after
        assert "Traceback" not in after


@pytest.mark.timeout(120)
def test_chat_failure_shows_why_then_exits_with_the_plain_mode_code(tmux: Tmux) -> None:
    """Nothing listens on the API port: ended screen, then the sentence and exit code 5."""
    command = (
        "env -u FISHTALK_CONFIG XDG_CONFIG_HOME=/nonexistent-fishtalk-test FISH_API_KEY=k "
        f"{shlex.quote(sys.executable)} -m fishtalk chat --agent a "
        "--api-url http://127.0.0.1:9 --text-only; echo FISHTALK-EXIT=$?; sleep 60"
    )
    tmux.run("new-session", "-d", "-x", "80", "-y", "24", "-s", "main", command)
    ended = tmux.wait_for("Session ended", within=60)
    assert "127.0.0.1:9" in ended
    after = tmux.wait_for("FISHTALK-EXIT=5", within=30)
    assert "fishtalk: " in after
    assert "Traceback" not in after
