"""The Fish agent wire protocol (v0.1.0), modelled once, sans-IO.

Bytes in, typed events out; typed events in, bytes out. Nothing here imports asyncio,
livekit or textual, so every other module (the session, the sim, the reducer, the tests)
shares these shapes instead of copying strings.

Wire fields are camelCase; Python attributes are snake_case. Unknown fields are tolerated
and kept in ``model_extra`` (for a debug view); unknown ``type`` values decode to
:class:`UnknownAgentEvent`. Anything else that is not a valid message raises
:class:`ProtocolError`, and nothing else, ever.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from fishtalk.core.jsonwire import (
    JsonWireError,
    WireModel,
    dump_model,
    load_object,
    to_json_bytes,
    validate_model,
)

PROTOCOL_VERSION: Final = "0.1.0"

# --- channels -------------------------------------------------------------------------
TOPIC_AGENT_EVENT: Final = "agent-event"
"""Data-packet topic, agent -> client: control events."""
TOPIC_CLIENT_EVENT: Final = "client-event"
"""Data-packet topic, client -> agent: text turns, activity, interrupts, hangup, results."""
TOPIC_TRANSCRIPTION: Final = "lk.transcription"
"""Text-stream topic carrying both sides' transcripts."""
ATTR_AGENT_STATE: Final = "lk.agent.state"
"""Sticky participant attribute on the agent participant holding its pipeline state."""
ATTR_SEGMENT_ID: Final = "lk.segment_id"
"""Text-stream attribute identifying a transcript segment."""
ATTR_TRANSCRIPTION_FINAL: Final = "lk.transcription_final"
"""Text-stream attribute; the string ``"true"`` marks a segment as final."""
ATTR_TRANSCRIBED_TRACK_ID: Final = "lk.transcribed_track_id"
"""Text-stream attribute LiveKit agents set to the audio track a transcript belongs to."""

# --- open sets: known values, but any string is kept ------------------------------------
AGENT_STATES: Final = ("initializing", "idle", "listening", "thinking", "speaking")
TOOL_SOURCES: Final = ("client", "webhook", "mcp", "builtin", "background", "unknown")
AGENT_ERROR_CODES: Final = ("provider_error", "internal_error")
SESSION_ENDED_REASONS: Final = ("user_hangup", "agent_hangup", "conversation_timeout", "escalated")

TOOL_NAME_PATTERN: Final = r"^[a-zA-Z][a-zA-Z0-9_-]{0,63}$"
"""Client-tool names must match this (built-in agent tools start with ``_``)."""

MAX_PAYLOAD_PREVIEW: Final = 4096
"""Tool ``input``/``output`` strings are truncated at the source at this many bytes."""


class ProtocolError(ValueError):
    """A payload that is not a valid protocol message (bad JSON, not an object, bad fields)."""


class _Message(WireModel):
    """Base for every Fish wire message: strict types, camelCase aliases, extras kept."""


# --- agent events (agent -> client, topic agent-event) --------------------------------


class ClientToolCall(_Message):
    """The agent asks the client to run one of its registered client tools."""

    type: Literal["client_tool.call"] = "client_tool.call"
    call_id: str
    tool_name: str
    params: dict[str, JsonValue] = Field(default_factory=dict)
    expects_response: bool = False
    """When false the call is fire-and-forget and any result is ignored."""


class _ToolEvent(_Message):
    call_id: str
    tool_name: str
    tool_source: str = "unknown"
    """Open set; see :data:`TOOL_SOURCES`."""
    input: str | None = None
    """JSON-serialised arguments, truncated at the source at 4 KB."""
    input_truncated: bool | None = None
    node_id: str | None = None
    """Undocumented; displayed when present, never required."""


class ToolStarted(_ToolEvent):
    """A tool (any source) started running on the agent side."""

    type: Literal["tool.started"] = "tool.started"


class ToolCompleted(_ToolEvent):
    """Terminal: the tool finished; repeats name and source so it renders alone."""

    type: Literal["tool.completed"] = "tool.completed"
    output: str | None = None
    output_truncated: bool | None = None


