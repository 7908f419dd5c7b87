"""The sim's sessions: the request body one is created from, its state, and its single-use
user token (:class:`JoinGate`, enforced on the signalling routes).
"""

from __future__ import annotations

import asyncio
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, Literal

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

# --- request body ---------------------------------------------------------------------


class SessionOverrides(BaseModel):
    """Per-session overrides of the agent's configuration."""

    model_config = ConfigDict(extra="forbid")

    first_message: str | None = Field(default=None, max_length=4000)
    first_message_prompt: str | None = Field(default=None, max_length=4000)
    system_prompt: str | None = Field(default=None, max_length=20000)
    voice_id: str | None = Field(default=None, max_length=128)
    language: str | None = Field(default=None, max_length=32)


class SessionBody(BaseModel):
    """The ``POST /v1/agent/sessions`` body as the sim validates it (unknown fields: 422)."""

    model_config = ConfigDict(extra="forbid")

    agent_id: str = Field(min_length=1, max_length=128)
    name: str | None = Field(default=None, max_length=128)
    overrides: SessionOverrides | None = None
    dynamic_variables: dict[str, JsonValue] | None = Field(default=None, max_length=50)
    tool_events: bool = True
    end_user_id: str | None = Field(default=None, max_length=256)
    metadata: dict[str, JsonValue] | None = None
    record_audio: bool | None = None
    language: str | None = Field(default=None, max_length=32)
    timezone: str | None = None
    client_timezone: str | None = None
    world_context: bool = True

    @field_validator("timezone")
    @classmethod
    def _iana(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError("invalid IANA timezone") from None
        return value

    def overridden_fields(self) -> set[str]:
        """Names of the overrides this request sets."""
        if self.overrides is None:
            return set()
        return {k for k, v in self.overrides.model_dump().items() if v is not None}


# --- sessions -------------------------------------------------------------------------


SessionStatus = Literal["pending", "active", "completed"]


@dataclass
class SimSession:
    """One session the endpoint created: its room, the user's grant and the request."""

    session_id: str
    room: str
    user_identity: str
    user_token: str
    agent_token: str
    body: SessionBody
    public: bool
    created_at: datetime
    expires_at: datetime
    max_duration_seconds: int
    status: SessionStatus = "pending"
    end_requested: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by ``POST .../end``; the agent then ends the session."""

    @property
    def agent_id(self) -> str:
        """The requested agent id."""
        return self.body.agent_id


class JoinGate:
    """Single-use user tokens, enforced on the signalling routes by :meth:`middleware`.

    A session's user token admits one participant at a time: a fresh join (``GET /rtc``
    without ``reconnect=1``) is refused while that identity is connected (a real
    LiveKit server would kick the older connection instead; a participant whose socket
    dropped may rejoin in full, as livekit-client does), and every join is refused
    once the session has ended. Resumes pass untouched, and so does the SDK's full rejoin
    after a server-forced reconnect, because the server has removed the old participant
    by then. A first join after ``expires_at`` is refused too. ``/rtc/validate`` answers
    with the same reason, so the SDK's error says why.
    Tokens the endpoint never issued (the agent's, tests' own) are not gated.
    """

    def __init__(self, occupied: Callable[[str, str], bool] | None = None) -> None:
        self._issued: dict[str, SimSession] = {}
        self._occupied = occupied or (lambda room, identity: False)

    def issue(self, token: str, session: SimSession) -> None:
        """Record a freshly minted user token."""
        self._issued[token] = session

    def check(self, token: str | None) -> str | None:
        """``None`` to admit a fresh join with ``token``, else why it is refused."""
        if token is None:
            return None
        session = self._issued.get(token)
        if session is None:
            return None
        if session.status == "completed":
            return "the session has ended; its token can no longer be used"
        if session.status == "pending" and datetime.now(UTC) > session.expires_at:
            return "the session's join deadline (expires_at) has passed"
        if self._occupied(session.room, session.user_identity):
            return "the session token is already in use (tokens are single-use)"
        return None

    def middleware(self) -> Middleware:
        """An aiohttp middleware applying :meth:`check` to fresh joins and validation."""

        @web.middleware
        async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
            resuming = request.query.get("reconnect") in {"1", "true"}
            fresh_join = request.path in _JOIN_PATHS and not resuming
            if fresh_join or request.path in _VALIDATE_PATHS:
                token = access_token(request)
                reason = self.check(token)
                if reason is not None:
                    return web.Response(status=401, text=reason)
                session = self._issued.get(token) if token is not None else None
                if fresh_join and session is not None and session.status == "pending":
                    session.status = "active"
            return await handler(request)

        return gate


_JOIN_PATHS: Final = frozenset({"/rtc", "/rtc/v1"})
_VALIDATE_PATHS: Final = frozenset({"/rtc/validate", "/rtc/v1/validate"})


def access_token(request: web.Request) -> str | None:
    """The token wherever a client puts it: ``Authorization: Bearer`` (the Python SDK) or
    the ``access_token`` query parameter (livekit-client in a browser)."""
    header = request.headers.get("Authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return request.query.get("access_token") or None
