"""JSON on the wire, shared by every sans-IO protocol module (Fish's and OpenLive's).

Strict in what it accepts (no NaN or infinities, no lone surrogates, one object per
message) and in what it sends (the same rules), so a peer's ``JSON.parse`` never chokes
on what we send and nothing we accept breaks a later re-encode or render. Failures are
:class:`JsonWireError` (a :class:`ValueError` with one short line); each protocol turns
it into its own error.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel


class JsonWireError(ValueError):
    """A payload that is not one JSON object, or a value JSON cannot carry; one line."""


class NotAnObjectError(JsonWireError):
    """Well-formed JSON, but not an object (a list, a string, a number...)."""


class WireModel(BaseModel):
    """Base for wire messages: strict types, camelCase wire names, frozen, extras kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        strict=True,
        extra="allow",
        frozen=True,
        defer_build=True,
    )

    @property
    def extra_fields(self) -> dict[str, Any]:
        """Fields on the wire this version does not know (kept for a debug view)."""
        return dict(self.model_extra or {})


_M = TypeVar("_M", bound=WireModel)


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN/Infinity, which are not JSON; a peer's JSON.parse would choke.
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 overflows to inf
        raise ValueError(f"number out of range: {text[:40]}")
    return value


def _check_unicode(obj: object) -> None:
    """Reject strings holding lone surrogates (legal as JSON escapes, not as Unicode).

    They would make every later re-encode or render fail; iterative so depth is no issue.
    """
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                item.encode("utf-8")  # raises UnicodeEncodeError (a ValueError)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def load_object(payload: bytes | str) -> dict[str, Any]:
    """The JSON object in ``payload``; :class:`JsonWireError` if it is not one."""
    try:
        text = payload.decode("utf-8") if isinstance(payload, bytes | bytearray) else payload
        obj = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        _check_unicode(obj)
    except (ValueError, RecursionError, TypeError) as exc:
        # ValueError covers JSONDecodeError, UnicodeDecodeError and huge-int limits.
        raise JsonWireError(f"malformed JSON: {str(exc)[:200]}") from None
    if not isinstance(obj, dict):
        raise NotAnObjectError(f"expected a JSON object, got {type(obj).__name__}")
    return obj


def describe_validation(exc: ValidationError) -> str:
    """A pydantic validation failure as one bounded line (``field: problem; ...``)."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "<message>"
        if len(loc) > 80:  # deep nesting would otherwise give a kilobyte-long location
            loc = loc[:77] + "..."
        parts.append(f"{loc}: {err['msg']}")
    text = "; ".join(parts)
    return text if len(text) <= 300 else text[:297] + "..."


def validate_model(model: type[_M], obj: dict[str, Any]) -> _M:
    """``obj`` (wire names) as a ``model``; :class:`JsonWireError` says what is wrong."""
    try:
        return model.model_validate(obj, by_alias=True, by_name=False)
    except (ValidationError, RecursionError) as exc:
        detail = (
            describe_validation(exc) if isinstance(exc, ValidationError) else "too deeply nested"
        )
        raise JsonWireError(detail) from None


def to_json_bytes(data: object) -> bytes:
    """Compact UTF-8 JSON; :class:`JsonWireError` for what JSON cannot carry."""
    try:
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return text.encode("utf-8")
    except (ValueError, RecursionError) as exc:
        # NaN/inf, lone surrogates, over-long ints or runaway nesting: not sendable as JSON.
        raise JsonWireError(f"cannot encode as JSON: {str(exc)[:200]}") from None


def dump_model(message: BaseModel) -> bytes:
    """A message model as JSON bytes: wire names, declared optionals left at None omitted,
    unknown fields kept exactly as received (exclude_none would also drop a null extra)."""
    unset = {name for name in type(message).model_fields if getattr(message, name) is None}
    try:
        # mode="python": the JSON mode silently rewrites lone surrogates in dict keys.
        data = message.model_dump(mode="python", by_alias=True, exclude=unset)
    except (ValueError, RecursionError) as exc:
        raise JsonWireError(f"cannot encode as JSON: {str(exc)[:200]}") from None
    return to_json_bytes(data)


__all__ = [
    "JsonWireError",
    "NotAnObjectError",
    "WireModel",
    "describe_validation",
    "dump_model",
    "load_object",
    "to_json_bytes",
]
