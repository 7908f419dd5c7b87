"""Heard latency in the TUI: each agent turn's badge and the status bar's rolling p50.

The figures come from ``State.latency`` (:mod:`fishtalk.core.conversation.latency`); the words
from that module's text helpers, so the TUI says what plain mode and the exit line say.
Everything here is plain text (never markup) and costs nothing while the latency part of
the state is unchanged: the widgets compare it by identity first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Final

from rich.text import Text
from textual.widgets import Static

from fishtalk.core.conversation import Latency, Segment, State, Waterfall
from fishtalk.core.conversation.latency import badge, percentile
from fishtalk.engine.metrics import settled
from fishtalk.tui.safe import visible

ROLLING_TURNS: Final = 10
"""The status bar's p50 is over this many of the latest measured turns."""
MAX_BADGES: Final = 4096
"""Badges remembered (the newest; twice what the transcript view holds at most)."""
_LOOK_BACK: Final = 64
"""How far from the end a previous newest turn is looked for (turns close one by one)."""


def new_turns(
    previous: tuple[Waterfall, ...], turns: tuple[Waterfall, ...]
) -> Sequence[Waterfall] | None:
    """The turns closed since ``previous`` was seen, or None when ``turns`` does not
    continue it (start again). Closed turns are only appended (and the oldest dropped past
    the reducer's bound), so this costs what was appended."""
    if not previous:
        return None
    last = previous[-1]
    for index in range(len(turns) - 1, max(-1, len(turns) - 1 - _LOOK_BACK), -1):
        if turns[index] is last:
            return turns[index + 1 :]
    return None


def _latest_heard(turns: Sequence[Waterfall], count: int) -> list[float]:
    """The heard figures of the latest ``count`` measured turns, newest first."""
    heard: list[float] = []
    for turn in reversed(turns):
        value = turn.heard
        if value is not None:
            heard.append(value)
            if len(heard) >= count:
                break
    return heard


def rolling_p50(turns: Sequence[Waterfall], count: int = ROLLING_TURNS) -> float | None:
    """The median heard latency of the latest ``count`` measured turns (seconds), or None
    before the first measured turn."""
    return percentile(_latest_heard(turns, count), 0.5)


def badge_text(turn: Waterfall) -> str:
    """A turn's badge, made inert (the words are latency.badge's)."""
    return visible(badge(turn))


class Badges:
    """Which agent segment carries which badge, kept up to date cheaply.

    :meth:`update` takes the state's latency and returns the segment ids whose badge
    changed (to re-render). Closed turns are appended to ``Latency.turns``, so only those
    after the last seen one are looked at; the open turn shows a badge once it has a heard
    figure. A reply to a user turn always gets one (its figure, or why there is none); an
    unprompted one (the greeting) does not: there was no user turn to measure from. A turn
    the reducer no longer keeps keeps its badge (its segment may still be shown), up to
    :data:`MAX_BADGES`. A turn closed as ``interrupted`` while its line was still open is
    looked at again until that line ends: a line that finished uncut was not interrupted
    (:func:`fishtalk.engine.metrics.settled`).
    """

    def __init__(self) -> None:
        self.by_segment: dict[str, str] = {}
        self._turns: tuple[Waterfall, ...] = ()
        self._open: Waterfall | None = None
        self._unsettled: dict[str, Waterfall] = {}
        """Turns closed as interrupted whose line was still open, by segment id."""
        self._line: Callable[[str], Segment | None] = _no_line

    def clear(self) -> None:
        """Forget everything (another conversation, or a replay going back)."""
        self.by_segment.clear()
        self._turns = ()
        self._open = None
        self._unsettled.clear()

    def update(
        self, latency: Latency, line: Callable[[str], Segment | None] | None = None
    ) -> list[str]:
        """Take ``latency``; the segment ids whose badge text changed. ``line`` looks a
        segment up by id (``State.segment``), to settle the reason of a finished reply."""
        self._line = line or _no_line
        turns, open_turn = latency.turns, latency.open
        changed: list[str] = []
        for turn in list(self._unsettled.values()):
            self._put(turn, changed)
        if turns is self._turns and open_turn is self._open:
            return changed
        fresh = new_turns(self._turns, turns)
        self._turns, self._open = turns, open_turn
        for turn in turns if fresh is None else fresh:
            self._put(turn, changed)
        if open_turn is not None and open_turn.heard is not None:
            self._put(open_turn, changed)
        badges = self.by_segment
        while len(badges) > MAX_BADGES:
            del badges[next(iter(badges))]
        return changed

    def _put(self, turn: Waterfall, changed: list[str]) -> None:
        sid = turn.segment_id
        if sid is None or turn.kind == "unprompted":
            return  # the agent spoke first (its greeting): no user turn, nothing to measure
        line = self._line(sid)
        if turn.incomplete == "interrupted" and line is not None and not line.interrupted:
            if line.final:
                self._unsettled.pop(sid, None)
            else:
                self._unsettled[sid] = turn  # its line may yet finish uncut
        else:
            self._unsettled.pop(sid, None)
        text = badge_text(settled(turn, line))
        if self.by_segment.get(sid) != text:
            self.by_segment[sid] = text
            changed.append(sid)


def _no_line(_segment_id: str) -> Segment | None:
    return None


class HeardP50(Static):
    """The status bar's rolling p50 of heard latency; hidden before the first measured
    turn."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._turns: tuple[Waterfall, ...] = ()
        self._latest: deque[float] = deque(maxlen=ROLLING_TURNS)
        """The latest measured turns' heard figures, oldest first."""
        self._shown: str | None = None
        self.display = False

    def show(self, state: State) -> None:
        """Render the rolling p50 (no-op while the closed turns are unchanged; costs the
        turns closed since the last frame)."""
        turns = state.latency.turns
        if turns is self._turns:
            return
        fresh = new_turns(self._turns, turns)
        self._turns = turns
        latest = self._latest
        if fresh is None:  # the first frame, or another conversation: look back once
            latest.clear()
            latest.extend(reversed(_latest_heard(turns, ROLLING_TURNS)))
        else:
            latest.extend(t.heard for t in fresh if t.heard is not None)
        p50 = percentile(self._latest, 0.5)
        text = None if p50 is None else f"heard p50 {p50:.2f} s"  # as latency.badge says
        if text == self._shown:
            return
        self._shown = text
        self.display = text is not None
        self.update(Text(text or "", no_wrap=True, overflow="ellipsis"))

    @property
    def text(self) -> str | None:
        """What it shows (None: hidden)."""
        return self._shown


__all__ = [
    "MAX_BADGES",
    "ROLLING_TURNS",
    "Badges",
    "HeardP50",
    "badge_text",
    "new_turns",
    "rolling_p50",
]
