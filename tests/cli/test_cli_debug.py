"""--debug anywhere on the line (or FISHTALK_DEBUG), and --version's fast path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.child import env_without_fish, run_python

import fishtalk.cli.commands.config
from fishtalk import __version__
from fishtalk.__main__ import _asks_version

Run = Callable[..., Any]  # the run_cli fixture (returns conftest.CliResult)
REPO = Path(__file__).resolve().parents[2]


def _bad_config(tmp_path: Path) -> Path:
    bad = tmp_path / "bad.toml"
    bad.write_text("[api\n", encoding="utf-8")
    return bad


@pytest.mark.parametrize(
    "argv",
    [
        ("--debug", "--config", "{bad}", "config", "show"),
        ("--config", "{bad}", "config", "show", "--debug"),
        ("--config", "{bad}", "config", "--debug", "show"),
    ],
    ids=["before", "after", "between"],
)
def test_debug_is_accepted_before_and_after_the_command(
    run_cli: Run, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    bad = str(_bad_config(tmp_path))
    result = run_cli(*(bad if a == "{bad}" else a for a in argv))
    assert result.code == 2, result.err
    assert "No such option" not in result.err
    assert "Traceback" in result.err
    assert "invalid TOML" in result.err


def test_without_debug_no_traceback(run_cli: Run, tmp_path: Path) -> None:
    result = run_cli("--config", str(_bad_config(tmp_path)), "config", "show")
    assert result.code == 2
    assert "Traceback" not in result.err


def test_fishtalk_debug_env_is_debug(
    run_cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FISHTALK_DEBUG", "1")
    result = run_cli("--config", str(_bad_config(tmp_path)), "config", "show")
    assert result.code == 2
    assert "Traceback" in result.err


def test_debug_after_dash_dash_is_an_argument(run_cli: Run) -> None:
    result = run_cli("session", "end", "--", "--debug")
    # "--debug" is the session id here, not the flag: no API key, so a config error.
    assert result.code == 2
    assert "Traceback" not in result.err


def _explode(*args: object, **kwargs: object) -> object:
    raise RuntimeError("boom")


def test_unexpected_error_suggests_debug_only_without_it(
    run_cli: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fishtalk.cli.commands.config, "load", _explode)
    quiet = run_cli("config", "show")
    assert quiet.code == 1
    assert quiet.err.strip() == (
        "fishtalk: unexpected error: RuntimeError: boom (run with --debug for details)"
    )
    loud = run_cli("config", "show", "--debug")
    assert loud.code == 1
    assert "Traceback" in loud.err
    assert "run with --debug" not in loud.err
    assert loud.err.strip().splitlines()[-1] == "fishtalk: unexpected error: RuntimeError: boom"


@pytest.mark.parametrize(
    ("argv", "asks"),
    [
        (["--version"], True),
        (["--debug", "--version"], True),
        (["--config", "x.toml", "--version"], True),
        (["chat", "--version"], False),
        (["--help", "--version"], False),
        ([], False),
        (["session", "end", "--version"], False),
    ],
)
def test_version_fast_path_only_for_the_root_option(argv: list[str], asks: bool) -> None:
    assert _asks_version(argv) is asks


def test_version_answers_before_the_cli_is_imported() -> None:
    probe = (
        "import json, sys\n"
        "sys.argv = ['fishtalk', '--version']\n"
        "from fishtalk.__main__ import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "heavy = ('typer', 'click', 'fishtalk.cli.app', 'asyncio')\n"
        "loaded = [m for m in heavy if m in sys.modules]\n"
        "sys.stderr.write(json.dumps({'code': code, 'loaded': loaded}))\n"
    )
    env = env_without_fish()
    done = run_python(probe, timeout=60, env=env, cwd=REPO)
    assert json.loads(done.stderr.strip().splitlines()[-1]) == {"code": 0, "loaded": []}
    assert done.stdout == f"fishtalk {__version__}\n"


def test_the_console_script_uses_the_fast_entry_point() -> None:
    from importlib.metadata import entry_points

    (script,) = [ep for ep in entry_points(group="console_scripts") if ep.name == "fishtalk"]
    assert script.value == "fishtalk.__main__:main"
