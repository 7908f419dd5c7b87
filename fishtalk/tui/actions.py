"""The TUI's actions and their default keys, as plain data, and the checks on a rebinding.

Kept free of textual so configuration loading (:mod:`fishtalk.cli.config`) can refuse a bad
``[ui] keys`` table before anything starts; :mod:`fishtalk.tui.keys` turns this table
into Textual bindings.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final


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
    # Only in the toggle and push talk modes (the app hides it otherwise).
    ActionSpec(
        "talk",
        "talk",
        "f5",
        "Talk",
        "Open or close the microphone (hold it down in push-to-talk).",
    ),
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
        "Move focus: input, inspector, transcript, tools.",
        show=False,
        # Before the screen's own Tab (DOM order): the app's order puts the inspector,
        # when shown, right after the input.
        priority=True,
    ),
    ActionSpec(
        "help", "help", "f1,question_mark", "Help", "Show the keys.", show=True, priority=False
    ),
    ActionSpec(
        "inspector",
        "toggle_inspector",
        "f12",
        "Inspector",
        "Show or hide the protocol inspector.",
        show=False,
        priority=False,
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


RESERVED_KEYS: Final[Mapping[str, str]] = {
    "enter": "sending the typed turn",
    "ctrl+p": "the command palette",
}
"""Keys the chat screen uses outside :data:`ACTIONS`; no action may take them."""


@dataclass(frozen=True, slots=True)
class KeyProblem:
    """Why one entry of a ``[ui] keys`` table cannot be used."""

    action: str
    """The table's key at fault (an action name, or what was written instead of one)."""
    message: str


def default_key(action: str) -> str:
    """The default key(s) of the action with id ``action``."""
    for spec in ACTIONS:
        if spec.id == action:
            return spec.key
    raise KeyError(action)


def key_label(key: str) -> str:
    """A key as people write it in a hint: ``F2``, ``Ctrl+Space``, ``T``."""

    def one(part: str) -> str:
        if len(part) == 1 or (part[:1] == "f" and part[1:].isdigit()):
            return part.upper()
        return part.capitalize()

    return "+".join(one(part) for part in key.split("+"))


def split_keys(keys: str) -> list[str]:
    """The individual keys of a comma-separated binding (``"f1,question_mark"``)."""
    return [key.strip() for key in keys.split(",") if key.strip()]


def key_problems(keys: Mapping[str, str]) -> list[KeyProblem]:
    """Every problem with a config ``action -> key`` table, in table order.

    Unknown action names, and conflicts: a key given to two actions (also when a rebinding
    takes a key another action still has by default, which would silently leave that
    action without a key) or a key the screen needs for something else. An empty value
    keeps the action's default key.
    """
    problems: list[KeyProblem] = []
    for action in keys:
        if action not in ACTION_IDS:
            close = difflib.get_close_matches(action, sorted(ACTION_IDS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            known = ", ".join(sorted(ACTION_IDS))
            problems.append(
                KeyProblem(action, f"unknown key action {action!r}{hint}; known: {known}")
            )
    owner: dict[str, str] = {}
    rebound = [spec for spec in ACTIONS if split_keys(keys.get(spec.id, ""))]
    # Defaults first, then the rebindings in table order: a conflict is blamed on the entry
    # that caused it, and names the action that had the key.
    order = [spec for spec in ACTIONS if spec not in rebound] + sorted(
        rebound, key=lambda spec: list(keys).index(spec.id)
    )
    for spec in order:
        configured = split_keys(keys.get(spec.id, ""))
        for key in configured or split_keys(spec.key):
            if key in RESERVED_KEYS and configured:
                problems.append(
                    KeyProblem(spec.id, f"{spec.id} = {key!r}: {key} is for {RESERVED_KEYS[key]}")
                )
            elif key in owner and owner[key] != spec.id:
                other = owner[key]
                where = "" if other in keys else " (its default)"
                problems.append(
                    KeyProblem(
                        spec.id,
                        f"{spec.id} = {key!r}: {key} is already {other}'s key{where}; "
                        f"give {other} another key or pick a free one for {spec.id}",
                    )
                )
            else:
                owner[key] = spec.id
    return problems


__all__ = [
    "ACTIONS",
    "ACTION_IDS",
    "RESERVED_KEYS",
    "ActionSpec",
    "KeyProblem",
    "default_key",
    "key_label",
    "key_problems",
    "split_keys",
]