class ToolFailed(_ToolEvent):
    """Terminal: the tool failed."""

    type: Literal["tool.failed"] = "tool.failed"
    error: str | None = None
    output: str | None = None
    output_truncated: bool | None = None


class AgentError(_Message):
    """A coarse error category from the agent runtime (no raw detail by design)."""

    type: Literal["error"] = "error"
    code: str
    """Open set; see :data:`AGENT_ERROR_CODES`."""
    message: str | None = None


class SessionEnded(_Message):
    """Sent just before the agent tears the session down."""

    type: Literal["session.ended"] = "session.ended"
    reason: str
    """Open set; see :data:`SESSION_ENDED_REASONS`."""


KnownAgentEvent: TypeAlias = Annotated[
    ClientToolCall | ToolStarted | ToolCompleted | ToolFailed | AgentError | SessionEnded,
    Field(discriminator="type"),
]
ToolEvent: TypeAlias = ToolStarted | ToolCompleted | ToolFailed


class UnknownAgentEvent(BaseModel):
    """An agent event whose ``type`` this version does not know; ignored, but kept."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    type: str
    raw: dict[str, Any]


AgentEvent: TypeAlias = (
    ClientToolCall
    | ToolStarted
    | ToolCompleted
    | ToolFailed
    | AgentError
    | SessionEnded
    | UnknownAgentEvent
)

_AGENT_EVENT_TYPES: Final[dict[str, type[_Message]]] = {
    "client_tool.call": ClientToolCall,
    "tool.started": ToolStarted,
    "tool.completed": ToolCompleted,
    "tool.failed": ToolFailed,
    "error": AgentError,
    "session.ended": SessionEnded,
}

# --- client events (client -> agent, topic client-event) ------------------------------


class UserMessage(_Message):
    """A typed user turn. ``audio=False`` asks for a text-only reply (no speech)."""

    type: Literal["user.message"] = "user.message"
    text: str
    audio: bool | None = None


class UserActivity(_Message):
    """The user is active (typing); postpones the agent's idle re-engagement."""

    type: Literal["user.activity"] = "user.activity"


class UserInterrupt(_Message):
    """Interrupt the agent's current speech."""

    type: Literal["user.interrupt"] = "user.interrupt"


class UserHangup(_Message):
    """End the session gracefully."""

    type: Literal["user.hangup"] = "user.hangup"


class ClientToolResult(_Message):
    """Settles a pending ``client_tool.call``. ``result`` may be any JSON value."""

    type: Literal["client_tool.result"] = "client_tool.result"
    call_id: str
    result: JsonValue = None
    is_error: bool | None = None


ClientEvent: TypeAlias = Annotated[
    UserMessage | UserActivity | UserInterrupt | UserHangup | ClientToolResult,
    Field(discriminator="type"),
]
_CLIENT_EVENT_TYPES: Final[dict[str, type[_Message]]] = {
    "user.message": UserMessage,
    "user.activity": UserActivity,
    "user.interrupt": UserInterrupt,
    "user.hangup": UserHangup,
    "client_tool.result": ClientToolResult,
}


# --- codec ----------------------------------------------------------------------------


def _load_object(payload: bytes | str) -> dict[str, Any]:
    try:
        return load_object(payload)
    except JsonWireError as exc:
        raise ProtocolError(str(exc)) from None


def _split(payload: bytes | str) -> tuple[str, dict[str, Any]]:
    """The ``type`` and the object of one JSON message."""
    obj = _load_object(payload)
    kind = obj.get("type")
    if not isinstance(kind, str):
        raise ProtocolError("missing or non-string 'type'")
    return kind, obj


def _validate(model: type[_Message], kind: str, obj: dict[str, Any]) -> _Message:
    try:
        return validate_model(model, obj)
    except JsonWireError as exc:
        raise ProtocolError(f"invalid {kind!r} event: {exc}") from None


def decode_agent_event(payload: bytes | str) -> AgentEvent:
    """Decode one ``agent-event`` data packet.

    Unknown ``type`` -> :class:`UnknownAgentEvent`; anything invalid -> :class:`ProtocolError`.
    """
    kind, obj = _split(payload)
    model = _AGENT_EVENT_TYPES.get(kind)
    if model is None:
        return UnknownAgentEvent(type=kind, raw=obj)
    return _validate(model, kind, obj)  # type: ignore[return-value]  # an AgentEvent arm


