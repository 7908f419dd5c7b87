"""What an OpenLive server sends: the SSE events it wraps, and its own messages.

Every server text frame is ``{"t": ...}``; ``{"t": "sse", "event": {"type": ...}}`` wraps
one chat SSE event. Enum-like fields (a ``tool_bridge`` op, a permission option's
``kind``) are open sets: the known values are listed, any string is kept, so a newer
server's value reaches the engine, which answers what it does not offer with an error.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeAlias

from pydantic import Field

from fishtalk.core.openlive.model import OpenLiveModel, Unmodelled

# --- SSE events (inside {"t": "sse"}) -------------------------------------------------


class TextDelta(OpenLiveModel):
    """The next piece of the reply's text."""

    type: Literal["text_delta"] = "text_delta"
    text: str


class ReasoningDelta(OpenLiveModel):
    """The next piece of the model's visible reasoning ("thinking")."""

    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str


class ToolStart(OpenLiveModel):
    """A server-side tool began; ``id`` pairs it with its :class:`ToolDone`."""

    type: Literal["tool_start"] = "tool_start"
    id: str
    tool: str
    """The tool's name."""
    summary: str | None = None
    """One line on what it is doing, when the server gives one."""


class ToolDone(OpenLiveModel):
    """The tool with this ``id`` finished."""

    type: Literal["tool_done"] = "tool_done"
    id: str
    detail: str | None = None
    """What came of it, when the server says."""


class TodoItem(OpenLiveModel):
    """One line of the agent's checklist."""

    text: str
    done: bool


class Todos(OpenLiveModel):
    """The agent's whole working checklist (each event replaces the last)."""

    type: Literal["todos"] = "todos"
    items: Annotated[tuple[TodoItem, ...], Field(strict=False)]


class Usage(OpenLiveModel):
    """Token counts and cost so far."""

    type: Literal["usage"] = "usage"
    context_tokens: int | float
    output_tokens: int | float
    cost_usd: float


class Status(OpenLiveModel):
    """A status line; ``"ready"`` once the server can take a turn, None to clear it."""

    type: Literal["status"] = "status"
    text: str | None


class Done(OpenLiveModel):
    """The turn's reply is complete."""

    type: Literal["done"] = "done"


class SseError(OpenLiveModel):
    """The turn failed; ``message`` is the server's words."""

    type: Literal["error"] = "error"
    message: str


class UnknownSseEvent(Unmodelled):
    """An SSE event of a ``type`` this version does not know (tolerated, reported)."""


KnownSseEvent: TypeAlias = (
    TextDelta | ReasoningDelta | ToolStart | ToolDone | Todos | Usage | Status | Done | SseError
)
SseEvent: TypeAlias = KnownSseEvent | UnknownSseEvent

SSE_EVENT_TYPES: Final[dict[str, type[KnownSseEvent]]] = {
    "text_delta": TextDelta,
    "reasoning_delta": ReasoningDelta,
    "tool_start": ToolStart,
    "tool_done": ToolDone,
    "todos": Todos,
    "usage": Usage,
    "status": Status,
    "done": Done,
    "error": SseError,
}

# --- server messages --------------------------------------------------------------------

TOOL_BRIDGE_OPS: Final = (
    "clipboard_read",
    "clipboard_write",
    "open_url",
    "flow_insert",
    "flow_insert_end",
    "flow_context",
    "flow_device",
)
"""The ops the repository's server may ask for (the ``flow_*`` ones only in Flow turns)."""
PERMISSION_KINDS: Final = ("allow_once", "allow_always", "reject_once", "reject_always")


class SseMessage(OpenLiveModel):
    """One chat SSE event, wrapped (``{"t": "sse", "event": {...}}``)."""

    t: Literal["sse"] = "sse"
    event: SseEvent


class NeedFrame(OpenLiveModel):
    """The server wants one fresh hi-res frame: answer with a ``frame_response``, then
    the JPEG as a tagged binary frame (or ``failed: true`` and no JPEG)."""

    t: Literal["need_frame"] = "need_frame"
    req_id: str


class ToolBridge(OpenLiveModel):
    """Run an OS action on the user's machine; answer with a ``tool_bridge_result``."""

    t: Literal["tool_bridge"] = "tool_bridge"
    req_id: str
    op: str
    """One of :data:`TOOL_BRIDGE_OPS`, or a newer op (kept, answered with an error)."""
    arg: str | None = None


class PermissionOption(OpenLiveModel):
    """One answer a permission request offers."""

    id: str
    label: str
    kind: str | None = None
    """One of :data:`PERMISSION_KINDS` when given (an open set)."""


class Permission(OpenLiveModel):
    """A bound coding agent asks to do something; answer with a ``permission_response``."""

    t: Literal["permission"] = "permission"
    req_id: str
    question: str
    options: Annotated[tuple[PermissionOption, ...], Field(strict=False)]
    expires_at: float | None = None
    """When the server denies an unanswered ask itself (epoch milliseconds)."""
    tool_call_id: str | None = None


class PermissionResolved(OpenLiveModel):
    """The permission ask ``req_id`` no longer awaits an answer: dismiss it."""

    t: Literal["permission_resolved"] = "permission_resolved"
    req_id: str


class ErrorMessage(OpenLiveModel):
    """The server reports a failure outside any turn's SSE stream."""

    t: Literal["error"] = "error"
    message: str


class ToleratedServerMessage(Unmodelled):
    """A message the repository's schema defines that fishtalk does not model (see
    :data:`TOLERATED_SERVER_TAGS`): received, reported, never an error."""


class UnknownServerMessage(Unmodelled):
    """A message of a ``t`` neither the page nor the repository defines (reported)."""


TOLERATED_SERVER_TAGS: Final = frozenset(
    {
        "agent_meta",
        "elicitation",
        "elicitation_resolved",
        "reload_history",
        "bound_state",
        "modal_voice_answer",
        "flow",
    }
)
"""The repository's server messages fishtalk receives without modelling them; why each
is tolerated rather than supported is in :mod:`fishtalk.core.openlive`."""

KnownServerMessage: TypeAlias = (
    SseMessage | NeedFrame | ToolBridge | Permission | PermissionResolved | ErrorMessage
)
ServerMessage: TypeAlias = KnownServerMessage | ToleratedServerMessage | UnknownServerMessage

SERVER_MESSAGE_TYPES: Final[dict[str, type[KnownServerMessage]]] = {
    "sse": SseMessage,
    "need_frame": NeedFrame,
    "tool_bridge": ToolBridge,
    "permission": Permission,
    "permission_resolved": PermissionResolved,
    "error": ErrorMessage,
}

__all__ = [
    "PERMISSION_KINDS",
    "SERVER_MESSAGE_TYPES",
    "SSE_EVENT_TYPES",
    "TOLERATED_SERVER_TAGS",
    "TOOL_BRIDGE_OPS",
    "Done",
    "ErrorMessage",
    "KnownServerMessage",
    "KnownSseEvent",
    "NeedFrame",
    "Permission",
    "PermissionOption",
    "PermissionResolved",
    "ReasoningDelta",
    "ServerMessage",
    "SseError",
    "SseEvent",
    "SseMessage",
    "Status",
    "TextDelta",
    "TodoItem",
    "Todos",
    "ToleratedServerMessage",
    "ToolBridge",
    "ToolDone",
    "ToolStart",
    "UnknownServerMessage",
    "UnknownSseEvent",
    "Usage",
]
