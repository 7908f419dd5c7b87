"""`fishtalk doctor`: with the virtual PulseAudio devices, without any sound server, and
with a broken config; and the typed results behind the lines."""

from __future__ import annotations

import math
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import audio_chain
import pytest
from support.virtual_audio import MIC, VirtualAudio

from fishtalk.cli.doctor import Check, Status, check_api_key, check_terminal, run_checks

FISHTALK = os.path.join(os.path.dirname(sys.executable), "fishtalk")
KEY = "sk-test-key-0123456789abcdef"


def base_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FISHTALK_", "FISH_", "PULSE_", "ALSA_"))
    }
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        FISH_API_KEY=KEY,
        FISHTALK_AGENT="agent-1",
        **extra,
    )
    return env


def doctor(env: dict[str, str], *args: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [FISHTALK, *args, "doctor", "--mic-seconds", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout.splitlines()


def line(lines: list[str], name: str) -> str:
    found = [text for text in lines if f"  {name}:" in text]
    assert found, f"no {name!r} line in:\n" + "\n".join(lines)
    return found[0]


@pytest.fixture(scope="module")
def vaudio() -> Iterator[VirtualAudio]:
    with audio_chain.for_a_child() as va:
        yield va


def tone(seconds: float, rate: int = 48_000) -> bytes:
    count = int(seconds * rate)
    return struct.pack(
        f"<{count}h", *(int(12000 * math.sin(2 * math.pi * 440 * i / rate)) for i in range(count))
    )


@pytest.mark.audio
def test_with_devices_and_a_voice_everything_is_ok(tmp_path: Path, vaudio: VirtualAudio) -> None:
    env = base_env(tmp_path, **vaudio.env)
    feed = vaudio.feed_mic(tone(20), rate=48_000)
    try:
        code, lines = doctor(env, "--config", str(write(tmp_path, "")))
    finally:
        feed.terminate()
        feed.wait(timeout=10)
    assert not [text for text in lines if text.startswith("fail")], lines
    assert code == 0, lines
    assert line(lines, "portaudio").startswith("ok")
    assert "PortAudio V19" in line(lines, "portaudio")
    assert line(lines, "devices").startswith("ok")
    assert line(lines, "microphone").startswith("ok")
    assert "Hz" in line(lines, "microphone")
    assert "Hz" in line(lines, "speaker")
    level = line(lines, "mic level")
    assert level.startswith("ok")
    assert "dBFS" in level


@pytest.mark.audio
def test_a_silent_microphone_is_a_warning(tmp_path: Path, vaudio: VirtualAudio) -> None:
    env = base_env(tmp_path, **vaudio.env)
    code, lines = doctor(
        env, "--config", str(write(tmp_path, f'[audio]\ninput_device = "{MIC}"\n'))
    )
    level = line(lines, "mic level")
    assert level.startswith("warn")
    assert "hears nothing" in level
    assert MIC in line(lines, "microphone")
    assert code == 0, lines  # a warning is no failure


def test_without_a_sound_server_audio_is_a_warning(tmp_path: Path) -> None:
    env = base_env(tmp_path, PULSE_SERVER=f"unix:{tmp_path}/nowhere", XDG_RUNTIME_DIR=str(tmp_path))
    code, lines = doctor(env)
    devices = line(lines, "devices")
    assert devices.startswith("warn")
    assert "no audio devices found" in devices
    assert not any("mic level" in text for text in lines)
    assert line(lines, "config").startswith("ok")
    assert "no file at" in line(lines, "config")
    assert code == 0, lines


def test_a_broken_config_fails_naming_the_problem(tmp_path: Path) -> None:
    path = write(tmp_path, "[audio]\necho_cancelation = false\n")
    env = base_env(tmp_path, PULSE_SERVER=f"unix:{tmp_path}/nowhere", XDG_RUNTIME_DIR=str(tmp_path))
    code, lines = doctor(env, "--config", str(path))
    assert code != 0
    config = line(lines, "config")
    assert config.startswith("fail")
    assert "audio.echo_cancelation" in config
    assert "line 2" in config
    assert "did you mean 'echo_cancellation'" in config
    assert any(text.strip().startswith("fix:") and str(path) in text for text in lines)
    assert line(lines, "portaudio")  # the other checks still ran


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "doctor.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_run_checks_yields_typed_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULSE_SERVER", f"unix:{tmp_path}/nowhere")
    monkeypatch.delenv("FISH_API_KEY", raising=False)
    checks = list(
        run_checks(config_path=write(tmp_path, ""), mic_seconds=0, environ={"TERM": "xterm"})
    )
    assert all(isinstance(c, Check) and isinstance(c.status, Status) for c in checks)
    names = [c.name for c in checks]
    assert names[:3] == ["config", "api key", "agent"]
    assert {"portaudio", "network", "terminal", "key release"} <= set(names)
    key = next(c for c in checks if c.name == "api key")
    assert key.status is Status.WARN
    assert "FISH_API_KEY" in key.fix


def test_online_doctor_does_not_say_the_key_goes_unchecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`doctor --online` checks the key online: its key line must not say the opposite."""
    monkeypatch.setenv("PULSE_SERVER", f"unix:{tmp_path}/nowhere")
    monkeypatch.setenv("FISH_API_KEY", KEY)
    # A closed port: the online check fails at once, and it is there, after the key line.
    config = write(tmp_path, '[api]\nurl = "http://127.0.0.1:9"\n[session]\nagent_id = "a"\n')
    checks = list(run_checks(config_path=config, online=True, mic_seconds=0, environ={}))
    names = [c.name for c in checks]
    assert names.index("api key") < names.index("online")
    key = next(c for c in checks if c.name == "api key")
    assert "not checked online" not in key.detail
    assert "online check" in key.detail
    offline = list(run_checks(config_path=config, mic_seconds=0, environ={}))
    assert "not checked online" in next(c for c in offline if c.name == "api key").detail


def test_api_key_shape() -> None:
    from fishtalk.cli.settings import Settings

    def status(key: str) -> Status:
        return check_api_key(Settings.model_validate({"api": {"api_key": key}})).status

    assert status(KEY) is Status.OK
    assert status(KEY + "\n") is Status.FAIL
    assert status("short") is Status.WARN
    shown = check_api_key(Settings.model_validate({"api": {"api_key": KEY}}))
    assert KEY not in shown.detail + shown.fix  # never printed


def test_terminal_key_release_is_honest() -> None:
    unknown = [c for c in check_terminal({"TERM": "xterm-256color"}) if c.name == "key release"]
    assert unknown[0].status is Status.WARN
    assert "unknown" in unknown[0].detail
    kitty = [c for c in check_terminal({"TERM": "xterm-kitty"}) if c.name == "key release"]
    assert kitty[0].status is Status.OK
    assert "not probed" in kitty[0].detail
    colours = [c for c in check_terminal({"TERM": "xterm", "COLORTERM": "truecolor"})]
    assert "24-bit" in colours[0].detail
    assert "none" in next(check_terminal({"TERM": "xterm", "NO_COLOR": "1"})).detail


def test_without_portaudio_the_doctor_says_what_to_install(tmp_path: Path) -> None:
    # sounddevice finds libportaudio through ctypes.util.find_library; when that finds
    # nothing its import raises OSError, exactly as on a machine without libportaudio2.
    code = (
        "import ctypes.util\n"
        "real = ctypes.util.find_library\n"
        "ctypes.util.find_library = lambda name: None if name == 'portaudio' else real(name)\n"
        "from fishtalk.cli.app import main\n"
        "main(['doctor', '--mic-seconds', '0'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=base_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=90,
    )
    lines = done.stdout.splitlines()
    portaudio = line(lines, "portaudio")
    assert portaudio.startswith("warn")
    assert "PortAudio library not installed" in portaudio
    fix = lines[lines.index(portaudio) + 1]
    assert "libportaudio2" in fix
    assert not any("  devices:" in text for text in lines)
