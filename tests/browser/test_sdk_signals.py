"""Server-side signals real clients rely on, checked with the real Python SDK: active
speakers, connection quality, the ReconnectResponse's lastMessageSeq, SimulateScenario,
the room deleted after a session ends, and a quiet /rtc/v1 refusal.

Run inside the network namespace (marker ``webrtc``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import aiohttp
import httpx
import pytest
from livekit import rtc
from livekit.protocol import rtc as signal
from support.sim_clients import Events, feed_sine, wait_until

from fishtalk.sim.fish.endpoint import SESSIONS_PATH
from fishtalk.sim.livekit.server import SimServer
from fishtalk.sim.runner import run_sim

pytestmark = pytest.mark.webrtc

ROOM = "room-signals"

NAMES = (
    "participant_connected",
    "participant_disconnected",
    "active_speakers_changed",
    "connection_quality_changed",
    "data_received",
    "track_subscribed",
    "reconnecting",
    "reconnected",
    "disconnected",
)


@dataclass
class _Client:
    room: rtc.Room
    events: Events
    identity: str


Connect = Callable[..., Awaitable[_Client]]


@pytest.fixture
async def connect(sim_server: SimServer) -> AsyncIterator[Connect]:
    clients: list[_Client] = []

    async def make(identity: str, *, options: rtc.RoomOptions | None = None) -> _Client:
        room = rtc.Room()
        events = Events(room, names=NAMES)
        token = sim_server.mint_token(ROOM, identity)
        await asyncio.wait_for(
            room.connect(sim_server.ws_url, token, options or rtc.RoomOptions()), 20
        )
        client = _Client(room, events, identity)
        clients.append(client)
        return client

    yield make
    for client in clients:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.room.disconnect(), 5)


def _speakers(*identities: str) -> Callable[[list[rtc.Participant]], bool]:
    return lambda speakers: sorted(p.identity for p in speakers) == sorted(identities)


async def _publish_tone(client: _Client) -> tuple[rtc.AudioSource, rtc.LocalTrackPublication]:
    source = rtc.AudioSource(48000, 1)
    track = rtc.LocalAudioTrack.create_audio_track("mic", source)
    options = rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
    publication = await client.room.local_participant.publish_track(track, options)
    return source, publication


async def test_active_speakers_follow_the_relayed_audio(connect: Connect) -> None:
    listener = await connect("listener")
    speaker = await connect("speaker")
    source, _publication = await _publish_tone(speaker)
    feeding = asyncio.ensure_future(feed_sine(source, 440.0))
    try:
        await listener.events.wait("track_subscribed", within=20)
        (speakers,) = await listener.events.wait(
            "active_speakers_changed", _speakers("speaker"), within=20
        )
        assert speakers[0].identity == "speaker"
        # The speaker hears about itself too, as from livekit-server.
        await speaker.events.wait("active_speakers_changed", _speakers("speaker"), within=10)
    finally:
        feeding.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await feeding
    # Silence (the SDK sends silent frames once nothing is captured) ends the turn.
    await listener.events.wait("active_speakers_changed", _speakers(), within=10)


async def test_connection_quality_is_reported(connect: Connect) -> None:
    alice = await connect("alice")
    await connect("bob")
    _participant, quality = await alice.events.wait(
        "connection_quality_changed", lambda p, q: p.identity == "alice", within=10
    )
    assert quality == rtc.ConnectionQuality.QUALITY_EXCELLENT
    _participant, quality = await alice.events.wait(
        "connection_quality_changed", lambda p, q: p.identity == "bob", within=10
    )
    assert quality == rtc.ConnectionQuality.QUALITY_EXCELLENT


async def test_reconnect_response_carries_the_last_reliable_sequence(
    connect: Connect, sim_server: SimServer
) -> None:
    alice = await connect("alice")
    bob = await connect("bob")
    for n in range(3):
        await alice.room.local_participant.publish_data(f"m{n}".encode(), reliable=True)
    for _ in range(3):
        await bob.events.next("data_received", within=10)
    sid = alice.room.local_participant.sid
    # Resume alice's session on a raw socket and read what the server answers first.
    token = sim_server.mint_token(ROOM, "alice")
    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(
            f"{sim_server.ws_url}/rtc",
            params={"access_token": token, "reconnect": "1", "sid": sid, "protocol": "16"},
        )
        message = await ws.receive(timeout=10)
        await ws.close()
    response = signal.SignalResponse()
    response.ParseFromString(message.data)
    assert response.WhichOneof("message") == "reconnect"
    assert response.reconnect.last_message_seq >= 3
    assert response.reconnect.server_info.protocol > 0


async def test_simulated_speaker_update(connect: Connect) -> None:
    alice = await connect("alice")
    bob = await connect("bob")
    await alice.room.simulate_scenario(rtc.SimulateScenarioKind.SIMULATE_SPEAKER)
    await bob.events.wait("active_speakers_changed", _speakers("alice"), within=10)
    await alice.events.wait("active_speakers_changed", _speakers("alice"), within=10)
    # The SDK asks for 3 s of speaking; then the speaker goes quiet.
    await bob.events.wait("active_speakers_changed", _speakers(), within=10)


async def test_simulated_server_leave_disconnects(connect: Connect) -> None:
    alice = await connect("alice")
    await alice.room.simulate_scenario(rtc.SimulateScenarioKind.SIMULATE_SERVER_LEAVE)
    (reason,) = await alice.events.wait("disconnected", within=10)
    assert reason == rtc.DisconnectReason.SERVER_SHUTDOWN


async def test_simulated_node_failure_rejoins(connect: Connect, sim_server: SimServer) -> None:
    alice = await connect("alice")
    bob = await connect("bob")
    before = sim_server.participant(ROOM, "alice")
    assert before is not None
    await alice.room.simulate_scenario(rtc.SimulateScenarioKind.SIMULATE_NODE_FAILURE)
    await alice.events.wait("reconnected", within=20)
    assert alice.events.seen["disconnected"] == []
    await sim_server.wait_for_participants(ROOM, {"alice", "bob"})
    after = sim_server.participant(ROOM, "alice")
    assert after is not None
    assert after.sid != before.sid  # the server forgot it: a full rejoin, not a resume
    await alice.room.local_participant.publish_data(b"back", reliable=True)
    (packet,) = await bob.events.next("data_received", within=10)
    assert packet.data == b"back"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_v1_refusal_is_quick_and_only_the_sdk_fallback_speaks(
    connect: Connect,
) -> None:
    # livekit's Rust core logs its fallback from /rtc/v1 on any v1 failure (two
    # warnings); the sim adds nothing of its own. A client that skips v1 logs nothing.
    records = _Records()
    root = logging.getLogger()
    root.addHandler(records)
    try:
        await connect("alice")
        fallback = [r for r in records.records if r.levelno >= logging.WARNING]
        assert [r.getMessage().split(" - ", 1)[-1] for r in fallback] == [
            "signal connection failed on v1 path: Handshake { status: 404 }",
            "v1 path not found (404), falling back to v0 path",
        ]
        records.records.clear()
        await connect("bob", options=rtc.RoomOptions(single_peer_connection=False))
        assert [r for r in records.records if r.levelno >= logging.WARNING] == []
    finally:
        root.removeHandler(records)


async def test_room_deleted_after_the_session_ended() -> None:
    async with run_sim() as sim:
        sim.endpoint.room_grace = 0.5
        async with httpx.AsyncClient(base_url=sim.api_url, timeout=10) as http:
            r = await http.post(
                SESSIONS_PATH,
                json={"agent_id": "demo"},
                headers={"Authorization": f"Bearer {sim.dev_key}"},
            )
            grant = r.json()
            room = rtc.Room()
            events = Events(room, names=NAMES)
            await asyncio.wait_for(room.connect(grant["livekit_url"], grant["token"]), 20)
            try:
                await wait_until(lambda: "agent" in room.remote_participants, within=20)
                ended = await http.post(f"{SESSIONS_PATH}/{grant['session_id']}/end")
                assert ended.status_code == 204
                (reason,) = await events.wait("disconnected", within=20)
                assert reason == rtc.DisconnectReason.ROOM_DELETED
            finally:
                await room.disconnect()


async def test_the_sim_agent_connects_without_sdk_warnings() -> None:
    # `fishtalk sim serve` starts one agent per session: its own connect must be quiet.
    records = _Records()
    root = logging.getLogger()
    root.addHandler(records)
    try:
        async with run_sim() as sim:
            async with httpx.AsyncClient(base_url=sim.api_url, timeout=10) as http:
                r = await http.post(
                    SESSIONS_PATH,
                    json={"agent_id": "demo"},
                    headers={"Authorization": f"Bearer {sim.dev_key}"},
                )
            session = sim.endpoint.sessions[r.json()["session_id"]]
            await sim.server.wait_for_participants(session.room, {"agent"}, within=20)
            agent = await sim.agent(session.session_id)
            await agent.wait_note("joined")
            warnings = [r for r in records.records if r.levelno >= logging.WARNING]
            assert warnings == []
    finally:
        root.removeHandler(records)


async def test_simulated_disconnect_signal_on_resume(
    connect: Connect, sim_server: SimServer
) -> None:
    # The server drops the resumed socket once: the SDK recovers (livekit's Rust core
    # escalates to a full reconnect) and the participant is back and working.
    alice = await connect("alice")
    bob = await connect("bob")
    before = sim_server.participant(ROOM, "alice")
    assert before is not None
    await alice.room.simulate_scenario(
        rtc.SimulateScenarioKind.SIMULATE_DISCONNECT_SIGNAL_ON_RESUME
    )
    await alice.events.wait("reconnected", within=30)
    assert alice.events.seen["disconnected"] == []
    await wait_until(
        lambda: (p := sim_server.participant(ROOM, "alice")) is not None and p.sid != before.sid,
        within=20,
    )
    await alice.room.local_participant.publish_data(b"still here", reliable=True)
    (packet,) = await bob.events.next("data_received", within=10)
    assert packet.data == b"still here"
