"""The loopback LiveKit-protocol server that real ``livekit.rtc.Room`` clients join.

:class:`SimServer` is an aiohttp application (signalling in
:mod:`fishtalk.sim.livekit.signalling`, room state in :mod:`fishtalk.sim.livekit.rooms`, WebRTC
in :mod:`fishtalk.sim.livekit.media`, forwarding between participants in
:mod:`fishtalk.sim.livekit.relay`) plus the tools tests need: token minting with
``livekit-api``, observation of who is in a room, and fault injection (dropped signalling
socket, server-forced reconnect, closed room).

Typical use::

    server = SimServer()
    server.app.router.add_post("/v1/agent/sessions", ...)  # extra routes before start()
    await server.start()
    token = server.mint_token("room-1", "user-1234abcd")
    await room.connect(server.ws_url, token)
    ...
    await server.stop()

WebRTC needs a non-loopback interface: run clients and server inside
``python -m fishtalk.sim.netns``.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Coroutine, Mapping
from datetime import timedelta
from typing import Any, Final, Literal

from aiohttp import web
from livekit.api import AccessToken, VideoGrants
from livekit.protocol import models, rtc

from fishtalk.engine.aio import TaskSet
from fishtalk.sim.livekit.cors import add_cors_headers, cors_preflight
from fishtalk.sim.livekit.media import ParticipantMedia
from fishtalk.sim.livekit.relay import Relay
from fishtalk.sim.livekit.rooms import Participant, RoomError, RoomRegistry
from fishtalk.sim.livekit.signalling import (
    ClientParams,
    JoinGrant,
    ParticipantSession,
    TokenChecker,
    join_response,
    make_handlers,
)

log = logging.getLogger(__name__)


def _task_failed(task: asyncio.Task[Any], exc: BaseException) -> None:
    log.warning("sim server task failed", exc_info=exc)


ParticipantKindName = Literal["standard", "agent"]


SIMULATED_RESUME_FAULT_WINDOW: Final = 10.0
"""How long a simulated resume fault stays armed (livekit-server uses 10 s too)."""


class SimServer:
    """A small, faithful LiveKit server for tests and ``fishtalk demo``.

    Bound to ``host`` (127.0.0.1 by default) on ``port`` (0 picks a free one). Tokens must
    be signed with ``api_key`` / ``api_secret``; :meth:`mint_token` does that.
    ``ping_interval`` / ``ping_timeout`` (seconds) go to clients in JoinResponse; a
    participant whose socket dropped is kept ``resume_window`` seconds for a resume.

    Like livekit-server it also tells clients who is speaking (``speakers_changed``, from
    the level of the audio it relays) and everyone's connection quality (checked every
    ``quality_interval`` seconds, sent when it changed: always EXCELLENT on loopback).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str = "devkey",
        api_secret: str | None = None,
        ping_interval: int = 5,
        ping_timeout: int = 15,
        resume_window: float = 15.0,
        quality_interval: float = 2.0,
    ) -> None:
        if ping_interval <= 0 or ping_timeout <= 0:
            raise ValueError("ping_interval and ping_timeout must be positive (0 crashes the SDK)")
        self.host = host
        self._requested_port = port
        self.api_key = api_key
        self.api_secret = api_secret or secrets.token_urlsafe(32)
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.resume_window = resume_window
        self.quality_interval = quality_interval
        self.rooms = RoomRegistry()
        self._tokens = TokenChecker(self.api_key, self.api_secret)
        self._sessions: dict[tuple[str, str], ParticipantSession] = {}
        self._tasks = TaskSet("fishtalk-sim-server", on_error=_task_failed)
        self._relay = Relay(self.rooms, self._sessions, self._spawn)
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self.app = web.Application(middlewares=[cors_preflight])
        self.app.on_response_prepare.append(add_cors_headers)
        self.app.add_routes(
            make_handlers(self, ping_interval=ping_interval, ping_timeout=ping_timeout)
        )

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Start listening; :attr:`url` is valid afterwards."""
        if self._runner is not None:
            return
        runner = web.AppRunner(self.app, handle_signals=False, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._requested_port)
        await site.start()
        self._runner = runner
        addresses = runner.addresses
        self._port = int(addresses[0][1]) if addresses else self._requested_port
        self._spawn(self._ping_watchdog())
        self._spawn(self._quality_worker())

    async def stop(self) -> None:
        """Disconnect everyone (Leave: server shutdown) and stop listening."""
        for session in list(self._sessions.values()):
            await self._remove(
                session,
                models.DisconnectReason.SERVER_SHUTDOWN,
                leave=rtc.LeaveRequest(
                    action=rtc.LeaveRequest.Action.DISCONNECT,
                    reason=models.DisconnectReason.SERVER_SHUTDOWN,
                ),
            )
        await self._tasks.cancel_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> SimServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`)."""
        if self._port is None:
            raise RuntimeError("SimServer is not started")
        return self._port

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` (after :meth:`start`)."""
        return f"http://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        """``ws://HOST:PORT``: the LiveKit URL clients connect to."""
        return f"ws://{self.host}:{self.port}"

    # --- tokens --------------------------------------------------------------------------

    def mint_token(
        self,
        room: str,
        identity: str,
        *,
        name: str | None = None,
        kind: ParticipantKindName = "standard",
        ttl: timedelta = timedelta(minutes=10),
        metadata: str | None = None,
        attributes: Mapping[str, str] | None = None,
    ) -> str:
        """A JWT letting ``identity`` join ``room`` (a negative ``ttl`` mints an expired one)."""
        token = (
            AccessToken(self.api_key, self.api_secret)
            .with_identity(identity)
            .with_kind(kind)
            .with_ttl(ttl)
            .with_grants(
                VideoGrants(
                    room_join=True,
                    room=room,
                    can_publish=True,
                    can_subscribe=True,
                    can_publish_data=True,
                    can_update_own_metadata=True,
                    agent=kind == "agent",
                )
            )
        )
        if name is not None:
            token = token.with_name(name)
        if metadata is not None:
            token = token.with_metadata(metadata)
        if attributes:
            token = token.with_attributes(dict(attributes))
        return token.to_jwt()

    # --- observation ---------------------------------------------------------------------

    def participants(self, room: str) -> list[str]:
        """Identities currently in ``room``, in join order."""
        found = self.rooms.get(room)
        return list(found.participants) if found is not None else []

    def is_connected(self, room: str, identity: str) -> bool:
        """Whether ``identity`` is in ``room`` with its signalling socket up.

        A participant whose socket dropped is still in the room (waiting for a resume),
        but a fresh join with its token is then the same client rejoining in full, which
        livekit-client does after a failed resume: the single-use gate lets that in.
        """
        session = self._sessions.get((room, identity))
        return session is not None and session.ws is not None and not session.ws.closed

    def participant(self, room: str, identity: str) -> Participant | None:
        """The server's record of a participant (attributes, tracks, sid), if present."""
        found = self.rooms.get(room)
        return found.participants.get(identity) if found is not None else None

    async def wait_for_participants(
        self, room: str, identities: set[str] | frozenset[str], *, within: float = 10.0
    ) -> None:
        """Wait until exactly ``identities`` are in ``room``; TimeoutError after ``within`` s."""

        async def until() -> None:
            while True:
                self._changed.clear()  # before the check, so no change slips between
                if set(self.participants(room)) == set(identities):
                    return
                await self._changed.wait()

        await asyncio.wait_for(until(), within)

    # --- fault injection -----------------------------------------------------------------

    def _session(self, room: str, identity: str) -> ParticipantSession:
        session = self._sessions.get((room, identity))
        if session is None:
            raise LookupError(f"no participant {identity!r} in room {room!r}")
        return session

    async def drop_signalling(self, room: str, identity: str) -> None:
        """Close a participant's signalling socket; the SDK resumes on its own."""
        session = self._session(room, identity)
        if session.ws is not None:
            await session.ws.close()

    async def force_reconnect(self, room: str, identity: str) -> None:
        """Send Leave{action=RECONNECT}: the SDK drops everything and rejoins in full."""
        session = self._session(room, identity)
        await self._remove(
            session,
            models.DisconnectReason.SIGNAL_CLOSE,
            leave=rtc.LeaveRequest(
                can_reconnect=True,
                action=rtc.LeaveRequest.Action.RECONNECT,
                reason=models.DisconnectReason.SIGNAL_CLOSE,
            ),
        )

    async def close_room(self, room: str) -> None:
        """Disconnect everyone in ``room`` (reason ROOM_DELETED) and refuse later joins."""
        for session in [s for s in self._sessions.values() if s.room == room]:
            await self._remove(
                session,
                models.DisconnectReason.ROOM_DELETED,
                leave=rtc.LeaveRequest(
                    action=rtc.LeaveRequest.Action.DISCONNECT,
                    reason=models.DisconnectReason.ROOM_DELETED,
                ),
                tell_others=False,
            )
        self.rooms.close(room)
        self._notify()

    # --- Hub (called by the signalling layer) --------------------------------------------

    def authorize(self, token: str | None, *, resuming: bool = False) -> JoinGrant:
        """Check a token against the keys and closed rooms; raises JoinDenied.

        Expiry is not held against a resume (see :meth:`TokenChecker.check`).
        """
        return self._tokens.check(token, self.rooms.closed, allow_expired=resuming)

    async def join(self, session: ParticipantSession, params: ClientParams) -> None:
        """Admit a fresh participant: JoinResponse, subscriber offer, presence broadcast."""
        grant = session.grant
        previous = self._sessions.get((grant.room, grant.identity))
        if previous is not None:
            await self._remove(
                previous,
                models.DisconnectReason.DUPLICATE_IDENTITY,
                leave=rtc.LeaveRequest(
                    action=rtc.LeaveRequest.Action.DISCONNECT,
                    reason=models.DisconnectReason.DUPLICATE_IDENTITY,
                ),
            )
        room = self.rooms.get_or_create(grant.room)
        me = room.join(
            grant.identity,
            name=grant.name,
            kind=grant.kind,
            metadata=grant.metadata,
            attributes=grant.attributes,
            client_protocol=params.client_protocol,
            capabilities=params.capabilities,
        )
        session.participant_sid = me.sid
        self._sessions[(grant.room, grant.identity)] = session
        session.send(
            join_response(session, room.info(), me.info(), room.snapshot(exclude=me.identity))
        )
        media = ParticipantMedia(
            grant.identity,
            send=session.send,
            on_data=lambda label, data: self._relay.forward(session, label, data),
            on_track=lambda mid, cid, track: self._relay.track_arrived(session, mid, cid, track),
            on_track_ended=lambda mid: self._relay.track_ended(session, mid),
        )
        session.media = media
        media.renegotiate()
        self._relay.broadcast(room, [me.info()], exclude=me.identity)
        self._spawn(self._relay.activate(session, media))
        self._spawn(self._relay.subscribe_existing(session, media))
        self._notify()

    async def resume(self, grant: JoinGrant, params: ClientParams) -> ParticipantSession | None:
        """The live session a resuming client may take back (same room, identity and sid)."""
        session = self._sessions.get((grant.room, grant.identity))
        if session is None or session.closed or session.participant_sid != params.sid:
            return None
        return session

    async def leave(self, session: ParticipantSession, reason: models.DisconnectReason) -> None:
        """The client said Leave: remove it and tell the others."""
        await self._remove(session, reason, leave=None)

    def socket_lost(self, session: ParticipantSession) -> None:
        """Keep the participant ``resume_window`` seconds for the SDK to resume."""
        if session.closed or self._sessions.get((session.room, session.identity)) is not session:
            return
        loop = asyncio.get_running_loop()

        def expire() -> None:
            if session.ws is None and not session.closed:
                self._spawn(self._remove(session, models.DisconnectReason.SIGNAL_CLOSE, leave=None))

        session.expiry = loop.call_later(self.resume_window, expire)

    def update_metadata(
        self, session: ParticipantSession, request: rtc.UpdateParticipantMetadata
    ) -> None:
        """Merge attributes (sticky), broadcast to everyone, answer the request id."""
        room = self.rooms.get(session.room)
        reason = rtc.RequestResponse.Reason.OK
        message = ""
        if room is None:
            reason, message = rtc.RequestResponse.Reason.NOT_FOUND, "room is gone"
        else:
            try:
                me = room.update_metadata(
                    session.identity,
                    attributes=dict(request.attributes),
                    metadata=request.metadata or None,
                    name=request.name or None,
                )
            except RoomError as exc:
                reason, message = rtc.RequestResponse.Reason.NOT_FOUND, str(exc)
            else:
                self._relay.broadcast(room, [me.info()])
        session.send(
            rtc.SignalResponse(
                request_response=rtc.RequestResponse(
                    request_id=request.request_id, reason=reason, message=message
                )
            )
        )

    def add_track(self, session: ParticipantSession, request: rtc.AddTrackRequest) -> None:
        """Register an announced track and reply TrackPublishedResponse with its sid."""
        room = self.rooms.get(session.room)
        if room is None:
            return
        try:
            track = room.add_track(
                session.identity,
                cid=request.cid,
                name=request.name,
                kind=request.type,
                source=request.source,
                muted=request.muted,
                stereo=request.stereo,
            )
        except RoomError as exc:
            log.debug("add_track refused: %s", exc)
            return
        session.send(
            rtc.SignalResponse(
                track_published=rtc.TrackPublishedResponse(cid=request.cid, track=track.info())
            )
        )

    def mute(self, session: ParticipantSession, request: rtc.MuteTrackRequest) -> None:
        """Record a mute change and broadcast it."""
        room = self.rooms.get(session.room)
        if room is None:
            return
        try:
            me = room.set_muted(session.identity, request.sid, request.muted)
        except RoomError as exc:
            log.debug("mute refused: %s", exc)
            return
        self._relay.broadcast(room, [me.info()])

    def snapshot(self, session: ParticipantSession) -> list[models.ParticipantInfo]:
        """Everyone in the session's room (for a resume's ParticipantUpdate)."""
        room = self.rooms.get(session.room)
        return room.snapshot() if room is not None else []

    async def simulate(self, session: ParticipantSession, request: rtc.SimulateScenario) -> None:
        """SimulateScenario, as livekit-server plays it (the SDKs' test hooks)."""
        which = request.WhichOneof("scenario")
        room = self.rooms.get(session.room)
        log.info("simulating %s for %s", which, session.identity)
        if which == "speaker_update" and room is not None:
            sid = session.participant_sid
            self._relay.send_speakers(
                room.name, [models.SpeakerInfo(sid=sid, level=0.9, active=True)]
            )

            def quiet() -> None:
                if self.rooms.get(room.name) is room:
                    self._relay.send_speakers(
                        room.name, [models.SpeakerInfo(sid=sid, active=False)]
                    )

            asyncio.get_running_loop().call_later(max(0, request.speaker_update), quiet)
        elif which in ("node_failure", "migration"):
            # Dropped without a Leave; the SDK's resume then finds no participant and it
            # rejoins in full.
            await self._remove(session, models.DisconnectReason.MIGRATION, leave=None)
        elif which == "server_leave":
            await self._remove(
                session,
                models.DisconnectReason.SERVER_SHUTDOWN,
                leave=rtc.LeaveRequest(
                    action=rtc.LeaveRequest.Action.DISCONNECT,
                    reason=models.DisconnectReason.SERVER_SHUTDOWN,
                ),
            )
        elif which == "leave_request_full_reconnect":
            await self.force_reconnect(session.room, session.identity)
        elif which == "disconnect_signal_on_resume":
            session.close_on_resume_until = time.monotonic() + SIMULATED_RESUME_FAULT_WINDOW
        elif which == "disconnect_signal_on_resume_no_messages":
            session.refuse_resume_until = time.monotonic() + SIMULATED_RESUME_FAULT_WINDOW
            session.refused_resumes = 0
        else:
            # switch_candidate_protocol needs an ICE restart (aiortc has none);
            # subscriber_bandwidth has no meaning on loopback.
            log.debug("SimulateScenario %s is not simulated here", which)

    # --- internals -----------------------------------------------------------------------

    async def _quality_worker(self) -> None:
        # livekit-server scores every participant's connection and tells each client
        # the scores that changed; on loopback nothing is ever lost or late.
        while True:
            for session in list(self._sessions.values()):
                room = self.rooms.get(session.room)
                if room is None or session.ws is None:
                    continue
                changed = [
                    rtc.ConnectionQualityInfo(
                        participant_sid=p.sid, quality=models.ConnectionQuality.EXCELLENT, score=5.0
                    )
                    for p in room.participants.values()
                    if session.quality_sent.get(p.sid) != models.ConnectionQuality.EXCELLENT
                ]
                if changed:
                    for info in changed:
                        session.quality_sent[info.participant_sid] = info.quality
                    session.send(
                        rtc.SignalResponse(
                            connection_quality=rtc.ConnectionQualityUpdate(updates=changed)
                        )
                    )
            await asyncio.sleep(self.quality_interval)

    async def _ping_watchdog(self) -> None:
        # Like LiveKit: a client silent for longer than ping_timeout has lost its socket
        # (the SDK pings every ping_interval), so close it and let the resume window run.
        while True:
            await asyncio.sleep(self.ping_interval)
            now = time.monotonic()
            for session in list(self._sessions.values()):
                ws = session.ws
                if ws is not None and now - session.last_seen > self.ping_timeout:
                    log.info(
                        "%s sent nothing for %.0f s: closing",
                        session.identity,
                        now - session.last_seen,
                    )
                    await ws.close()

    def _notify(self) -> None:
        self._changed.set()

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._tasks.spawn(coro)

    async def _remove(
        self,
        session: ParticipantSession,
        reason: models.DisconnectReason,
        *,
        leave: rtc.LeaveRequest | None,
        tell_others: bool = True,
    ) -> None:
        key = (session.room, session.identity)
        if self._sessions.get(key) is session:
            del self._sessions[key]
        room = self.rooms.get(session.room)
        if room is not None and room.participants.get(session.identity) is not None:
            if room.participants[session.identity].sid == session.participant_sid:
                gone = room.leave(session.identity, reason)
                if gone is not None:
                    for track_sid in list(gone.tracks):
                        self._relay.unpublish(session.room, track_sid)
                    if tell_others:
                        self._relay.broadcast(room, [gone.info()])
            self.rooms.discard_if_empty(session.room)
        await session.close_with(leave)
        if session.media is not None:
            await session.media.close()
        self._notify()
