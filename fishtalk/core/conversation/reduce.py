"""The conversation reducer: ``(state, input) -> (state, effects)``, sans-IO.

This is the one place that knows what a front end shows. The session (``fishtalk.engine.session``)
turns LiveKit callbacks and user commands into :data:`Input` values, feeds them to
:func:`reduce`, executes the returned :data:`Effect` values and hands the new :class:`State`
to the front ends. Nothing here does IO, reads a clock or imports asyncio/livekit/textual:
time arrives on every input as ``at`` (monotonic seconds, the same clock the session uses
for timer deadlines), so the reducer is pure and deterministic.

Behaviour follows the Fish web SDK (the reference; see spec/contract-notes.md) with a few
deliberate improvements, each noted where it happens:

- status ``connecting -> connected <-> reconnecting -> ended`` with an open-set end reason;
- the agent must publish state within :data:`AGENT_JOIN_TIMEOUT` of connecting, else the
  session ends with ``connection_failed``;
- ``session.ended`` starts a :data:`SESSION_ENDED_GRACE` timer; the transport dropping or the
  timer firing ends the session with the announced reason;
- typed messages appear at once (no server echo) and are queued until the agent has
  published its first state (and while reconnecting), then sent in order;
- mode ``listening | thinking | speaking``: speaking while an agent transcript segment is
  open, thinking from the agent state, else listening.

State is immutable (frozen dataclasses and tuples); every reduction returns a new snapshot,
so front ends may keep references to old ones safely.
"""

from __future__ import annotations

from typing import Any, Final, TypeAlias

from fishtalk.core.conversation import inputs
from fishtalk.core.conversation.agent_events import (
    _on_agent_event,
    _on_client_tool_finished,
    _on_malformed,
)
from fishtalk.core.conversation.commands import (
    _on_activity,
    _on_hangup,
    _on_interrupt,
    _on_local_error,
    _on_notice,
    _on_send_text,
    _on_set_muted,
    _on_set_spoken,
)
from fishtalk.core.conversation.connection import (
    _on_attributes_changed,
    _on_connect_failed,
    _on_connected,
    _on_disconnected,
    _on_participant_joined,
    _on_participant_left,
    _on_reconnected,
    _on_reconnecting,
)
from fishtalk.core.conversation.effects import (
    Effect,
)
from fishtalk.core.conversation.latency import (
    LatencyMark,
)
from fishtalk.core.conversation.latency_rules import _on_latency_mark
from fishtalk.core.conversation.state import (
    State,
)
from fishtalk.core.conversation.step import (
    _ignored,
    _Step,
)
from fishtalk.core.conversation.timers import _on_timer
from fishtalk.core.conversation.transcript import (
    _on_stream_chunk,
    _on_stream_closed,
    _on_stream_opened,
)

Result: TypeAlias = tuple[State, list[Effect]]
"""The new state and the effects to execute, in order."""


def reduce(state: State, inp: inputs.Input) -> Result:
    """Apply one input; return the new state and the effects to execute, in order.

    Never raises for any input value of the declared types; out-of-place inputs (duplicates,
    late arrivals, anything after the end) are ignored and counted in ``state.debug``.
    The cost of one input does not depend on how long the conversation is.
    """
    r = _Step(state)
    if not isinstance(inp, _INPUT_TYPES):
        _ignored(r)
        return r.s, r.fx
    if state.ended and not isinstance(inp, _AFTER_END):
        _ignored(r)
    else:
        handler = _HANDLERS.get(type(inp))
        if handler is None:  # a subclass of an input type
            handler = next(h for t, h in _HANDLERS.items() if isinstance(inp, t))
        handler(r, inp)
    if inp.at > r.s.clock.now:
        r.clock(now=inp.at)
    return r.s, r.fx


_HANDLERS: Final[dict[type, Any]] = {
    inputs.Connected: _on_connected,
    inputs.ConnectFailed: _on_connect_failed,
    inputs.Reconnecting: _on_reconnecting,
    inputs.Reconnected: _on_reconnected,
    inputs.Disconnected: _on_disconnected,
    inputs.ParticipantJoined: _on_participant_joined,
    inputs.ParticipantLeft: _on_participant_left,
    inputs.AttributesChanged: _on_attributes_changed,
    inputs.TranscriptStreamOpened: _on_stream_opened,
    inputs.TranscriptStreamChunk: _on_stream_chunk,
    inputs.TranscriptStreamClosed: _on_stream_closed,
    inputs.AgentEventReceived: _on_agent_event,
    inputs.MalformedAgentEvent: _on_malformed,
    inputs.ClientToolFinished: _on_client_tool_finished,
    inputs.TimerFired: _on_timer,
    inputs.SendText: _on_send_text,
    inputs.SignalActivity: _on_activity,
    inputs.Interrupt: _on_interrupt,
    inputs.SetMuted: _on_set_muted,
    inputs.SetSpoken: _on_set_spoken,
    inputs.Hangup: _on_hangup,
    inputs.LocalError: _on_local_error,
    inputs.AddNotice: _on_notice,
    LatencyMark: _on_latency_mark,
}
"""One handler per input type; each changes the step in place."""

_INPUT_TYPES: Final = tuple(_HANDLERS)

# After the end only local bookkeeping still applies (state only, no effects but a result
# for a tool that finished as the session ended, which is then dropped).
_AFTER_END: Final = (
    inputs.ClientToolFinished,
    inputs.SetMuted,
    inputs.SetSpoken,
    inputs.MalformedAgentEvent,
)
