"""The latency rules: how the reducer builds each turn's waterfall (issue 14).

The rules (when a turn opens and closes, every ``incomplete`` reason) are documented in
:mod:`fishtalk.core.conversation.latency`; these helpers carry them out. Each one first
checks the cheap facts (is a turn open, is the mark still missing) so the common input
costs a few attribute reads."""

from __future__ import annotations

import math
from typing import Any, Literal, TypeAlias

from fishtalk.core.conversation.answers import _user_turn_ended
from fishtalk.core.conversation.latency import (
    MAX_INTERRUPTS,
    MAX_TURNS,
    Incomplete,
    LatencyMark,
    TurnKind,
    Waterfall,
)
from fishtalk.core.conversation.state import (
    LatencyBook,
    Segment,
)
from fishtalk.core.conversation.step import (
    _bounded,
    _ignored,
    _Step,
    _with,
)

_Closing: TypeAlias = Literal["over", "next", "interrupted", "ended"]


def _lat_book(r: _Step, **changes: Any) -> None:
    book = r.internal.lat
    for name, value in changes.items():
        if getattr(book, name) != value:
            r.book(lat=_with(book, **changes))
            return


def _lat_set(r: _Step, **changes: Any) -> None:
    r.set(latency=_with(r.s.latency, **changes))


def _lat_set_open(r: _Step, w: Waterfall) -> None:
    r.set(latency=_with(r.s.latency, open=w))


def _reply_began(w: Waterfall) -> float | None:
    """When the agent's reply to this turn began (first text or audio), if it did."""
    began: float | None = None
    for at in (w.first_text_at, w.audio_received_at, w.audio_handed_at):
        if at is not None and (began is None or at < began):
            began = at
    return began


def _lat_open_turn(r: _Step, kind: TurnKind, at: float, *, text_only: bool) -> Waterfall:
    internal = r.internal
    thinking = internal.lat.thinking_at
    final = internal.lat.user_final_at
    w = Waterfall(
        turn=internal.user_turn,  # the user turn it answers (see .answers)
        kind=kind,
        user_ended_at=at,
        user_final_at=final if final is not None and final >= at and kind != "typed" else None,
        thinking_at=thinking if thinking is not None and thinking >= at else None,
    )
    _lat_set_open(r, w)
    _lat_book(r, reply_over=False, text_only=text_only)
    return w


def _lat_user_turn_ended(r: _Step, kind: TurnKind, at: float, *, text_only: bool) -> None:
    """The user's turn ended at ``at`` (a typed message left, or speech ended)."""
    lat = r.s.latency
    if lat.open_interrupt is not None:
        _lat_close_interrupt(r)
    w = lat.open
    if w is not None:
        began = _reply_began(w)
        if began is None or (w.kind == "unprompted" and at <= began):
            # The agent has not answered yet (or its answer began after this end of
            # speech, reported late): the user's turn goes on, and ends at its latest end.
            end = max(at, w.user_ended_at) if began is None else at
            thinking = w.thinking_at
            final = w.user_final_at
            _lat_set_open(
                r,
                _with(
                    w,
                    kind=kind,
                    turn=r.internal.user_turn,
                    user_ended_at=end,
                    thinking_at=thinking if thinking is not None and thinking >= end else None,
                    user_final_at=final if final is not None and final >= end else None,
                ),
            )
            _lat_book(r, text_only=text_only)
            return
        _lat_close_turn(r, "next")
    elif r.internal.user_turn <= lat.user_turns:
        return  # an end of a user turn already measured and closed (reported again)
    _lat_open_turn(r, kind, at, text_only=text_only)


def _lat_unprompted(r: _Step, at: float) -> Waterfall | None:
    """The agent's reply began with no turn open: a turn with no user turn, if the agent
    spoke first in the call or the user said something no end of speech was seen for."""
    lat = r.s.latency
    final = r.internal.lat.user_final_at
    if lat.turns:
        began = _reply_began(lat.turns[-1])
        if final is None or (began is not None and final <= began):
            return None  # more of the last reply (another segment): not a new turn
    # The user said something (a final transcript) that no end of speech was seen for:
    # that transcript is the best end of their turn there is (and no mark precedes it).
    start = final if final is not None and final <= at else at
    return _lat_open_turn(r, "unprompted", start, text_only=False)


