"""LiveKit signalling over websockets for the loopback server.

The SDK (livekit 1.2.1) first tries ``/rtc/v1`` (single peer connection); answering 404
there makes it fall back to ``/rtc`` with two peer connections, which is what the media
layer implements. The access token arrives as ``Authorization: Bearer``; when the
websocket handshake is refused the SDK fetches ``/rtc/validate`` and shows that body in
its error, so that body says exactly why (missing token, bad signature, expired, no room
grant, closed room).

This module owns the socket side: token checks, query parsing, one
:class:`ParticipantSession` per participant (its current socket, outbox and request
dispatch). What a request *means* for the room is the :class:`Hub`'s business
(implemented by :mod:`fishtalk.sim.livekit.server`), so room logic stays testable without sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol, cast

import jwt
from aiohttp import WSMsgType, web
from livekit.api import TokenVerifier
from livekit.protocol import models, rtc

from fishtalk.sim.livekit.media import ParticipantMedia

log = logging.getLogger(__name__)

SERVER_VERSION = "1.9.0-fishtalk-sim"
"""Reported as the server version (the SDK only logs it)."""
PROTOCOL_VERSION = 16
"""Signalling protocol version reported in ServerInfo."""


class JoinDenied(Exception):
    """A join the server refuses; ``str(exc)`` is the one-line reason /rtc/validate shows."""

    def __init__(self, reason: str, status: int = 401) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True)
class JoinGrant:
    """What a verified access token lets its holder do."""

    room: str
    identity: str
    name: str = ""
    kind: models.ParticipantInfo.Kind = models.ParticipantInfo.Kind.STANDARD
    metadata: str = ""
    attributes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClientParams:
    """The query parameters of a ``/rtc`` connect the server cares about."""

    protocol: int = 0
    client_protocol: int = 0
    capabilities: tuple[models.ClientInfo.Capability, ...] = ()
    auto_subscribe: bool = True
    reconnect: bool = False
    sid: str = ""
    reconnect_reason: int = 0

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> ClientParams:
        """Parse what the SDK sends; unknown or malformed values fall back to defaults."""

        def as_int(name: str) -> int:
            try:
                return int(query.get(name, "0"))
            except ValueError:
                return 0

        caps: list[models.ClientInfo.Capability] = []
        for raw in query.get("capabilities", "").split(","):
            raw = raw.strip()
            if not raw:
                continue
            with contextlib.suppress(ValueError):
                value = int(raw) if raw.isdigit() else models.ClientInfo.Capability.Value(raw)
                # EnumTypeWrapper.Value is typed as returning int; the value is a member.
                caps.append(cast(models.ClientInfo.Capability, value))
        flag = {"1", "true"}
        return cls(
            protocol=as_int("protocol"),
            client_protocol=as_int("client_protocol"),
            capabilities=tuple(caps),
            auto_subscribe=query.get("auto_subscribe", "1") in flag,
            reconnect=query.get("reconnect", "0") in flag,
            sid=query.get("sid", ""),
            reconnect_reason=as_int("reconnect_reason"),
        )


def _kind(raw: str) -> models.ParticipantInfo.Kind:
    try:
        value = models.ParticipantInfo.Kind.Value(raw.upper()) if raw else 0
        return cast(models.ParticipantInfo.Kind, value)
    except ValueError:
        return models.ParticipantInfo.Kind.STANDARD


class TokenChecker:
    """Verifies access tokens minted with the server's key and secret."""

    def __init__(self, api_key: str, api_secret: str, *, leeway: timedelta = timedelta(seconds=2)):
        self._verifier = TokenVerifier(api_key, api_secret, leeway=leeway)
        # Expiry is not checked this way; everything else (signature, issuer) still is.
        self._ignoring_expiry = TokenVerifier(api_key, api_secret, leeway=timedelta(days=36500))

    def check(
        self,
        token: str | None,
        closed_rooms: set[str] | frozenset[str] = frozenset(),
        *,
        allow_expired: bool = False,
    ) -> JoinGrant:
        """Return the grant in ``token``; raise :class:`JoinDenied` saying why not.

        ``allow_expired`` is for resumes: the SDK resumes with the token it joined with,
        which may have expired during a long session (this server sends no refreshed
        tokens), and a resume only takes back a session that is still live.
        """
        if not token:
            raise JoinDenied("missing access token (expected 'Authorization: Bearer <jwt>')")
        verifier = self._ignoring_expiry if allow_expired else self._verifier
        try:
            claims = verifier.verify(token)
        except jwt.ExpiredSignatureError:
            raise JoinDenied("access token expired") from None
        except jwt.InvalidSignatureError:
            raise JoinDenied("access token has a bad signature (wrong API secret)") from None
        except jwt.InvalidIssuerError:
            raise JoinDenied("access token was issued for another API key") from None
        except jwt.ImmatureSignatureError:
            raise JoinDenied("access token is not valid yet") from None
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise JoinDenied(f"access token is malformed: {exc}") from None
        video = claims.video
        if video is None or not video.room_join:
            raise JoinDenied("access token does not grant roomJoin")
        if not video.room:
            raise JoinDenied("access token names no room")
        if not claims.identity:
            raise JoinDenied("access token has no identity")
        if video.room in closed_rooms:
            raise JoinDenied(f"room {video.room!r} is closed", status=404)
        return JoinGrant(
            room=video.room,
            identity=claims.identity,
            name=claims.name or "",
            kind=_kind(claims.kind or ""),
            metadata=claims.metadata or "",
            attributes=dict(claims.attributes or {}),
        )


