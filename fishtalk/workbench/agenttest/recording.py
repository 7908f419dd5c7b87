"""Recording a session: every event with its time, cut into per-turn windows, and what
the checks read from them (agent lines, tool calls, states, first text).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fishtalk.core import conversation as conv
from fishtalk.workbench.agenttest.results import SeenCall

if TYPE_CHECKING:
    from pydantic import JsonValue


@dataclass
class Window:
    start_index: int
    start_time: float
    end_index: int | None = None
    sent_at: float | None = None
    """When the user's turn had left (typed: sent; spoken: the clip ended)."""


class Recorder:
    """Every event of a session, with its time on the session's monotonic clock (the
    event's own ``at``; windows are marked on the same clock)."""

    def __init__(self) -> None:
        self.events: list[tuple[float, conv.Change]] = []
        self.cards: dict[str, conv.ToolCard] = {}
        self.undeclared: list[str] = []

    def __call__(self, event: conv.Change) -> None:
        # An event's ``at`` is 0.0 only before the session's first input.
        self.events.append((event.at or time.monotonic(), event))
        if isinstance(event, conv.ToolCardAdded | conv.ToolCardChanged):
            self.cards[event.card.call_id] = event.card

    def mark(self) -> Window:
        return Window(len(self.events), time.monotonic())

    def window(self, window: Window) -> list[tuple[float, conv.Change]]:
        return self.events[window.start_index : window.end_index]

    def calls(self, events: Sequence[tuple[float, conv.Change]]) -> list[SeenCall]:
        """The tool calls first seen among ``events`` (params from the latest card)."""
        seen: list[SeenCall] = []
        ids: set[str] = set()
        for _, event in events:
            if not isinstance(event, conv.ToolCardAdded | conv.ToolCardChanged):
                continue
            call_id = event.card.call_id
            if call_id in ids:
                continue
            ids.add(call_id)
            card = self.cards.get(call_id, event.card)
            seen.append(seen_call(card))
        return seen


def seen_call(card: conv.ToolCard) -> SeenCall:
    if card.client is not None:
        return SeenCall(card.tool_name, dict(card.client.params), card.source, client=True)
    params: JsonValue = None
    if card.input is not None:
        try:
            params = json.loads(card.input)
        except ValueError:
            params = card.input
    return SeenCall(card.tool_name, params, card.source, client=False)


def agent_lines(events: Sequence[tuple[float, conv.Change]]) -> list[str]:
    """The agent's lines among ``events``, in order, each as last seen (a line the session
    ended before it was finalised counts with the text it had)."""
    return [text for text in agent_lines_by_id(events).values() if text]


def agent_lines_by_id(events: Sequence[tuple[float, conv.Change]]) -> dict[str, str]:
    """The agent's lines among ``events`` by segment id, in order, each as last seen."""
    lines: dict[str, str] = {}
    for _, e in events:
        if (
            isinstance(
                e,
                conv.SegmentOpened
                | conv.SegmentGrew
                | conv.SegmentFinalised
                | conv.SegmentInterrupted,
            )
            and e.segment.role == "agent"
            and not e.segment.typed
        ):
            lines[e.segment.segment_id] = e.segment.text
    return lines


def time_to_first_text(events: Sequence[tuple[float, conv.Change]], since: float) -> float | None:
    for at, e in events:
        if (
            isinstance(e, conv.SegmentOpened | conv.SegmentGrew | conv.SegmentFinalised)
            and e.segment.role == "agent"
            and not e.segment.typed
            and e.segment.text
        ):
            return max(0.0, at - since)
    return None


def cut_short(events: Sequence[tuple[float, conv.Change]]) -> bool:
    return any(
        isinstance(e, conv.SegmentInterrupted) and e.segment.role == "agent" for _, e in events
    )


def agent_states(events: Sequence[tuple[float, conv.Change]]) -> list[str]:
    return [e.agent_state for _, e in events if isinstance(e, conv.AgentStateChanged)]