def _lat_thinking(r: _Step, at: float) -> None:
    w = r.s.latency.open
    if (
        w is not None
        and w.thinking_at is None
        and at >= w.user_ended_at
        and _reply_began(w) is None
    ):
        _lat_set_open(r, _with(w, thinking_at=at))
    else:
        _lat_book(r, thinking_at=at)  # for a turn whose end is reported later


def _lat_opening_over(r: _Step, at: float) -> None:
    """The agent's opening (see :mod:`.answers`) is over: a turn that left as it joined
    waits for its answer from now on, so its greeting is not counted in the reply's time."""
    w = r.s.latency.open
    if w is None or w.kind == "unprompted" or _reply_began(w) is not None or at <= w.user_ended_at:
        return
    early = w.thinking_at is not None and w.thinking_at < at
    _lat_set_open(r, _with(w, user_ended_at=at, thinking_at=None if early else w.thinking_at))


def _lat_first_text(r: _Step, seg: Segment) -> None:
    w = r.s.latency.open
    if w is None:
        w = _lat_unprompted(r, seg.started_at)
        if w is None:
            return
    if w.first_text_at is not None:
        return
    if w.kind == "unprompted":
        if min(seg.started_at, seg.updated_at) < w.user_ended_at:
            return  # a line that began before this turn
    elif seg.answers_turn != w.turn or seg.updated_at < w.user_ended_at:
        return  # the one rule: only a line that answers this user turn (see .answers)
    _lat_set_open(r, _with(w, first_text_at=seg.updated_at, segment_id=seg.segment_id))


def _lat_reply_closed(r: _Step, seg: Segment) -> None:
    w = r.s.latency.open
    if w is None or w.segment_id != seg.segment_id:
        return
    if w.audio_received_at is not None and w.audio_handed_at is None:
        _lat_book(r, reply_over=True)  # the first frame is on its way to the speaker
        return
    _lat_close_turn(r, "over")


def _lat_user_final(r: _Step, at: float) -> None:
    w = r.s.latency.open
    if w is not None and w.turn < r.internal.user_turn and _reply_began(w) is None:
        # This final transcript ended a user turn of its own (no end of speech was seen
        # for it) before the agent answered: the user's turn goes on, and the reply to
        # come answers this one (see .answers). Its arrival is the best end there is.
        _lat_user_turn_ended(r, "spoken", at, text_only=False)
        w = r.s.latency.open
    if (
        w is not None
        and w.kind == "spoken"
        and at >= w.user_ended_at
        and (w.user_final_at is None or _reply_began(w) is None)
    ):
        _lat_set_open(r, _with(w, user_final_at=at))
        return
    _lat_book(r, user_final_at=at)


def _lat_reason(
    w: Waterfall, closing: _Closing, book: LatencyBook, over: bool
) -> Incomplete | None:
    if w.kind == "unprompted":
        return "no user turn"
    if w.heard_at is not None:
        return None
    if book.text_only:
        return "text-only"
    if book.no_output:
        return "no audio"  # nothing here could hear it, whatever cut it short
    if closing == "interrupted":
        return "interrupted"
    if w.audio_received_at is not None:
        return "not heard"
    if closing == "ended":
        return "ended"
    if closing == "next" and not over:
        return "interrupted"  # the user spoke or typed over the reply before it was heard
    return "no audio"


