"""What the TUI needs from a session: a small structural protocol.

The real :class:`fishtalk.engine.session.Session` satisfies it, and so does the scripted session
in :mod:`support.scripted`. The TUI only ever talks to a session through this surface.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from fishtalk.core.conversation import Change, State
    from fishtalk.core.errors import FishtalkError
    from fishtalk.engine.audio.base import AudioBackend, AudioLevels


class EndResultLike(Protocol):
    """How a session ended: a reason, a sentence for people, and the error that ended it.

    No exit code: the CLI edge picks it from the one table in :mod:`fishtalk.cli.exits`.
    """

    @property
    def reason(self) -> str:
        """Why the session ended (e.g. ``user_hangup``, ``connection_lost``)."""
        ...

    @property
    def message(self) -> str:
        """One sentence for the user (the reason, or what went wrong)."""
        ...

    @property
    def error(self) -> FishtalkError | None:
        """The error that prevented the session, if that is why it ended."""
        ...


class SessionLike(Protocol):
    """The commands and observations a front end uses; commands return at once."""

    @property
    def state(self) -> State:
        """The latest reduced conversation state."""
        ...

    @property
    def audio(self) -> AudioBackend | None:
        """The audio backend in use (None until the session picked one)."""
        ...

    def add_listener(self, fn: Callable[[State, Sequence[Change]], None]) -> object:
        """Call ``fn`` on the event loop after every reduction (may return a remover)."""
        ...

    async def run(self) -> EndResultLike:
        """Run the session until it has ended."""
        ...

    def send_text(self, text: str, audio: bool | None = None) -> None:
        """Send a typed user turn."""
        ...

    def activity(self) -> None:
        """Tell the agent the user is active (typing)."""
        ...

    def interrupt(self) -> None:
        """Interrupt the agent's speech."""
        ...

    def set_muted(self, muted: bool) -> None:
        """Mute or unmute the microphone."""
        ...

    def set_spoken(self, spoken: bool) -> None:
        """Ask for spoken replies (True) or text-only replies (False)."""
        ...

    def hangup(self, reason: str = "user_hangup") -> None:
        """End the session cleanly (``reason``: the end reason recorded)."""
        ...

    def audio_levels(self) -> AudioLevels:
        """Current mic and agent levels (cheap; polled at about 20 Hz)."""
        ...


__all__ = ["EndResultLike", "SessionLike"]