def decode_client_event(payload: bytes | str) -> ClientEvent | None:
    """Decode one ``client-event`` packet (the agent's side; used by the sim).

    Returns None for an unknown ``type`` (the agent ignores those); raises
    :class:`ProtocolError` for anything malformed.
    """
    kind, obj = _split(payload)
    model = _CLIENT_EVENT_TYPES.get(kind)
    if model is None:
        return None
    return _validate(model, kind, obj)  # type: ignore[return-value]  # a ClientEvent arm


def _to_bytes(data: object) -> bytes:
    try:
        return to_json_bytes(data)
    except JsonWireError as exc:
        raise ProtocolError(str(exc)) from None


def _dump(event: BaseModel) -> bytes:
    try:
        return dump_model(event)
    except JsonWireError as exc:
        raise ProtocolError(str(exc)) from None


_USER_MESSAGE_HEAD: Final = '{"type":"user.message","text":'
_USER_MESSAGE_TAIL: Final = {None: "}", True: ',"audio":true}', False: ',"audio":false}'}


def _encode_user_message(event: UserMessage) -> bytes:
    """A typed turn's bytes from a template: the same bytes :func:`_dump` gives (fields in
    declaration order, compact separators, ``audio`` left out when None) at a fraction of
    the cost, for a message with no fields beyond the declared ones."""
    try:
        text = json.dumps(event.text, ensure_ascii=False)
        return (_USER_MESSAGE_HEAD + text + _USER_MESSAGE_TAIL[event.audio]).encode("utf-8")
    except ValueError as exc:  # a lone surrogate (UnicodeEncodeError)
        raise ProtocolError(f"cannot encode as JSON: {str(exc)[:200]}") from None


def encode_client_event(event: ClientEvent) -> bytes:
    """Encode a client event as compact UTF-8 JSON; unset optionals are omitted.

    Raises :class:`ProtocolError` for values JSON cannot carry (NaN, infinities, lone
    surrogates), so a peer never receives something its parser rejects.
    """
    if (
        type(event) is UserMessage
        and not event.model_extra
        and type(event.text) is str
        and (event.audio is None or type(event.audio) is bool)
    ):
        return _encode_user_message(event)
    return _dump(event)


def encode_agent_event(event: AgentEvent) -> bytes:
    """Encode an agent event (the sim's side). Unknown events are sent as their raw object."""
    if isinstance(event, UnknownAgentEvent):
        return _to_bytes(event.raw)
    return _dump(event)


def is_final(attributes: dict[str, str]) -> bool:
    """Whether a transcription text stream's attributes mark its segment as final."""
    return attributes.get(ATTR_TRANSCRIPTION_FINAL) == "true"


__all__ = [
    "AGENT_ERROR_CODES",
    "AGENT_STATES",
    "ATTR_AGENT_STATE",
    "ATTR_SEGMENT_ID",
    "ATTR_TRANSCRIBED_TRACK_ID",
    "ATTR_TRANSCRIPTION_FINAL",
    "MAX_PAYLOAD_PREVIEW",
    "PROTOCOL_VERSION",
    "SESSION_ENDED_REASONS",
    "TOOL_NAME_PATTERN",
    "TOOL_SOURCES",
    "TOPIC_AGENT_EVENT",
    "TOPIC_CLIENT_EVENT",
    "TOPIC_TRANSCRIPTION",
    "AgentError",
    "AgentEvent",
    "ClientEvent",
    "ClientToolCall",
    "ClientToolResult",
    "KnownAgentEvent",
    "ProtocolError",
    "SessionEnded",
    "ToolCompleted",
    "ToolEvent",
    "ToolFailed",
    "ToolStarted",
    "UnknownAgentEvent",
    "UserActivity",
    "UserHangup",
    "UserInterrupt",
    "UserMessage",
    "decode_agent_event",
    "decode_client_event",
    "encode_agent_event",
    "encode_client_event",
    "is_final",
]
