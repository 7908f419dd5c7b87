"""Forwarding between a room's participants: published tracks, data packets, speakers.

A published track is relayed to every other participant once their subscriber connection
is up, and the publisher is told (``TrackSubscribed``); a data packet goes to its
destinations, stamped with the sender (an agent may speak for another participant); the
level of relayed audio drives ``speakers_changed`` like livekit-server does. Presence
updates go to the room through :meth:`Relay.broadcast`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final

from aiortc import MediaStreamTrack
from livekit.protocol import models, rtc

from fishtalk.sim.livekit.media import LOSSY, RELIABLE, ParticipantMedia, TrackRelay, stream_id
from fishtalk.sim.livekit.rooms import Room, RoomRegistry
from fishtalk.sim.livekit.signalling import ParticipantSession

log = logging.getLogger(__name__)

SPEAKING_LEVEL: Final = 0.01
"""Linear RMS level (about -40 dBFS) above which a relayed audio frame counts as speech."""
SPEAKING_HOLD: Final = 0.6
"""Seconds of quieter frames before a speaker is no longer active."""


@dataclass
class Speaker:
    """One participant's speaking state in a room."""

    active: bool = False
    level: float = 0.0
    last_loud: float = 0.0


@dataclass
class PublishedTrack:
    """A track being relayed from its publisher."""

    room: str
    publisher: str
    publisher_sid: str
    track_sid: str
    relay: TrackRelay


