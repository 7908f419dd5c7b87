"""Which agent lines are the reply to the user's last turn, and when that reply is complete.

:class:`ReplyTracker` is what :meth:`fishtalk.AgentSession.wait_for_reply` reads. It keeps
no rule of its own: the lines that answer turn N are those whose
:attr:`~fishtalk.core.conversation.Segment.answers_turn` is N (the reducer's one rule, see
:mod:`fishtalk.core.conversation.answers`). A reply is *complete* when the agent, having
said at least one such line, is back to listening (or idle) with none of them still open
and no tool call after its first line still unanswered (running, or not yet followed by a
line: an agent speaks about what a tool returned), or when the session ended. An agent
that answers in several lines (say, before and after a tool call) gets them joined in
one segment.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Final

from fishtalk.core import conversation as conv

BACK: Final = frozenset({"listening", "idle"})
"""Agent states that end a reply: the agent waits for the user again."""


class ReplyTracker:
    """The user's newest turn and the newest complete reply, fed every state."""

    def __init__(self) -> None:
        self.last_turn = 0
        """The user's newest turn (``Segment.turn``; 0 before the first)."""
        self.reply: tuple[int, conv.Segment] | None = None
        """The newest turn whose reply is complete, and that reply."""

    def sent(self, seg: conv.Segment) -> None:
        """A typed turn left: its number is the newest turn."""
        self.last_turn = max(self.last_turn, seg.turn or 0)

    def observe(self, state: conv.State, events: Iterable[conv.Change]) -> None:
        """Take a new state and the events that led to it."""
        for event in events:
            seg = getattr(event, "segment", None)
            if isinstance(seg, conv.Segment):
                # A user line's number, or the turn an agent line answers (that turn has
                # ended, whether or not its user line is shown yet).
                n = seg.turn if seg.role == "user" else seg.answers_turn
                if n is not None and n > self.last_turn:
                    self.last_turn = n
        if self.reply is None or self.reply[0] < self.last_turn:
            reply = complete_reply(state, self.last_turn)
            if reply is not None:
                self.reply = (self.last_turn, reply)

    def reply_to(self, turn: int) -> conv.Segment | None:
        """The complete reply to ``turn`` or a later one, if there is one yet."""
        if self.reply is None or self.reply[0] < turn:
            return None
        return self.reply[1]


def is_line(event: conv.Change) -> bool:
    """Whether ``event`` is an agent line that finished (any line, the greeting too)."""
    return (
        isinstance(event, conv.SegmentFinalised)
        and event.segment.role == "agent"
        and not event.segment.typed
    )


def complete_reply(state: conv.State, turn: int) -> conv.Segment | None:
    """The reply to ``turn`` (0: the agent's opening lines, its greeting), if complete:
    its lines joined with a space in one segment (the first line's ``segment_id`` and
    ``started_at``, the last one's ``updated_at``; ``interrupted`` if any was cut short)."""
    if not state.ended and state.agent_state not in BACK:
        return None
    want = turn or None
    lines = [s for s in state.transcript if s.role == "agent" and s.answers_turn == want]
    if not lines:
        return None
    if not state.ended:
        if any(s.open or not s.final for s in lines):
            return None
        first = lines[0].seq
        # The tool calls of this reply: after its first line, before the user's next line.
        end = min(
            (s.seq for s in state.transcript if s.role == "user" and s.seq > first), default=None
        )
        tools = [c for c in state.tools if c.seq > first and (end is None or c.seq < end)]
        if (
            any(c.status == "running" for c in tools)
            or max((c.seq for c in tools), default=0) > lines[-1].seq
        ):
            return None  # a tool call the agent has not spoken about yet
    return replace(
        lines[0],
        text=" ".join(s.text.strip() for s in lines if s.text.strip()),
        final=all(s.final for s in lines),
        interrupted=any(s.interrupted for s in lines),
        updated_at=lines[-1].updated_at,
    )


__all__ = ["BACK", "ReplyTracker", "complete_reply", "is_line"]
