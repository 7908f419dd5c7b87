"""The README tells a new user what they need: prerequisites, the environment variables
fishtalk reads, what line mode's prefixes mean, the sim's reserved agent ids, the
loopback-only hint with the non-activated venv's paths, and `tools run`'s exit codes.
And bare `fishtalk` prints the help and exits 0, as the README says."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fishtalk.sim.fish.answers import RESERVED_AGENT_IDS

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
Run = Callable[..., Any]  # the run_cli fixture


def test_prerequisites() -> None:
    assert "Python 3.11 or newer" in README
    assert "python3-venv" in README


@pytest.mark.parametrize("name", ["FISHTALK_CONFIG", "FISHTALK_DEBUG"])
def test_environment_variables(name: str) -> None:
    assert f"`{name}" in README


@pytest.mark.parametrize("agent_id", sorted(RESERVED_AGENT_IDS))
def test_every_reserved_agent_id_is_documented(agent_id: str) -> None:
    assert f"`{agent_id}`" in README


@pytest.mark.parametrize("prefix", ["agent: ", "you: ", "you> ", "* ", "! ", "? ", "[tool] "])
def test_line_mode_prefixes(prefix: str) -> None:
    assert re.search(rf"^\| `{re.escape(prefix)}` \| \S", README, re.MULTILINE), prefix


def test_loopback_hint_works_without_activating_the_venv() -> None:
    assert "`.venv/bin/python -m fishtalk.sim.netns -- .venv/bin/fishtalk demo`" in README
    # Every netns command in the README spells both programs with a path.
    words = README.split()
    for i, word in enumerate(words):
        if word == "fishtalk.sim.netns" and words[i - 1] == "-m":
            assert words[i - 2].strip("`(").endswith(".venv/bin/python"), words[i - 2 : i + 3]
            assert words[i + 1] == "--"
            assert words[i + 2].startswith(".venv/bin/"), words[i - 2 : i + 3]


def test_tools_run_exit_codes_and_the_proc_note() -> None:
    assert "`fishtalk tools run` has its own exit codes" in README
    for row in ("| 0 | the tool ran", "| 1 | the tool failed", "| 2 | bad usage"):
        assert row in README
    assert "/proc/<pid>/environ" in README


def test_bare_fishtalk_prints_help_and_exits_0(run_cli: Run) -> None:
    result = run_cli()
    assert result.code == 0
    assert result.out.startswith("Usage: fishtalk [OPTIONS] COMMAND [ARGS]...")
    assert "tools" in result.out
    assert "`fishtalk` alone prints the help and exits 0." in README
