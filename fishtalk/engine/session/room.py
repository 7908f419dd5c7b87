"""The session's room: SDK callbacks turned into reducer inputs, the connect, reconnects
(bounded by the session's own budget) and the teardown.

Every handler is registered before connecting. SDK callbacks are sync: they feed inputs or
start tasks the session owns. A server that goes away mid-call is the SDK's to notice: it
reports ``reconnecting``, tries to resume and then to rejoin (livekit 1.2.1: ten attempts a
few seconds apart, about 25 s in all), and reports ``disconnected`` when it gives up. The
session bounds that wait by its own reconnect budget (:attr:`Timeouts.reconnect`, 20 s): a
link still down by then ends the call with ``connection_lost``. Nothing at teardown waits on
a link that is down.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from fishtalk.core import conversation as conv
from fishtalk.core.protocol import (
    ATTR_AGENT_STATE,
    ATTR_SEGMENT_ID,
    ATTR_TRANSCRIPTION_FINAL,
    TOPIC_AGENT_EVENT,
    TOPIC_TRANSCRIPTION,
    ProtocolError,
    decode_agent_event,
    is_final,
)
from fishtalk.core.protocol.livekit_agents import AgentProtocol, detect_protocol
from fishtalk.engine import observe
from fishtalk.engine.session.media import Media
from fishtalk.engine.session.plumbing import one_line

if TYPE_CHECKING:
    from livekit import rtc

    from fishtalk.engine.api import LiveKitGrant

_log = logging.getLogger("fishtalk.engine.session")

SEND_DRAIN_TIMEOUT: Final = 5.0
"""At teardown, how long queued client events (``user.hangup``) get to leave. A hangup that
is the call's first packet (Ctrl-C in a text-only call before anything was typed) first
opens the SDK's publisher connection: 0.3-0.6 s on a quiet host, over 2 s on a loaded
one, where CI saw the hangup dropped. The wait ends as soon as the queue is empty."""
DISCONNECT_TIMEOUT: Final = 5.0
"""At teardown, how long the room disconnect may take."""
PREVIEW_BYTES: Final = 200
"""How much of a malformed packet is kept for the debug view."""
RECONNECT_GAVE_UP: Final = "RECONNECT_BUDGET_SPENT"
"""The disconnect reason the session reports when its reconnect budget ran out."""
LEAVE_SETTLE: Final = 0.3
"""Seconds to wait before believing a participant left (it may be a reconnect starting)."""
RTT_FIRST: Final = 1.0
"""Seconds after connecting before the first network round trip is read."""
RTT_PERIOD: Final = 5.0
"""Seconds between reads of the SDK's RTC stats for the network round trip."""
RTT_TIMEOUT: Final = 2.0
"""How long one read of the RTC stats may take before it is given up."""
CONNECT_SETTLE: Final = 60.0
"""After teardown, how long a room connect still in flight gets to finish before the room
is disconnected (a connect is never cancelled: see :meth:`Room.wait_closed`)."""

_SETTLING: set[asyncio.Task[None]] = set()
"""Connects in flight handed over at teardown (strong references until they settle)."""


