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
  :class:`~fishtalk.sim.fish.sessions.JoinGate`.
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
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Final, Literal, Protocol

from aiohttp import web
from pydantic import JsonValue, ValidationError

from fishtalk.sim.fish.answers import (
    INJECTED,
    RESERVED_AGENT_IDS,
    bare,
    bare_401,
    json_error,
    validation_error,
)
from fishtalk.sim.fish.sessions import JoinGate, SessionBody, SimSession

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
            return False, bare_401()
        if not secrets.compare_digest(credential.encode(), self._dev_key.encode()):
            return False, json_error(401, "Invalid token")
        return False, None

    async def _read_body(self, request: web.Request) -> SessionBody | web.Response:
        if request.content_type != "application/json" or not request.can_read_body:
            return bare(415)
        raw = await request.read()
        if not raw.strip():
            return bare(415)
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            return json_error(400, "Malformed JSON")
        try:
            return SessionBody.model_validate(data)
        except ValidationError as exc:
            return validation_error(exc)

    def _check_public(self, request: web.Request, body: SessionBody) -> web.Response | None:
        origin = request.headers.get("Origin")
        if not origin:
            return json_error(403, "Origin header is required for public agents")
        if origin.rstrip("/") not in self.allowed_origins:
            return json_error(403, "Origin not allowed")
        if body.name is not None:
            return json_error(400, "'name' is only allowed on API-key requests")
        refused = sorted(body.overridden_fields() - _PUBLIC_OVERRIDES)
        if refused:
            return json_error(400, f"Override '{refused[0]}' is not allowed on public sessions")
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
        injected = INJECTED.get(agent_id)
        if injected is not None:
            return injected()
        if agent_id == "err-503-once" and agent_id not in self._failed_once:
            self._failed_once.add(agent_id)
            return INJECTED["err-503"]()
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

    def _session_in(self, request: web.Request) -> SimSession | web.Response:
        """The session a ``/sessions/{session_id}`` request names, or the error answer
        (auth first, then 404)."""
        _public, failure = self._check_auth(request)
        if failure is not None:
            return failure
        session = self.sessions.get(request.match_info["session_id"])
        return json_error(404, "Session not found") if session is None else session

    async def _end(self, request: web.Request) -> web.StreamResponse:
        session = self._session_in(request)
        if isinstance(session, web.Response):
            return session
        self.end_session(session.session_id)
        return web.Response(status=204)

    async def _get(self, request: web.Request) -> web.StreamResponse:
        session = self._session_in(request)
        if isinstance(session, web.Response):
            return session
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
    "ROOM_GRACE_SECONDS",
    "SESSIONS_PATH",
    "SessionEndpoint",
    "TokenMinter",
]
