"""The one rule of who answers whom (issue 24): every reply belongs to the turn that caused it.

A **user turn** ends when a typed message is sent, or when the user's speech ends: the
``speech_ended`` mark, or their final transcript when no mark came first (pauses before
the final transcript are the same turn). The user's turns are numbered from 1, in the
order they ended (:attr:`~fishtalk.core.conversation.Segment.turn` on the user's line).

An **agent line answers the user turn it follows**: the last user turn that had ended when
the line started (:attr:`~fishtalk.core.conversation.Segment.answers_turn`). So the first
agent line after turn N, and every agent line after it up to the next user turn, answer N;
a line already speaking when the user spoke answers what it answered before (the greeting
answers nothing, even when it finishes after the user typed); of two user turns before the
agent speaks, the line answers the last one; a line before any user turn answers nothing.
Typed turns queued before the agent was ready leave when it joins, just before its
greeting: the agent's lines from then until it thinks (or listens after them) are its
opening and answer nothing either.

The latency waterfall of turn N is bound to the first line that answers N (see
:mod:`.latency_rules`). An end of speech is stamped at the microphone and may be reported
after a line already started: when it is stamped no later than that line's start, the
newest agent line is bound again to that turn. Everything here is O(1) per input.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal, TypeAlias

from fishtalk.core.conversation.step import _Step

TurnEnd: TypeAlias = Literal["typed", "speech", "final"]
"""How a user turn ended: a typed message sent, a ``speech_ended`` mark, or the user's
final transcript."""


def _answering(r: _Step) -> int | None:
    """The user turn a line that starts now answers (None before the first user turn, and
    for the agent's opening)."""
    if r.internal.opening != "none":
        return None
    return r.internal.user_turn or None


def _agent_line_started(r: _Step, segment_id: str) -> None:
    """Remember the newest agent line (a late end of speech may bind it again)."""
    r.book(last_agent_line=segment_id)
    if r.internal.opening == "awaited":
        r.book(opening="speaking")


def _turns_left_at_join(r: _Step) -> None:
    """Typed turns queued before the agent was ready left as it joined: its first lines are
    its opening (a greeting), whatever the order they arrive in, not their answer."""
    if r.internal.last_agent_line is None and r.internal.opening == "none":
        r.book(opening="awaited")


def _agent_state_changed(r: _Step, value: str) -> bool:
    """The opening is over when the agent thinks (a reply is coming), or listens once its
    opening line has started (an agent that answers without ``thinking``); True when an
    opening line was spoken (its time is then no part of the reply's latency)."""
    opening = r.internal.opening
    over = value == "thinking" or (value == "listening" and opening == "speaking")
    if opening != "none" and over:
        r.book(opening="none")
        return opening == "speaking"
    return False


def _user_turn_ended(r: _Step, at: float, how: TurnEnd) -> int:
    """A user turn ended at ``at``: its number (a new one, or the turn it continues)."""
    book = r.internal
    n = book.user_turn
    if how == "speech" and n and book.last_turn_spoken:
        if book.speech_pending and not _reply_began(r, n, at):
            # A pause: the user's speech goes on until its final transcript (unless the
            # agent began to answer it meanwhile: then this speech is a turn of its own).
            r.book(user_turn_at=at)
            _bind_late(r, n, at)
            return n
        if book.user_turn_at is not None and at <= book.user_turn_at:
            # The end of the speech whose final transcript already ended the turn.
            _bind_late(r, n, at)
            return n
    if how == "final" and book.speech_pending:
        r.book(speech_pending=False)  # the final transcript of the speech that ended
        return n
    n += 1
    r.book(
        user_turn=n,
        user_turn_at=at,
        speech_pending=how == "speech",
        last_turn_spoken=how != "typed",
    )
    if how == "speech":
        _bind_late(r, n, at)
    return n


def _reply_began(r: _Step, n: int, at: float) -> bool:
    """Whether the agent began to answer turn ``n`` before ``at``: a line answering it
    started, or the waterfall measuring it saw the reply's first text or audio."""
    line_id = r.internal.last_agent_line
    seg = r.s.segment_log.get(line_id) if line_id is not None else None
    if seg is not None and seg.answers_turn == n and seg.started_at < at:
        return True
    w = r.s.latency.open
    if w is None or w.turn != n or w.kind == "unprompted":
        return False
    return any(
        mark is not None and mark <= at
        for mark in (w.first_text_at, w.audio_received_at, w.audio_handed_at)
    )


def _bind_late(r: _Step, n: int, at: float) -> None:
    """An end of speech stamped no later than the newest agent line's start: that line
    follows turn ``n`` (the mark was reported late)."""
    line_id = r.internal.last_agent_line
    if line_id is None:
        return
    seg = r.s.segment_log.get(line_id)
    if seg is None or seg.started_at < at or (seg.answers_turn or 0) >= n:
        return
    # Only the binding changes (not the text, openness or finality), so no other
    # bookkeeping follows the line.
    r.set(segment_log=r.s.segment_log.put(replace(seg, answers_turn=n))[0])
