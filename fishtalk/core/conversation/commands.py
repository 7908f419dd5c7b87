"""Local command handlers: typed messages, activity, interrupt, mute, spoken replies,
hang-up, local errors and notices."""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from fishtalk.core.conversation.answers import _user_turn_ended
from fishtalk.core.conversation.connection import (
    _can_send,
    _end,
    _flush_queue,
)
from fishtalk.core.conversation.effects import (
    SendClientEvent,
    SetMicrophoneMuted,
)
from fishtalk.core.conversation.inputs import (
    AddNotice,
    Hangup,
    Interrupt,
    LocalError,
    SendText,
    SetMuted,
    SetSpoken,
    SignalActivity,
)
from fishtalk.core.conversation.latency import (
    InterruptTiming,
)
from fishtalk.core.conversation.latency_rules import (
    _lat_close_interrupt,
    _lat_close_turn,
    _lat_set,
    _lat_user_turn_ended,
    _reply_began,
)
from fishtalk.core.conversation.lines import _put_segment
from fishtalk.core.conversation.reasons import (
    END_USER_HANGUP,
)
from fishtalk.core.conversation.state import (
    QueuedMessage,
    Segment,
    State,
)
from fishtalk.core.conversation.step import (
    _add_error,
    _add_notice,
    _Step,
    _with_mode,
)
from fishtalk.core.protocol import (
    UserActivity,
    UserHangup,
    UserInterrupt,
    UserMessage,
)

ACTIVITY_THROTTLE: Final = 1.0
"""Minimum seconds between two ``user.activity`` events actually sent."""


def _typed_message(state: State, inp: SendText) -> UserMessage | None:
    """The ``user.message`` a typed turn becomes (None: blank, ignored)."""
    text = inp.text.strip()
    if not text:
        return None
    spoken = state.spoken if inp.audio is None else inp.audio
    # Absent audio means "speak as usual"; the web SDK sends audio=false unless asked.
    return UserMessage(text=text) if spoken else UserMessage(text=text, audio=False)


def _on_send_text(r: _Step, inp: SendText) -> None:
    message = _typed_message(r.s, inp)
    if message is None:
        return
    text = message.text
    spoken = message.audio is not False
    internal = r.internal
    typed = internal.typed_count + 1
    segment_id = f"typed-{typed}"
    # Fast path: nothing waiting and the agent listening, so it goes out at once.
    send_now = not internal.queued and _can_send(r.s)
    r.book(typed_count=typed, next_seq=internal.next_seq + 1)
    turn = _user_turn_ended(r, inp.at, "typed") if send_now else None
    seg = Segment(
        seq=internal.next_seq,
        segment_id=segment_id,
        role="user",
        identity=None,
        text=text,
        final=True,
        typed=True,
        queued=not send_now,
        audio=spoken,
        started_at=inp.at,
        updated_at=inp.at,
        turn=turn,
    )
    _put_segment(r, seg)
    if send_now:
        r.fx.append(SendClientEvent(message))
        _lat_user_turn_ended(r, "typed", inp.at, text_only=not spoken)
        return
    r.book(queued=(*r.internal.queued, QueuedMessage(segment_id, message)))
    _flush_queue(r, inp.at)


def _on_activity(r: _Step, inp: SignalActivity) -> None:
    if r.s.status != "connected" or not r.s.agent_ready:
        return
    last = r.internal.last_activity_sent_at
    if last is not None and inp.at - last < ACTIVITY_THROTTLE:
        return
    r.book(last_activity_sent_at=inp.at)
    r.fx.append(SendClientEvent(UserActivity()))


def _on_interrupt(r: _Step, inp: Interrupt) -> None:
    if r.s.status not in ("connected", "reconnecting"):
        return
    turn = r.s.latency.open
    replying = turn is not None and _reply_began(turn) is not None
    speaking = replying or r.s.mode == "speaking" or r.s.agent_state == "speaking"
    for segment_id in r.internal.open_ids:
        seg = r.s.segment_log.get(segment_id)
        if seg is not None and seg.role == "agent" and seg.open and not seg.interrupted:
            _put_segment(r, replace(seg, interrupted=True, updated_at=inp.at))
    _with_mode(r)
    r.fx.append(SendClientEvent(UserInterrupt()))
    if replying:
        _lat_close_turn(r, "interrupted")
    if speaking:
        # Timed only when there was speech to stop (see fishtalk.core.conversation.latency).
        _lat_close_interrupt(r)
        _lat_set(r, open_interrupt=InterruptTiming(pressed_at=inp.at))


def _on_set_muted(r: _Step, inp: SetMuted) -> None:
    if inp.muted == r.s.muted:
        return
    r.set(muted=inp.muted)
    if not r.s.ended:
        r.fx.append(SetMicrophoneMuted(inp.muted))


def _on_set_spoken(r: _Step, inp: SetSpoken) -> None:
    if inp.spoken != r.s.spoken:
        r.set(spoken=inp.spoken)


def _on_hangup(r: _Step, inp: Hangup) -> None:
    if r.s.status in ("connected", "reconnecting"):
        r.fx.append(SendClientEvent(UserHangup()))
    _end(r, inp.reason or END_USER_HANGUP, inp.at)


def _on_local_error(r: _Step, inp: LocalError) -> None:
    _add_error(r, inp.code, inp.at, inp.detail)


def _on_notice(r: _Step, inp: AddNotice) -> None:
    _add_notice(r, inp.text, inp.at, inp.kind)
