"""Client for the Fish Audio session API: create a session grant, end a session.

``POST {api}/v1/agent/sessions`` exchanges an agent id (and an API key, or for a public
agent an ``Origin``) for a :data:`SessionGrant`: where and how to join the realtime
session. ``POST {api}/v1/agent/sessions/{id}/end`` force-ends one. REST bodies are
snake_case. No livekit, no textual here.

Every failure is a :class:`fishtalk.core.errors.FishtalkError` with a one-line message for the
user (the API key never appears in any message, repr or log line). The tree, with
:class:`~fishtalk.core.errors.SessionApiError` over every status and transport failure, is
drawn once, in :mod:`fishtalk.core.errors`.

Retries: only 502, 503 and failures to connect (nothing reached the server) are retried,
with jittered exponential backoff, at most ``max_attempts`` (3) attempts in all. A timeout
after the request was sent is not retried: the session may already exist.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Annotated, Any, Final, Literal, NoReturn, Self, TypeAlias
from urllib.parse import quote, urlsplit

import httpx
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SecretStr,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from fishtalk._version import __version__
from fishtalk.core.errors import (
    AgentNotPublicError,
    AgentUnavailableError,
    ApiConnectionError,
    ApiError,
    ApiTimeoutError,
    ApiTransportError,
    AuthenticationError,
    BadGatewayError,
    BadRequestError,
    ClientConfigError,
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
    SessionApiError,
    SessionExpiredError,
    UnexpectedResponseError,
    UnsupportedMediaTypeError,
    UnsupportedTransportError,
)
from fishtalk.core.text import strip

DEFAULT_API_URL: Final = "https://api.fish.audio"
SESSIONS_PATH: Final = "/v1/agent/sessions"
SDK_HEADER: Final = "X-Fish-SDK"
"""Identifies the client on keyless (public-agent) requests, like the web SDK does."""
SDK_ID: Final = f"fishtalk/{__version__}"
MAX_BODY_BYTES: Final = 1 << 20
"""Larger response bodies are cut off: a grant or an error body is a few hundred bytes."""

_log = logging.getLogger(__name__)

# --- request ----------------------------------------------------------------------------


class SessionOverrides(BaseModel):
    """Per-session replacements for parts of the agent's published configuration.

    Each field must be allowed on the agent; keyless sessions may only set ``language``
    and ``voice_id``. ``first_message`` and ``first_message_prompt`` are exclusive.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    first_message: str | None = None
    """Opening line, spoken verbatim."""
    first_message_prompt: str | None = None
    """Instructions the opener is generated from."""
    system_prompt: str | None = None
    """Replaces the configured system prompt."""
    voice_id: str | None = None
    """Voice model id from the voice library."""
    language: str | None = None
    """Pins the conversation language (``en``, ``ja``, ``zh``, ``ko``, ``es``, ``fr``, ``de``)."""


DynamicValue: TypeAlias = str | int | float | bool


class SessionRequest(BaseModel):
    """Body of ``POST /v1/agent/sessions``; fields left as None are not sent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_id: str = Field(min_length=1)
    """The agent to talk to (it needs a published version)."""
    name: str | None = None
    """Console display name (API-key requests only; keyless requests get 400)."""
    tool_events: bool | None = None
    """Stream ``tool.*`` lifecycle events to the client (server default: true)."""
    language: str | None = None
    """Shorthand for ``overrides.language``."""
    timezone: str | None = None
    """IANA timezone for the agent's sense of local time (invalid -> 422)."""
    client_timezone: str | None = None
    """The end user's timezone, a hint used when nothing else sets one."""
    overrides: SessionOverrides | None = None
    dynamic_variables: dict[str, DynamicValue] | None = None
    """Values for ``{{placeholders}}`` (up to 50)."""
    end_user_id: str | None = None
    """Your identifier for the end user (up to 256 characters)."""
    metadata: dict[str, JsonValue] | None = None
    """Stored and returned verbatim; never interpreted by the platform."""
    record_audio: bool | None = None
    """Override the agent's recording setting for this session."""
    world_context: bool | None = None
    """Whether the agent knows the current date and time (server default: true)."""

    def to_body(self) -> dict[str, Any]:
        """The JSON body: snake_case, None fields (also inside ``overrides``) omitted."""
        return self.model_dump(mode="json", exclude_none=True)


