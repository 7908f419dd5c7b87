"""Mapping the session API's error answers to :class:`~fishtalk.core.errors.SessionApiError`s.

One status (and the server's detail and reason) becomes one error class with a one-line
message for the user; server text is cleaned to one printable line and the API key is
redacted from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import httpx
from pydantic import (
    SecretStr,
)

from fishtalk.core.errors import (
    AgentNotPublicError,
    AgentUnavailableError,
    AuthenticationError,
    BadGatewayError,
    BadRequestError,
    ConflictError,
    FieldError,
    ForbiddenError,
    NotFoundError,
    OriginForbiddenError,
    PaymentRequiredError,
    RateLimitedError,
    RequestValidationError,
    ServerError,
    ServiceUnavailableError,
    UnexpectedResponseError,
    UnsupportedMediaTypeError,
    UnsupportedTransportError,
)
from fishtalk.core.text import strip


@dataclass(frozen=True)
class Reply:
    """An HTTP answer as the error mapping reads it (body cut at MAX_BODY_BYTES)."""

    status: int
    body: bytes
    headers: httpx.Headers
    attempts: int


@dataclass(frozen=True)
class Caller:
    """Who asked, as the messages need it: the API URL, the origin, the key to redact."""

    base_url: str
    api_key: SecretStr | None
    origin: str | None

    @property
    def public(self) -> bool:
        """True in public (keyless) mode."""
        return self.api_key is None

    def redact(self, text: str) -> str:
        """``text`` with the API key replaced by ``<redacted>``."""
        if self.api_key is not None:
            key = self.api_key.get_secret_value()
            text = text.replace(key, "<redacted>")
        return text


def raise_for(caller: Caller, reply: Reply, *, subject: tuple[str, str]) -> NoReturn:
    """Raise the error for a non-2xx ``reply`` to a request about ``subject`` (kind, id)."""
    status, headers = reply.status, reply.headers
    kind, ident = subject
    what = f"{kind} {clean(ident, limit=80)}"
    data = json_or_none(reply.body)
    detail: str | None = None
    reason: str | None = None
    field_errors: tuple[FieldError, ...] = ()
    if isinstance(data, Mapping):
        detail = _first_str(data, "message", "detail", "error")
        reason = _first_str(data, "reason", "code")
        if isinstance(data.get("detail"), list):
            field_errors = _field_errors(data["detail"], caller.redact)
    elif isinstance(data, list):
        field_errors = _field_errors(data, caller.redact)
    if detail is not None:
        detail = caller.redact(clean(detail))
    if reason is not None:
        reason = caller.redact(clean(reason, limit=60))
    said = f": {detail}" if detail else ""
    tries = f" after {reply.attempts} attempts" if reply.attempts > 1 else ""
    kw: dict[str, Any] = {"status": status, "reason": reason, "detail": detail}
    text = f"{detail or ''} {reason or ''}".lower()

    if status == 400:
        hint = (
            " (keyless sessions may only override language and voice_id, and cannot set a name)"
            if caller.public
            else ""
        )
        raise BadRequestError(f"the session request was rejected{said}{hint}", **kw)
    if status == 401:
        if caller.public:
            raise AuthenticationError(
                f"the Fish Audio API requires an API key for this request{said}", **kw
            )
        if "expired" in text:
            raise AuthenticationError(
                "the API key has expired; create a new one and update FISH_API_KEY", **kw
            )
        if data is None:  # bare 401 + WWW-Authenticate: the header itself was refused
            raise AuthenticationError(
                "the API key was not accepted: the Authorization header is missing or "
                "malformed; check FISH_API_KEY",
                **kw,
            )
        raise AuthenticationError("the API key is invalid; check FISH_API_KEY", **kw)
    if status == 402:
        raise PaymentRequiredError(
            "out of API credit: top up the Fish Audio account to create sessions", **kw
        )
    if status == 403:
        _raise_forbidden(caller, text, said, what, kw)
    if status == 404:
        raise NotFoundError(f"{what} not found (or it belongs to another team)", **kw)
    if status == 409:
        if reason == "unsupported_transport":
            where = f"the session API's answer at {caller.base_url} for {what}"
            raise UnsupportedTransportError("", where=where, detail=detail or "HTTP 409")
        if "publish" in text:
            raise ConflictError(f"{what} has no published version; publish it first", **kw)
        raise ConflictError(f"conflict for {what}{said or ' (HTTP 409)'}", **kw)
    if status == 415:
        raise UnsupportedMediaTypeError(
            "the session API refused the request's content type (HTTP 415); this is a fishtalk bug",
            **kw,
        )
    if status == 422:
        listed = "; ".join(str(e) for e in field_errors[:5])
        if len(field_errors) > 5:
            listed += f" (and {len(field_errors) - 5} more)"
        raise RequestValidationError(
            f"the session request has invalid fields: {listed or detail or 'HTTP 422'}",
            field_errors=field_errors,
            **kw,
        )
    if status == 429:
        retry_after = _retry_after(headers)
        when = f"in {retry_after:g} s" if retry_after is not None else "in a minute"
        raise RateLimitedError(
            "too many sessions created for this public agent or from this address; "
            f"try again {when}",
            retry_after=retry_after,
            **kw,
        )
    if status == 502:
        raise BadGatewayError(
            f"the Fish Audio agent gateway is unreachable (HTTP 502{tries}){said}; "
            "try again shortly",
            **kw,
        )
    if status == 503:
        raise ServiceUnavailableError(
            f"the Fish Audio API is temporarily unavailable (HTTP 503{tries}); try again shortly",
            **kw,
        )
    if 500 <= status < 600:
        raise ServerError(f"the Fish Audio API failed (HTTP {status}){said}", **kw)
    raise UnexpectedResponseError(
        f"unexpected answer from the session API at {caller.base_url}: HTTP {status}{said}",
        **kw,
    )


def _raise_forbidden(
    caller: Caller, text: str, said: str, what: str, kw: dict[str, Any]
) -> NoReturn:
    if "origin" in text:
        if caller.origin is None or "required" in text:
            raise OriginForbiddenError(
                "this public agent needs an Origin: set one of the agent's allowed "
                "origins (api.origin / --origin)",
                **kw,
            )
        raise OriginForbiddenError(
            f"origin {caller.origin} is not allowed for this agent; use one of its allowed "
            "origins (exact scheme, host and port)",
            **kw,
        )
    if "not public" in text:
        raise AgentNotPublicError(
            f"{what} is not public: use an API key (FISH_API_KEY), or turn on its public access",
            **kw,
        )
    if "not enabled" in text or "beta" in text:
        raise AgentUnavailableError(
            "the agent platform is not enabled for this account (private beta); "
            "contact Fish Audio support",
            **kw,
        )
    if "unavailable" in text:
        raise AgentUnavailableError(f"{what} is unavailable right now", **kw)
    raise ForbiddenError(f"not allowed{said or ' (HTTP 403)'}", **kw)


def clean(text: str, *, limit: int = 200) -> str:
    """One printable line, bounded: server text goes straight to a terminal."""
    text = " ".join(strip(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_or_none(body: bytes) -> Any:
    """The JSON in ``body``, or None when it is not JSON."""
    try:
        return json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):
        return None


def _first_str(data: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _field_errors(items: list[Any], redact: Callable[[str], str]) -> tuple[FieldError, ...]:
    out: list[FieldError] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        loc = item.get("loc")
        parts = [str(p) for p in loc] if isinstance(loc, list) else []
        if parts and parts[0] == "body":
            parts = parts[1:]
        msg = item.get("msg")
        kind = item.get("type")
        out.append(
            FieldError(
                location=redact(clean(".".join(parts), limit=80)),
                message=redact(clean(msg if isinstance(msg, str) else "invalid")),
                kind=clean(kind, limit=60) if isinstance(kind, str) else None,
            )
        )
    return tuple(out)


def _retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if 0 <= seconds <= 86400 else None
