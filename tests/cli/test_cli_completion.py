"""Shell completion, the typer way: the real entry point in a subprocess, driven by the
click completion protocol (``_FISHTALK_COMPLETE`` + ``COMP_WORDS``/``COMP_CWORD``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import audio_chain
import pytest

FISHTALK = os.path.join(os.path.dirname(sys.executable), "fishtalk")


def complete(
    words: str, tmp_path: Path, *, config: str = "", shell: str = "bash", **env: str
) -> list[str]:
    """The candidates `fishtalk` offers for the last word of ``words`` (bash protocol)."""
    path = tmp_path / "config.toml"
    path.write_text(config, encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("FISHTALK_", "FISH_"))}
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    environ.update(
        FISHTALK_CONFIG=str(path),
        _FISHTALK_COMPLETE=f"complete_{shell}",
        COMP_WORDS=words,
        COMP_CWORD=str(cword),
        **env,
    )
    done = subprocess.run(
        [FISHTALK], env=environ, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout.split()


PROFILES = """
[agents.support]
agent_id = "a-1"
[agents.sales]
agent_id = "a-2"
description = "Sales desk"
[agents.billing]
agent_id = "a-3"
"""


def test_profile_names_complete(tmp_path: Path) -> None:
    assert complete("fishtalk chat s", tmp_path, config=PROFILES) == ["sales", "support"]
    assert complete("fishtalk chat --agent b", tmp_path, config=PROFILES) == ["billing"]
    assert complete("fishtalk session create su", tmp_path, config=PROFILES) == ["support"]


def test_a_broken_config_completes_nothing_quietly(tmp_path: Path) -> None:
    assert complete("fishtalk chat s", tmp_path, config="[agents.x\n") == []


def test_scenario_names_complete(tmp_path: Path) -> None:
    (tmp_path / "custom.toml").write_text("", encoding="utf-8")
    assert complete("fishtalk demo --scenario d", tmp_path) == ["demo"]
    found = complete("fishtalk demo --scenario c", tmp_path)
    assert "converse" in found
    assert "custom.toml" in found
    assert "demo" in complete("fishtalk sim serve --scenario ", tmp_path)


def test_commands_and_options_complete(tmp_path: Path) -> None:
    assert "doctor" in complete("fishtalk d", tmp_path)
    assert "agents" in complete("fishtalk a", tmp_path)
    assert "--voice" in complete("fishtalk chat --vo", tmp_path)


def test_without_devices_device_names_complete_nothing(tmp_path: Path) -> None:
    env = {"PULSE_SERVER": f"unix:{tmp_path}/nowhere", "XDG_RUNTIME_DIR": str(tmp_path)}
    assert complete("fishtalk chat --input-device ", tmp_path, **env) == []


@pytest.mark.audio
def test_device_names_complete_from_portaudio(tmp_path: Path) -> None:
    from support.virtual_audio import MIC, MIC_FEED, SPEAKER

    with audio_chain.for_a_child() as va:
        mics = complete("fishtalk chat --input-device ", tmp_path, **va.env)
        speakers = complete("fishtalk demo --output-device ", tmp_path, **va.env)
        partial = complete(f"fishtalk chat --input-device {MIC}", tmp_path, **va.env)
        by_index = complete("fishtalk chat --output-device 0", tmp_path, **va.env)
    # (Through PulseAudio's ALSA plugin every device has both directions.)
    assert {MIC, SPEAKER, "0"} <= set(mics)
    assert {MIC, SPEAKER} <= set(speakers)
    assert partial == [MIC, MIC_FEED]
    assert by_index == ["0"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_the_script(tmp_path: Path, shell: str) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("_FISHTALK")}
    # Typer guesses the running shell unless told not to; then the flag takes its name.
    environ["_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"] = "1"
    done = subprocess.run(
        [FISHTALK, "--show-completion", shell],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "_FISHTALK_COMPLETE" in done.stdout
    assert f"complete_{shell}" in done.stdout


def test_completing_a_profile_imports_nothing_heavy(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(PROFILES, encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("FISHTALK_", "FISH_"))}
    environ.update(
        FISHTALK_CONFIG=str(path),
        _FISHTALK_COMPLETE="complete_bash",
        COMP_WORDS="fishtalk chat s",
        COMP_CWORD="2",
    )
    code = (
        "import atexit, sys\n"
        "heavy = ('textual', 'livekit', 'numpy', 'sounddevice')\n"
        "atexit.register(lambda: print('HEAVY', [m for m in heavy if m in sys.modules]))\n"
        "from fishtalk.cli.app import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["sales", "support"]
    assert "HEAVY []" in done.stdout


def test_install_completion_writes_the_script_and_sources_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("_FISHTALK")}
    environ.update(HOME=str(home), _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    done = subprocess.run(
        [FISHTALK, "--install-completion", "bash"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    script = home / ".bash_completions" / "fishtalk.sh"
    assert "_FISHTALK_COMPLETE=complete_bash" in script.read_text(encoding="utf-8")
    assert str(script) in (home / ".bashrc").read_text(encoding="utf-8")


def test_journal_ids_and_latest_complete(tmp_path: Path) -> None:
    """export, replay and diff take a journal id or ``latest``: completion offers them."""
    folder = tmp_path / "state" / "fishtalk" / "journal"
    folder.mkdir(parents=True)
    for stem in ("20261130-233702-abcdef", "20261201-101010-123456"):
        (folder / f"{stem}.jsonl").write_text("", encoding="utf-8")
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    newest_first = ["latest", "20261201-101010-123456", "20261130-233702-abcdef"]
    assert complete("fishtalk export ", tmp_path, **env) == newest_first
    assert complete("fishtalk replay 2026113", tmp_path, **env) == ["20261130-233702-abcdef"]
    assert complete("fishtalk diff latest ", tmp_path, **env) == newest_first
    assert complete("fishtalk export l", tmp_path, **env) == ["latest"]
    (tmp_path / "saved.jsonl").write_text("", encoding="utf-8")
    assert complete("fishtalk export ./s", tmp_path, **env) == ["./saved.jsonl"]
