"""The message box: a one-line input that remembers what was sent (up/down recall it).

Enter takes the whole value and empties the box in the same step, then posts
:class:`MessageInput.Sent` with exactly that text, so lines typed (or pasted) faster than
the app handles them are each sent once, in order: nothing typed after Enter can be
swept up by a late clear, or sent twice.

A pasted text keeps its line breaks: each one shows as :data:`NEWLINE_MARK` in the
one-line box and becomes a newline again when the message is sent (one turn, all lines).
"""

from __future__ import annotations

from typing import ClassVar, Final

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input

MAX_HISTORY = 200
NEWLINE_MARK: Final = "⏎"
"""How a line break inside the one-line box is shown (a newline when sent)."""


def to_message(value: str) -> str:
    """The text to send for what the box shows (line marks become newlines)."""
    return value.replace(NEWLINE_MARK, "\n")


def to_box(text: str) -> str:
    """What the box shows for a (possibly multi-line) text."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    return text.replace("\n", NEWLINE_MARK)


class MessageInput(Input):
    """An :class:`~textual.widgets.Input` with a history of sent messages."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "history(-1)", "Previous message", show=False),
        Binding("down", "history(1)", "Next message", show=False),
    ]

    class Sent(Message):
        """Enter was pressed on a non-blank message; the box is already empty again."""

        def __init__(self, message_input: MessageInput, text: str) -> None:
            super().__init__()
            self.message_input = message_input
            self.text = text
            """The message, line breaks included."""

        @property
        def control(self) -> MessageInput:
            """The input the message was typed in."""
            return self.message_input

    def __init__(self, *, placeholder: str = "", id: str | None = None) -> None:
        super().__init__(placeholder=placeholder, id=id)
        self.history: list[str] = []
        self._position: int | None = None
        self._draft = ""

    async def _on_key(self, event: events.Key) -> None:
        # Enter is handled here, in the input's own queue, in order with the characters
        # around it. As a binding it would run later from the app's queue, reading a
        # value that already holds some of the next line.
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.submit()

    async def action_submit(self) -> None:
        """Enter as an action (a binding or the command palette): see :meth:`submit`."""
        self.submit()

    def submit(self) -> None:
        """Take the value and clear the box in one step (no await in between), then post it."""
        value = self.value
        if not value.strip():
            return
        self.value = ""
        self.remember(value)
        self.post_message(self.Sent(self, to_message(value)))

    def _on_paste(self, event: events.Paste) -> None:
        # Input keeps only the first line of a paste; we keep them all (see to_box).
        event.stop()
        event.prevent_default()
        if event.text:
            self.type_ahead(to_box(event.text))

    def type_ahead(self, text: str) -> None:
        """Insert ``text`` at the cursor (replacing a selection), as if it had been typed."""
        selection = self.selection
        if selection.is_empty:
            self.insert_text_at_cursor(text)
        else:
            self.replace(text, *selection)

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


__all__ = ["NEWLINE_MARK", "MessageInput", "to_box", "to_message"]
