"""The command palette's entries for the chat screen: every action by name, the focus
targets, and Textual's own commands (less the ones the chat screen has keys for)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from textual.app import App, SystemCommand

from fishtalk.tui import keys

if TYPE_CHECKING:
    pass

FOCUS_TARGETS = (
    ("Focus transcript", "Move focus to the transcript.", "#transcript"),
    ("Focus tools", "Move focus to the tool panel.", "#tools"),
    ("Focus input", "Move focus to the message input.", "#input"),
)


def chat_commands(app: App[int], *, talk_keyed: bool) -> Iterable[SystemCommand]:
    """Every chat action (the talk key's only in the toggle and push modes), then the
    focus targets."""
    for spec in keys.ACTIONS:
        if spec.id in ("focus", "abort"):  # Tab and Ctrl+C mean nothing by name
            continue
        if spec.id == "talk" and not talk_keyed:
            continue
        yield SystemCommand(spec.description, spec.help, _runner(app, spec.action))
    for title, help_text, selector in FOCUS_TARGETS:
        yield SystemCommand(title, help_text, _focus(app, selector))


def textual_commands(commands: Iterable[SystemCommand]) -> Iterable[SystemCommand]:
    """Textual's own commands, less Quit and Keys (the chat screen's keys do those)."""
    return (command for command in commands if command.title not in ("Quit", "Keys"))


def _runner(app: App[int], action: str) -> Callable[[], object]:
    async def run() -> None:
        await app.run_action(action)

    return run


def _focus(app: App[int], selector: str) -> Callable[[], None]:
    def focus() -> None:
        app.query_one(selector).focus()

    return focus


__all__ = ["chat_commands", "textual_commands"]
