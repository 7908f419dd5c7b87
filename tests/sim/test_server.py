"""The loopback LiveKit server, exercised by real ``livekit.rtc.Room`` clients.

Run inside the network namespace:
``.venv/bin/python -m fishtalk.sim.netns -- .venv/bin/pytest tests/sim -q``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import aiohttp
import aioice.ice
import aioice.stun
import pytest
from livekit import rtc
from livekit.protocol import rtc as signal
from support.sim_clients import (
    Client,
    Events,
    RoomFactory,
    collect_audio,
    connect_client,
    feed_sine,
    tone_frequency,
    wait_until,
)

from fishtalk.core.protocol import ATTR_AGENT_STATE, TOPIC_TRANSCRIPTION
from fishtalk.sim.livekit.server import SimServer

pytestmark = pytest.mark.webrtc

ROOM = "room-test"


def _identity_is(identity: str) -> Callable[[rtc.RemoteParticipant], bool]:
    return lambda p: p.identity == identity


async def _connect_error(server: SimServer, token: str) -> str:
    room = rtc.Room()
    with pytest.raises(rtc.ConnectError) as info:
        await asyncio.wait_for(room.connect(server.ws_url, token), 20)
    return info.value.message


async def test_join_with_jwt_and_presence(room_factory: RoomFactory, sim_server: SimServer) -> None:
    alice = await room_factory(ROOM, "alice")
    bob = await room_factory(ROOM, "bob", name="Bob")

    await alice.events.wait("participant_connected", _identity_is("bob"))
    assert set(bob.room.remote_participants) == {"alice"}
    assert alice.room.remote_participants["bob"].name == "Bob"
    assert bob.room.local_participant.sid.startswith("PA_")
    assert bob.room.name == ROOM
    assert sim_server.participants(ROOM) == ["alice", "bob"]

    await bob.room.disconnect()
    await alice.events.wait("participant_disconnected", _identity_is("bob"))
    await sim_server.wait_for_participants(ROOM, {"alice"})
    assert "bob" not in alice.room.remote_participants


async def test_participants_become_active(room_factory: RoomFactory) -> None:
    alice = await room_factory(ROOM, "alice")
    await room_factory(ROOM, "bob")
    (participant,) = await alice.events.wait("participant_active", _identity_is("bob"))
    assert participant.identity == "bob"


async def test_duplicate_identity_replaces_the_old_connection(
    room_factory: RoomFactory, sim_server: SimServer
) -> None:
    watcher = await room_factory(ROOM, "watcher")
    first = await room_factory(ROOM, "alice")
    second = await room_factory(ROOM, "alice")
    (reason,) = await first.events.wait("disconnected")
    assert reason == rtc.DisconnectReason.DUPLICATE_IDENTITY
    assert sim_server.participants(ROOM) == ["watcher", "alice"]
    await second.local.publish_data(b"the new one", topic="t")
    (packet,) = await watcher.events.wait("data_received")
    assert packet.participant.identity == "alice"


async def test_bad_signature_is_refused_with_the_reason(sim_server: SimServer) -> None:
    forger = SimServer(api_key=sim_server.api_key, api_secret="not-the-secret-" * 3)
    message = await _connect_error(sim_server, forger.mint_token(ROOM, "mallory"))
    assert "bad signature" in message
    assert sim_server.participants(ROOM) == []


async def test_expired_token_is_refused_with_the_reason(sim_server: SimServer) -> None:
    token = sim_server.mint_token(ROOM, "late", ttl=timedelta(minutes=-5))
    message = await _connect_error(sim_server, token)
    assert "expired" in message


async def test_closed_room_is_refused_with_the_reason(
    room_factory: RoomFactory, sim_server: SimServer
) -> None:
    alice = await room_factory(ROOM, "alice")
    await sim_server.close_room(ROOM)
    (reason,) = await alice.events.wait("disconnected")
    assert reason == rtc.DisconnectReason.ROOM_DELETED
    message = await _connect_error(sim_server, sim_server.mint_token(ROOM, "bob"))
    assert "closed" in message


async def test_validate_explains_missing_and_wrong_tokens(sim_server: SimServer) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{sim_server.url}/rtc/validate") as resp:
            assert resp.status == 401
            assert "missing access token" in await resp.text()
        other_key = SimServer(api_key="someone-else", api_secret=sim_server.api_secret)
        headers = {"Authorization": f"Bearer {other_key.mint_token(ROOM, 'x')}"}
        async with http.get(f"{sim_server.url}/rtc/validate", headers=headers) as resp:
            assert resp.status == 401
            assert "another API key" in await resp.text()
        headers = {"Authorization": f"Bearer {sim_server.mint_token(ROOM, 'x')}"}
        async with http.get(f"{sim_server.url}/rtc/validate", headers=headers) as resp:
            assert resp.status == 200


async def test_reliable_data_with_topic_honours_destinations(room_factory: RoomFactory) -> None:
    alice = await room_factory(ROOM, "alice")
    bob = await room_factory(ROOM, "bob")
    carol = await room_factory(ROOM, "carol")
    await alice.events.wait("participant_connected", _identity_is("carol"))

    await alice.local.publish_data(b"for bob only", topic="private", destination_identities=["bob"])
    await alice.local.publish_data(b"for everyone", topic="public")

    (packet,) = await bob.events.next("data_received")
    assert (packet.data, packet.topic, packet.participant.identity) == (
        b"for bob only",
        "private",
        "alice",
    )
    assert packet.kind == rtc.DataPacketKind.KIND_RELIABLE
    (packet,) = await bob.events.next("data_received")
    assert packet.data == b"for everyone"
    # Reliable data is ordered: had carol got the private packet, it would come first.
    (packet,) = await carol.events.next("data_received")
    assert (packet.data, packet.topic) == (b"for everyone", "public")


async def test_lossy_data_arrives_on_the_lossy_channel(room_factory: RoomFactory) -> None:
    alice = await room_factory(ROOM, "alice")
    bob = await room_factory(ROOM, "bob")
    await alice.local.publish_data(b"reliable first", topic="t")
    await bob.events.next("data_received")  # the publisher connection is up now
    for _ in range(20):  # lossy may drop a packet in principle; twenty cannot all vanish
        await alice.local.publish_data(b"fast", topic="lossy", reliable=False)
    (packet,) = await bob.events.next("data_received", lambda p: p.topic == "lossy")
    assert packet.kind == rtc.DataPacketKind.KIND_LOSSY
    assert packet.data == b"fast"


async def _read_text(client: Client, topic: str) -> asyncio.Queue[tuple[str, str, dict[str, str]]]:
    received: asyncio.Queue[tuple[str, str, dict[str, str]]] = asyncio.Queue()
    tasks: set[asyncio.Task[None]] = set()

    def handler(reader: rtc.TextStreamReader, identity: str) -> None:
        async def read() -> None:
            text = await reader.read_all()
            received.put_nowait((identity, text, dict(reader.info.attributes or {})))

        task = asyncio.ensure_future(read())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    client.room.register_text_stream_handler(topic, handler)
    return received


async def test_text_streams_and_agent_speaking_for_the_user(room_factory: RoomFactory) -> None:
    agent = await room_factory(ROOM, "agent", kind="agent")
    user = await room_factory(ROOM, "user-0000abcd")
    watcher = await room_factory(ROOM, "watcher")
    user_texts = await _read_text(user, TOPIC_TRANSCRIPTION)
    watcher_texts = await _read_text(watcher, TOPIC_TRANSCRIPTION)
    await agent.events.wait("participant_connected", _identity_is("watcher"))

    await agent.local.send_text("hello there", topic=TOPIC_TRANSCRIPTION)
    identity, text, _ = await asyncio.wait_for(user_texts.get(), 10)
    assert (identity, text) == ("agent", "hello there")

    writer = await agent.local.stream_text(
        topic=TOPIC_TRANSCRIPTION,
        sender_identity="user-0000abcd",
        attributes={"lk.transcription_final": "true"},
    )
    for word in ("what ", "you ", "said"):
        await writer.write(word)
    await writer.aclose()
    await asyncio.wait_for(watcher_texts.get(), 10)  # the agent's greeting
    identity, text, attributes = await asyncio.wait_for(watcher_texts.get(), 10)
    assert (identity, text) == ("user-0000abcd", "what you said")
    assert attributes["lk.transcription_final"] == "true"


async def test_only_agents_may_speak_for_others(room_factory: RoomFactory) -> None:
    impostor = await room_factory(ROOM, "impostor")
    victim = await room_factory(ROOM, "victim")
    texts = await _read_text(victim, "chat")
    await impostor.events.wait("participant_connected", _identity_is("victim"))

    writer = await impostor.local.stream_text(topic="chat", sender_identity="victim")
    await writer.write("not me")
    await writer.aclose()
    identity, text, _ = await asyncio.wait_for(texts.get(), 10)
    assert (identity, text) == ("impostor", "not me")


async def test_attributes_are_sticky_for_late_joiners(room_factory: RoomFactory) -> None:
    agent = await room_factory(ROOM, "agent", kind="agent", attributes={"role": "agent"})
    user = await room_factory(ROOM, "user")

    await agent.local.set_attributes({ATTR_AGENT_STATE: "listening", "extra": "1"})
    await user.events.wait(
        "participant_attributes_changed",
        lambda changed, p: p.identity == "agent" and changed.get(ATTR_AGENT_STATE) == "listening",
    )
    await agent.local.set_attributes({ATTR_AGENT_STATE: "thinking", "extra": ""})
    await user.events.wait(
        "participant_attributes_changed",
        lambda changed, p: changed.get(ATTR_AGENT_STATE) == "thinking",
    )
    # The SDK applies the server's echo of our own update asynchronously.
    await wait_until(
        lambda: agent.local.attributes == {"role": "agent", ATTR_AGENT_STATE: "thinking"}
    )

    late = await room_factory(ROOM, "late")
    assert late.room.remote_participants["agent"].attributes == {
        "role": "agent",
        ATTR_AGENT_STATE: "thinking",
    }
    assert user.room.remote_participants["agent"].attributes == {
        "role": "agent",
        ATTR_AGENT_STATE: "thinking",
    }


async def test_opus_audio_is_relayed(room_factory: RoomFactory) -> None:
    speaker = await room_factory(ROOM, "speaker")
    listener = await room_factory(ROOM, "listener")

    source = rtc.AudioSource(48000, 1)
    track = rtc.LocalAudioTrack.create_audio_track("mic", source)
    options = rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
    publication = await speaker.local.publish_track(track, options)
    feeding = asyncio.ensure_future(feed_sine(source, 440.0))
    try:
        remote_track, remote_pub, participant = await listener.events.wait("track_subscribed")
        assert participant.identity == "speaker"
        assert remote_pub.sid == publication.sid
        assert remote_track.kind == rtc.TrackKind.KIND_AUDIO
        samples = await collect_audio(remote_track, seconds=2.0, within=20)
    finally:
        feeding.cancel()
        await asyncio.gather(feeding, return_exceptions=True)
        await source.aclose()
    tail = samples[-48000:]
    assert abs(tone_frequency(tail, 48000) - 440.0) < 5.0


async def test_pings_keep_a_long_session_alive() -> None:
    async with SimServer(ping_interval=1, ping_timeout=3) as server:
        alice = await connect_client(server, ROOM, "alice")
        bob = await connect_client(server, ROOM, "bob")
        try:
            await asyncio.sleep(7)  # over twice ping_timeout: only ping/pong keeps it alive
            assert alice.events.seen["reconnecting"] == []
            assert alice.events.seen["disconnected"] == []
            assert alice.room.connection_state == rtc.ConnectionState.CONN_CONNECTED
            await alice.local.publish_data(b"still here", topic="t")
            (packet,) = await bob.events.next("data_received")
            assert packet.data == b"still here"
        finally:
            await alice.room.disconnect()
            await bob.room.disconnect()


async def test_silent_clients_lose_their_socket() -> None:
    async with SimServer(ping_interval=1, ping_timeout=2, resume_window=1.0) as server:
        headers = {"Authorization": f"Bearer {server.mint_token(ROOM, 'mute')}"}
        async with aiohttp.ClientSession() as http:
            ws = await http.ws_connect(f"{server.ws_url}/rtc?protocol=16", headers=headers)
            first = await ws.receive(timeout=10)
            join = signal.SignalResponse()
            join.ParseFromString(first.data)
            assert join.WhichOneof("message") == "join"
            assert server.participants(ROOM) == ["mute"]
            # Never ping: the server closes the socket, then gives up on a resume.
            while not ws.closed:
                await ws.receive(timeout=10)
            await server.wait_for_participants(ROOM, set(), within=10)


async def test_a_bad_request_does_not_end_the_session(
    sim_server: SimServer, caplog: pytest.LogCaptureFixture
) -> None:
    headers = {"Authorization": f"Bearer {sim_server.mint_token(ROOM, 'raw')}"}
    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(f"{sim_server.ws_url}/rtc?protocol=16", headers=headers)
        # aiortc refuses an m-section without ICE credentials (it raises ValueError).
        sdp = (
            "v=0\r\no=- 0 0 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"
            "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n"
            "a=sendonly\r\na=rtpmap:111 opus/48000/2\r\n"
        )
        bad = signal.SignalRequest(offer=signal.SessionDescription(type="offer", sdp=sdp))
        await ws.send_bytes(bad.SerializeToString())
        await ws.send_bytes(
            signal.SignalRequest(ping_req=signal.Ping(timestamp=42)).SerializeToString()
        )
        while True:
            message = await ws.receive(timeout=10)
            response = signal.SignalResponse()
            response.ParseFromString(message.data)
            if response.WhichOneof("message") == "pong_resp":
                break
        assert response.pong_resp.last_ping_timestamp == 42
        assert sim_server.participants(ROOM) == ["raw"]
        assert "could not handle offer from raw" in caplog.text
        await ws.close()


async def test_resume_after_dropped_signalling(
    room_factory: RoomFactory, sim_server: SimServer
) -> None:
    alice = await room_factory(ROOM, "alice", attributes={"colour": "blue"})
    bob = await room_factory(ROOM, "bob")
    await bob.local.set_attributes({"mood": "calm"})
    await alice.events.wait("participant_attributes_changed")
    sid_before = alice.local.sid

    await sim_server.drop_signalling(ROOM, "alice")
    await alice.events.wait("reconnected", within=20)

    assert alice.local.sid == sid_before
    assert alice.events.seen["disconnected"] == []
    assert alice.room.remote_participants["bob"].attributes == {"mood": "calm"}
    assert bob.room.remote_participants["alice"].attributes == {"colour": "blue"}
    await alice.local.publish_data(b"after resume", topic="t")
    (packet,) = await bob.events.next("data_received")
    assert packet.data == b"after resume"
    await bob.local.publish_data(b"reply", topic="t")
    (packet,) = await alice.events.next("data_received")
    assert packet.data == b"reply"
    await alice.local.set_attributes({"colour": "green"})
    await bob.events.wait(
        "participant_attributes_changed", lambda changed, p: changed.get("colour") == "green"
    )


async def test_rejoin_after_forced_reconnect(
    room_factory: RoomFactory, sim_server: SimServer
) -> None:
    alice = await room_factory(ROOM, "alice", attributes={"colour": "blue"})
    bob = await room_factory(ROOM, "bob")
    before = sim_server.participant(ROOM, "alice")
    assert before is not None

    await sim_server.force_reconnect(ROOM, "alice")
    await alice.events.wait("reconnected", within=20)
    await sim_server.wait_for_participants(ROOM, {"alice", "bob"})
    after = sim_server.participant(ROOM, "alice")
    assert after is not None
    assert after.sid != before.sid  # a full rejoin, not a resume
    assert after.sid.startswith("PA_")
    await wait_until(
        lambda: (
            "alice" in bob.room.remote_participants
            and bob.room.remote_participants["alice"].sid == after.sid
        )
    )
    assert bob.room.remote_participants["alice"].attributes == {"colour": "blue"}

    await alice.local.publish_data(b"back again", topic="t")
    (packet,) = await bob.events.wait("data_received", lambda p: p.data == b"back again")
    assert packet.participant.identity == "alice"


class _Tone:
    """A published microphone track fed a sine in real time."""

    def __init__(self, client: Client, frequency: float) -> None:
        self.client = client
        self.frequency = frequency
        self.source = rtc.AudioSource(48000, 1)
        self.track = rtc.LocalAudioTrack.create_audio_track("mic", self.source)
        self.feeding: asyncio.Task[None] | None = None
        self.sid = ""

    async def __aenter__(self) -> _Tone:
        options = rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
        publication = await self.client.local.publish_track(self.track, options)
        self.sid = publication.sid
        self.feeding = asyncio.ensure_future(feed_sine(self.source, self.frequency))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.feeding is not None:
            self.feeding.cancel()
            await asyncio.gather(self.feeding, return_exceptions=True)
        await self.source.aclose()


async def test_mute_is_seen_by_others(room_factory: RoomFactory) -> None:
    speaker = await room_factory(ROOM, "speaker")
    listener = await room_factory(ROOM, "listener")
    async with _Tone(speaker, 440.0) as tone:
        await listener.events.wait("track_subscribed")
        tone.track.mute()
        _, publication = await listener.events.wait("track_muted", within=15)
        assert publication.sid == tone.sid
        assert listener.room.remote_participants["speaker"].track_publications[tone.sid].muted
        tone.track.unmute()
        _, publication = await listener.events.wait("track_unmuted", within=15)
        assert publication.sid == tone.sid


async def test_late_joiner_receives_audio_published_before(room_factory: RoomFactory) -> None:
    speaker = await room_factory(ROOM, "speaker")
    early = await room_factory(ROOM, "early")
    async with _Tone(speaker, 660.0):
        await early.events.wait("track_subscribed")
        late = await room_factory(ROOM, "late")
        remote_track, _, participant = await late.events.wait("track_subscribed", within=15)
        assert participant.identity == "speaker"
        samples = await collect_audio(remote_track, seconds=2.0, within=20)
    assert abs(tone_frequency(samples[-48000:], 48000) - 660.0) < 5.0


async def test_unpublish_and_leave_remove_the_track(room_factory: RoomFactory) -> None:
    speaker = await room_factory(ROOM, "speaker")
    listener = await room_factory(ROOM, "listener")
    async with _Tone(speaker, 440.0) as tone:
        await listener.events.wait("track_subscribed")
        await speaker.local.unpublish_track(tone.sid)
        _, publication, participant = await listener.events.wait("track_unsubscribed", within=15)
        assert (participant.identity, publication.sid) == ("speaker", tone.sid)
        await wait_until(
            lambda: not listener.room.remote_participants["speaker"].track_publications
        )
    async with _Tone(speaker, 440.0) as tone:
        await listener.events.next(
            "track_subscribed", lambda _t, pub, _p: pub.sid == tone.sid, within=15
        )
        await speaker.room.disconnect()
        await listener.events.wait("participant_disconnected", _identity_is("speaker"))
        await listener.events.wait(
            "track_unsubscribed", lambda _t, pub, _p: pub.sid == tone.sid, within=15
        )


async def test_listener_gets_audio_again_after_forced_rejoin(
    room_factory: RoomFactory, sim_server: SimServer
) -> None:
    speaker = await room_factory(ROOM, "speaker")
    listener = await room_factory(ROOM, "listener")
    async with _Tone(speaker, 440.0):
        await listener.events.next("track_subscribed")
        await sim_server.force_reconnect(ROOM, "listener")
        await listener.events.wait("reconnected", within=20)
        remote_track, _, _ = await listener.events.next("track_subscribed", within=15)
        samples = await collect_audio(remote_track, seconds=2.0, within=20)
    assert abs(tone_frequency(samples[-48000:], 48000) - 440.0) < 5.0


async def test_server_stop_disconnects_clients() -> None:
    server = SimServer()
    await server.start()
    alice = await connect_client(server, ROOM, "alice")
    try:
        await server.stop()
        (reason,) = await alice.events.wait("disconnected")
        assert reason == rtc.DisconnectReason.SERVER_SHUTDOWN
    finally:
        await alice.room.disconnect()


async def test_resume_works_after_the_token_expired() -> None:
    async with SimServer() as server:
        lk_room = rtc.Room()
        events = Events(lk_room)
        token = server.mint_token(ROOM, "alice", ttl=timedelta(seconds=1))
        await asyncio.wait_for(lk_room.connect(server.ws_url, token), 30)
        try:
            await asyncio.sleep(3.5)  # past expiry plus the checker's leeway
            await server.drop_signalling(ROOM, "alice")
            await events.wait("reconnected", within=20)
            assert events.seen["disconnected"] == []
            assert server.participants(ROOM) == ["alice"]
        finally:
            await lk_room.disconnect()


async def test_unanswered_consent_checks_never_cut_a_connection(
    room_factory: RoomFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aioice gives a connection up after six unanswered consent checks and tells no one;
    the sim leaves liveness to signalling, as livekit-server does. CI showed it: under load
    a live publisher's connection was shut, and the user's microphone went silent.

    Here every consent check goes unanswered, twenty times a second, and audio still
    flows a second later (about twenty failed checks per connection)."""
    refused: list[object] = []
    request = aioice.ice.StunProtocol.request

    async def unanswered_consent(
        self: aioice.ice.StunProtocol, message: Any, addr: Any, **options: Any
    ) -> Any:
        if options.get("retransmissions") == 0:  # consent checks only (RFC 7675)
            refused.append(addr)
            raise aioice.stun.TransactionTimeout
        return await request(self, message, addr, **options)

    monkeypatch.setattr(aioice.ice, "CONSENT_INTERVAL", 0.05)
    monkeypatch.setattr(aioice.ice.StunProtocol, "request", unanswered_consent)
    speaker = await room_factory(ROOM, "speaker")
    listener = await room_factory(ROOM, "listener")
    async with _Tone(speaker, 440.0):
        remote_track, _pub, _participant = await listener.events.wait("track_subscribed")
        await collect_audio(remote_track, seconds=0.2, within=20)
        # Four connections (two each), consent checked every 40-60 ms, all unanswered.
        await wait_until(lambda: len(refused) >= 4 * 20, within=30)
        samples = await collect_audio(remote_track, seconds=1.0, within=20)
    assert abs(tone_frequency(samples[-24000:], 48000) - 440.0) < 5.0
    assert speaker.events.seen["reconnecting"] == []
    assert listener.events.seen["reconnecting"] == []
