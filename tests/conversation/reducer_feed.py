"""What the reducer tests share: the two participants, an agent state, a latency mark, and
feeding inputs to the reducer while collecting what changed."""

from __future__ import annotations

from collections.abc import Iterable

from fishtalk.core import conversation as c
from fishtalk.core.protocol import ATTR_AGENT_STATE

ME = "user-1"
AGENT = "agent"


def agent_state(value: str, at: float) -> c.AttributesChanged:
    """The agent published ``lk.agent.state`` = ``value`` at ``at``."""
    return c.AttributesChanged(AGENT, {ATTR_AGENT_STATE: value}, at)


def mark(kind: c.MarkKind, at: float, value: float | None = None) -> c.LatencyMark:
    return c.LatencyMark(kind, at, value)


def feed(inputs: Iterable[c.Input], state: c.State | None = None) -> tuple[c.State, list[c.Change]]:
    """Reduce ``inputs`` one by one from ``state`` (a fresh one by default): the last state
    and every event :func:`~fishtalk.core.conversation.changes` saw on the way."""
    s = state if state is not None else c.initial_state()
    events: list[c.Change] = []
    for inp in inputs:
        new, _ = c.reduce(s, inp)
        events += c.changes(s, new)
        s = new
    return s, events


def ready(spoken: bool = True) -> c.State:
    """Connected, with the agent listening."""
    s, _ = feed(
        [c.Connected(ME, 1.0), agent_state("listening", 1.1)], c.initial_state(spoken=spoken)
    )
    return s
