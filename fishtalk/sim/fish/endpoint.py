"""The simulated Fish session endpoint: ``POST /v1/agent/sessions`` and ``.../{id}/end``.

It is mounted on the :class:`~fishtalk.sim.livekit.server.SimServer`'s aiohttp app and shaped like
the real API (see shared/spec/contract-notes.md and Fish's agent-errors page):

* Auth: ``Authorization: Bearer <dev key>``. No ``Authorization`` header is a public-agent
  request: the ``Origin`` header is then required and must be one of the allowed origins
  (exact scheme, host and port), a ``name`` is refused with 400, and only the ``language``
  and ``voice_id`` overrides are allowed (400 otherwise). A malformed header (not
  ``Bearer <token>``) gets a bare 401 with ``WWW-Authenticate: Bearer``; a wrong key gets
  the JSON 401 ``Invalid token``.
* Body: ``application/json`` only (missing body or another content type -> bare 415);
  undecodable JSON -> 400 ``Malformed JSON``; field validation (unknown fields included)
  -> 422 with pydantic's error list, input values stripped.
* 201 response: ``{session_id, expires_at, max_duration_seconds, transport: "livekit",
  livekit_url, token}``. Every session gets a fresh room and a fresh user token; the
  agent joins the same room as identity ``agent``. The token is single-use: see
  :class:`JoinGate`.
* ``POST /v1/agent/sessions/{id}/end`` -> 204 (repeatable); unknown id -> 404.
* Once a session has ended, its room is deleted after ``room_grace`` seconds (10 by
  default, Fish's grace period): anyone still connected is disconnected with reason
  ``ROOM_DELETED`` and the room's tokens no longer join.
* ``GET /v1/agent/sessions/{id}`` -> ``{session_id, agent_id, status (pending | active |
  completed), created_at, expires_at, max_duration_seconds}`` (the real one adds timing
  and a timeline); unknown id -> 404.

Deterministic error injection, by reserved ``agent_id`` (checked after auth, body and
origin checks pass, so those checks can be tested with any id):

=====================  ======================================================================
agent_id               response
=====================  ======================================================================
``err-400``            400 ``{"status":400,"message":"Override 'system_prompt' is not allowed
                       for this agent"}``
``err-401``            401 JSON ``Invalid token``
``err-401-bare``       bare 401 with ``WWW-Authenticate: Bearer``
``err-401-expired``    401 JSON ``Token expired``
``err-402``            402 ``Out of API credit``
``err-403-origin``     403 ``Origin not allowed``
``err-403-private``    403 ``Agent is not public``
``err-403-beta``       403 ``Agent platform is not enabled for this account``
``err-403-unavailable``  403 ``Agent is unavailable``
``err-404``            404 ``Agent not found``
``err-409``            409 ``Agent has no published version``
``err-415``            bare 415
``err-422``            422 pydantic-style list (``missing`` at ``["body", "agent_id"]``)
``err-429``            429 ``Too many requests`` with ``Retry-After: 1``
``err-500``            500 ``Internal server error``
``err-502``            502 ``Agent gateway is unreachable``
``err-503``            503 ``Service temporarily unavailable`` with ``Retry-After: 1``
``err-503-once``       the first request fails as ``err-503``; later ones succeed (per
                       endpoint instance)
``err-badjson``        201 whose body is not valid JSON
``err-badgrant``       201 JSON missing ``token`` and ``livekit_url``
``err-slow``           answers only after ``slow_seconds`` (default 30 s): client timeouts
``transport-webrtc``   201 with ``"transport": "webrtc"`` (an unknown transport arm)
``expired``            201 whose ``expires_at`` is already in the past
=====================  ======================================================================

Every other ``agent_id`` creates a real session.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import zoneinfo
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final, Literal, Protocol

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

DEFAULT_DEV_KEY: Final = "fishtalk-sim-dev-key"
"""The API key the sim accepts unless told otherwise (it guards nothing real)."""

DEFAULT_ALLOWED_ORIGINS: Final = ("http://localhost", "http://127.0.0.1", "https://fishtalk.local")
"""Origins a public (keyless) request may come from."""

AGENT_IDENTITY: Final = "agent"
"""The simulated agent's participant identity in every room."""

SESSIONS_PATH: Final = "/v1/agent/sessions"

