"""CLI messages go through fishtalk.core.text too: an error line never carries a raw control or
bidi character, whatever the user or the server put in it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fishtalk.core.text import is_dangerous

Run = Callable[..., Any]  # the run_cli fixture


def test_an_error_line_is_stripped(run_cli: Run, tmp_path: Path) -> None:
    path = tmp_path / "x\u202egnp.exe\x1b]0;pwned\x07.toml"
    result = run_cli("--config", str(path), "config", "show")
    assert result.code == 2
    line = result.err.rstrip("\n")
    assert line.startswith("fishtalk: config file not found: ")
    assert "\n" not in line
    assert not [hex(ord(ch)) for ch in line if is_dangerous(ch)]
    assert "pwned" not in line  # the OSC sequence went whole, not just its ESC