class Room(Media):
    """The room side of a session: SDK callbacks, connect, reconnect, teardown."""

    def _init_room(self, protocol: AgentProtocol | None = None) -> None:
        self._protocol: AgentProtocol | None = protocol
        """What the agent speaks; None until an agent participant shows it."""
        self._protocol_given = protocol is not None
        self._room: rtc.Room | None = None
        self._reconnecting = False
        self._reconnect_deadline: asyncio.TimerHandle | None = None
        self._deferred: set[asyncio.TimerHandle] = set()
        self._connecting: asyncio.Future[None] | None = None
        """The room connect, while in flight (never cancelled)."""
        self._settling: asyncio.Task[None] | None = None
        """Lets a connect still in flight at teardown finish, then disconnects."""
        self._joined = False
        """Whether ``Connected`` was fed (once, before any room event: see :meth:`_wire`)."""

    # --- connect -------------------------------------------------------------------

    async def _connect(self, room: rtc.Room, grant: LiveKitGrant) -> bool:
        from livekit import rtc

        url = grant.livekit_url
        host = urlsplit(url).netloc or url
        timeouts = self.timeouts
        options = rtc.RoomOptions(auto_subscribe=True, connect_timeout=timeouts.signal_attempt)
        detail: str | None = None
        # The connect is never cancelled, not by the timeout nor by a hang-up meanwhile: a
        # cancelled room.connect strands the SDK's handshake (leaked sockets, then an FFI
        # panic that kills the process). It runs in a task of its own; a timeout stops the
        # waiting only, and teardown lets the connect finish before disconnecting.
        connecting = asyncio.ensure_future(
            room.connect(url, grant.token.get_secret_value(), options)
        )
        self._connecting = connecting
        try:
            done, _ = await asyncio.wait({connecting}, timeout=timeouts.connect)
            if not done:
                raise TimeoutError
            connecting.result()
        except TimeoutError:
            detail = (
                f"Could not establish a WebRTC connection to {host} within "
                f"{timeouts.connect:g} s (no usable network path; WebRTC ignores loopback-only "
                "hosts)."
            )
        except rtc.ConnectError as exc:
            detail = f"Could not connect to {host}: {one_line(exc.message)}."
        except Exception as exc:
            detail = f"Could not connect to {host}: {one_line(str(exc)) or type(exc).__name__}."
        if detail is None:
            return True
        _log.info("connect failed: %s", detail)
        self._feed(conv.ConnectFailed(at=self._clock(), detail=detail))
        return False

    def _wire(self, room: rtc.Room) -> None:
        """Register every handler. The SDK starts dispatching room events before
        ``room.connect`` returns to its caller, so each handler first makes sure the join
        was fed: ``connected`` always comes before what the agent did meanwhile."""

        def first(handler: Callable[..., None]) -> Callable[..., None]:
            def handle(*args: Any) -> None:
                self._on_joined(room)
                handler(*args)

            return handle

        room.on("data_received", first(self._on_data))
        room.register_text_stream_handler(TOPIC_TRANSCRIPTION, first(self._on_text_stream))
        room.on("participant_attributes_changed", first(self._on_attributes))
        room.on("participant_connected", first(self._participant_joined))
        room.on("participant_disconnected", first(self._on_participant_left))
        room.on("track_subscribed", first(self._on_track_subscribed))
        room.on("track_unsubscribed", first(self._on_track_unsubscribed))
        room.on("reconnecting", first(self._on_reconnecting))
        room.on("reconnected", first(self._on_reconnected))
        room.on("disconnected", first(self._on_disconnected))

    def _on_joined(self, room: rtc.Room) -> None:
        """The room is joined: feed ``Connected`` and the participants already there (once;
        not for a connect that was given up on, which ended the session)."""
        if self._joined or self._state.status != "connecting":
            return
        self._joined = True
        assert self._outbox is not None  # made by run()
        self._outbox.link_up.set()
        # Heard marks come from an output device's taps (media): without them no reply is heard.
        audio_out = self._taps is not None
        identity = room.local_participant.identity
        self._feed(conv.Connected(local_identity=identity, at=self._clock(), audio_out=audio_out))
        for participant in list(room.remote_participants.values()):
            self._participant_joined(participant)

    def _on_data(self, packet: rtc.DataPacket) -> None:
        at = self._clock()
        if self._observers:
            sender = packet.participant.identity if packet.participant is not None else None
            self._observe(observe.PacketIn(packet.topic, packet.data, sender, at))
        if packet.topic != TOPIC_AGENT_EVENT:
            return
        try:
            event = decode_agent_event(packet.data)
        except ProtocolError as exc:
            preview = packet.data[:PREVIEW_BYTES].decode("utf-8", "replace")
            _log.debug("malformed agent event (%s): %r", exc, preview)
            self._feed(conv.MalformedAgentEvent(error=str(exc), preview=preview, at=at))
            return
        if event.type not in ("client_tool.call",) and _log.isEnabledFor(logging.DEBUG):
            _log.debug("agent event %s", event.type)
        self._feed(conv.AgentEventReceived(event=event, at=at))

    def _on_text_stream(self, reader: rtc.TextStreamReader, identity: str) -> None:
        self._spawn(self._read_transcript(reader, identity), "transcript")

    async def _read_transcript(self, reader: rtc.TextStreamReader, identity: str) -> None:
        from livekit import rtc

        info = reader.info
        attributes = dict(info.attributes or {})
        stream_id = info.stream_id
        segment_id = attributes.get(ATTR_SEGMENT_ID) or stream_id
        if self._observers:
            self._observe(
                observe.StreamAttributes(stream_id, identity, attributes, False, self._clock())
            )
        self._feed(
            conv.TranscriptStreamOpened(
                stream_id=stream_id,
                segment_id=segment_id,
                identity=identity,
                final=is_final(attributes),
                at=self._clock(),
            )
        )
        try:
            async for chunk in reader:
                self._feed(
                    conv.TranscriptStreamChunk(
                        stream_id=stream_id, segment_id=segment_id, text=chunk, at=self._clock()
                    )
                )
        except rtc.StreamError as exc:
            _log.debug("transcript stream %s ended abnormally: %s", stream_id, exc)
        finally:
            reader.close()
        trailer = reader.info.attributes or {}
        if self._observers and trailer:
            self._observe(
                observe.StreamAttributes(stream_id, identity, dict(trailer), True, self._clock())
            )
        final = is_final(trailer) if ATTR_TRANSCRIPTION_FINAL in trailer else None
        self._feed(
            conv.TranscriptStreamClosed(
                stream_id=stream_id, segment_id=segment_id, at=self._clock(), final=final
            )
        )

    def _on_attributes(self, changed: dict[str, str], participant: rtc.Participant) -> None:
        self._feed(
            conv.AttributesChanged(
                identity=participant.identity, changed=dict(changed), at=self._clock()
            )
        )

    def _participant_joined(self, participant: rtc.RemoteParticipant) -> None:
        is_agent = _is_agent(participant)
        if is_agent and not self._protocol_given:
            self._protocol = detect_protocol(participant.identity)
        self._feed(
            conv.ParticipantJoined(
                identity=participant.identity,
                at=self._clock(),
                is_agent=is_agent,
                attributes=participant.attributes,
            )
        )

    def _on_participant_left(self, participant: rtc.RemoteParticipant) -> None:
        if self._reconnecting:
            # A rejoin can report everyone as gone; who is really left is checked (and
            # reported) once the transport is back.
            _log.debug("participant %s left while reconnecting", participant.identity)
            return
        # A full rejoin (server-requested reconnect) reports the agent as gone just before
        # it reports reconnecting, in the same batch: confirm the departure a moment later.
        identity, at = participant.identity, self._clock()
        if self._loop is None:
            return
        handle = self._loop.call_later(LEAVE_SETTLE, lambda: self._confirm_left(identity, at))
        self._deferred.add(handle)

    def _confirm_left(self, identity: str, at: float) -> None:
        if self._loop is not None:
            now = self._loop.time()
            self._deferred = {h for h in self._deferred if h.when() > now}
        room = self._room
        if self._reconnecting or room is None or identity in room.remote_participants:
            return  # the reconnect (or the participant's return) settles it
        self._feed(conv.ParticipantLeft(identity=identity, at=at))

    def _on_reconnecting(self) -> None:
        self._reconnecting = True
        if self._outbox is not None:
            self._outbox.link_up.clear()
        if self._loop is not None and self._reconnect_deadline is None:
            self._reconnect_deadline = self._loop.call_later(
                self.timeouts.reconnect, self._reconnect_expired
            )
        self._feed(conv.Reconnecting(at=self._clock()))

    def _stop_reconnect_deadline(self) -> None:
        if self._reconnect_deadline is not None:
            self._reconnect_deadline.cancel()
            self._reconnect_deadline = None

    def _reconnect_expired(self) -> None:
        self._reconnect_deadline = None
        if not self._reconnecting or self._state.ended:
            return
        _log.info("the link did not come back within %g s", self.timeouts.reconnect)
        self._reconnecting = False
        self._feed(conv.Disconnected(at=self._clock(), reason=RECONNECT_GAVE_UP))

    def _on_reconnected(self) -> None:
        self._reconnecting = False
        self._stop_reconnect_deadline()
        if self._outbox is not None:
            self._outbox.link_up.set()
        room = self._room
        if room is None:
            return
        remotes = list(room.remote_participants.values())
        self._feed(
            conv.Reconnected(at=self._clock(), remote_identities=tuple(p.identity for p in remotes))
        )
        # No replay: the sticky agent state is the one thing we can (and must) read again.
        for participant in remotes:
            self._participant_joined(participant)
            if ATTR_AGENT_STATE in participant.attributes:
                self._on_attributes(
                    {ATTR_AGENT_STATE: participant.attributes[ATTR_AGENT_STATE]}, participant
                )

    def _on_disconnected(self, reason: int) -> None:
        self._reconnecting = False
        self._stop_reconnect_deadline()
        name = _disconnect_reason_name(reason)
        _log.info("room disconnected (%s)", name)
        self._feed(conv.Disconnected(at=self._clock(), reason=name))

    async def _poll_rtt(self, room: rtc.Room) -> None:
        await asyncio.sleep(RTT_FIRST)
        while True:
            if not self._reconnecting:
                rtt = await _read_rtt(room)
                if rtt is not None:
                    self._mark("rtt", self._clock(), rtt)
            await asyncio.sleep(RTT_PERIOD)

    async def _shutdown(self) -> None:
        """Release everything the session holds; safe to call twice."""
        self._cancel_timers()
        for handle in self._deferred:
            handle.cancel()
        self._deferred.clear()
        self._stop_reconnect_deadline()
        self._stop_media()
        if self._outbox is not None and self._room is not None:
            # Let user.hangup (and anything queued before it) leave before disconnecting.
            await self._outbox.drain(SEND_DRAIN_TIMEOUT)
        self._tools.cancel_all()
        await self._tasks.cancel_all()
        room, self._room = self._room, None
        connecting, self._connecting = self._connecting, None
        if connecting is not None and not connecting.done() and room is not None:
            # Never cancelled (see wait_closed): a task of its own lets it finish, then
            # disconnects, so a connect that timed out still fails fast.
            task = asyncio.ensure_future(self._settle_connect(connecting, room))
            self._settling = task
            _SETTLING.add(task)
            task.add_done_callback(_SETTLING.discard)
            room = None
        elif connecting is not None and connecting.done() and not connecting.cancelled():
            connecting.exception()  # retrieved: already reported through the end reason
        if room is not None:
            try:
                async with asyncio.timeout(DISCONNECT_TIMEOUT):
                    await room.disconnect()
            except Exception as exc:
                _log.info("room disconnect did not complete cleanly: %s", exc)
        await self._close_media()

    async def _settle_connect(self, connecting: asyncio.Future[None], room: rtc.Room) -> None:
        """Let a room connect still in flight finish (bounded), then disconnect the room."""
        _log.info("the room connect is still in flight; disconnecting once it settles")
        await asyncio.wait({connecting}, timeout=CONNECT_SETTLE)
        if not connecting.done():
            _log.warning("the room connect did not settle within %g s", CONNECT_SETTLE)
            return
        if not connecting.cancelled():
            connecting.exception()  # retrieved: the session already ended for it
        try:
            async with asyncio.timeout(DISCONNECT_TIMEOUT):
                await room.disconnect()
        except Exception as exc:
            _log.info("room disconnect did not complete cleanly: %s", exc)

    async def wait_closed(self) -> None:
        """Wait until nothing the session started is still running, after ``run()``.

        ``run()`` returns as soon as the session has ended and been torn down, with one
        exception: a room connect still in flight (it timed out, or the user hung up while
        it ran) is never cancelled, because a cancelled ``room.connect`` strands the SDK's
        handshake (leaked sockets, then a native panic that kills the process). It is left
        to finish in a task of its own, which then disconnects the room; this waits for
        that (at most :data:`CONNECT_SETTLE` seconds). A library user that must leave
        nothing behind (``AgentSession.close()``) awaits it; a process about to exit need
        not."""
        task = self._settling
        if task is not None:
            await asyncio.shield(task)


