"""Frames in, typed messages out; typed messages in, frames out (sans-IO).

:func:`parse_server_frame` (the client's side) and :func:`parse_client_frame` (the sim's)
turn one text frame into one message. Unknown ``t`` and SSE ``type`` values decode to
catch-all messages and unknown fields land in ``extra_fields``: both are reported, never
errors. A frame over the size limit, malformed JSON, something other than an object, or a
known message of the wrong shape raises :class:`~fishtalk.core.errors.OpenLiveProtocolError`,
and nothing else, ever.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

from pydantic import BaseModel

from fishtalk.core.errors import OpenLiveProtocolError
from fishtalk.core.jsonwire import (
    JsonWireError,
    NotAnObjectError,
    load_object,
    to_json_bytes,
    validate_model,
)
from fishtalk.core.openlive.client import (
    CLIENT_MESSAGE_TYPES,
    TAG_FRAME_IN,
    ClientMessage,
    UnknownClientMessage,
)
from fishtalk.core.openlive.model import OpenLiveModel, Unmodelled
from fishtalk.core.openlive.server import (
    SERVER_MESSAGE_TYPES,
    SSE_EVENT_TYPES,
    TOLERATED_SERVER_TAGS,
    Done,
    ReasoningDelta,
    ServerMessage,
    SseError,
    SseEvent,
    SseMessage,
    Status,
    TextDelta,
    Todos,
    ToleratedServerMessage,
    ToolDone,
    ToolStart,
    UnknownServerMessage,
    UnknownSseEvent,
    Usage,
)

MAX_TEXT_FRAME_BYTES: Final = 1 << 20
"""The largest text frame parsed (1 MiB, in UTF-8): a reply arrives as many small deltas,
so anything near this is a broken or hostile peer, refused before JSON sees it."""
MAX_IMAGE_BYTES: Final = 8 << 20
"""The largest JPEG accepted in a binary frame (8 MiB)."""


def _bad(detail: str, kind: str) -> OpenLiveProtocolError:
    return OpenLiveProtocolError(f"bad OpenLive frame: {detail}", kind=kind)


def _check_size(payload: str | bytes, limit: int) -> None:
    if isinstance(payload, str):
        # A character is 1 to 4 bytes: encode only when the count alone cannot decide.
        over = len(payload) > limit or (
            len(payload) * 4 > limit and len(payload.encode("utf-8", "surrogatepass")) > limit
        )
    else:
        over = len(payload) > limit
    if over:
        raise _bad(f"a text frame over the {limit}-byte limit", "too_large")


def _load(payload: str | bytes, limit: int) -> tuple[str, dict[str, Any]]:
    """The ``t`` tag and the object of one text frame."""
    _check_size(payload, limit)
    try:
        obj = load_object(payload)
    except NotAnObjectError as exc:
        raise _bad(str(exc), "not_object") from None
    except JsonWireError as exc:
        raise _bad(str(exc), "not_json") from None
    tag = obj.get("t")
    if not isinstance(tag, str):
        raise _bad("missing or non-string 't'", "no_tag")
    return tag, obj


_M = TypeVar("_M", bound=OpenLiveModel)


def _validate(model: type[_M], what: str, obj: dict[str, Any]) -> _M:
    try:
        return validate_model(model, obj)
    except JsonWireError as exc:
        raise _bad(f"invalid {what}: {exc}", "bad_shape") from None


def _parse_sse(event: object) -> SseEvent:
    if not isinstance(event, dict):
        raise _bad("an 'sse' message without an 'event' object", "bad_shape")
    kind = event.get("type")
    if not isinstance(kind, str):
        raise _bad("an SSE event without a string 'type'", "bad_shape")
    model = SSE_EVENT_TYPES.get(kind)
    if model is None:
        return UnknownSseEvent(tag=kind, raw=event)
    return _validate(model, f"{kind!r} event", event)


def parse_server_frame(
    payload: str | bytes, *, max_bytes: int = MAX_TEXT_FRAME_BYTES
) -> ServerMessage:
    """One server text frame as a message (the client's side).

    A ``t`` the repository defines but fishtalk does not model gives a
    :class:`ToleratedServerMessage`; any other unknown ``t`` an
    :class:`UnknownServerMessage`. Raises :class:`OpenLiveProtocolError` otherwise.
    """
    tag, obj = _load(payload, max_bytes)
    if tag == "sse":
        event = _parse_sse(obj.get("event"))
        return _validate(SseMessage, "'sse' message", {**obj, "event": event})
    model = SERVER_MESSAGE_TYPES.get(tag)
    if model is not None:
        return _validate(model, f"{tag!r} message", obj)
    if tag in TOLERATED_SERVER_TAGS:
        return ToleratedServerMessage(tag=tag, raw=obj)
    return UnknownServerMessage(tag=tag, raw=obj)


def parse_client_frame(
    payload: str | bytes, *, max_bytes: int = MAX_TEXT_FRAME_BYTES
) -> ClientMessage:
    """One client text frame as a message (the server's side: the sim). An unknown ``t``
    gives an :class:`UnknownClientMessage`; raises :class:`OpenLiveProtocolError` otherwise."""
    tag, obj = _load(payload, max_bytes)
    model = CLIENT_MESSAGE_TYPES.get(tag)
    if model is None:
        return UnknownClientMessage(tag=tag, raw=obj)
    return _validate(model, f"{tag!r} message", obj)


def _wire(value: object) -> object:
    """A message as its JSON value: wire names; an optional field left at None is omitted,
    a required nullable one (``status``'s ``text``) is sent as null; extras kept."""
    if isinstance(value, Unmodelled):
        return value.raw
    if isinstance(value, BaseModel):
        out: dict[str, object] = {}
        for name, info in type(value).model_fields.items():
            item = getattr(value, name)
            if item is None and not info.is_required():
                continue
            out[info.alias or name] = _wire(item)
        out.update(value.model_extra or {})
        return out
    if isinstance(value, list | tuple):
        return [_wire(item) for item in value]
    return value


_SSE_EVENT_CLASSES: Final = (
    TextDelta,
    ReasoningDelta,
    ToolStart,
    ToolDone,
    Todos,
    Usage,
    Status,
    Done,
    SseError,
    UnknownSseEvent,
)


def encode_message(message: ClientMessage | ServerMessage | SseEvent) -> str:
    """One message as the text of a frame (compact JSON). An SSE event alone is wrapped in
    ``{"t": "sse"}``; a catch-all message is sent as its raw object. Raises
    :class:`OpenLiveProtocolError` for values JSON cannot carry (NaN, lone surrogates)."""
    if isinstance(message, _SSE_EVENT_CLASSES):
        message = SseMessage(event=message)
    try:
        return to_json_bytes(_wire(message)).decode("utf-8")
    except JsonWireError as exc:
        raise OpenLiveProtocolError(str(exc), kind="unencodable") from None


def encode_frame_in(jpeg: bytes) -> bytes:
    """A JPEG as the client's tagged binary frame."""
    return bytes((TAG_FRAME_IN,)) + jpeg


def parse_binary_frame(data: bytes, *, max_bytes: int = MAX_IMAGE_BYTES) -> bytes:
    """The JPEG in a client binary frame (the sim's side); :class:`OpenLiveProtocolError`
    for an empty frame, an unknown tag or an image over ``max_bytes``."""
    if not data:
        raise _bad("an empty binary frame", "bad_shape")
    if data[0] != TAG_FRAME_IN:
        raise _bad(f"a binary frame with unknown tag 0x{data[0]:02x}", "bad_shape")
    if len(data) - 1 > max_bytes:
        raise _bad(f"an image over the {max_bytes}-byte limit", "too_large")
    return data[1:]


__all__ = [
    "MAX_IMAGE_BYTES",
    "MAX_TEXT_FRAME_BYTES",
    "encode_frame_in",
    "encode_message",
    "parse_binary_frame",
    "parse_client_frame",
    "parse_server_frame",
]
