"""Room rules of the loopback server, without sockets or WebRTC."""

from __future__ import annotations

import pytest
from livekit.protocol import models

from fishtalk.sim.livekit.rooms import Room, RoomError, RoomRegistry, new_sid
from fishtalk.sim.livekit.signalling import ClientParams


def test_sids_carry_the_prefixes_the_sdk_requires() -> None:
    room = Room(name="r")
    participant = room.join("alice")
    track = room.add_track(
        "alice",
        cid="cid-1",
        name="mic",
        kind=models.TrackType.AUDIO,
        source=models.TrackSource.MICROPHONE,
    )
    assert room.sid.startswith("RM_")
    assert participant.sid.startswith("PA_")
    assert track.sid.startswith("TR_")
    assert len({new_sid("PA_") for _ in range(100)}) == 100


def test_attribute_updates_merge_delete_and_bump_the_version() -> None:
    room = Room(name="r")
    alice = room.join("alice", attributes={"a": "1", "empty": ""})
    assert alice.attributes == {"a": "1"}
    version = alice.version

    room.update_metadata("alice", attributes={"b": "2"})
    room.update_metadata("alice", attributes={"a": ""}, metadata="meta", name="Alice")

    info = alice.info()
    assert dict(info.attributes) == {"b": "2"}
    assert (info.metadata, info.name) == ("meta", "Alice")
    assert info.version == version + 2


def test_late_joiner_snapshot_holds_current_attributes_and_published_tracks() -> None:
    room = Room(name="r")
    room.join("agent", kind=models.ParticipantInfo.Kind.AGENT)
    room.update_metadata("agent", attributes={"lk.agent.state": "listening"})
    track = room.add_track(
        "agent",
        cid="c",
        name="voice",
        kind=models.TrackType.AUDIO,
        source=models.TrackSource.MICROPHONE,
    )
    # Announced but no media yet: others must not see it (the SDK would wait for media).
    assert list(room.snapshot()[0].tracks) == []
    room.publish_track("agent", track.sid, mid="0")
    room.join("user")

    (agent_info,) = room.snapshot(exclude="user")
    assert dict(agent_info.attributes) == {"lk.agent.state": "listening"}
    assert [t.sid for t in agent_info.tracks] == [track.sid]
    assert agent_info.kind == models.ParticipantInfo.Kind.AGENT
    assert agent_info.permission.agent


def test_leave_marks_disconnected_and_rejoin_gets_a_new_sid() -> None:
    room = Room(name="r")
    first = room.join("alice")
    gone = room.leave("alice", models.DisconnectReason.CLIENT_INITIATED)
    assert gone is first
    assert gone.info().state == models.ParticipantInfo.State.DISCONNECTED
    assert room.leave("alice") is None
    again = room.join("alice")
    assert again.sid != first.sid


def test_unknown_participants_and_tracks_are_refused() -> None:
    room = Room(name="r")
    room.join("alice")
    with pytest.raises(RoomError):
        room.update_metadata("bob", attributes={"x": "1"})
    with pytest.raises(RoomError):
        room.publish_track("alice", "TR_missing")
    with pytest.raises(RoomError):
        room.remove_track("alice", "TR_missing")


def test_add_track_is_idempotent_per_client_id() -> None:
    room = Room(name="r")
    room.join("alice")
    first, second = (
        room.add_track(
            "alice",
            cid="c1",
            name="mic",
            kind=models.TrackType.AUDIO,
            source=models.TrackSource.MICROPHONE,
        )
        for _ in range(2)
    )
    assert first is second


def test_registry_refuses_closed_rooms_and_drops_empty_ones() -> None:
    registry = RoomRegistry()
    room = registry.get_or_create("r")
    assert registry.get_or_create("r") is room
    room.join("a")
    registry.discard_if_empty("r")
    assert registry.get("r") is room
    room.leave("a")
    registry.discard_if_empty("r")
    assert registry.get("r") is None
    registry.close("s")
    assert "s" in registry.closed


def test_client_params_parse_what_the_sdk_sends() -> None:
    params = ClientParams.from_query(
        {
            "protocol": "18",
            "client_protocol": "2",
            "capabilities": "CAP_PACKET_TRAILER,CAP_COMPRESSION_DEFLATE_RAW,bogus",
            "reconnect": "1",
            "sid": "PA_abc",
            "reconnect_reason": "nope",
        }
    )
    assert (params.protocol, params.client_protocol, params.reconnect, params.sid) == (
        18,
        2,
        True,
        "PA_abc",
    )
    assert params.reconnect_reason == 0
    assert len(params.capabilities) == 2