ROOM_GRACE_SECONDS: Final = 10.0
"""After ``session.ended``, how long the room lives on before it is deleted (Fish's grace)."""

_PUBLIC_OVERRIDES: Final = frozenset({"language", "voice_id"})


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


class TokenMinter(Protocol):
    """The part of :class:`~fishtalk.sim.livekit.server.SimServer` the endpoint needs."""

    @property
    def ws_url(self) -> str:
        """The signalling URL clients connect to."""
        ...

    def mint_token(
        self,
        room: str,
        identity: str,
        *,
        name: str | None = None,
        kind: Literal["standard", "agent"] = "standard",
        ttl: timedelta = ...,
        metadata: str | None = None,
        attributes: dict[str, str] | None = None,
    ) -> str:
        """A signed LiveKit access token for ``identity`` in ``room``."""
        ...


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


# --- errors ---------------------------------------------------------------------------


def _json_error(
    status: int, message: str, *, headers: dict[str, str] | None = None
) -> web.Response:
    return web.json_response({"status": status, "message": message}, status=status, headers=headers)


def _bare(status: int, *, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, headers=headers)


def _bare_401() -> web.Response:
    return _bare(401, headers={"WWW-Authenticate": "Bearer"})


def _jsonable(value: object) -> JsonValue:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value  # type: ignore[return-value]  # just checked that it serialises


def _validation_error(exc: ValidationError) -> web.Response:
    items: list[dict[str, JsonValue]] = []
    for err in exc.errors(include_url=False, include_input=False):
        item: dict[str, JsonValue] = {
            "type": err["type"],
            "loc": ["body", *err["loc"]],
            "msg": err["msg"],
        }
        if "ctx" in err:
            item["ctx"] = {k: _jsonable(v) for k, v in err["ctx"].items()}
        items.append(item)
    return web.json_response(items, status=422)


_INJECTED: Final[dict[str, Callable[[], web.Response]]] = {
    "err-400": lambda: _json_error(400, "Override 'system_prompt' is not allowed for this agent"),
    "err-401": lambda: _json_error(401, "Invalid token"),
    "err-401-bare": _bare_401,
    "err-401-expired": lambda: _json_error(401, "Token expired"),
    "err-402": lambda: _json_error(402, "Out of API credit"),
    "err-403-origin": lambda: _json_error(403, "Origin not allowed"),
    "err-403-private": lambda: _json_error(403, "Agent is not public"),
    "err-403-beta": lambda: _json_error(403, "Agent platform is not enabled for this account"),
    "err-403-unavailable": lambda: _json_error(403, "Agent is unavailable"),
    "err-404": lambda: _json_error(404, "Agent not found"),
    "err-409": lambda: _json_error(409, "Agent has no published version"),
    "err-415": lambda: _bare(415),
    "err-422": lambda: web.json_response(
        [{"type": "missing", "loc": ["body", "agent_id"], "msg": "Field required"}], status=422
    ),
    "err-429": lambda: _json_error(429, "Too many requests", headers={"Retry-After": "1"}),
    "err-500": lambda: _json_error(500, "Internal server error"),
    "err-502": lambda: _json_error(502, "Agent gateway is unreachable"),
    "err-503": lambda: _json_error(
        503, "Service temporarily unavailable", headers={"Retry-After": "1"}
    ),
}

RESERVED_AGENT_IDS: Final = frozenset(
    {
        *_INJECTED,
        "err-503-once",
        "err-badjson",
        "err-badgrant",
        "err-slow",
        "transport-webrtc",
        "expired",
    }
)
"""Agent ids that inject a response instead of creating a plain session."""


