"""`[ui] keys` problems stop every command at config load (exit 2, one line naming the file,
line and key), not only the TUI when it starts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

Run = Callable[..., Any]  # the run_cli fixture


def test_config_show_refuses_an_unknown_key_action(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[ui]\nkeys = {bogus = "f3"}\n', encoding="utf-8")
    result = run_cli("--config", str(path), "config", "show")
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith(f"fishtalk: invalid setting ui.keys.bogus in {path}, line 2: ")
    assert "unknown key action 'bogus'" in result.err
    assert result.err.count("\n") == 1


def test_config_show_refuses_a_key_taken_from_another_action(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[ui]\nkeys = { interrupt = "ctrl+x" }\n', encoding="utf-8")
    result = run_cli("--config", str(path), "config", "show")
    assert result.code == 2
    assert f"ui.keys.interrupt in {path}, line 2" in result.err
    assert "ctrl+x is already hangup's key" in result.err
