"""A pure, in-memory session driven by scripted reducer inputs.

``ScriptedSession`` satisfies :class:`~fishtalk.tui.session_like.SessionLike` by feeding
:mod:`fishtalk.core.conversation` inputs through the real reducer, with no network and no
audio. Tests, snapshots and the TUI benchmark use it to put the app in any state
deterministically; user commands become reducer inputs too, and the effects the reducer
asks for are recorded instead of executed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from fishtalk.core import conversation as conv
from fishtalk.engine.audio.base import AudioBackend, AudioLevels, NullAudio
from fishtalk.engine.session import EndResult


class ScriptedSession:
    """A session whose events come from :meth:`feed`; every command is a reducer input."""

    def __init__(
        self,
        state: conv.State | None = None,
        *,
        clock: Callable[[], float] | None = None,
        levels: AudioLevels | None = None,
        audio: AudioBackend | None = None,
    ) -> None:
        self._state = state if state is not None else conv.initial_state()
        self._listeners: list[Callable[[conv.State], None]] = []
        self._now = 0.0
        self._clock = clock
        self._ended = asyncio.Event()
        self.levels = levels if levels is not None else AudioLevels()
        self._audio: AudioBackend = audio if audio is not None else NullAudio("text-only")
        self.effects: list[conv.Effect] = []
        """Every effect the reducer asked for, in order."""
        self.commands: list[str] = []
        """Names of the commands the front end called, in order (``activity`` included)."""

    # --- driving -----------------------------------------------------------------------

    def now(self) -> float:
        """The current scripted time."""
        return self._clock() if self._clock is not None else self._now

    def advance(self, seconds: float) -> float:
        """Move the scripted clock forward (when no external clock is used)."""
        self._now += seconds
        return self._now

    def feed(self, *inputs: conv.Input) -> conv.State:
        """Reduce each input, record effects, notify listeners once per input."""
        for inp in inputs:
            previous = self._state
            self._state, effects = conv.reduce(previous, inp)
            self.effects.extend(effects)
            events = conv.changes(previous, self._state)
            for listener in list(self._listeners):
                listener(self._state, events)
        if self._state.ended:
            self._ended.set()
        return self._state

    # --- SessionLike ---------------------------------------------------------------------

    @property
    def state(self) -> conv.State:
        """The latest reduced state."""
        return self._state

    @property
    def audio(self) -> AudioBackend:
        """The (fake) audio backend; text-only unless one was given."""
        return self._audio

    def add_listener(self, fn: Callable[[conv.State, Sequence[conv.Change]], None]) -> None:
        """Call ``fn(state, events)`` after every reduction, as the session does."""
        self._listeners.append(fn)

    async def run(self) -> EndResult:
        """Wait until the scripted state has ended."""
        if not self._state.ended:
            await self._ended.wait()
        reason = self._state.end_reason or conv.END_USER_HANGUP
        return EndResult(reason, conv.describe_end_reason(reason))

    def send_text(self, text: str, audio: bool | None = None) -> None:
        """Reduce a :class:`~fishtalk.core.conversation.SendText`."""
        self.commands.append("send_text")
        self.feed(conv.SendText(text, self.now(), audio))

    def activity(self) -> None:
        """Reduce a :class:`~fishtalk.core.conversation.SignalActivity`."""
        self.commands.append("activity")
        self.feed(conv.SignalActivity(self.now()))

    def interrupt(self) -> None:
        """Reduce an :class:`~fishtalk.core.conversation.Interrupt`."""
        self.commands.append("interrupt")
        self.feed(conv.Interrupt(self.now()))

    def set_muted(self, muted: bool) -> None:
        """Reduce a :class:`~fishtalk.core.conversation.SetMuted`."""
        self.commands.append("set_muted")
        self.feed(conv.SetMuted(muted, self.now()))

    def set_spoken(self, spoken: bool) -> None:
        """Reduce a :class:`~fishtalk.core.conversation.SetSpoken`."""
        self.commands.append("set_spoken")
        self.feed(conv.SetSpoken(spoken, self.now()))

    def hangup(self, reason: str = conv.END_USER_HANGUP) -> None:
        """Reduce a :class:`~fishtalk.core.conversation.Hangup`."""
        self.commands.append("hangup")
        self.feed(conv.Hangup(self.now(), reason))

    def audio_levels(self) -> AudioLevels:
        """The levels set on :attr:`levels`."""
        return self.levels


__all__ = ["ScriptedSession"]
