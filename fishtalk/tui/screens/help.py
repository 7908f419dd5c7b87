"""The ``?`` help screen: every action with its current key."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar, Final

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from fishtalk.tui.keys import ACTIONS


def key_label(key: str) -> str:
    """A short human label for a Textual key string (``ctrl+x`` -> ``^x``)."""
    parts = []
    for one in key.split(","):
        one = one.strip()
        one = {"question_mark": "?", "escape": "Esc", "tab": "Tab", "enter": "Enter"}.get(one, one)
        parts.append(one.replace("ctrl+", "^"))
    return " / ".join(parts)


REPLAY_HIDDEN: Final = frozenset({"interrupt", "mute", "talk", "spoken"})
"""Actions of a live call that mean nothing in a replay (nor does typing)."""
REPLAY_HELP: Final = {
    "hangup": "Stop the replay and show the summary.",
    "focus": "Move focus: inspector, transcript, tools.",
    "quit": "Stop the replay and exit at once.",
    "abort": "Stop the replay and exit with status 130.",
}
"""What an action does in a replay, where that differs from a live call."""


def help_table(
    keymap: Mapping[str, str], extra: Sequence[tuple[str, str]] = (), *, replay: bool = False
) -> Table:
    """A two-column table: key, what it does (``extra`` rows first: a mode's own keys).
    ``replay``: the keys of a replay (no typing, no live-call keys)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for key, text in extra:
        table.add_row(key, Text(text))
    if not replay:
        table.add_row("Enter", "Send the typed message.")
        table.add_row("↑ ↓ in the input", "Recall messages you sent.")
    for spec in ACTIONS:
        if spec.id == "talk":
            continue  # a talk mode's key: the app passes it in ``extra`` when it has one
        if replay and spec.id in REPLAY_HIDDEN:
            continue
        words = REPLAY_HELP.get(spec.id, spec.help) if replay else spec.help
        table.add_row(key_label(keymap.get(spec.id, spec.key)), Text(words))
    table.add_row("^p", "Command palette: every action by name.")
    table.add_row("↑ ↓ PgUp PgDn", "Scroll the transcript; End follows again.")
    table.add_row("", Text('Rebind in the config: [ui.keys] hangup = "f10"', style="dim"))
    return table


class HelpScreen(ModalScreen[None]):
    """Lists the keys; any of Esc, ?, F1 or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,f1,q", "dismiss_help", "Close", show=True),
    ]

    def __init__(
        self,
        keymap: Mapping[str, str],
        *,
        extra: Sequence[tuple[str, str]] = (),
        replay: bool = False,
    ) -> None:
        super().__init__()
        self._keymap = dict(keymap)
        self._extra = tuple(extra)
        self._replay = replay

    def compose(self) -> ComposeResult:
        """A titled box with the key table."""
        with VerticalScroll(id="help-box"):
            yield Static(Text("fishtalk keys", style="bold"), id="help-title")
            yield Static(
                help_table(self._keymap, self._extra, replay=self._replay), id="help-table"
            )
            yield Static(Text("Esc closes this screen.", style="dim"))

    def action_dismiss_help(self) -> None:
        """Close the help screen."""
        self.dismiss(None)