def _is_agent(participant: rtc.RemoteParticipant) -> bool:
    from livekit import rtc

    return (
        participant.kind == rtc.ParticipantKind.PARTICIPANT_KIND_AGENT
        or ATTR_AGENT_STATE in participant.attributes
    )


def _disconnect_reason_name(reason: int) -> str | None:
    from livekit import rtc

    try:
        return rtc.DisconnectReason.Name(reason)  # type: ignore[arg-type]  # a plain int
    except ValueError:
        return None


async def _read_rtt(room: rtc.Room) -> float | None:
    """The network round trip (seconds) of the connection's selected candidate pair, from
    the SDK's RTC stats (the subscriber's, which carries the agent's audio, first); None
    when no pair has measured one yet or the stats could not be read in time."""
    try:
        async with asyncio.timeout(RTT_TIMEOUT):
            stats = await room.get_rtc_stats()
    except Exception as exc:  # a room going away, a slow FFI answer: try again later
        _log.debug("rtc stats not read: %s", exc)
        return None
    for reports in (stats.subscriber_stats, stats.publisher_stats):
        fallback: float | None = None
        for report in reports:
            if report.WhichOneof("stats") != "candidate_pair":
                continue
            pair = report.candidate_pair.candidate_pair
            rtt = float(pair.current_round_trip_time)
            if rtt <= 0.0:
                continue
            if pair.nominated:
                return rtt
            fallback = rtt if fallback is None else min(fallback, rtt)
        if fallback is not None:
            return fallback
    return None


__all__ = ["RECONNECT_GAVE_UP", "Room"]
