"""The TUI's actions, their default keys, and rebinding from ``Settings.ui.keys``.

Each action has a stable id (the name used in config: ``[ui.keys] interrupt = "f2"``),
a default key, and a description that shows in the footer, the help screen and the
command palette, so all three always agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from textual.binding import Binding


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """One user-facing action of the chat screen."""

    id: str
    """Config name and Textual binding id."""
    action: str
    """The Textual action it runs."""
    key: str
    """Default key(s), comma separated."""
    description: str
    """Short label (footer)."""
    help: str
    """One sentence for the help screen and the command palette."""
    show: bool = True
    priority: bool = True


ACTIONS: Final[tuple[ActionSpec, ...]] = (
    # Not a priority binding: Esc must still close the help screen.
    ActionSpec(
        "interrupt", "interrupt", "escape", "Interrupt", "Stop the agent talking.", priority=False
    ),
    ActionSpec("mute", "toggle_mute", "ctrl+o", "Mute", "Mute or unmute the microphone."),
    ActionSpec(
        "spoken",
        "toggle_spoken",
        "ctrl+t",
        "Spoken/text",
        "Spoken or text-only replies to typed turns.",
    ),
    ActionSpec("hangup", "hangup", "ctrl+x", "Hang up", "End the call and show a summary."),
    ActionSpec(
        "focus",
        "cycle_focus",
        "tab",
        "Focus",
        "Move focus: input, transcript, tools.",
        show=False,
        priority=False,
    ),
    ActionSpec(
        "help", "help", "f1,question_mark", "Help", "Show the keys.", show=True, priority=False
    ),
    ActionSpec("quit", "quit", "ctrl+q", "Quit", "Hang up and exit at once."),
    # A priority binding, so Ctrl+C never reaches Textual's "press ^q to quit" hint (nor
    # the input's copy): in a call it means what it means in the line mode.
    ActionSpec(
        "abort",
        "abort",
        "ctrl+c",
        "Abort",
        "Hang up and exit with status 130.",
        show=False,
    ),
)
"""Every action of the chat screen, in display order."""

ACTION_IDS: Final = frozenset(spec.id for spec in ACTIONS)


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

    Unknown action names raise ``ValueError`` with a one-line message naming them.
    """
    unknown = sorted(set(keys) - ACTION_IDS)
    if unknown:
        known = ", ".join(sorted(ACTION_IDS))
        raise ValueError(f"unknown key action(s) {', '.join(unknown)}; known: {known}")
    return {action: key for action, key in keys.items() if key.strip()}


__all__ = ["ACTIONS", "ACTION_IDS", "ActionSpec", "bindings", "keymap"]
