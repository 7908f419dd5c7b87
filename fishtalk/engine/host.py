"""What a front end offers the engine's tools: toasts, the clipboard, and approval.

The TUI and the line mode each implement :class:`Host`. Tools are built before the front
end exists (the session needs its runner first), so they hold a :class:`HostLink`, which
the launcher binds to the front end once it runs. Before that (and in a headless run), a
notification is dropped, a copy fails and an approval question is declined.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from fishtalk.engine.tools.registry import ApprovalRequest


class Host(Protocol):
    """The small surface a front end implements for client tools."""

    def notify(self, title: str, message: str) -> None:
        """Show a short notification (a toast, a line)."""
        ...

    def copy(self, text: str) -> None:
        """Put ``text`` on the user's clipboard; raises when there is none."""
        ...

    async def approve(self, request: ApprovalRequest) -> bool:
        """Ask the user whether a tool call may run; True means yes."""
        ...


class HostLink:
    """A :class:`Host` stand-in for tools built before the front end; :meth:`bind` it."""

    def __init__(self, host: Host | None = None) -> None:
        self.host = host

    def bind(self, host: Host) -> None:
        """From now on, forward to ``host``."""
        self.host = host

    def notify(self, title: str, message: str) -> None:
        """Forward to the bound host (dropped while none is bound)."""
        if self.host is not None:
            self.host.notify(title, message)

    def copy(self, text: str) -> None:
        """Forward to the bound host; raises RuntimeError while none is bound."""
        if self.host is None:
            raise RuntimeError("no terminal to copy to")
        self.host.copy(text)

    async def approve(self, request: ApprovalRequest) -> bool:
        """Ask the bound host; no host means nobody can say yes."""
        if self.host is None:
            return False
        return await self.host.approve(request)


__all__ = ["Host", "HostLink"]
