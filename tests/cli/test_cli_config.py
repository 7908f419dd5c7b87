"""`fishtalk config ...`, --version/--help, error mapping and import lightness."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fishtalk import __version__

REPO = Path(__file__).resolve().parents[2]
Run = Callable[..., Any]  # the run_cli fixture (returns conftest.CliResult)
API_KEY = "sk-env-secret-abcdef"


def user_config(home: Path) -> Path:
    return home / "config" / "fishtalk" / "config.toml"


def test_version(run_cli: Run) -> None:
    result = run_cli("--version")
    assert result.code == 0
    assert result.out.strip() == f"fishtalk {__version__}"


def test_help_lists_commands(run_cli: Run) -> None:
    result = run_cli("--help")
    assert result.code == 0
    for word in ("session", "config", "--config", "--debug", "--version"):
        assert word in result.out


def test_unknown_command_is_usage_error(run_cli: Run) -> None:
    result = run_cli("no-such-command")
    assert result.code == 2
    assert "Traceback" not in result.err


def test_config_path_default_and_flag(run_cli: Run, isolated_env: Path, tmp_path: Path) -> None:
    result = run_cli("config", "path")
    assert result.code == 0
    assert result.out.strip() == str(user_config(isolated_env))
    other = tmp_path / "other.toml"
    assert run_cli("--config", str(other), "config", "path").out.strip() == str(other)


def test_config_init_writes_example_0600_and_refuses_overwrite(
    run_cli: Run, isolated_env: Path
) -> None:
    path = user_config(isolated_env)
    result = run_cli("config", "init")
    assert result.code == 0, result.err
    assert path.read_text(encoding="utf-8") == (REPO / "config.example.toml").read_text("utf-8")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    path.write_text("# mine\n", encoding="utf-8")
    refused = run_cli("config", "init")
    assert refused.code == 2
    assert "already exists" in refused.err
    assert "--force" in refused.err
    assert path.read_text(encoding="utf-8") == "# mine\n"

    os.chmod(path, 0o644)
    forced = run_cli("config", "init", "--force")
    assert forced.code == 0
    assert "[session]" in path.read_text(encoding="utf-8")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_config_show_never_shows_the_key(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[api]\napi_key = "from-file-secret-xyz"\n[session]\nagent_id = "a1"\n', encoding="utf-8"
    )
    result = run_cli("--config", str(path), "config", "show")
    assert result.code == 0, result.err
    assert "from-file-secret-xyz" not in result.out + result.err
    assert 'api_key = "<hidden>"' in result.out
    assert 'agent_id = "a1"' in result.out

    monkeypatch.setenv("FISH_API_KEY", API_KEY)
    result = run_cli("config", "show")
    assert API_KEY not in result.out + result.err
    assert 'api_key = "<hidden>"' in result.out


def test_broken_config_is_one_line_exit_2(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[audio]\nechho = true\n", encoding="utf-8")
    result = run_cli("--config", str(path), "config", "show")
    assert result.code == 2
    assert result.out == ""
    lines = result.err.strip().splitlines()
    assert len(lines) == 1
    assert "unknown setting audio.echho" in lines[0]
    assert f"{path}, line 2" in lines[0]


def test_flag_conflict_is_blamed_on_the_flags_not_the_config_file(
    run_cli: Run, isolated_env: Path
) -> None:
    from fishtalk.cli.commands.config import example_config_text

    path = user_config(isolated_env)
    path.parent.mkdir(parents=True)
    path.write_text(example_config_text(), encoding="utf-8")
    result = run_cli(
        "chat", "--agent", "demo", "--first-message", "a", "--first-message-prompt", "b"
    )
    assert result.code == 2
    assert result.err.strip() == (
        "fishtalk: invalid setting session from the command line: "
        "set first_message or first_message_prompt, not both"
    )


def test_conflict_between_flag_and_file_names_both(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[session]\nfirst_message = "hi"\n', encoding="utf-8")
    result = run_cli(
        "--config", str(path), "chat", "--agent", "demo", "--first-message-prompt", "b"
    )
    assert result.code == 2
    assert "from the command line" in result.err
    assert f"in {path}, line 2" in result.err


def test_bad_talk_mode_names_the_choices_cleanly(run_cli: Run) -> None:
    result = run_cli("chat", "--agent", "demo", "--talk-mode", "sometimes")
    assert result.code == 2
    assert "Value error" not in result.err
    assert (
        "Invalid value for '--talk-mode': 'sometimes' is not one of 'always', 'toggle', 'push'."
        in result.err
    )


def _subprocess(
    *args: str, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FISH_", "FISHTALK_"))}
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=60, env=env, cwd=REPO
    )


def test_python_dash_m_and_tracebacks_only_with_debug(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[api\n", encoding="utf-8")
    plain = _subprocess("-m", "fishtalk", "--config", str(bad), "config", "show")
    assert plain.returncode == 2
    assert plain.stderr.startswith("fishtalk: ")
    assert "invalid TOML" in plain.stderr
    assert "line 1" in plain.stderr
    assert "Traceback" not in plain.stderr
    debug = _subprocess("-m", "fishtalk", "--debug", "--config", str(bad), "config", "show")
    assert debug.returncode == 2
    assert "Traceback" in debug.stderr


HEAVY = ("textual", "livekit", "numpy", "sounddevice", "httpx", "asyncio")


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["--version"], ["chat", "--help"], ["demo", "--help"], ["test", "--help"]],
    ids=" ".join,
)
def test_help_and_version_import_nothing_heavy(argv: list[str]) -> None:
    probe = (
        "import json, sys\n"
        "from fishtalk.cli.app import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "sys.stderr.write(json.dumps({'code': code, 'heavy': heavy}))\n"
    )
    done = _subprocess("-c", probe)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "heavy": []}
