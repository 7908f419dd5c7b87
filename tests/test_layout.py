"""The package's layout rules: no module over 600 lines, and every module says its topic.

A module that outgrows the limit is split along the topics it already has (see
design.md), not allowed here; only data tables may be listed in ``DATA_TABLES``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "fishtalk"
MAX_LINES = 600

DATA_TABLES: frozenset[str] = frozenset()
"""Paths (relative to fishtalk/) of data-table modules allowed over the limit: none yet.
Each entry needs a comment saying what table it holds."""

MODULES = sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def test_the_walk_finds_the_package() -> None:
    assert len(MODULES) > 50
    assert all(name in {_name(p) for p in MODULES} for name in DATA_TABLES)


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_module_is_over_the_line_limit(path: Path) -> None:
    lines = len(path.read_text("utf-8").splitlines())
    if _name(path) in DATA_TABLES:
        return
    assert lines <= MAX_LINES, (
        f"fishtalk/{_name(path)} has {lines} lines (limit {MAX_LINES}): split it by topic"
    )


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_every_module_has_a_docstring(path: Path) -> None:
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    docstring = ast.get_docstring(tree)
    assert docstring is not None, f"fishtalk/{_name(path)} has no module docstring"
    assert docstring.strip(), f"fishtalk/{_name(path)} has an empty module docstring"
