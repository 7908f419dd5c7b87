"""Messages the session side posts to the app (listener callbacks never touch widgets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

from fishtalk.core.conversation import State
from fishtalk.core.errors import FishtalkError, ended_well

if TYPE_CHECKING:
    from fishtalk.tui.session_like import EndResultLike


class StateChanged(Message):
    """The session reduced an input; ``state`` is the new snapshot.

    Only the newest snapshot matters, so a queued one is replaced by a later one.
    """

    def __init__(self, state: State) -> None:
        super().__init__()
        self.state = state

    def can_replace(self, message: Message) -> bool:
        """A newer state supersedes an older one still in the queue."""
        return isinstance(message, StateChanged)


class CallEnded(Message):
    """``Session.run()`` returned or raised: the call is over, with its ``outcome``.

    The outcome is how the call ended (the session's end result) or the exception that
    stopped it; no exit code (the CLI edge picks one from the outcome).
    """

    def __init__(self, outcome: EndResultLike | Exception) -> None:
        super().__init__()
        self.outcome = outcome

    @property
    def reason(self) -> str:
        """The end reason (``error`` when the session raised)."""
        return "error" if isinstance(self.outcome, Exception) else self.outcome.reason

    @property
    def message(self) -> str:
        """The session's one sentence about the end (may carry more than the reason)."""
        return "" if isinstance(self.outcome, Exception) else self.outcome.message

    @property
    def error(self) -> str | None:
        """A one-line failure sentence when the session could not run at all."""
        exc = self.outcome
        if not isinstance(exc, Exception):
            return None
        return str(exc) if isinstance(exc, FishtalkError) else f"unexpected error: {exc}"

    @property
    def ended_well(self) -> bool:
        """Whether the call went as it should (no error, not a failing end reason)."""
        if isinstance(self.outcome, Exception):
            return False
        return ended_well(self.outcome.reason, self.outcome.error)


__all__ = ["CallEnded", "StateChanged"]
