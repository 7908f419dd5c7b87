"""Timer handlers: the agent-join deadline, the grace after ``session.ended`` and the
max-duration safety net."""

from __future__ import annotations

from fishtalk.core.conversation.connection import (
    AGENT_JOIN_TIMEOUT,
    MAX_DURATION_SLACK,
    _end,
)
from fishtalk.core.conversation.effects import (
    TIMER_AGENT_JOIN,
    TIMER_ENDED_GRACE,
    TIMER_MAX_DURATION,
)
from fishtalk.core.conversation.inputs import (
    TimerFired,
)
from fishtalk.core.conversation.reasons import (
    END_AGENT_HANGUP,
    END_CONNECTION_FAILED,
    END_CONVERSATION_TIMEOUT,
)
from fishtalk.core.conversation.step import (
    _add_error,
    _ignored,
    _Step,
)


def _on_timer(r: _Step, inp: TimerFired) -> None:
    clock = r.s.clock
    if inp.name == TIMER_AGENT_JOIN and clock.join_deadline is not None:
        if inp.at < clock.join_deadline or r.s.agent_ready:
            _ignored(r)
            return
        _add_error(
            r,
            "connection_failed",
            inp.at,
            f"The agent did not join within {AGENT_JOIN_TIMEOUT:g} s.",
        )
        _end(r, END_CONNECTION_FAILED, inp.at)
    elif inp.name == TIMER_ENDED_GRACE and clock.ended_grace_deadline is not None:
        if inp.at < clock.ended_grace_deadline:
            _ignored(r)
            return
        _end(r, r.s.announced_end_reason or END_AGENT_HANGUP, inp.at)
    elif inp.name == TIMER_MAX_DURATION and clock.max_duration_deadline is not None:
        if inp.at < clock.max_duration_deadline + MAX_DURATION_SLACK:
            _ignored(r)
            return
        _end(r, r.s.announced_end_reason or END_CONVERSATION_TIMEOUT, inp.at)
    else:
        _ignored(r)
