"""`fishtalk chat` / `fishtalk demo` audio flags, through the CLI in a subprocess, on the
virtual PulseAudio chain: a device that matches nothing stops before connecting (exit 2,
the choices listed); a name substring is the device the call really uses."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.child import run_python, start_fishtalk
from support.virtual_audio import MIC, MIC_FEED, SPEAKER, SPEAKER_MONITOR, VirtualAudio

from fishtalk.sim.fish.scenario import parse_scenario
from fishtalk.sim.runner import run_sim

pytestmark = [pytest.mark.audio, pytest.mark.timeout(120)]

WAIT = 30.0
UNREACHABLE = "http://127.0.0.1:9"
"""Nothing listens here: reaching the API would end in exit 5, not 2."""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISHTALK_", "FISH_"))}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    env["FISH_API_KEY"] = "k"
    env.update(extra)
    return env


def _fishtalk(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fishtalk", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
        env=_env(tmp_path, **extra),
    )


def _chat(tmp_path: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return _fishtalk(
        tmp_path, "chat", "--agent", "a", "--api-url", UNREACHABLE, "--plain", *args, **extra
    )


def test_an_unknown_input_device_stops_before_connecting(
    vaudio: VirtualAudio, tmp_path: Path
) -> None:
    done = _chat(tmp_path, "--input-device", "no such mic")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("fishtalk: no input device matching 'no such mic'; choices: ")
    assert done.stderr.count("\n") == 1
    assert f"'{MIC}'" in done.stderr
    assert f"'{SPEAKER_MONITOR}'" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unknown_output_index_and_a_config_device_stop_too(
    vaudio: VirtualAudio, tmp_path: Path
) -> None:
    done = _chat(tmp_path, "--output-device", "999")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("fishtalk: no output device with index 999; choices: ")
    assert f"'{SPEAKER}'" in done.stderr

    config = tmp_path / "fishtalk.toml"
    config.write_text('[audio]\ninput_device = "nope"\n', "utf-8")
    done = _fishtalk(
        tmp_path, "--config", str(config), "chat", "--agent", "a", "--api-url", UNREACHABLE
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("fishtalk: no input device matching 'nope'; choices: ")


def test_an_unknown_device_in_the_demo_stops_before_the_sim_starts(
    vaudio: VirtualAudio, tmp_path: Path
) -> None:
    done = _fishtalk(tmp_path, "demo", "--output-device", "no such speaker")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("fishtalk: no output device matching 'no such speaker'; ")
    assert done.stderr.count("\n") == 1


def test_no_audio_and_text_only_check_no_device(vaudio: VirtualAudio, tmp_path: Path) -> None:
    """With audio off a stale device name is irrelevant: the call goes ahead (and here
    meets the unreachable API: exit 5, not 2)."""
    for flag in ("--no-audio", "--text-only"):
        done = _chat(tmp_path, flag, "--input-device", "nope")
        assert done.returncode == 5, (flag, done.stderr)
        assert "device" not in done.stderr


def test_help_documents_the_audio_flags(tmp_path: Path) -> None:
    for command in ("chat", "demo"):
        done = _fishtalk(tmp_path, command, "--help", COLUMNS="200", NO_COLOR="1")
        assert done.returncode == 0, done.stderr
        for flag in ("--input-device", "--output-device", "--no-audio"):
            assert flag in done.stdout, (command, flag)
        assert "audio.enabled = false" in done.stdout
    done = _fishtalk(tmp_path, "chat", "--help", COLUMNS="200", NO_COLOR="1")
    assert "Like --no-audio, and typed turns ask for text replies" in done.stdout


def test_help_loads_no_sounddevice(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from fishtalk.cli.app import main\n"
        "try:\n"
        "    main(['chat', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert 'sounddevice' not in sys.modules\n"
        "print('clean')\n"
    )
    done = run_python(code, timeout=30, env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("clean\n")


_QUIET = parse_scenario(
    """
    name = "quiet"
    then = "converse"
    [agent]
    greeting = ""
    voice = "tones"
    idle_seconds = 0
    """,
    name="quiet",
)


def _streams(vaudio: VirtualAudio, kind: str) -> set[str]:
    """Names of the sources (``kind='source'``) or sinks with a client stream attached."""
    names = {}
    for line in vaudio.pactl("list", "short", f"{kind}s").splitlines():
        fields = line.split("\t")
        names[fields[0]] = fields[1]
    used = set()
    for line in vaudio.pactl(
        "list", "short", f"{kind}-{'outputs' if kind == 'source' else 'inputs'}"
    ).splitlines():
        fields = line.split("\t")
        used.add(names.get(fields[1], fields[1]))
    return used


@pytest.mark.webrtc
async def test_name_substrings_pick_the_devices_the_call_uses(
    vaudio: VirtualAudio, tmp_path: Path
) -> None:
    """Non-default devices by part of their names: the speaker's monitor as the mic and
    the mic feed as the speaker. The sound server shows the call's streams on them."""
    async with run_sim(scenarios={"quiet": _QUIET}) as sim:
        env = _env(tmp_path, FISH_API_KEY=sim.dev_key)
        proc = await start_fishtalk(
            "chat",
            "--agent",
            "quiet",
            "--api-url",
            sim.api_url,
            "--plain",
            "--input-device",
            "speaker_mon",
            "--output-device",
            "MIC_FEED",
            env=env,
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        try:
            async with asyncio.timeout(WAIT):
                while (line := await proc.stdout.readline()) != b"* connected\n":
                    assert line, "fishtalk chat ended before connecting"
            deadline = time.monotonic() + WAIT
            while True:
                sources = await asyncio.to_thread(_streams, vaudio, "source")
                sinks = await asyncio.to_thread(_streams, vaudio, "sink")
                if f"{SPEAKER}.monitor" in sources and MIC_FEED in sinks:
                    break
                assert time.monotonic() < deadline, (sources, sinks)
                await asyncio.sleep(0.2)
            assert MIC not in sources  # not the default microphone
            assert SPEAKER not in sinks  # not the default speaker
            proc.stdin.write(b"/hangup\n")
            await proc.stdin.drain()
            out, err = await asyncio.wait_for(proc.communicate(), WAIT)
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        assert proc.returncode == 0, err.decode()
        assert out.decode().splitlines()[-1] == "* You hung up."


async def _plain_chat(env: dict[str, str], api_url: str, *args: str) -> tuple[int, str, str]:
    proc = await start_fishtalk("chat", "--agent", "quiet", "--api-url", api_url, *args, env=env)
    try:
        out, err = await asyncio.wait_for(proc.communicate(b"hello\n"), 60)
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.webrtc
async def test_without_devices_the_chat_is_text_only_with_one_line_why(tmp_path: Path) -> None:
    """No sound server (so no devices) and no device named: one notice, then a full chat
    by text. With --no-audio a stale device name does not matter either."""
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    async with run_sim(scenarios={"quiet": _QUIET}) as sim:
        env = _env(tmp_path, FISH_API_KEY=sim.dev_key)
        for name in [n for n in env if n.startswith(("PULSE_", "ALSA_"))]:
            del env[name]
        env["PULSE_SERVER"] = f"unix:{runtime}/nowhere"
        env["XDG_RUNTIME_DIR"] = str(runtime)
        code, out, err = await _plain_chat(env, sim.api_url)
        assert code == 0, err
        lines = out.splitlines()
        notice = "* text-only: no audio devices found"
        assert lines.count(notice) == 1, out
        assert lines.index(notice) < lines.index("* connected")  # said before the call
        assert any(line.startswith("agent: You said: hello") for line in lines), out
        assert lines[-1] == "* You hung up."

        code, out, err = await _plain_chat(env, sim.api_url, "--no-audio", "--input-device", "x")
        assert code == 0, err
        assert any(line.startswith("agent: You said: hello") for line in out.splitlines()), out


@pytest.mark.webrtc
@pytest.mark.parametrize(
    "flags",
    [("--input-device", "fishtalk_mic", "--output-device", "Fishtalk_Speaker"), ("--no-audio",)],
    ids=["devices", "no-audio"],
)
def test_piped_demo_takes_the_audio_flags_and_exits_cleanly(
    vaudio: VirtualAudio, tmp_path: Path, flags: tuple[str, ...]
) -> None:
    """The demo through a pipe (line mode): the reply, the last line flushed before the
    process leaves without finalization, exit 0."""
    done = subprocess.run(
        [sys.executable, "-m", "fishtalk", "demo", "--scenario", "converse", *flags],
        input="hello\n",
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        env=_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("agent: You said: hello") for line in lines), done.stdout
    assert lines[-1] == "* You hung up."
    assert "Traceback" not in done.stderr


@pytest.mark.webrtc
def test_piped_demo_reports_heard_latency_and_writes_the_metrics(
    vaudio: VirtualAudio, tmp_path: Path
) -> None:
    """``fishtalk demo --latency --metrics-json`` with real (virtual) devices: a heard
    figure after the typed turn's reply, the summary before the closing line, and the
    same turn in the metrics file."""
    metrics = tmp_path / "metrics.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fishtalk",
            "demo",
            "--scenario",
            "converse",
            "--input-device",
            "fishtalk_mic",
            "--output-device",
            "Fishtalk_Speaker",
            "--latency",
            "--metrics-json",
            str(metrics),
        ],
        input="hello\n",
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        env=_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    heard = [line for line in lines if re.match(r"\* latency \(your turn \d+\): heard ", line)]
    assert heard, done.stdout
    assert lines[-2].startswith("* latency: p50 "), done.stdout
    assert lines[-1] == "* You hung up."
    data = json.loads(metrics.read_text())
    typed = [t for t in data["turns"] if t["kind"] == "typed"]
    assert typed, data
    assert typed[0]["heard_ms"] > 0, data
    assert data["summary"]["measured"] >= 1
