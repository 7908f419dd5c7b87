"""Writing transcript lines and tool cards into the state: the bounded logs, what drops
off them, the open segments, the user turn a line ends (:mod:`.answers`), and the latency marks a
line carries."""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from fishtalk.core.conversation.answers import _user_turn_ended
from fishtalk.core.conversation.latency_rules import (
    _lat_first_text,
    _lat_reply_closed,
    _lat_user_final,
)
from fishtalk.core.conversation.state import (
    LOG_CHUNK,
    Segment,
    ToolCard,
)
from fishtalk.core.conversation.step import (
    _Step,
)


def _put_segment(r: _Step, seg: Segment) -> None:
    """Replace the segment with the same id, or append it (keeping ``open_ids`` right)."""
    before = r.s.segment_log
    if seg.role == "user" and seg.final and seg.turn is None and not seg.typed:
        # The user's final transcript: this line's turn ended (see .answers).
        seg = replace(seg, turn=_user_turn_ended(r, seg.updated_at, "final"))
    log, old = before.put(seg)
    r.set(segment_log=log)
    # Latency: an agent reply's first text and its end; the user's final transcript.
    if seg.role == "agent":
        if seg.text and (old is None or not old.text) and not seg.interrupted:
            _lat_first_text(r, seg)
        if seg.final and old is not None and not old.final:
            _lat_reply_closed(r, seg)
    elif seg.final and not seg.typed and (old is None or not old.final):
        _lat_user_final(r, seg.updated_at)
    if log.dropped != before.dropped:
        _count_dropped_segments(r, before.blocks[: (log.dropped - before.dropped) // LOG_CHUNK])
    was_open = old is not None and old.open
    if was_open != seg.open:
        ids = r.internal.open_ids
        if seg.open:
            # Segments dropped from the log while open cannot be closed any more: forget them.
            kept = tuple(i for i in ids if log.position(i) is not None) if len(ids) > 16 else ids
            r.book(open_ids=(*kept, seg.segment_id))
        else:
            r.book(open_ids=tuple(i for i in ids if i != seg.segment_id))


def _put_card(r: _Step, card: ToolCard) -> None:
    before = r.s.tool_log
    log = before.put(card)[0]
    r.set(tool_log=log)
    if log.dropped != before.dropped:
        failed = sum(
            1
            for block in before.blocks[: (log.dropped - before.dropped) // LOG_CHUNK]
            for dropped in block
            if dropped.display_status not in _NOT_FAILED
        )
        if failed:
            r.set(earlier_failed_tools=r.s.earlier_failed_tools + failed)


_NOT_FAILED: Final = frozenset({"running", "completed", "ok"})
"""A card's ``display_status`` values that are not a failure (what the summary counts)."""


def _count_dropped_segments(r: _Step, blocks: tuple[tuple[Segment, ...], ...]) -> None:
    """Count what was said in segments that just dropped off the live log (one block per
    :data:`LOG_CHUNK` appends, so O(1) per input on average)."""
    user = agent = 0
    for block in blocks:
        for dropped in block:
            if dropped.text.strip():
                if dropped.role == "user":
                    user += 1
                else:
                    agent += 1
    r.set(
        earlier_user_turns=r.s.earlier_user_turns + user,
        earlier_agent_turns=r.s.earlier_agent_turns + agent,
    )
