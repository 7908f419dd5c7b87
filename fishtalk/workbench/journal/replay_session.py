"""A journal played back as a read-only session, for the TUI (``fishtalk replay``).

:class:`ReplaySession` satisfies :class:`~fishtalk.tui.session_like.SessionLike`: its
``run()`` hands the states the journal rebuilds (:func:`fishtalk.workbench.journal.replay.states`)
to the listeners with the original timing divided by ``speed`` (0: all at once). Nothing is
sent anywhere and no device is opened; typed text, interrupt, mute and the spoken toggle
are ignored (it is a recording). Hanging up stops the playback there.

The playback is controllable (the TUI's replay keys): :meth:`ReplaySession.toggle_pause`,
:meth:`~ReplaySession.step` to the next turn, :meth:`~ReplaySession.seek` by seconds either
way and :meth:`~ReplaySession.faster`/:meth:`~ReplaySession.slower` through :data:`SPEEDS`.
Every state is rebuilt up front by re-feeding the journal's records through the pure reducer
(about 10 µs an input), so seeking back is showing the state reached at the target time.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable, Sequence

from fishtalk.core import conversation as conv
from fishtalk.engine.audio.base import AudioBackend, AudioLevels, NullAudio
from fishtalk.engine.journal.reader import Journal
from fishtalk.engine.session import EndResult
from fishtalk.workbench.journal.replay import states

SPEEDS: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0)
"""The speeds the replay keys step through."""
SEEK_STEP = 10.0
"""Seconds (of the recording) one seek key moves."""


class ReplaySession:
    """A read-only session that replays ``journal`` at ``speed``.

    ``clock``: the wall clock that paces the playback (monotonic seconds).
    """

    def __init__(
        self,
        journal: Journal,
        *,
        speed: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.journal = journal
        self.speed = speed
        spoken = bool(journal.header.get("spoken"))
        self._initial = conv.initial_state(spoken=spoken)
        self._state = self._initial
        self._played = list(states(journal, spoken=spoken))
        self._times = [t for t, _, _ in self._played]
        self._start = self._times[0] if self._times else 0.0
        self._listeners: list[Callable[[conv.State, Sequence[conv.Change]], None]] = []
        self._audio = NullAudio("replay")
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        self._clock = clock
        self._next = 0  # index of the next state to show
        self._pos = 0.0  # the play head, seconds after the start (as of ``_pos_wall``)
        self._pos_wall = clock()
        self.paused = False
        """The play head stands still (the keys still step and seek)."""
        self.parked = False
        """Paused, and the playback waits for a key with nothing scheduled."""
        self.finished = False
        """The whole journal has been played."""
        self.scheduled: list[float] = []
        """The waits (wall seconds) the playback scheduled, newest last (tests read it)."""

    @property
    def state(self) -> conv.State:
        """The state reached so far."""
        return self._state

    @property
    def audio(self) -> AudioBackend:
        """No audio: a replay is silent."""
        return self._audio

    @property
    def duration(self) -> float:
        """Seconds from the first to the last recorded input."""
        return self._times[-1] - self._start if self._times else 0.0

    @property
    def position(self) -> float:
        """Where the play head is: seconds after the start of the recording."""
        pos = self._pos
        if not self.paused and self.speed > 0 and not self.finished:
            pos += (self._clock() - self._pos_wall) * self.speed
        if self._next < len(self._times):
            pos = min(pos, self._times[self._next] - self._start)
        return max(0.0, min(pos, self.duration))

    @property
    def now(self) -> float:
        """The play head on the recorded session clock (what ``State.clock`` counts in)."""
        return self._start + self.position

    @property
    def shown(self) -> int:
        """How many of the recorded states have been shown (the index of the next one)."""
        return self._next

    def add_listener(self, fn: Callable[[conv.State, Sequence[conv.Change]], None]) -> None:
        """Call ``fn(state, events)`` with each replayed state and what changed since the
        one shown before it (as a live session's listeners are called)."""
        self._listeners.append(fn)

    def _show(self, state: conv.State, events: Sequence[conv.Change] | None = None) -> None:
        """Show ``state``: its recorded ``events`` when it follows the shown one, else (a
        jump) what changed between the two."""
        if events is None:
            events = conv.changes(self._state, state)
        self._state = state
        for listener in list(self._listeners):
            listener(state, events)

    def _set_pos(self, pos: float) -> None:
        self._pos = pos
        self._pos_wall = self._clock()

    def _go_to(self, index: int, pos: float) -> None:
        """Show the state reached after ``index`` recorded states; the play head at ``pos``."""
        index = max(0, min(index, len(self._played)))
        self._next = index
        self._set_pos(pos)
        self._show(self._played[index - 1][1] if index else self._initial)
        self._wake.set()

    async def run(self) -> EndResult:
        """Play the journal; then, if it never ended (a crash), wait for a hang-up."""
        self._set_pos(0.0)
        while not self._stop.is_set() and self._next < len(self._played):
            self._wake.clear()
            if self.paused:
                self.parked = True
                try:
                    await self._until_woken(None)
                finally:
                    self.parked = False
                continue
            at, state, events = self._played[self._next]
            wait = 0.0
            if self.speed > 0:
                wait = max(0.0, (at - self._start - self.position) / self.speed)
            if wait > 0:
                self.scheduled.append(wait)
                if await self._until_woken(wait):
                    continue  # a key moved the play head, the speed or paused: plan again
            if self._stop.is_set():
                break
            self._next += 1
            self._set_pos(at - self._start)
            self._show(state, events)
        else:
            if not self._stop.is_set():
                self.finished = True
        if not self._state.ended:
            await self._stop.wait()
            self._end_here()
        return self._result()

    async def _until_woken(self, wait: float | None) -> bool:
        """Wait for a key or a hang-up (both set ``_wake``), or ``wait`` seconds; True if
        woken before then."""
        try:
            async with asyncio.timeout(wait):
                await self._wake.wait()
        except TimeoutError:
            return False
        return True

    # --- the replay keys ---------------------------------------------------------------

    def toggle_pause(self) -> None:
        """Pause, or play on from where the play head is."""
        self._set_pos(self.position)
        self.paused = not self.paused
        self._wake.set()

    def set_speed(self, speed: float) -> None:
        """Play at ``speed`` from here on (the play head stays where it is)."""
        self._set_pos(self.position)
        self.speed = speed
        self._wake.set()

    def faster(self) -> None:
        """The next speed up in :data:`SPEEDS` (stays at the top)."""
        self.set_speed(next((s for s in SPEEDS if s > self.speed), max(SPEEDS[-1], self.speed)))

    def slower(self) -> None:
        """The next speed down in :data:`SPEEDS` (stays at the bottom)."""
        lower = [s for s in SPEEDS if s < self.speed]
        self.set_speed(lower[-1] if lower else min(SPEEDS[0], self.speed))

    def step(self) -> bool:
        """Jump to the start of the next turn (the next user or agent segment), paused or
        playing; False when no turn is left."""
        if self.finished or self._stop.is_set():
            return False
        have = _segments(self._state)
        for index in range(self._next, len(self._played)):
            at, state, _ = self._played[index]
            if _segments(state) > have:
                self._go_to(index + 1, at - self._start)
                return True
        return False

    def seek(self, seconds: float) -> None:
        """Move the play head ``seconds`` (of the recording) back or forward and show the
        conversation as it stood then."""
        if self.finished or self._stop.is_set():
            return
        target = max(0.0, min(self.position + seconds, self.duration))
        index = bisect.bisect_right(self._times, self._start + target)
        if index >= len(self._played):
            index = len(self._played) - 1  # the last state is played by ``run`` (it ends)
            target = min(target, self._times[index] - self._start) if index >= 0 else 0.0
        self._go_to(index, target)

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

    def _result(self) -> EndResult:
        ends = [r for r in self.journal.records if r.get("type") == "end"]
        if self.finished and ends:
            reason = str(ends[-1].get("reason") or conv.END_USER_HANGUP)
            message = str(ends[-1].get("message") or conv.describe_end_reason(reason))
            return EndResult(reason, message)
        reason = self._state.end_reason or conv.END_USER_HANGUP
        return EndResult(reason, "Replay stopped." if not self.finished else "Replay ended.")

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

    def hangup(self, reason: str = conv.END_USER_HANGUP) -> None:
        """Stop the playback where it is."""
        self._stop.set()
        self._wake.set()

    def audio_levels(self) -> AudioLevels:
        """Always silent."""
        return AudioLevels()


def _segments(state: conv.State) -> int:
    """How many transcript segments ``state`` has had (including any dropped)."""
    return len(state.segment_log) + state.segment_log.dropped


__all__ = ["SEEK_STEP", "SPEEDS", "ReplaySession"]
