"""Asking the user before a client tool runs (tools configured with ``approve = "ask"``)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from fishtalk.tools.registry import ApprovalRequest
from fishtalk.tui.safe import pretty_value, safe_text


class ApprovalScreen(ModalScreen[bool]):
    """Shows the tool, what it will do and its parameters; y runs it, n declines."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Run it", show=True),
        Binding("n,escape", "answer(False)", "Decline", show=True),
    ]

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        """Title, summary, parameters, the question."""
        request = self.request
        title = Text("The agent wants to run a tool on this machine: ", style="bold")
        title.append_text(safe_text(request.tool_name, "bold"))
        with Vertical(id="approve-box"):
            yield Static(title)
            if request.summary:
                yield Static(safe_text(request.summary))
            yield Static(safe_text(pretty_value(dict(request.params)), "dim"))
            yield Static(Text("Run it? y = yes, n = no", style="bold"), id="approve-question")

    def action_answer(self, answer: bool) -> None:
        """Resolve the request."""
        self.dismiss(answer)
