"""Messages the session side posts to the app (listener callbacks never touch widgets)."""

from __future__ import annotations

from textual.message import Message

from fishtalk.core.conversation import State


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


class SessionFinished(Message):
    """``Session.run()`` returned: the session is over (``reason`` and ``exit_code``)."""

    def __init__(
        self, reason: str, exit_code: int, error: str | None = None, *, message: str = ""
    ) -> None:
        super().__init__()
        self.reason = reason
        self.exit_code = exit_code
        self.message = message
        """The session's one sentence about the end (may carry more than the reason)."""
        self.error = error
        """A one-line failure sentence when the session could not run at all."""


__all__ = ["SessionFinished", "StateChanged"]
