"""``fishtalk replay --plain``: a journal played back as line mode showed it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from fishtalk.core import conversation as conv
from fishtalk.engine.journal.reader import Journal
from fishtalk.plain.render import STATE_SETTLE, PlainRenderer, closing_notes
from fishtalk.workbench.journal.replay import delays, states


def play_plain(
    journal: Journal,
    out: TextIO,
    *,
    speed: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> conv.State:
    """Print the session as line mode showed it, paced by the journal's clock divided by
    ``speed`` (0: all at once), with its closing notes; returns the last state. The
    closing line (how it ended) is the caller's."""
    spoken = journal.header.get("spoken")
    played = list(states(journal, spoken=bool(spoken)))
    renderer = PlainRenderer(out, stream_agent=out.isatty(), settle=STATE_SETTLE)
    state = conv.initial_state(spoken=bool(spoken))
    for wait, (_, state, events) in zip(
        delays([t for t, _, _ in played], speed), played, strict=True
    ):
        if wait > 0:
            sleep(wait)
        renderer.render(state, events)
        if renderer.closed:
            return state
    # What line mode printed after the call (its --latency is not in the journal: the
    # summary comes when a turn has a figure).
    for note in closing_notes(state):
        out.write(f"{note}\n")
    return state


__all__ = ["play_plain"]
