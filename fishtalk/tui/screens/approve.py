"""Asking the user before a client tool runs (tools configured with ``approve = "ask"``).

The question may open while the user is typing a message (the agent can even time it: it
sees ``user.activity``). So no key typed before the dialog was seen may answer it:

- for :data:`ARM_SECONDS` after it opens, the buttons are disabled and every key is
  ignored as an answer;
- the answer is a button (Allow or Deny), never a bare letter; Deny has the focus, so a
  stray Enter declines, and Escape declines once armed;
- letters, spaces, backspaces and pastes while the dialog is up are not lost: they go on
  into the message box underneath (:class:`ApprovalScreen.TypedAhead`).
"""

from __future__ import annotations

from typing import ClassVar, Final

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from fishtalk.engine.tools.registry import ApprovalRequest
from fishtalk.tui.safe import pretty_value, safe_text

ARM_SECONDS: Final = 0.8
"""How long the dialog ignores every key after it opens (time to notice it)."""

_WAIT_HINT: Final = "(one moment: keys typed now do not answer)"
_ARMED_HINT: Final = "←/→ or Tab to choose, Enter to confirm, Esc to deny"


class ApprovalScreen(ModalScreen[bool]):
    """Shows the tool, what it will do and its parameters; Allow runs it, Deny declines."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "deny", "Deny", show=True),
        Binding("left,right", "switch", "Choose", show=False),
    ]

    class TypedAhead(Message):
        """Text typed while the dialog was up, for the message box (``None``: a backspace)."""

        def __init__(self, text: str | None) -> None:
            super().__init__()
            self.text = text

    def __init__(self, request: ApprovalRequest, *, arm_delay: float = ARM_SECONDS) -> None:
        super().__init__()
        self.request = request
        self.arm_delay = arm_delay
        self._armed = False

    @property
    def armed(self) -> bool:
        """Whether the buttons take an answer yet."""
        return self._armed

    def compose(self) -> ComposeResult:
        """Title, summary, parameters, the question and its two buttons."""
        request = self.request
        title = Text("The agent wants to run a tool on this machine: ", style="bold")
        title.append_text(safe_text(request.tool_name, "bold"))
        with Vertical(id="approve-box"):
            yield Static(title)
            if request.summary:
                yield Static(safe_text(request.summary))
            yield Static(safe_text(pretty_value(dict(request.params)), "dim"))
            yield Static(Text("Run it?", style="bold"), id="approve-question")
            with Horizontal(id="approve-buttons"):
                yield Button("Allow", id="approve-allow", disabled=True)
                yield Button("Deny", id="approve-deny", variant="primary", disabled=True)
            yield Static(Text(_WAIT_HINT, style="dim"), id="approve-hint")

    def on_mount(self) -> None:
        """Arm the buttons after the delay."""
        self.set_timer(self.arm_delay, self._arm)

    def _arm(self) -> None:
        self._armed = True
        for button in self.query(Button):
            button.disabled = False
        self.query_one("#approve-deny", Button).focus()
        self.query_one("#approve-hint", Static).update(Text(_ARMED_HINT, style="dim"))

    def on_key(self, event: events.Key) -> None:
        """Typing goes on into the message box; nothing answers before the dialog is armed."""
        if event.is_printable and event.character is not None:
            self.post_message(self.TypedAhead(event.character))
        elif event.key == "backspace":
            self.post_message(self.TypedAhead(None))
        elif self._armed:
            return  # Enter, Tab, arrows and Escape do their work
        event.stop()
        event.prevent_default()

    def on_paste(self, event: events.Paste) -> None:
        """A paste is typing too: it goes to the message box, never to the dialog."""
        event.stop()
        event.prevent_default()
        if event.text:
            self.post_message(self.TypedAhead(event.text))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Escape and the arrows only once armed."""
        del parameters
        return self._armed or action not in ("deny", "switch")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if self._armed:
            self.dismiss(event.button.id == "approve-allow")

    def action_deny(self) -> None:
        """Decline."""
        if self._armed:
            self.dismiss(False)

    def action_switch(self) -> None:
        """Move the focus to the other button."""
        self.focus_next(Button)