def _lat_close_turn(r: _Step, closing: _Closing) -> None:
    lat = r.s.latency
    w = lat.open
    if w is None:
        return
    internal = r.internal
    over = closing == "over" or internal.lat.reply_over
    # The turn's number is the user turn it answers (see .answers), given when it opened
    # or when a late end of speech made an unprompted turn the answer to a user turn.
    user_turns = lat.user_turns if w.kind == "unprompted" else max(lat.user_turns, w.turn)
    closed = _with(
        w,
        rtt=lat.rtt,
        incomplete=_lat_reason(w, closing, internal.lat, over),
    )
    turns = (*lat.turns, closed)
    drop = _bounded(turns, MAX_TURNS)
    _lat_set(
        r,
        open=None,
        turns=turns[drop:],
        earlier_turns=lat.earlier_turns + drop,
        user_turns=user_turns,
    )
    _lat_book(r, reply_over=False)


def _lat_close_interrupt(r: _Step) -> None:
    lat = r.s.latency
    pending = lat.open_interrupt
    if pending is None:
        return
    interrupts = (*lat.interrupts, pending)
    _lat_set(r, open_interrupt=None, interrupts=interrupts[_bounded(interrupts, MAX_INTERRUPTS) :])


def _other(r: _Step, w: Waterfall) -> bool:
    """Audio now is the voice of a line that answers another turn than ``w`` (e.g. the
    greeting still playing after the user typed): not this turn's reply."""
    if w.kind == "unprompted":
        return False
    line = r.s.speaking_segment
    return line is not None and line.answers_turn != w.turn


def _on_latency_mark(r: _Step, inp: LatencyMark) -> None:
    """A mark only IO can see (see :data:`~fishtalk.core.conversation.latency.MarkKind`)."""
    at = inp.at
    value = inp.value
    if value is not None and not (math.isfinite(value) and value >= 0.0):
        value = None
    if not math.isfinite(at):
        _ignored(r)
        return
    kind = inp.kind
    lat = r.s.latency
    w = lat.open
    if kind == "speech_ended":
        before = r.internal.user_turn
        turn = _user_turn_ended(r, at, "speech")
        repeated = turn == before and w is not None and w.kind != "unprompted"
        if repeated and w is not None and w.turn == turn and _reply_began(w) is not None:
            return  # the end of speech its turn already had: one turn, one waterfall
        _lat_user_turn_ended(r, "spoken", at, text_only=False)
    elif kind == "typed_sent":
        # The turn opened when the message went out; the publish completing is its end.
        if w is None or w.kind != "typed" or at < w.user_ended_at or _reply_began(w) is not None:
            _ignored(r)
            return
        # The agent cannot have reacted before the message left: an agent mark seen
        # before the publish was reported bounds the end.
        end = at
        for seen in (w.thinking_at, w.user_final_at):
            if seen is not None and seen < end:
                end = seen
        _lat_set_open(r, _with(w, user_ended_at=end))
    elif kind == "audio_received":
        if w is None:
            w = _lat_unprompted(r, at)
        if w is None or w.audio_received_at is not None or at < w.user_ended_at or _other(r, w):
            _ignored(r)
            return
        handed = w.audio_handed_at
        _lat_set_open(r, _with(w, audio_received_at=at if handed is None else min(at, handed)))
    elif kind == "audio_heard":
        if w is None or w.audio_handed_at is not None or at < w.user_ended_at or _other(r, w):
            _ignored(r)
            return
        received = w.audio_received_at
        handed = at if received is None else max(at, received)
        _lat_set_open(r, _with(w, audio_handed_at=handed, output_latency=value or 0.0))
        if r.internal.lat.reply_over:
            _lat_close_turn(r, "over")
    elif kind == "rtt":
        if value is None:
            _ignored(r)
            return
        _lat_set(r, rtt=value)
    else:
        pending = lat.open_interrupt
        if pending is None or at < pending.pressed_at:
            _ignored(r)
            return
        if kind == "interrupt_flushed" and pending.flushed_at is None:
            pending = _with(pending, flushed_at=at)
        elif kind == "interrupt_wire_stopped" and pending.wire_stopped_at is None:
            pending = _with(pending, wire_stopped_at=at)
        else:
            _ignored(r)
            return
        _lat_set(r, open_interrupt=pending)
        if pending.flushed_at is not None and pending.wire_stopped_at is not None:
            _lat_close_interrupt(r)
