"""What the reducer asks the session to do (:data:`Effect`), and the timer names.

The client events a :class:`SendClientEvent` carries (:data:`ClientEventOut`) are
re-exported from the package too, as they were from the single module before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypeAlias

from fishtalk.core.protocol import (
    ClientToolCall,
    ClientToolResult,
    UserActivity,
    UserHangup,
    UserInterrupt,
    UserMessage,
)

TIMER_AGENT_JOIN: Final = "agent_join"
TIMER_ENDED_GRACE: Final = "session_ended_grace"
TIMER_MAX_DURATION: Final = "max_duration"
TIMER_NAMES: Final = (TIMER_AGENT_JOIN, TIMER_ENDED_GRACE, TIMER_MAX_DURATION)

ClientEventOut: TypeAlias = (
    UserMessage | UserActivity | UserInterrupt | UserHangup | ClientToolResult
)
"""Any client event the reducer may ask the session to publish."""


@dataclass(frozen=True, slots=True)
class SendClientEvent:
    """Publish this event on the ``client-event`` topic (reliable)."""

    event: ClientEventOut


@dataclass(frozen=True, slots=True)
class RunClientTool:
    """Run this client tool call (``fishtalk.engine.tools.ToolRunner.run``), then feed back a
    :class:`ClientToolFinished`."""

    call: ClientToolCall


@dataclass(frozen=True, slots=True)
class ScheduleTimer:
    """Start (or restart) the named timer; feed :class:`TimerFired` at ``deadline``."""

    name: str
    deadline: float


@dataclass(frozen=True, slots=True)
class CancelTimer:
    """Cancel the named timer if it is pending (a late fire is ignored anyway)."""

    name: str


@dataclass(frozen=True, slots=True)
class SetMicrophoneMuted:
    """Mute or unmute the published microphone track."""

    muted: bool


@dataclass(frozen=True, slots=True)
class Teardown:
    """The session has ended: cancel client tools, disconnect, release audio. Emitted once."""

    reason: str


Effect: TypeAlias = (
    SendClientEvent | RunClientTool | ScheduleTimer | CancelTimer | SetMicrophoneMuted | Teardown
)
"""Everything the reducer may ask the session to do."""
