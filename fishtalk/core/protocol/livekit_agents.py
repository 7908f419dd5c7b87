"""Which protocol a LiveKit agent speaks, and what a client event becomes for a
livekit-agents agent (sans-IO).

A Fish agent reads ``client-event`` data packets (:mod:`fishtalk.core.protocol`). An agent
built with livekit-agents reads typed turns from ``lk.chat`` text streams (its RoomIO) and
offers nothing else: no interrupt, no hang-up message (leaving the room ends its session),
no client tools, no activity. Both publish ``lk.transcription`` and ``lk.agent.state``
alike, so only the typed way in differs.

Detection (``--protocol`` unset): livekit-server dispatches a livekit-agents job into a
room as an agent participant whose identity is ``agent-`` plus the job id (``AJ_...``);
that identity means ``livekit-agents``, any other agent ``fish``. An agent that names
itself otherwise can be told apart only with ``--protocol``.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from fishtalk.core.protocol import ClientEvent, UserMessage

AgentProtocol: TypeAlias = Literal["fish", "livekit-agents"]
"""The two protocols a typed turn can go out in."""
PROTOCOLS: Final[tuple[AgentProtocol, ...]] = ("fish", "livekit-agents")

TOPIC_CHAT: Final = "lk.chat"
"""Text-stream topic a livekit-agents agent reads typed turns from."""
JOB_IDENTITY_PREFIX: Final = "agent-AJ_"
"""How livekit-server names the participant of a dispatched livekit-agents job."""


def detect_protocol(identity: str) -> AgentProtocol:
    """The protocol the agent participant ``identity`` speaks (see the module docs)."""
    return "livekit-agents" if identity.startswith(JOB_IDENTITY_PREFIX) else "fish"


def chat_text(event: ClientEvent) -> str | None:
    """What ``event`` sends on ``lk.chat`` to a livekit-agents agent: a typed turn's text;
    None for every other event (that agent has no way to receive it)."""
    return event.text if isinstance(event, UserMessage) else None


CANNOT: Final[dict[str, str]] = {
    "interrupt": "this livekit-agents agent offers no interrupt: your playback stopped, "
    "the agent's reply goes on",
}
"""What a command that the livekit-agents protocol cannot carry says instead."""


__all__ = [
    "CANNOT",
    "JOB_IDENTITY_PREFIX",
    "PROTOCOLS",
    "TOPIC_CHAT",
    "AgentProtocol",
    "chat_text",
    "detect_protocol",
]