def _iso(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- the endpoint ---------------------------------------------------------------------


class SessionEndpoint:
    """Fish's session-creation API on the sim server's aiohttp app.

    ``on_session`` is called (synchronously, on the loop) with every created session, so a
    spawner can start the simulated agent for it. ``max_duration_for`` may choose a
    session's ``max_duration_seconds`` per agent id (default ``max_duration_seconds``).
    ``occupied(room, identity)`` tells the token gate whether a participant is connected
    (pass ``server.is_connected``).
    """

    def __init__(
        self,
        server: TokenMinter,
        *,
        occupied: Callable[[str, str], bool] | None = None,
        dev_key: str = DEFAULT_DEV_KEY,
        allowed_origins: Iterable[str] = DEFAULT_ALLOWED_ORIGINS,
        max_duration_seconds: int = 1800,
        join_window: timedelta = timedelta(minutes=5),
        slow_seconds: float = 30.0,
        on_session: Callable[[SimSession], None] | None = None,
        max_duration_for: Callable[[str], int | None] | None = None,
        room_grace: float = ROOM_GRACE_SECONDS,
    ) -> None:
        self._server = server
        self.room_grace = room_grace
        """Seconds between a session's end and its room's deletion."""
        self._deletions: set[asyncio.Task[None]] = set()
        self._ended: set[str] = set()
        self._dev_key = dev_key
        self.allowed_origins = frozenset(o.rstrip("/") for o in allowed_origins)
        self.max_duration_seconds = max_duration_seconds
        self.join_window = join_window
        self.slow_seconds = slow_seconds
        self.on_session = on_session
        self.max_duration_for = max_duration_for
        self.sessions: dict[str, SimSession] = {}
        self.gate = JoinGate(occupied)
        self.requests = 0
        """How many session-creation requests arrived (tests count retries with it)."""
        self._failed_once: set[str] = set()

    def install(self, app: web.Application) -> None:
        """Add the routes and the single-use token gate to ``app`` (before it starts)."""
        app.middlewares.append(self.gate.middleware())
        app.router.add_post(SESSIONS_PATH, self._create)
        app.router.add_post(SESSIONS_PATH + "/{session_id}/end", self._end)
        app.router.add_get(SESSIONS_PATH + "/{session_id}", self._get)

    def end_session(self, session_id: str) -> None:
        """Mark a session completed and burn its token (the agent calls this at the end)."""
        session = self.sessions.get(session_id)
        if session is None:
            return
        if session_id not in self._ended:
            self._ended.add(session_id)
            self._schedule_room_deletion(session)
        session.status = "completed"
        session.end_requested.set()

    def _schedule_room_deletion(self, session: SimSession) -> None:
        # Like a Fish room: once the session has ended, whoever is still in the room is
        # disconnected after the grace period (reason ROOM_DELETED) and the room is gone.
        close_room = getattr(self._server, "close_room", None)
        if close_room is None:
            return

        def delete() -> None:
            task: asyncio.Task[None] = asyncio.ensure_future(close_room(session.room))
            self._deletions.add(task)
            task.add_done_callback(self._deletions.discard)

        asyncio.get_running_loop().call_later(self.room_grace, delete)

    # -- request handling --

    def _check_auth(self, request: web.Request) -> tuple[bool, web.Response | None]:
        """(public, error response or None)."""
        header = request.headers.get("Authorization")
        if header is None:
            return True, None
        scheme, _, credential = header.partition(" ")
        credential = credential.strip()
        if scheme.lower() != "bearer" or not credential:
            return False, _bare_401()
        if not secrets.compare_digest(credential.encode(), self._dev_key.encode()):
            return False, _json_error(401, "Invalid token")
        return False, None

    async def _read_body(self, request: web.Request) -> SessionBody | web.Response:
        if request.content_type != "application/json" or not request.can_read_body:
            return _bare(415)
        raw = await request.read()
        if not raw.strip():
            return _bare(415)
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            return _json_error(400, "Malformed JSON")
        try:
            return SessionBody.model_validate(data)
        except ValidationError as exc:
            return _validation_error(exc)

    def _check_public(self, request: web.Request, body: SessionBody) -> web.Response | None:
        origin = request.headers.get("Origin")
        if not origin:
            return _json_error(403, "Origin header is required for public agents")
        if origin.rstrip("/") not in self.allowed_origins:
            return _json_error(403, "Origin not allowed")
        if body.name is not None:
            return _json_error(400, "'name' is only allowed on API-key requests")
        refused = sorted(body.overridden_fields() - _PUBLIC_OVERRIDES)
        if refused:
            return _json_error(400, f"Override '{refused[0]}' is not allowed on public sessions")
        return None

    async def _create(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        public, failure = self._check_auth(request)
        if failure is not None:
            return failure
        body = await self._read_body(request)
        if isinstance(body, web.Response):
            return body
        if public and (failure := self._check_public(request, body)) is not None:
            return failure
        if body.overrides and body.overrides.first_message and body.overrides.first_message_prompt:
            return web.json_response(
                [
                    {
                        "type": "value_error",
                        "loc": ["body", "overrides"],
                        "msg": "first_message and first_message_prompt are mutually exclusive",
                    }
                ],
                status=422,
            )
        return await self._injected_or_created(body, public=public)

    async def _injected_or_created(self, body: SessionBody, *, public: bool) -> web.StreamResponse:
        agent_id = body.agent_id
        injected = _INJECTED.get(agent_id)
        if injected is not None:
            return injected()
        if agent_id == "err-503-once" and agent_id not in self._failed_once:
            self._failed_once.add(agent_id)
            return _INJECTED["err-503"]()
        if agent_id == "err-slow":
            await asyncio.sleep(self.slow_seconds)
        session = self._new_session(body, public=public)
        grant: dict[str, JsonValue] = {
            "session_id": session.session_id,
            "expires_at": _iso(session.expires_at),
            "max_duration_seconds": session.max_duration_seconds,
            "transport": "livekit",
            "livekit_url": self._server.ws_url,
            "token": session.user_token,
        }
        if agent_id == "err-badjson":
            return web.Response(
                status=201,
                text='{"session_id": "' + session.session_id,
                content_type="application/json",
            )
        if agent_id == "err-badgrant":
            del grant["token"], grant["livekit_url"]
        elif agent_id == "transport-webrtc":
            grant = {
                "session_id": session.session_id,
                "expires_at": grant["expires_at"],
                "max_duration_seconds": session.max_duration_seconds,
                "transport": "webrtc",
                "sdp_offer_url": "https://webrtc.invalid/offer",
            }
        elif agent_id == "expired":
            grant["expires_at"] = _iso(datetime.now(UTC) - timedelta(minutes=1))
        return web.json_response(grant, status=201)

    def _new_session(self, body: SessionBody, *, public: bool) -> SimSession:
        session_id = "sess_" + secrets.token_hex(8)
        room = "fishtalk-" + session_id
        user_identity = "user-" + secrets.token_hex(4)
        now = datetime.now(UTC)
        max_duration = self.max_duration_seconds
        if self.max_duration_for is not None:
            chosen = self.max_duration_for(body.agent_id)
            if chosen is not None:
                max_duration = chosen
        ttl = self.join_window + timedelta(seconds=max_duration)
        user_token = self._server.mint_token(
            room, user_identity, name=body.end_user_id or "you", ttl=ttl
        )
        agent_token = self._server.mint_token(
            room,
            AGENT_IDENTITY,
            name="Fish agent",
            kind="agent",
            ttl=ttl,
            attributes={"lk.agent.state": "initializing"},
        )
        session = SimSession(
            session_id=session_id,
            room=room,
            user_identity=user_identity,
            user_token=user_token,
            agent_token=agent_token,
            body=body,
            public=public,
            created_at=now,
            expires_at=now + self.join_window,
            max_duration_seconds=max_duration,
        )
        self.sessions[session_id] = session
        self.gate.issue(user_token, session)
        if self.on_session is not None and body.agent_id not in RESERVED_AGENT_IDS - {
            "err-503-once",
            "err-slow",
        }:
            self.on_session(session)
        return session

    async def _end(self, request: web.Request) -> web.StreamResponse:
        _public, failure = self._check_auth(request)
        if failure is not None:
            return failure
        session = self.sessions.get(request.match_info["session_id"])
        if session is None:
            return _json_error(404, "Session not found")
        self.end_session(session.session_id)
        return web.Response(status=204)

    async def _get(self, request: web.Request) -> web.StreamResponse:
        _public, failure = self._check_auth(request)
        if failure is not None:
            return failure
        session = self.sessions.get(request.match_info["session_id"])
        if session is None:
            return _json_error(404, "Session not found")
        return web.json_response(
            {
                "session_id": session.session_id,
                "agent_id": session.agent_id,
                "status": session.status,
                "created_at": _iso(session.created_at),
                "expires_at": _iso(session.expires_at),
                "max_duration_seconds": session.max_duration_seconds,
            }
        )


__all__ = [
    "AGENT_IDENTITY",
    "DEFAULT_ALLOWED_ORIGINS",
    "DEFAULT_DEV_KEY",
    "RESERVED_AGENT_IDS",
    "ROOM_GRACE_SECONDS",
    "SESSIONS_PATH",
    "JoinGate",
    "SessionBody",
    "SessionEndpoint",
    "SessionOverrides",
    "SimSession",
    "TokenMinter",
]
