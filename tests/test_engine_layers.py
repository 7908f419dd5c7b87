"""The engine's layers: the session knows nothing of the CLI's world, the TUI neither the
sim nor the line mode, and the scripted session (support) no pytest."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support.child import loaded_modules as loaded

PACKAGE = Path(__file__).resolve().parents[1] / "fishtalk"


def imported_names(path: Path) -> set[str]:
    """Every module a file imports (at any level, TYPE_CHECKING blocks included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize(
    "module", ["fishtalk.engine.session", "fishtalk.engine.host", "fishtalk.engine.aio"]
)
def test_the_engine_does_not_import_the_cli_world(module: str) -> None:
    modules = loaded(module)
    assert "fishtalk.cli.config" not in modules
    assert "fishtalk.cli.app" not in modules
    assert "fishtalk.cli.launch" not in modules
    assert "typer" not in modules


def test_session_source_names_no_settings() -> None:
    names: set[str] = set()
    for path in sorted((PACKAGE / "engine" / "session").glob("*.py")):
        names |= imported_names(path)
    assert names
    assert not {n for n in names if n.startswith(("fishtalk.cli.config", "fishtalk.cli.launch"))}


@pytest.mark.parametrize("path", sorted((PACKAGE / "tui").rglob("*.py")), ids=str)
def test_tui_imports_neither_sim_nor_plain(path: Path) -> None:
    names = imported_names(path)
    banned = {n for n in names if n.startswith(("fishtalk.sim", "fishtalk.plain"))}
    assert not banned, f"{path.name} imports {banned}"
    assert "fishtalk.cli.launch" not in names


def test_testing_package_needs_no_pytest() -> None:
    modules = loaded("support.scripted")
    assert "pytest" not in modules
    assert "fishtalk.tui.app" not in modules
