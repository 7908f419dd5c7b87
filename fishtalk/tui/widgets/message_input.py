"""The message box: a one-line input that remembers what was sent (up/down recall it)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Input

MAX_HISTORY = 200


class MessageInput(Input):
    """An :class:`~textual.widgets.Input` with a history of sent messages."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "history(-1)", "Previous message", show=False),
        Binding("down", "history(1)", "Next message", show=False),
    ]

    def __init__(self, *, placeholder: str = "", id: str | None = None) -> None:
        super().__init__(placeholder=placeholder, id=id)
        self.history: list[str] = []
        self._position: int | None = None
        self._draft = ""

    def remember(self, text: str) -> None:
        """Add a sent message to the history (consecutive repeats are kept once)."""
        if not self.history or self.history[-1] != text:
            self.history.append(text)
            del self.history[:-MAX_HISTORY]
        self._position = None

    def action_history(self, step: int) -> None:
        """Walk the history; past the newest entry the unsent draft comes back."""
        if not self.history:
            return
        if self._position is None:
            if step > 0:
                return
            self._draft = self.value
            position = len(self.history) - 1
        else:
            position = self._position + step
        if position < 0:
            position = 0
        if position >= len(self.history):
            self._position = None
            self.value = self._draft
        else:
            self._position = position
            self.value = self.history[position]
        self.cursor_position = len(self.value)