# --- grant ------------------------------------------------------------------------------


class LiveKitGrant(BaseModel):
    """The ``livekit`` arm of a session grant: join ``livekit_url`` with ``token``."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    transport: Literal["livekit"] = "livekit"
    session_id: str = Field(min_length=1)
    expires_at: datetime
    """Join deadline (timezone-aware; a naive timestamp is read as UTC)."""
    max_duration_seconds: int
    """Hard cap on the session's length."""
    livekit_url: str = Field(min_length=1)
    token: SecretStr
    """Single-use participant token; a credential, hidden from repr."""

    @field_validator("expires_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)

    def is_expired(self, now: datetime | None = None) -> bool:
        """Whether the join deadline has passed (at ``now``, default: the current time)."""
        return self.expires_at <= (now or datetime.now(UTC))

    def ensure_fresh(self, now: datetime | None = None) -> None:
        """Raise :class:`SessionExpiredError` if the join deadline has passed."""
        if self.is_expired(now):
            raise SessionExpiredError(
                f"session {self.session_id} expired at {self.expires_at:%Y-%m-%d %H:%M:%S %Z} "
                "before it was joined; create a new session"
            )


SessionGrant: TypeAlias = Annotated[LiveKitGrant, Field(discriminator="transport")]
"""Discriminated union on ``transport``; new arms join here as they are supported."""
SUPPORTED_TRANSPORTS: Final = ("livekit",)
_GRANT_ADAPTER: Final[TypeAdapter[LiveKitGrant]] = TypeAdapter(SessionGrant)


def parse_grant(data: object, *, now: datetime | None = None) -> LiveKitGrant:
    """Validate a session-creation response body and check it is still joinable.

    Raises :class:`UnsupportedTransportError` for an unknown ``transport``,
    :class:`SessionExpiredError` when ``expires_at`` has passed (at ``now``), and
    :class:`UnexpectedResponseError` for anything else that is not a grant.
    """
    if not isinstance(data, Mapping):
        raise UnexpectedResponseError(
            "the session API returned something other than a session grant", status=201
        )
    transport = data.get("transport")
    if not isinstance(transport, str) or not transport:
        raise UnexpectedResponseError(
            "the session API returned a grant without a transport", status=201
        )
    if transport not in SUPPORTED_TRANSPORTS:
        raise UnsupportedTransportError(_clean(transport, limit=60))
    try:
        grant = _GRANT_ADAPTER.validate_python(data)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"][1:]) or "?" for e in exc.errors()})
        raise UnexpectedResponseError(
            f"the session API returned an incomplete grant (bad or missing: {', '.join(fields)})",
            status=201,
        ) from None
    grant.ensure_fresh(now)
    return grant


# --- client -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Reply:
    status: int
    body: bytes
    headers: httpx.Headers
    attempts: int


class SessionClient:
    """Async client for the session endpoints (an httpx ``AsyncClient`` underneath).

    With ``api_key`` it sends ``Authorization: Bearer <key>``. Without one it is in public
    mode: no Authorization, ``Origin: <origin>`` (when given; the server requires one of
    the agent's allowed origins) and ``X-Fish-SDK: fishtalk/<version>``; ``origin`` is not
    sent with an API key, which the server does not check against origins.
    ``timeout`` bounds each attempt end to end; ``backoff_base`` is the first retry delay
    in seconds (doubled per retry, jittered).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_API_URL,
        *,
        api_key: SecretStr | str | None = None,
        origin: str | None = None,
        timeout: float = 10.0,
        max_attempts: int = 3,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self._base_url = _check_base_url(base_url)
        self._api_key = _check_api_key(api_key)
        self._origin = _check_origin(origin) if origin is not None else None
        self._timeout = timeout
        self._max_attempts = max_attempts
        self._backoff_base = backoff_base
        self._backoff_max = backoff_max
        headers = {"Accept": "application/json", "User-Agent": SDK_ID}
        if self._api_key is None:
            headers[SDK_HEADER] = SDK_ID
            if self._origin is not None:
                headers["Origin"] = self._origin
        # The key is attached per request (see _auth) so it lives in one place only.
        self._http = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(timeout), follow_redirects=False
        )

    @property
    def public(self) -> bool:
        """True in public (keyless) mode."""
        return self._api_key is None

    @property
    def base_url(self) -> str:
        """The API base URL, without a trailing slash."""
        return self._base_url

    def __repr__(self) -> str:
        mode = "public" if self.public else "api-key"
        return f"SessionClient({self._base_url!r}, mode={mode!r})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool; the client is unusable afterwards."""
        await self._http.aclose()

    async def create_session(
        self, request: SessionRequest, *, now: datetime | None = None
    ) -> LiveKitGrant:
        """Create a session and return its grant (never an expired one).

        ``now`` overrides the clock used for the expiry check (tests).
        """
        reply = await self._post(SESSIONS_PATH, request.to_body())
        if not 200 <= reply.status < 300:
            self._raise_for(reply, subject=("agent", request.agent_id))
        data = _json_or_none(reply.body)
        if data is None:
            raise UnexpectedResponseError(
                f"the session API at {self._base_url} answered HTTP {reply.status} with a body "
                "that is not JSON; is the API URL right?",
                status=reply.status,
            )
        return parse_grant(data, now=now)

    async def end_session(self, session_id: str) -> None:
        """Force-end a session (``204``); raises :class:`NotFoundError` for an unknown id."""
        if not session_id:
            raise ValueError("session_id must not be empty")
        path = f"{SESSIONS_PATH}/{quote(session_id, safe='')}/end"
        reply = await self._post(path, None)
        if not 200 <= reply.status < 300:
            self._raise_for(reply, subject=("session", session_id))

    # --- transport ----------------------------------------------------------------------

    def _auth(self) -> dict[str, str]:
        if self._api_key is None:
            return {}
        return {"Authorization": f"Bearer {self._api_key.get_secret_value()}"}

    async def _post(self, path: str, body: Mapping[str, Any] | None) -> _Reply:
        url = self._base_url + path
        headers = self._auth()
        content: bytes | None = None
        if body is not None:
            content = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        attempt = 0
        while True:
            attempt += 1
            try:
                async with asyncio.timeout(self._timeout):
                    status, data, resp_headers = await self._attempt(url, headers, content)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                # Nothing reached the server: safe to retry even a create.
                if attempt < self._max_attempts:
                    await self._backoff(attempt, path, type(exc).__name__)
                    continue
                if isinstance(exc, httpx.ConnectTimeout):
                    raise ApiTimeoutError(
                        f"could not connect to the Fish Audio API at {self._base_url} within "
                        f"{self._timeout:g} s ({attempt} attempts)"
                    ) from None
                raise ApiConnectionError(
                    f"cannot reach the Fish Audio API at {self._base_url}: "
                    f"{_describe_transport_error(exc)} ({attempt} attempts)"
                ) from None
            except (TimeoutError, httpx.TimeoutException):
                raise ApiTimeoutError(
                    f"the Fish Audio API at {self._base_url} did not answer within "
                    f"{self._timeout:g} s"
                ) from None
            except httpx.HTTPError as exc:
                raise ApiConnectionError(
                    f"the connection to the Fish Audio API at {self._base_url} failed: "
                    f"{_describe_transport_error(exc)}"
                ) from None
            _log.debug("POST %s -> HTTP %d (attempt %d)", path, status, attempt)
            if status in (502, 503) and attempt < self._max_attempts:
                await self._backoff(attempt, path, f"HTTP {status}")
                continue
            return _Reply(status, data, resp_headers, attempt)

    async def _attempt(
        self, url: str, headers: dict[str, str], content: bytes | None
    ) -> tuple[int, bytes, httpx.Headers]:
        async with self._http.stream("POST", url, headers=headers, content=content) as resp:
            chunks: list[bytes] = []
            size = 0
            async for chunk in resp.aiter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size >= MAX_BODY_BYTES:
                    break
            return resp.status_code, b"".join(chunks)[:MAX_BODY_BYTES], resp.headers

    async def _backoff(self, attempt: int, path: str, why: str) -> None:
        delay = min(self._backoff_max, self._backoff_base * 2 ** (attempt - 1))
        delay *= 0.5 + random.random()  # jitter: spread retries from many clients
        _log.info(
            "POST %s failed (%s); retry %d/%d in %.2f s",
            path,
            why,
            attempt,
            self._max_attempts - 1,
            delay,
        )
        await asyncio.sleep(delay)

    # --- errors -------------------------------------------------------------------------

    def _raise_for(self, reply: _Reply, *, subject: tuple[str, str]) -> NoReturn:
        status, headers = reply.status, reply.headers
        kind, ident = subject
        what = f"{kind} {_clean(ident, limit=80)}"
        data = _json_or_none(reply.body)
        detail: str | None = None
        reason: str | None = None
        field_errors: tuple[FieldError, ...] = ()
        if isinstance(data, Mapping):
            detail = _first_str(data, "message", "detail", "error")
            reason = _first_str(data, "reason", "code")
            if isinstance(data.get("detail"), list):
                field_errors = _field_errors(data["detail"], self._redact)
        elif isinstance(data, list):
            field_errors = _field_errors(data, self._redact)
        if detail is not None:
            detail = self._redact(_clean(detail))
        if reason is not None:
            reason = self._redact(_clean(reason, limit=60))
        said = f": {detail}" if detail else ""
        tries = f" after {reply.attempts} attempts" if reply.attempts > 1 else ""
        kw: dict[str, Any] = {"status": status, "reason": reason, "detail": detail}
        text = f"{detail or ''} {reason or ''}".lower()

        if status == 400:
            hint = (
                " (keyless sessions may only override language and voice_id, and cannot set a name)"
                if self.public
                else ""
            )
            raise BadRequestError(f"the session request was rejected{said}{hint}", **kw)
        if status == 401:
            if self.public:
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
            self._raise_forbidden(text, said, what, kw)
        if status == 404:
            raise NotFoundError(f"{what} not found (or it belongs to another team)", **kw)
        if status == 409:
            if reason == "unsupported_transport":
                raise UnsupportedTransportError(
                    f"none offered for this client ({detail or 'HTTP 409'})"
                )
            if "publish" in text:
                raise ConflictError(f"{what} has no published version; publish it first", **kw)
            raise ConflictError(f"conflict for {what}{said or ' (HTTP 409)'}", **kw)
        if status == 415:
            raise UnsupportedMediaTypeError(
                "the session API refused the request's content type (HTTP 415); "
                "this is a fishtalk bug",
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
                f"the Fish Audio API is temporarily unavailable (HTTP 503{tries}); "
                "try again shortly",
                **kw,
            )
        if 500 <= status < 600:
            raise ServerError(f"the Fish Audio API failed (HTTP {status}){said}", **kw)
        raise UnexpectedResponseError(
            f"unexpected answer from the session API at {self._base_url}: HTTP {status}{said}",
            **kw,
        )

    def _raise_forbidden(self, text: str, said: str, what: str, kw: dict[str, Any]) -> NoReturn:
        if "origin" in text:
            if self._origin is None or "required" in text:
                raise OriginForbiddenError(
                    "this public agent needs an Origin: set one of the agent's allowed "
                    "origins (api.origin / --origin)",
                    **kw,
                )
            raise OriginForbiddenError(
                f"origin {self._origin} is not allowed for this agent; use one of its allowed "
                "origins (exact scheme, host and port)",
                **kw,
            )
        if "not public" in text:
            raise AgentNotPublicError(
                f"{what} is not public: use an API key (FISH_API_KEY), or turn on its "
                "public access",
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

    def _redact(self, text: str) -> str:
        if self._api_key is not None:
            key = self._api_key.get_secret_value()
            text = text.replace(key, "<redacted>")
        return text


# --- helpers ----------------------------------------------------------------------------

_KEY_CHARS = re.compile(r"[\x21-\x7e]+")


def _clean(text: str, *, limit: int = 200) -> str:
    """One printable line, bounded: server text goes straight to a terminal."""
    text = " ".join(strip(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_or_none(body: bytes) -> Any:
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
                location=redact(_clean(".".join(parts), limit=80)),
                message=redact(_clean(msg if isinstance(msg, str) else "invalid")),
                kind=_clean(kind, limit=60) if isinstance(kind, str) else None,
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


def _describe_transport_error(exc: BaseException) -> str:
    """A short cause for a network failure, from the OS error under httpx's wrappers."""
    seen: BaseException | None = exc
    for _ in range(8):  # the chain is httpx -> httpcore -> OSError(s); bounded anyway
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        if isinstance(seen, socket.gaierror):
            return "host name not found"
        if isinstance(seen, ssl.SSLError):
            return f"TLS failed ({_clean(seen.reason or str(seen), limit=80)})"
        seen = seen.__cause__ or seen.__context__
    return _clean(str(exc), limit=120) or type(exc).__name__


def _check_base_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ClientConfigError(
            f"invalid API URL {_clean(url, limit=80)!r}: expected http(s)://host"
        )
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ClientConfigError(
            "invalid API URL: it must not carry credentials, a query or a fragment"
        )
    return url.strip().rstrip("/")


def _check_origin(origin: str) -> str:
    parts = urlsplit(origin.strip())
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username
    ):
        raise ClientConfigError(
            f"invalid origin {_clean(origin, limit=80)!r}: expected scheme://host[:port], "
            "like https://app.example.com"
        )
    return f"{parts.scheme}://{parts.netloc}"


def _check_api_key(key: SecretStr | str | None) -> SecretStr | None:
    if key is None:
        return None
    value = (key.get_secret_value() if isinstance(key, SecretStr) else key).strip()
    if not value:
        raise ClientConfigError("the API key is empty; set FISH_API_KEY or use public mode")
    if not _KEY_CHARS.fullmatch(value):
        # Never echo the value: it is a credential even when malformed.
        raise ClientConfigError(
            "the API key contains spaces or non-ASCII characters; check FISH_API_KEY"
        )
    return SecretStr(value)


__all__ = [
    "DEFAULT_API_URL",
    "SDK_HEADER",
    "SDK_ID",
    "SUPPORTED_TRANSPORTS",
    "AgentNotPublicError",
    "AgentUnavailableError",
    "ApiConnectionError",
    "ApiError",
    "ApiTimeoutError",
    "ApiTransportError",
    "AuthenticationError",
    "BadGatewayError",
    "BadRequestError",
    "ClientConfigError",
    "ConflictError",
    "FieldError",
    "ForbiddenError",
    "LiveKitGrant",
    "NotFoundError",
    "OriginForbiddenError",
    "PaymentRequiredError",
    "RateLimitedError",
    "RequestValidationError",
    "ServerError",
    "ServiceUnavailableError",
    "SessionApiError",
    "SessionClient",
    "SessionExpiredError",
    "SessionGrant",
    "SessionOverrides",
    "SessionRequest",
    "UnexpectedResponseError",
    "UnsupportedMediaTypeError",
    "UnsupportedTransportError",
    "parse_grant",
]
