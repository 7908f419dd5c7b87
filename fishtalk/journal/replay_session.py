"""A journal played back as a read-only session, for the TUI (``fishtalk replay``).

:class:`ReplaySession` satisfies :class:`~fishtalk.tui.session_like.SessionLike`: its
``run()`` hands the states the journal rebuilds (:func:`fishtalk.journal.replay.states`)
to the listeners with the original timing divided by ``speed`` (0: all at once). Nothing is
sent anywhere and no device is opened; typed text, interrupt, mute and the spoken toggle
are ignored (it is a recording). Hanging up stops the playback there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from fishtalk import conversation as conv
from fishtalk.audio.base import AudioBackend, AudioLevels, NullAudio
from fishtalk.errors import FishtalkError
from fishtalk.journal.reader import Journal
from fishtalk.journal.replay import delays, states


@dataclass(frozen=True, slots=True)
class ReplayEnd:
    """How the replayed session ended (as the journal says), or that playback was stopped."""

    reason: str
    message: str
    error: FishtalkError | None = None


class ReplaySession:
    """A read-only session that replays ``journal`` at ``speed``."""

    def __init__(self, journal: Journal, *, speed: float = 1.0) -> None:
        self.journal = journal
        self.speed = speed
        spoken = bool(journal.header.get("spoken"))
        self._state = conv.initial_state(spoken=spoken)
        self._played = list(states(journal, spoken=spoken))
        self._listeners: list[Callable[[conv.State], None]] = []
        self._audio = NullAudio("replay")
        self._stop = asyncio.Event()
        self.finished = False
        """The whole journal has been played."""

    @property
    def state(self) -> conv.State:
        """The state reached so far."""
        return self._state

    @property
    def audio(self) -> AudioBackend:
        """No audio: a replay is silent."""
        return self._audio

    def add_listener(self, fn: Callable[[conv.State], None]) -> None:
        """Call ``fn`` with each replayed state."""
        self._listeners.append(fn)

    def _show(self, state: conv.State) -> None:
        self._state = state
        for listener in list(self._listeners):
            listener(state)

    async def run(self) -> ReplayEnd:
        """Play the journal; then, if it never ended (a crash), wait for a hang-up."""
        times = [t for t, _ in self._played]
        for wait, (_, state) in zip(delays(times, self.speed), self._played, strict=True):
            if self._stop.is_set():
                break
            if wait > 0:
                try:
                    async with asyncio.timeout(wait):
                        await self._stop.wait()
                except TimeoutError:
                    pass
                if self._stop.is_set():
                    break
            self._show(state)
        else:
            self.finished = True
        if not self._state.ended:
            await self._stop.wait()
            self._end_here()
        return self._result()

    def _end_here(self) -> None:
        state = self._state
        if state.ended:
            return
        at = state.clock.now
        for inp in (conv.Hangup(at), conv.Disconnected(at)):
            state, _ = conv.reduce(state, inp)
            if state.ended:
                break
        self._show(state)

    def _result(self) -> ReplayEnd:
        ends = [r for r in self.journal.records if r.get("type") == "end"]
        if self.finished and ends:
            reason = str(ends[-1].get("reason") or conv.END_USER_HANGUP)
            message = str(ends[-1].get("message") or conv.describe_end_reason(reason))
            return ReplayEnd(reason, message)
        reason = self._state.end_reason or conv.END_USER_HANGUP
        return ReplayEnd(reason, "Replay stopped." if not self.finished else "Replay ended.")

    # --- commands: a recording only stops ---------------------------------------------

    def send_text(self, text: str, audio: bool | None = None) -> None:
        """Ignored: a replay is read-only."""

    def activity(self) -> None:
        """Ignored."""

    def interrupt(self) -> None:
        """Ignored."""

    def set_muted(self, muted: bool) -> None:
        """Ignored."""

    def set_spoken(self, spoken: bool) -> None:
        """Ignored."""

    def hangup(self) -> None:
        """Stop the playback where it is."""
        self._stop.set()

    def audio_levels(self) -> AudioLevels:
        """Always silent."""
        return AudioLevels()


__all__ = ["ReplayEnd", "ReplaySession"]
