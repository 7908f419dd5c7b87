"""The TUI's actions as Textual bindings, and rebinding from ``Settings.ui.keys``.

Each action has a stable id (the name used in config: ``[ui.keys] interrupt = "f2"``),
a default key, and a description that shows in the footer, the help screen and the
command palette, so all three always agree. The table itself lives in
:mod:`fishtalk.tui.actions` (no textual there), so the config can check it when loading.
"""

from __future__ import annotations

from collections.abc import Mapping

from textual.binding import Binding

from fishtalk.tui.actions import ACTION_IDS, ACTIONS, ActionSpec, key_problems


def bindings() -> list[Binding]:
    """Textual bindings for :data:`ACTIONS` (ids set, so keymaps can rebind them)."""
    return [
        Binding(
            spec.key,
            spec.action,
            spec.description,
            show=spec.show,
            priority=spec.priority,
            id=spec.id,
            tooltip=spec.help,
        )
        for spec in ACTIONS
    ]


def keymap(keys: Mapping[str, str]) -> dict[str, str]:
    """Validate a config ``action -> key`` mapping into a Textual keymap.

    Unknown action names and conflicting keys raise ``ValueError`` with a one-line message
    (config loading has refused them already; this guards mappings built in code).
    """
    problems = key_problems(keys)
    if problems:
        raise ValueError("; ".join(p.message for p in problems))
    return {action: key for action, key in keys.items() if key.strip()}


__all__ = ["ACTIONS", "ACTION_IDS", "ActionSpec", "bindings", "keymap"]
