"""Help pages: flags show no value placeholder, value options a meaningful one."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import typer
from typer.core import TyperGroup

from fishtalk.cli.app import app

Run = Callable[..., Any]  # the run_cli fixture (returns conftest.CliResult)
TYPE_PLACEHOLDERS = ("<bool>", "<str>", "<int>", "<float>", "<file>", "<path>")


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wide terminal, so no placeholder is split across lines."""
    monkeypatch.setenv("COLUMNS", "250")


def _all_commands() -> Iterator[tuple[str, ...]]:
    """The argv prefix of every command and group in the CLI."""

    def walk(command: object, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        if isinstance(command, TyperGroup):
            for name, sub in sorted(command.commands.items()):
                yield from walk(sub, (*path, name))

    yield from walk(typer.main.get_command(app), ())


@pytest.mark.parametrize("argv", [("chat",), (), ("session", "create"), ("demo",)], ids=" ".join)
def test_named_help_pages_have_no_type_placeholders(run_cli: Run, argv: tuple[str, ...]) -> None:
    result = run_cli(*argv, "--help")
    assert result.code == 0, result.err
    for placeholder in ("<bool>", "<str>", "<int>"):
        assert placeholder not in result.out, result.out


def test_every_help_page_names_values_and_leaves_flags_bare(run_cli: Run) -> None:
    commands = list(_all_commands())
    assert ("tools", "run") in commands
    assert ("sim", "serve") in commands
    for argv in commands:
        result = run_cli(*argv, "--help")
        assert result.code == 0, (argv, result.err)
        assert "<bool>" not in result.out, (argv, result.out)
        # Typer labels positional arguments with their type whatever the metavar; options
        # are ours to name.
        options = result.out.split("\nOptions:\n", 1)[1]
        for placeholder in TYPE_PLACEHOLDERS:
            assert placeholder not in options, (argv, result.out)
        assert re.search(r"--help +Show this message", result.out), (argv, result.out)


def test_value_options_show_what_they_take(run_cli: Run) -> None:
    pages = {
        (): ["--config PATH"],
        ("chat",): ["--agent ID", "--api-url URL", "--origin URL", "--input-device DEV"],
        ("session", "create"): ["--agent ID", "--api-url URL", "--origin URL"],
        ("demo",): ["--scenario NAME|FILE", "--output-device DEV"],
        ("tools", "run"): ["-p, --params JSON"],
        ("sim", "serve"): ["--host HOST", "--port PORT", "--scenario NAME|FILE"],
    }
    for argv, shown in pages.items():
        out = run_cli(*argv, "--help").out
        for text in shown:
            assert text in out, (argv, out)
    chat = run_cli("chat", "--help").out
    for flag in ("--plain", "--text-only", "--no-audio", "--public / --no-public"):
        line = next(ln for ln in chat.splitlines() if ln.strip().startswith(flag))
        after = line.strip()[len(flag) :]
        assert after.startswith("  "), line  # straight to the help text: no placeholder
