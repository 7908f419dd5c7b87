"""Where a session's grant comes from: the grant sources and what a refused grant ends with.

:class:`CreateSession` asks the Fish session API; :class:`DirectJoin` joins any LiveKit
room with a token given or minted here (no Fish session API); :class:`ReadyGrant` takes a
grant obtained elsewhere.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable
from urllib.parse import urlsplit

from pydantic import SecretStr

from fishtalk.core import conversation as conv
from fishtalk.core import errors

if TYPE_CHECKING:
    from fishtalk.engine.api import LiveKitGrant, SessionClient, SessionRequest


@runtime_checkable
class GrantSource(Protocol):
    """Where a session's grant comes from; ``obtain`` raises a FishtalkError on failure."""

    async def obtain(self) -> LiveKitGrant:
        """The grant to join with."""
        ...


@dataclass(frozen=True, slots=True)
class CreateSession:
    """A grant source that creates a session through the API: a client plus a request.

    ``client`` may be a factory, so the HTTP client is made on the loop that uses it. The
    client is closed once the grant is obtained.
    """

    client: SessionClient | Callable[[], SessionClient]
    request: SessionRequest

    async def obtain(self) -> LiveKitGrant:
        """Create the session; raises the API's errors."""
        client = self.client if not callable(self.client) else self.client()
        async with client:
            return await client.create_session(self.request)


@dataclass(frozen=True, slots=True)
class ReadyGrant:
    """A grant source for a grant obtained elsewhere (``fishtalk demo``, tests)."""

    grant: LiveKitGrant

    async def obtain(self) -> LiveKitGrant:
        """The grant as given."""
        return self.grant


DIRECT_TTL: Final = timedelta(hours=6)
"""How long a token minted for a direct join lasts (and the call's cap when a token given
says nothing)."""


def _new_identity() -> str:
    return "fishtalk-" + secrets.token_hex(4)


@dataclass(frozen=True, slots=True)
class DirectJoin:
    """A grant source that joins a LiveKit room directly, with no Fish session API.

    Either ``token`` (a LiveKit access token for the room), or ``api_key`` and
    ``api_secret`` with ``room``: then a token for ``identity`` is minted here with
    livekit-api, valid for :data:`DIRECT_TTL`. Credentials are :class:`SecretStr`, never
    shown. A combination that cannot work raises :class:`~fishtalk.core.errors.ConfigError`
    from :meth:`check` (and from :meth:`obtain`).
    """

    livekit_url: str
    token: SecretStr | None = None
    api_key: SecretStr | None = None
    api_secret: SecretStr | None = None
    room: str | None = None
    identity: str = field(default_factory=_new_identity)

    def check(self) -> None:
        """Raise ConfigError for options that cannot join (one line, naming the flag)."""
        _check_url(self.livekit_url)
        if self.token is not None:
            if self.api_key is not None or self.api_secret is not None:
                raise errors.ConfigError("give --token, or --api-key/--api-secret, not both")
            _claims(self.token.get_secret_value())
            return
        missing = [
            flag
            for flag, value in (
                ("--api-key", self.api_key),
                ("--api-secret", self.api_secret),
                ("--room", self.room),
            )
            if not value
        ]
        if missing:
            raise errors.ConfigError(
                "joining a LiveKit room needs --token, or --api-key, --api-secret and --room "
                f"(missing: {', '.join(missing)})"
            )

    def mint(self) -> str:
        """A token for ``identity`` in ``room``, signed with the key and secret."""
        from livekit import api

        self.check()
        if self.api_key is None or self.api_secret is None or not self.room:
            raise errors.ConfigError("minting a token needs --api-key, --api-secret and --room")
        with warnings.catch_warnings():
            # PyJWT warns of a secret under 32 bytes on stderr; the server that issued it
            # is the judge of that (livekit-server itself refuses to start with one).
            warnings.simplefilter("ignore", UserWarning)
            return (
                api.AccessToken(self.api_key.get_secret_value(), self.api_secret.get_secret_value())
                .with_identity(self.identity)
                .with_name("fishtalk")
                .with_ttl(DIRECT_TTL)
                .with_grants(api.VideoGrants(room_join=True, room=self.room))
                .to_jwt()
            )

    async def obtain(self) -> LiveKitGrant:
        """The grant: the token given or minted, its room and its expiry."""
        from fishtalk.engine.api import LiveKitGrant

        self.check()
        token = self.token.get_secret_value() if self.token is not None else self.mint()
        expires, room = _claims(token)
        now = datetime.now(UTC)
        expires_at = expires or now + DIRECT_TTL
        return LiveKitGrant(
            session_id=room or self.room or "livekit",
            expires_at=expires_at,
            max_duration_seconds=max(1, int((expires_at - now).total_seconds())),
            livekit_url=self.livekit_url,
            token=SecretStr(token),
        )


def _check_url(url: str) -> None:
    """Raise ConfigError unless ``url`` is a ws(s):// or http(s):// URL with a host."""
    try:
        parsed = urlsplit(url)
        host = parsed.hostname
        parsed.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        host = None
    else:
        if parsed.scheme not in ("ws", "wss", "http", "https"):
            raise errors.ConfigError(
                f"--livekit-url must be a ws://, wss://, http:// or https:// URL (got {url!r})"
            )
    if not host:
        raise errors.ConfigError(
            f"--livekit-url {url!r} is not a URL with a host (e.g. wss://NAME.livekit.cloud)"
        )


def _claims(token: str) -> tuple[datetime | None, str | None]:
    """A LiveKit token's expiry and room, read (not verified: the server does that)."""
    parts = token.split(".")
    try:
        if len(parts) != 3:
            raise ValueError("not three parts")
        body = parts[1] + "=" * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(body))
        if not isinstance(claims, dict):
            raise ValueError("claims are not an object")
    except (ValueError, binascii.Error):
        raise errors.ConfigError("--token is not a LiveKit access token (a JWT)") from None
    exp = claims.get("exp")
    video = claims.get("video")
    room = video.get("room") if isinstance(video, dict) else None
    expires = datetime.fromtimestamp(exp, UTC) if isinstance(exp, int | float) else None
    return expires, room if isinstance(room, str) and room else None


@dataclass(frozen=True, slots=True)
class Refused:
    """A grant source that fails with ``error`` (a request that could not be built)."""

    error: errors.FishtalkError

    async def obtain(self) -> LiveKitGrant:
        """Raise the error."""
        raise self.error


def error_code(exc: errors.FishtalkError) -> str:
    """The web SDK's error code for a failure before connecting."""
    if isinstance(exc, errors.SessionExpiredError):
        return conv.END_SESSION_EXPIRED
    if isinstance(exc, errors.UnsupportedTransportError):
        return errors.END_UNSUPPORTED_TRANSPORT
    if isinstance(exc, errors.AgentNotPublicError):
        return "agent_not_public"
    if isinstance(exc, errors.OriginForbiddenError):
        return "origin_forbidden"
    return "session_request_failed"


def speaks_for_itself(code: str) -> bool:
    """Whether a refusal with ``code`` is worded by its end reason (not the API's error)."""
    return code in (conv.END_SESSION_EXPIRED, errors.END_UNSUPPORTED_TRANSPORT)


__all__ = [
    "DIRECT_TTL",
    "CreateSession",
    "DirectJoin",
    "GrantSource",
    "ReadyGrant",
    "Refused",
    "error_code",
    "speaks_for_itself",
]
