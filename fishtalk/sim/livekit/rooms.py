"""Room and participant state for the loopback LiveKit server, free of any IO.

Everything here is plain data plus the rules the LiveKit protocol puts on it: ids carry
the prefixes the SDK's Rust core insists on (``RM_``, ``PA_``, ``TR_``), attribute updates
merge (an empty value deletes a key) and bump the participant's version, and every change
is described as protobuf ``ParticipantInfo`` snapshots that the signalling layer delivers.
Keeping sockets out of this module lets the room rules be tested without a network.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from livekit.protocol import models

SID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def new_sid(prefix: str) -> str:
    """Return a fresh LiveKit-style id such as ``PA_x7Hk2...`` (prefix plus 12 characters)."""
    return prefix + "".join(secrets.choice(SID_ALPHABET) for _ in range(12))


class RoomError(Exception):
    """A request the room rules refuse (unknown participant, unknown track)."""


@dataclass
class Track:
    """A track a participant announced with ``AddTrackRequest``."""

    sid: str
    cid: str
    name: str
    kind: models.TrackType
    source: models.TrackSource
    muted: bool = False
    mid: str = ""
    stereo: bool = False
    published: bool = False
    """True once its media actually arrived at the server (then subscribers get it)."""

    def info(self) -> models.TrackInfo:
        """The protobuf description other participants see."""
        return models.TrackInfo(
            sid=self.sid,
            type=self.kind,
            name=self.name,
            muted=self.muted,
            source=self.source,
            mid=self.mid,
            mime_type="audio/opus" if self.kind == models.TrackType.AUDIO else "",
            stereo=self.stereo,
        )


@dataclass
class Participant:
    """One participant of a room, as the server tracks it."""

    identity: str
    sid: str
    name: str = ""
    kind: models.ParticipantInfo.Kind = models.ParticipantInfo.Kind.STANDARD
    metadata: str = ""
    attributes: dict[str, str] = field(default_factory=dict)
    version: int = 1
    joined_at: float = field(default_factory=time.time)
    client_protocol: int = 0
    capabilities: tuple[models.ClientInfo.Capability, ...] = ()
    state: models.ParticipantInfo.State = models.ParticipantInfo.State.JOINED
    tracks: dict[str, Track] = field(default_factory=dict)
    disconnect_reason: models.DisconnectReason = models.DisconnectReason.UNKNOWN_REASON

    @property
    def is_agent(self) -> bool:
        """True for participants whose token declared ``kind: agent``."""
        return self.kind == models.ParticipantInfo.Kind.AGENT

    def info(self) -> models.ParticipantInfo:
        """The protobuf snapshot of this participant (what the SDK receives)."""
        return models.ParticipantInfo(
            sid=self.sid,
            identity=self.identity,
            state=self.state,
            tracks=[t.info() for t in self.tracks.values() if t.published],
            metadata=self.metadata,
            joined_at=int(self.joined_at),
            joined_at_ms=int(self.joined_at * 1000),
            name=self.name,
            version=self.version,
            permission=models.ParticipantPermission(
                can_subscribe=True,
                can_publish=True,
                can_publish_data=True,
                can_update_metadata=True,
                agent=self.is_agent,
            ),
            is_publisher=any(t.published for t in self.tracks.values()),
            kind=self.kind,
            attributes=self.attributes,
            disconnect_reason=self.disconnect_reason,
            client_protocol=self.client_protocol,
            capabilities=list(self.capabilities),
        )

    def track_by_cid(self, cid: str) -> Track | None:
        """The track announced under client id ``cid``, if any."""
        for track in self.tracks.values():
            if track.cid == cid:
                return track
        return None


@dataclass
class Room:
    """A room: its participants by identity, in join order."""

    name: str
    sid: str = field(default_factory=lambda: new_sid("RM_"))
    created_at: float = field(default_factory=time.time)
    participants: dict[str, Participant] = field(default_factory=dict)

    def info(self) -> models.Room:
        """The protobuf description sent in JoinResponse."""
        return models.Room(
            sid=self.sid,
            name=self.name,
            empty_timeout=300,
            departure_timeout=20,
            creation_time=int(self.created_at),
            creation_time_ms=int(self.created_at * 1000),
            num_participants=len(self.participants),
            num_publishers=sum(1 for p in self.participants.values() if p.tracks),
        )

    def join(
        self,
        identity: str,
        *,
        name: str = "",
        kind: models.ParticipantInfo.Kind = models.ParticipantInfo.Kind.STANDARD,
        metadata: str = "",
        attributes: Mapping[str, str] | None = None,
        client_protocol: int = 0,
        capabilities: tuple[models.ClientInfo.Capability, ...] = (),
    ) -> Participant:
        """Add a participant with a fresh sid (an existing one with that identity is replaced).

        The caller removes the old one first when it needs to tell others; this method
        only keeps the room consistent.
        """
        participant = Participant(
            identity=identity,
            sid=new_sid("PA_"),
            name=name,
            kind=kind,
            metadata=metadata,
            attributes={k: v for k, v in (attributes or {}).items() if v},
            client_protocol=client_protocol,
            capabilities=capabilities,
        )
        self.participants.pop(identity, None)
        self.participants[identity] = participant
        return participant

    def get(self, identity: str) -> Participant:
        """The participant with this identity; RoomError when absent."""
        try:
            return self.participants[identity]
        except KeyError:
            raise RoomError(f"no participant {identity!r} in room {self.name!r}") from None

    def leave(
        self,
        identity: str,
        reason: models.DisconnectReason = models.DisconnectReason.CLIENT_INITIATED,
    ) -> Participant | None:
        """Remove a participant; returns it marked DISCONNECTED (for the broadcast)."""
        participant = self.participants.pop(identity, None)
        if participant is None:
            return None
        participant.state = models.ParticipantInfo.State.DISCONNECTED
        participant.disconnect_reason = reason
        participant.version += 1
        return participant

    def others(self, identity: str) -> Iterator[Participant]:
        """Every participant except ``identity``."""
        return (p for p in self.participants.values() if p.identity != identity)

    def snapshot(self, *, exclude: str | None = None) -> list[models.ParticipantInfo]:
        """ParticipantInfo for everyone (but ``exclude``), as late joiners receive it."""
        return [p.info() for p in self.participants.values() if p.identity != exclude]

    def update_metadata(
        self,
        identity: str,
        *,
        attributes: Mapping[str, str] | None = None,
        metadata: str | None = None,
        name: str | None = None,
    ) -> Participant:
        """Merge attributes (empty value deletes), set metadata/name, bump the version."""
        participant = self.get(identity)
        for key, value in (attributes or {}).items():
            if value:
                participant.attributes[key] = value
            else:
                participant.attributes.pop(key, None)
        if metadata is not None:
            participant.metadata = metadata
        if name is not None:
            participant.name = name
        participant.version += 1
        return participant

    def mark_active(self, identity: str) -> Participant:
        """Mark a participant ACTIVE (its peer connection is up) and bump its version."""
        participant = self.get(identity)
        participant.state = models.ParticipantInfo.State.ACTIVE
        participant.version += 1
        return participant

    def add_track(
        self,
        identity: str,
        *,
        cid: str,
        name: str,
        kind: models.TrackType,
        source: models.TrackSource,
        muted: bool = False,
        stereo: bool = False,
    ) -> Track:
        """Register an announced track (not yet published: its media has not arrived)."""
        participant = self.get(identity)
        existing = participant.track_by_cid(cid)
        if existing is not None:
            return existing
        track = Track(
            sid=new_sid("TR_"),
            cid=cid,
            name=name,
            kind=kind,
            source=source,
            muted=muted,
            stereo=stereo,
        )
        participant.tracks[track.sid] = track
        return track

    def publish_track(self, identity: str, track_sid: str, *, mid: str = "") -> Participant:
        """Mark a track published (its media arrived); bumps the participant's version."""
        participant = self.get(identity)
        track = participant.tracks.get(track_sid)
        if track is None:
            raise RoomError(f"no track {track_sid!r} on {identity!r}")
        track.published = True
        if mid:
            track.mid = mid
        participant.version += 1
        return participant

    def remove_track(self, identity: str, track_sid: str) -> Participant:
        """Forget an unpublished track; bumps the participant's version."""
        participant = self.get(identity)
        if participant.tracks.pop(track_sid, None) is None:
            raise RoomError(f"no track {track_sid!r} on {identity!r}")
        participant.version += 1
        return participant

    def set_muted(self, identity: str, track_sid: str, muted: bool) -> Participant:
        """Record a mute change; bumps the participant's version."""
        participant = self.get(identity)
        track = participant.tracks.get(track_sid)
        if track is None:
            raise RoomError(f"no track {track_sid!r} on {identity!r}")
        track.muted = muted
        participant.version += 1
        return participant


@dataclass
class RoomRegistry:
    """All rooms of a server, created on first join; closed rooms refuse new joins."""

    rooms: dict[str, Room] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)

    def get_or_create(self, name: str) -> Room:
        """The room called ``name``, created if needed."""
        room = self.rooms.get(name)
        if room is None:
            room = self.rooms[name] = Room(name=name)
        return room

    def get(self, name: str) -> Room | None:
        """The room called ``name`` if it exists."""
        return self.rooms.get(name)

    def close(self, name: str) -> Room | None:
        """Forget a room and refuse any later join to that name."""
        self.closed.add(name)
        return self.rooms.pop(name, None)

    def discard_if_empty(self, name: str) -> None:
        """Drop a room nobody is in any more (it is recreated on the next join)."""
        room = self.rooms.get(name)
        if room is not None and not room.participants:
            del self.rooms[name]