def bearer_token(request: web.Request) -> str | None:
    """The token from ``Authorization: Bearer`` (or an ``access_token`` query parameter)."""
    header = request.headers.get("Authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return request.query.get("access_token") or None


class Hub(Protocol):
    """What the signalling layer needs from the server core (rooms, media, forwarding)."""

    def authorize(self, token: str | None, *, resuming: bool = False) -> JoinGrant:
        """Check a token against keys and closed rooms (expiry too unless ``resuming``);
        raises JoinDenied."""
        ...

    async def join(self, session: ParticipantSession, params: ClientParams) -> None:
        """Admit a fresh participant: send JoinResponse, start its media, tell the others."""
        ...

    async def resume(self, grant: JoinGrant, params: ClientParams) -> ParticipantSession | None:
        """The live session a resuming client (``reconnect=1&sid=``) may take back."""
        ...

    async def leave(self, session: ParticipantSession, reason: models.DisconnectReason) -> None:
        """Remove a participant for good and tell the others."""
        ...

    def socket_lost(self, session: ParticipantSession) -> None:
        """The socket closed without a Leave: keep the session for a resume window."""
        ...

    def update_metadata(
        self, session: ParticipantSession, request: rtc.UpdateParticipantMetadata
    ) -> None:
        """Apply an attributes/metadata/name update and broadcast it."""
        ...

    def add_track(self, session: ParticipantSession, request: rtc.AddTrackRequest) -> None:
        """Register an announced track and reply TrackPublishedResponse."""
        ...

    def mute(self, session: ParticipantSession, request: rtc.MuteTrackRequest) -> None:
        """Record a mute change and broadcast it."""
        ...

    def snapshot(self, session: ParticipantSession) -> list[models.ParticipantInfo]:
        """Everyone in the session's room, for a resume's full ParticipantUpdate."""
        ...

    async def simulate(self, session: ParticipantSession, request: rtc.SimulateScenario) -> None:
        """Play a SimulateScenario request (the SDKs' test hooks) as livekit-server does."""
        ...


class ParticipantSession:
    """One participant's signalling: its current socket, outbox and request dispatch.

    A session outlives its socket: when the socket drops, messages queue until the
    client resumes (or the hub gives up after its resume window).
    """

    def __init__(
        self,
        grant: JoinGrant,
        params: ClientParams,
        *,
        hub: Hub,
        ping_interval: int,
        ping_timeout: int,
    ) -> None:
        self.grant = grant
        self.params = params
        self.hub = hub
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.participant_sid = ""
        self.media: ParticipantMedia | None = None
        self.ws: web.WebSocketResponse | None = None
        self.closed = False
        self.last_seen = time.monotonic()
        self._outbox: asyncio.Queue[bytes | asyncio.Future[None] | None] = asyncio.Queue()
        self._held: list[bytes] = []
        self._writer: asyncio.Task[None] | None = None
        self.expiry: asyncio.TimerHandle | None = None
        self.last_reliable_seq = 0
        """The sequence of the last reliable data packet received from the client; a
        resume's ReconnectResponse carries it, so the SDK re-sends what came after."""
        self.quality_sent: dict[str, int] = {}
        """Connection quality last told to this client, by participant sid."""
        self.close_on_resume_until = 0.0
        """SimulateScenario disconnect_signal_on_resume: close the resumed socket after
        answering, until this monotonic time."""
        self.refuse_resume_until = 0.0
        self.refused_resumes = 0
        """SimulateScenario disconnect_signal_on_resume_no_messages: close a resumed
        socket before any answer (at most three times) until this monotonic time."""

    @property
    def room(self) -> str:
        """The room this session belongs to."""
        return self.grant.room

    @property
    def identity(self) -> str:
        """The participant identity from the token."""
        return self.grant.identity

    # --- outgoing ----------------------------------------------------------------------

    def send(self, response: rtc.SignalResponse) -> None:
        """Queue a message; held while the socket is down, delivered after a resume."""
        if self.closed:
            return
        data = response.SerializeToString()
        if self.ws is None:
            self._held.append(data)
        else:
            self._outbox.put_nowait(data)

    async def flush(self, *, within: float) -> None:
        """Wait (at most ``within`` s) until everything queued so far has been written."""
        written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._outbox.put_nowait(written)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(written, within)

    async def _write_loop(self, ws: web.WebSocketResponse) -> None:
        while True:
            data = await self._outbox.get()
            if isinstance(data, asyncio.Future):
                if not data.done():
                    data.set_result(None)
                continue
            if data is None or ws.closed:
                return
            try:
                await ws.send_bytes(data)
            except (ConnectionError, RuntimeError) as exc:
                log.debug("signalling write to %s failed: %s", self.identity, exc)
                return

    # --- socket lifecycle --------------------------------------------------------------

    def attach(
        self, ws: web.WebSocketResponse, *, first: Sequence[rtc.SignalResponse] = ()
    ) -> None:
        """Bind a (new) socket: send ``first`` messages, then whatever was held."""
        if self._writer is not None:
            # A resume can arrive before the old socket's reader noticed it died.
            self._outbox.put_nowait(None)
            self._writer = None
        self.ws = ws
        self.last_seen = time.monotonic()
        if self.expiry is not None:
            self.expiry.cancel()
            self.expiry = None
        self._outbox = asyncio.Queue()
        for response in first:
            self._outbox.put_nowait(response.SerializeToString())
        held, self._held = self._held, []
        for data in held:
            self._outbox.put_nowait(data)
        self._writer = asyncio.ensure_future(self._write_loop(ws))

    async def detach(self) -> None:
        """Forget the current socket (closing it); later messages are held."""
        ws, self.ws = self.ws, None
        self._outbox.put_nowait(None)
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(writer, 2.0)
        if ws is not None and not ws.closed:
            with contextlib.suppress(Exception):
                await ws.close()

    async def close_with(self, leave: rtc.LeaveRequest | None) -> None:
        """Send ``leave`` (if any), then close the socket and mark the session over."""
        if leave is not None and self.ws is not None:
            self.send(rtc.SignalResponse(leave=leave))
        self.closed = True
        await self.detach()
        if self.expiry is not None:
            self.expiry.cancel()
            self.expiry = None

    # --- incoming ----------------------------------------------------------------------

    async def serve(self, ws: web.WebSocketResponse) -> None:
        """Read requests from ``ws`` until it closes; then tell the hub how it ended."""
        left = False
        try:
            async for msg in ws:
                if msg.type != WSMsgType.BINARY:
                    continue
                self.last_seen = time.monotonic()
                request = rtc.SignalRequest()
                try:
                    request.ParseFromString(msg.data)
                except Exception:  # protobuf raises DecodeError; any garbage is skipped
                    log.debug("undecodable signal request from %s", self.identity)
                    continue
                try:
                    left = await self.handle(request)
                except Exception:
                    # One request the server cannot apply (an SDP aiortc rejects, say)
                    # must not take the participant's whole signalling down with it.
                    log.warning(
                        "could not handle %s from %s",
                        request.WhichOneof("message"),
                        self.identity,
                        exc_info=True,
                    )
                    continue
                if left:
                    break
        finally:
            if self.ws is ws:  # else a resume already replaced this socket
                await self.detach()
                if not (left or self.closed):
                    self.hub.socket_lost(self)

    async def handle(self, request: rtc.SignalRequest) -> bool:
        """Dispatch one request; True when the client left."""
        which = request.WhichOneof("message")
        media = self.media
        if which == "ping_req":
            now = int(time.time() * 1000)
            self.send(
                rtc.SignalResponse(
                    pong_resp=rtc.Pong(
                        last_ping_timestamp=request.ping_req.timestamp, timestamp=now
                    )
                )
            )
        elif which == "ping":
            self.send(rtc.SignalResponse(pong=request.ping))
        elif which == "offer" and media is not None:
            await media.handle_offer(request.offer)
        elif which == "answer" and media is not None:
            media.handle_answer(request.answer)
        elif which == "trickle" and media is not None:
            await media.add_candidate(request.trickle.target, request.trickle.candidateInit)
        elif which == "add_track":
            self.hub.add_track(self, request.add_track)
        elif which == "mute":
            self.hub.mute(self, request.mute)
        elif which == "update_metadata":
            self.hub.update_metadata(self, request.update_metadata)
        elif which == "simulate":
            await self.hub.simulate(self, request.simulate)
        elif which == "leave":
            await self.hub.leave(self, models.DisconnectReason.CLIENT_INITIATED)
            return True
        else:
            log.debug("ignoring signal request %s from %s", which, self.identity)
        return False


def join_response(
    session: ParticipantSession,
    room: models.Room,
    me: models.ParticipantInfo,
    others: list[models.ParticipantInfo],
) -> rtc.SignalResponse:
    """The JoinResponse the SDK needs (non-zero ping settings, subscriber primary)."""
    return rtc.SignalResponse(
        join=rtc.JoinResponse(
            room=room,
            participant=me,
            other_participants=others,
            server_version=SERVER_VERSION,
            subscriber_primary=True,
            ping_interval=session.ping_interval,
            ping_timeout=session.ping_timeout,
            server_info=server_info(),
        )
    )


def server_info() -> models.ServerInfo:
    """What the server says about itself in JoinResponse and ReconnectResponse."""
    return models.ServerInfo(
        edition=models.ServerInfo.Edition.Standard,
        version=SERVER_VERSION,
        protocol=PROTOCOL_VERSION,
        node_id="fishtalk-sim",
    )


async def handle_rtc_v1(request: web.Request) -> web.Response:
    """``/rtc/v1`` and ``/rtc/v1/validate``: answered exactly as a pre-v1 livekit-server
    (whose router has no such path) answers, so both SDKs fall back to two-PC ``/rtc``.

    Both SDKs log that fallback themselves (livekit's Rust core warns on any v1 failure;
    livekit-client warns "v1 RTC path not found"); clients that know they talk to this
    server skip it with ``singlePeerConnection: false`` / ``single_peer_connection=False``.
    """
    return web.Response(status=404, text="404 page not found\n")


def make_handlers(hub: Hub, *, ping_interval: int, ping_timeout: int) -> list[web.RouteDef]:
    """The aiohttp routes for ``/rtc``, ``/rtc/v1`` and ``/rtc/validate``."""

    async def validate(request: web.Request) -> web.Response:
        resuming = ClientParams.from_query(request.query).reconnect
        try:
            hub.authorize(bearer_token(request), resuming=resuming)
        except JoinDenied as exc:
            return web.Response(status=exc.status, text=str(exc))
        return web.Response(status=200, text="success")

    async def rtc_socket(request: web.Request) -> web.StreamResponse:
        params = ClientParams.from_query(request.query)
        try:
            grant = hub.authorize(bearer_token(request), resuming=params.reconnect)
        except JoinDenied as exc:
            return web.Response(status=exc.status, text=str(exc))
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        if params.reconnect:
            session = await hub.resume(grant, params)
            if session is None:
                # The SDK answers a refused resume with a full rejoin.
                await ws.send_bytes(
                    rtc.SignalResponse(
                        leave=rtc.LeaveRequest(
                            can_reconnect=True,
                            action=rtc.LeaveRequest.Action.RECONNECT,
                            reason=models.DisconnectReason.STATE_MISMATCH,
                        )
                    ).SerializeToString()
                )
                await ws.close()
                return ws
            now = time.monotonic()
            if now < session.refuse_resume_until and session.refused_resumes < 3:
                session.refused_resumes += 1
                await ws.close()
                return ws
            session.attach(
                ws,
                first=[
                    rtc.SignalResponse(
                        reconnect=rtc.ReconnectResponse(
                            last_message_seq=session.last_reliable_seq,
                            server_info=server_info(),
                        )
                    ),
                    rtc.SignalResponse(
                        update=rtc.ParticipantUpdate(participants=hub.snapshot(session))
                    ),
                ],
            )
            if now < session.close_on_resume_until:
                session.close_on_resume_until = 0.0
                await session.flush(within=2.0)
                await ws.close()
        else:
            session = ParticipantSession(
                grant, params, hub=hub, ping_interval=ping_interval, ping_timeout=ping_timeout
            )
            session.attach(ws)
            await hub.join(session, params)
        await session.serve(ws)
        return ws

    return [
        web.get("/rtc/v1", handle_rtc_v1),
        web.get("/rtc/v1/validate", handle_rtc_v1),
        web.get("/rtc/validate", validate),
        web.get("/rtc", rtc_socket),
    ]