class Relay:
    """Tracks, data and speakers between the participants of :class:`SimServer`'s rooms.

    ``sessions`` is the server's own table of live sessions (shared, not copied);
    ``spawn`` runs a coroutine as one of the server's tasks.
    """

    def __init__(
        self,
        rooms: RoomRegistry,
        sessions: dict[tuple[str, str], ParticipantSession],
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
    ) -> None:
        self.rooms = rooms
        self._sessions = sessions
        self._spawn = spawn
        self._published: dict[tuple[str, str], PublishedTrack] = {}
        self._speakers: dict[tuple[str, str], Speaker] = {}

    def send_speakers(self, room: str, speakers: list[models.SpeakerInfo]) -> None:
        message = rtc.SignalResponse(speakers_changed=rtc.SpeakersChanged(speakers=speakers))
        for session in self.sessions_in(room):
            session.send(message)

    def heard_level(self, room: str, participant_sid: str, level: float) -> None:
        speaker = self._speakers.setdefault((room, participant_sid), Speaker())
        now = time.monotonic()
        speaker.level = level
        if level >= SPEAKING_LEVEL:
            speaker.last_loud = now
            if not speaker.active:
                speaker.active = True
                info = models.SpeakerInfo(sid=participant_sid, level=level, active=True)
                self.send_speakers(room, [info])
        elif speaker.active and now - speaker.last_loud > SPEAKING_HOLD:
            self.speaker_stopped(room, participant_sid)

    def speaker_stopped(self, room: str, participant_sid: str) -> None:
        speaker = self._speakers.pop((room, participant_sid), None)
        if speaker is not None and speaker.active:
            self.send_speakers(room, [models.SpeakerInfo(sid=participant_sid, active=False)])

    def sessions_in(self, room: str) -> list[ParticipantSession]:
        return [s for s in self._sessions.values() if s.room == room]

    def broadcast(
        self, room: Room, infos: list[models.ParticipantInfo], *, exclude: str | None = None
    ) -> None:
        message = rtc.SignalResponse(update=rtc.ParticipantUpdate(participants=infos))
        for session in self.sessions_in(room.name):
            if session.identity != exclude:
                session.send(message)

    def unpublish(self, room: str, track_sid: str) -> None:
        published = self._published.pop((room, track_sid), None)
        if published is None:
            return
        self.speaker_stopped(room, published.publisher_sid)
        for other in self.sessions_in(room):
            if other.media is not None:
                other.media.unsubscribe(track_sid)

    def forward(self, session: ParticipantSession, label: str, data: bytes) -> None:
        if label not in (RELIABLE, LOSSY):
            return
        room = self.rooms.get(session.room)
        sender = room.participants.get(session.identity) if room is not None else None
        if room is None or sender is None or sender.sid != session.participant_sid:
            return
        packet = models.DataPacket()
        try:
            packet.ParseFromString(data)
        except Exception:  # protobuf raises DecodeError; garbage is dropped like LiveKit does
            log.debug("dropping an undecodable data packet from %s", sender.identity)
            return
        # Agents may speak for another participant (an agent publishes the user's
        # transcript under the user's identity); everyone else is stamped as themselves.
        if label == RELIABLE and packet.sequence > session.last_reliable_seq:
            session.last_reliable_seq = packet.sequence
        claimed = packet.participant_identity
        identity = claimed if sender.is_agent and claimed in room.participants else sender.identity
        packet.participant_identity = identity
        packet.participant_sid = sender.sid
        if packet.HasField("user"):
            packet.user.participant_identity = identity
            packet.user.participant_sid = sender.sid
        targets = set(packet.destination_identities)
        if packet.HasField("user"):
            targets.update(packet.user.destination_identities)
        payload = packet.SerializeToString()
        for other in self.sessions_in(room.name):
            if other.identity == sender.identity or other.media is None:
                continue
            if targets and other.identity not in targets:
                continue
            other.media.send_data(label, payload)

    def track_arrived(
        self, session: ParticipantSession, mid: str, cid: str, track: MediaStreamTrack
    ) -> None:
        room = self.rooms.get(session.room)
        if room is None:
            return
        me = room.participants.get(session.identity)
        if me is None or me.sid != session.participant_sid:
            return
        announced = me.track_by_cid(cid) if cid else None
        if announced is None:
            # Fall back to the only announced audio track still waiting for its media.
            waiting = [
                t
                for t in me.tracks.values()
                if not t.published and t.kind == models.TrackType.AUDIO
            ]
            if len(waiting) != 1:
                log.warning("%s sent media for an unannounced track (mid %s)", me.identity, mid)
                return
            announced = waiting[0]
        room.publish_track(me.identity, announced.sid, mid=mid)
        room_name, sid = room.name, me.sid

        def level(value: float) -> None:
            self.heard_level(room_name, sid, value)

        on_level = level if announced.kind == models.TrackType.AUDIO else None
        published = PublishedTrack(
            room=room.name,
            publisher=me.identity,
            publisher_sid=me.sid,
            track_sid=announced.sid,
            relay=TrackRelay(track, on_level=on_level),
        )
        self._published[(room.name, announced.sid)] = published
        self.broadcast(room, [me.info()])
        for other in self.sessions_in(room.name):
            if other.identity != me.identity and other.media is not None:
                self._spawn(self._subscribe_when_ready(other.media, published))

    def track_ended(self, session: ParticipantSession, mid: str) -> None:
        room = self.rooms.get(session.room)
        me = room.participants.get(session.identity) if room is not None else None
        if room is None or me is None or me.sid != session.participant_sid:
            return
        for track in list(me.tracks.values()):
            if track.mid == mid and track.published:
                self.unpublish(room.name, track.sid)
                room.remove_track(me.identity, track.sid)
                self.broadcast(room, [me.info()])

    async def _subscribe_when_ready(
        self, media: ParticipantMedia, published: PublishedTrack
    ) -> None:
        await media.subscriber_connected.wait()
        if media.closed or (published.room, published.track_sid) not in self._published:
            return
        media.subscribe(
            published.track_sid,
            published.relay.proxy(),
            stream_id(published.publisher_sid, published.track_sid),
            published.track_sid,
        )
        # livekit-server tells the publisher that someone subscribed (TrackSubscribed):
        # the SDK's wait_for_subscription() resolves on it, and livekit-agents' RoomIO
        # plays no audio (nor paces its transcript) before it does.
        for other in self.sessions_in(published.room):
            if other.identity == published.publisher:
                other.send(
                    rtc.SignalResponse(
                        track_subscribed=rtc.TrackSubscribed(track_sid=published.track_sid)
                    )
                )

    async def activate(self, session: ParticipantSession, media: ParticipantMedia) -> None:
        # LiveKit marks a participant ACTIVE once its media path is up (the SDK then
        # raises participant_active: "ready to receive data").
        await media.subscriber_connected.wait()
        room = self.rooms.get(session.room)
        me = room.participants.get(session.identity) if room is not None else None
        if media.closed or room is None or me is None or me.sid != session.participant_sid:
            return
        room.mark_active(me.identity)
        self.broadcast(room, [me.info()])

    async def subscribe_existing(
        self, session: ParticipantSession, media: ParticipantMedia
    ) -> None:
        await media.subscriber_connected.wait()
        if media.closed:
            return
        for published in list(self._published.values()):
            if published.room == session.room and published.publisher != session.identity:
                await self._subscribe_when_ready(media, published)
