"""Where a session's grant comes from: the grant sources and what a refused grant ends with."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

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
    "CreateSession",
    "GrantSource",
    "ReadyGrant",
    "Refused",
    "error_code",
    "speaks_for_itself",
]
