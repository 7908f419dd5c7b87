"""The HTTP client for the session API: create a session grant, end a session.

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
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, Self
from urllib.parse import quote, urlsplit

import httpx
from pydantic import (
    SecretStr,
)

from fishtalk._version import __version__
from fishtalk.core.errors import (
    ApiConnectionError,
    ApiTimeoutError,
    ClientConfigError,
    UnexpectedResponseError,
)
from fishtalk.engine.api.errors import Caller, Reply, clean, json_or_none, raise_for
from fishtalk.engine.api.models import LiveKitGrant, SessionRequest, parse_grant

DEFAULT_API_URL: Final = "https://api.fish.audio"
SESSIONS_PATH: Final = "/v1/agent/sessions"
SDK_HEADER: Final = "X-Fish-SDK"
"""Identifies the client on keyless (public-agent) requests, like the web SDK does."""
SDK_ID: Final = f"fishtalk/{__version__}"
MAX_BODY_BYTES: Final = 1 << 20
"""Larger response bodies are cut off: a grant or an error body is a few hundred bytes."""

_log = logging.getLogger(__name__)


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
        self._caller = Caller(self._base_url, self._api_key, self._origin)
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

    async def __aexit__(self, *exc_info: object) -> None:
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
            raise_for(self._caller, reply, subject=("agent", request.agent_id))
        data = json_or_none(reply.body)
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
            raise_for(self._caller, reply, subject=("session", session_id))

    # --- transport ----------------------------------------------------------------------

    def _auth(self) -> dict[str, str]:
        if self._api_key is None:
            return {}
        return {"Authorization": f"Bearer {self._api_key.get_secret_value()}"}

    async def _post(self, path: str, body: Mapping[str, Any] | None) -> Reply:
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
            return Reply(status, data, resp_headers, attempt)

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


_KEY_CHARS = re.compile(r"[\x21-\x7e]+")


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
            return f"TLS failed ({clean(seen.reason or str(seen), limit=80)})"
        seen = seen.__cause__ or seen.__context__
    return clean(str(exc), limit=120) or type(exc).__name__


def _check_base_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ClientConfigError(
            f"invalid API URL {clean(url, limit=80)!r}: expected http(s)://host"
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
            f"invalid origin {clean(origin, limit=80)!r}: expected scheme://host[:port], "
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
