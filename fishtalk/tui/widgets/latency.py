"""Heard latency in the TUI: each agent turn's badge and the status bar's rolling p50.

The figures come from ``State.latency`` (:mod:`fishtalk.conversation.latency`); the words
from that module's text helpers, so the TUI says what plain mode and the exit line say.
Everything here is plain text (never markup) and costs nothing while the latency part of
the state is unchanged: the widgets compare it by identity first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rich.text import Text
from textual.widgets import Static

from fishtalk.conversation import Latency, State, Waterfall
from fishtalk.conversation.latency import badge, percentile
from fishtalk.tui.safe import clean

ROLLING_TURNS: Final = 10
"""The status bar's p50 is over this many of the latest measured turns."""


def rolling_p50(turns: Sequence[Waterfall], count: int = ROLLING_TURNS) -> float | None:
    """The median heard latency of the latest ``count`` measured turns (seconds), or None
    before the first measured turn."""
    heard: list[float] = []
    for turn in reversed(turns):
        value = turn.heard
        if value is not None:
            heard.append(value)
            if len(heard) >= count:
                break
    return percentile(heard, 0.5)


def badge_text(turn: Waterfall) -> str:
    """A turn's badge, made inert (the words are latency.badge's)."""
    return clean(badge(turn))


class Badges:
    """Which agent segment carries which badge, kept up to date cheaply.

    :meth:`update` takes the state's latency and returns the segment ids whose badge
    changed (to re-render). Closed turns are appended to ``Latency.turns``, so only those
    after the last seen one are looked at; the open turn shows a badge once it has a heard
    figure. A reply to a user turn always gets one (its figure, or why there is none); an
    unprompted one (the greeting) does not: there was no user turn to measure from.
    """

    def __init__(self) -> None:
        self.by_segment: dict[str, str] = {}
        self._turns: tuple[Waterfall, ...] = ()
        self._open: Waterfall | None = None

    def clear(self) -> None:
        """Forget everything (another conversation, or a replay going back)."""
        self.by_segment.clear()
        self._turns = ()
        self._open = None

    def update(self, latency: Latency) -> list[str]:
        """Take ``latency``; the segment ids whose badge text changed."""
        turns, open_turn = latency.turns, latency.open
        if turns is self._turns and open_turn is self._open:
            return []
        previous = self._turns
        if len(turns) >= len(previous) and previous and turns[len(previous) - 1] is previous[-1]:
            fresh: Sequence[Waterfall] = turns[len(previous) :]
        else:
            # Not an extension of what was seen (the first time, or the front dropped):
            # keep only the badges of the turns still held.
            fresh = turns
            kept = {t.segment_id for t in turns if t.segment_id is not None}
            for sid in [s for s in self.by_segment if s not in kept]:
                del self.by_segment[sid]
        self._turns, self._open = turns, open_turn
        changed: list[str] = []
        for turn in fresh:
            self._put(turn, changed)
        if open_turn is not None and open_turn.heard is not None:
            self._put(open_turn, changed)
        return changed

    def _put(self, turn: Waterfall, changed: list[str]) -> None:
        sid = turn.segment_id
        if sid is None or turn.kind == "unprompted":
            return  # the agent spoke first (its greeting): no user turn, nothing to measure
        text = badge_text(turn)
        if self.by_segment.get(sid) != text:
            self.by_segment[sid] = text
            changed.append(sid)


class HeardP50(Static):
    """The status bar's rolling p50 of heard latency; hidden before the first measured
    turn."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._turns: tuple[Waterfall, ...] | None = None
        self._shown: str | None = None
        self.display = False

    def show(self, state: State) -> None:
        """Render the rolling p50 (no-op while the closed turns are unchanged)."""
        turns = state.latency.turns
        if turns is self._turns:
            return
        self._turns = turns
        p50 = rolling_p50(turns)
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


__all__ = ["ROLLING_TURNS", "Badges", "HeardP50", "badge_text", "rolling_p50"]
