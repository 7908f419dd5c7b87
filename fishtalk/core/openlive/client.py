"""What an OpenLive client sends: typed turns, barge-in, and answers to the server's asks.

Text frames are ``{"t": ...}`` JSON objects; the one binary frame is a JPEG behind the
1-byte tag :data:`TAG_FRAME_IN` (sent right after a ``frame_response`` that did not fail).
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, TypeAlias

from pydantic import Field

from fishtalk.core.openlive.model import OpenLiveModel, Unmodelled

TAG_FRAME_IN: Final = 0x02
"""First byte of a client binary frame holding one JPEG (camera or screen)."""

FRAME_SOURCES: Final = ("camera", "screen")
CONTROL_ACTIONS: Final = ("camera_on", "camera_off", "screen_on", "screen_off", "end")


class FrameAttachment(OpenLiveModel):
    """One image sent inline with a turn (base64), labelled with where it came from."""

    data: str
    """The image, base64."""
    mime: str
    source: Literal["camera", "screen"]


class UserText(OpenLiveModel):
    """A completed user turn: typed, or the local STT's final transcript."""

    t: Literal["user_text"] = "user_text"
    text: str
    frames: Annotated[tuple[FrameAttachment, ...] | None, Field(strict=False)] = None


class Cancel(OpenLiveModel):
    """Barge-in: stop generating. ``spoken`` is exactly what local TTS voiced before the
    cut, so the server keeps only that of its reply."""

    t: Literal["cancel"] = "cancel"
    spoken: str | None = None


class FrameResponse(OpenLiveModel):
    """The answer to ``need_frame``; the JPEG follows as a binary frame unless ``failed``."""

    t: Literal["frame_response"] = "frame_response"
    req_id: str
    failed: bool | None = None


class PermissionResponse(OpenLiveModel):
    """The user's answer to a ``permission`` ask: the id of the chosen option."""

    t: Literal["permission_response"] = "permission_response"
    req_id: str
    option_id: str


class ToolBridgeResult(OpenLiveModel):
    """The result of a ``tool_bridge`` op: clipboard text, ``ok``, or an error line."""

    t: Literal["tool_bridge_result"] = "tool_bridge_result"
    req_id: str
    output: str


class SessionConfig(OpenLiveModel):
    """Session settings (on the spec page; the repository has since dropped it)."""

    t: Literal["session_config"] = "session_config"
    study_goal: str | None = None
    interrupt_level: str | None = None


class Observe(OpenLiveModel):
    """Visual context without speech (on the spec page; the repository has dropped it)."""

    t: Literal["observe"] = "observe"
    frames: Annotated[tuple[FrameAttachment, ...] | None, Field(strict=False)] = None


class Control(OpenLiveModel):
    """A session control (repository-only); fishtalk sends ``end`` when the user hangs up."""

    t: Literal["control"] = "control"
    action: Literal["camera_on", "camera_off", "screen_on", "screen_off", "end"]


class UnknownClientMessage(Unmodelled):
    """A client message this version does not model (the sim's side: ignored, reported)."""


KnownClientMessage: TypeAlias = (
    UserText
    | Cancel
    | FrameResponse
    | PermissionResponse
    | ToolBridgeResult
    | SessionConfig
    | Observe
    | Control
)
ClientMessage: TypeAlias = KnownClientMessage | UnknownClientMessage

CLIENT_MESSAGE_TYPES: Final[dict[str, type[KnownClientMessage]]] = {
    "user_text": UserText,
    "cancel": Cancel,
    "frame_response": FrameResponse,
    "permission_response": PermissionResponse,
    "tool_bridge_result": ToolBridgeResult,
    "session_config": SessionConfig,
    "observe": Observe,
    "control": Control,
}

__all__ = [
    "CLIENT_MESSAGE_TYPES",
    "CONTROL_ACTIONS",
    "FRAME_SOURCES",
    "TAG_FRAME_IN",
    "Cancel",
    "ClientMessage",
    "Control",
    "FrameAttachment",
    "FrameResponse",
    "KnownClientMessage",
    "Observe",
    "PermissionResponse",
    "SessionConfig",
    "ToolBridgeResult",
    "UnknownClientMessage",
    "UserText",
]
