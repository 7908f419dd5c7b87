"""The CLI's front ends use no private back doors: what they touch, a library user can.

The line mode, the TUI, the launcher and the CLI drive the engine through the same public
layer ``AgentSession`` is built on (:class:`fishtalk.engine.session.Session`'s documented commands
and ``add_listener``, and the events of :func:`fishtalk.core.conversation.changes`). This reads
their source: no private attribute of another object (``session._x``), no private name
imported from another fishtalk module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "fishtalk"
FRONT_ENDS = sorted(
    path
    for path in [*ROOT.glob("plain/**/*.py"), *ROOT.glob("cli/**/*.py"), *ROOT.glob("tui/**/*.py")]
    if "config" not in path.name  # the config file's loader drives no session
)


def _back_doors(path: Path) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if node.attr.startswith("__") and node.attr.endswith("__"):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            value = node.value
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id == "super"
            ):
                continue  # the object's own inherited member, like self._x
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fishtalk"):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path.name}:{node.lineno}: import {alias.name}")
    return found


@pytest.mark.parametrize("path", FRONT_ENDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_front_end_uses_only_public_names(path: Path) -> None:
    assert _back_doors(path) == []


def test_the_scan_finds_a_back_door(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from fishtalk.engine.session import _one_line\n"
        "def f(session):\n"
        "    return session._state, self_like._x, super()._own\n",
        encoding="utf-8",
    )
    assert len(_back_doors(sample)) == 3


# Where "what changed" may be computed: once per reduction by the session, which hands the
# events to its listeners and observers (line mode, the TUI, the journal, AgentSession and
# so ``fishtalk test``), and once per replayed input by the journal's replay (a seek's
# jump is the one other diff: between two states far apart).
COMPUTES_CHANGES = {
    "engine/session/plumbing.py": "the session, after every reduction",
    "workbench/journal/replay.py": "the replay of a journal's inputs",
    "workbench/journal/replay_session.py": "a replay's seek, between two far-apart states",
    "tui/app.py": "the TUI's toasts, between two coalesced frames",
}


def _calls_changes(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "changes":
                return True
    return False


def test_what_changed_is_computed_in_one_place_per_stream() -> None:
    callers = {
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if "conversation" not in path.parts and _calls_changes(path)
    }
    assert callers == set(COMPUTES_CHANGES)
