"""A scripted user for the sim agent tests: a real ``rtc.Room`` that records everything.

It creates a session over HTTP like a client would, joins with the grant, and records the
agent's state attribute history, agent events, transcript streams (per segment) and
the loudness of the agent's audio. Every wait has a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import numpy as np
from livekit import rtc

from fishtalk.core import protocol as p
from fishtalk.sim.fish.scenario import Scenario
from fishtalk.sim.fish.voice import (
    FRAME_SAMPLES,
    SAMPLE_RATE,
    Pcm,
    ToneVoice,
    rms_dbfs,
    silence,
    tone,
)
from fishtalk.sim.runner import SimHandle, run_sim

WAIT = 15.0


@contextlib.asynccontextmanager
async def tone_sim(scenarios: Mapping[str, Scenario], **options: Any) -> AsyncIterator[SimHandle]:
    """The sim playing ``scenarios`` in tones (``options`` go to ``run_sim``). On the way
    out it prints each agent's journal, which pytest shows only when the test failed."""
    async with run_sim(scenarios=scenarios, voice=ToneVoice(), **options) as handle:
        yield handle
        for session_id, agent in handle.agents.items():
            print(f"agent journal for {session_id}:", *agent.journal, sep="\n  ")


class ManualClock:
    """An idle clock the test moves by hand (a :class:`fishtalk.sim.fish.listening.IdleClock`).

    Time stands still until :meth:`advance`: an agent's idle timer then fires exactly when
    the test says, however slow the machine is.
    """

    def __init__(self) -> None:
        self._now = 0.0
        self._moved = asyncio.Event()

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds
        moved, self._moved = self._moved, asyncio.Event()
        moved.set()

    async def sleep(self, seconds: float) -> None:
        deadline = self._now + seconds
        while self._now < deadline:
            await self._moved.wait()


@dataclass
class Stream:
    """One received transcription text stream."""

    identity: str
    segment: str
    header_final: bool
    text: str = ""
    closed: bool = False
    final: bool = False
    """lk.transcription_final after the trailer was merged."""
    chunk_times: list[float] = field(default_factory=list)


@dataclass
class UserClient:
    """The user side of one session."""

    handle: SimHandle
    session_id: str = ""
    identity: str = ""
    room: rtc.Room = field(default_factory=rtc.Room)
    states: list[str] = field(default_factory=list)
    events: list[p.AgentEvent] = field(default_factory=list)
    bad_packets: list[str] = field(default_factory=list)
    streams: list[Stream] = field(default_factory=list)
    loud_frames: int = 0
    last_loud: float = 0.0
    loud_times: list[float] = field(default_factory=list)
    """time.monotonic() at each loud agent audio frame's arrival."""
    state_times: list[tuple[str, float]] = field(default_factory=list)
    """Every agent state change with the time.monotonic() it arrived at."""
    disconnected: bool = False
    reconnected: int = 0
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    _mic: rtc.AudioSource | None = None

    async def start(self, agent_id: str, **body: Any) -> dict[str, Any]:
        """Create a session and join it; returns the grant."""
        async with httpx.AsyncClient(base_url=self.handle.api_url, timeout=10.0) as http:
            r = await http.post(
                "/v1/agent/sessions",
                json={"agent_id": agent_id, **body},
                headers={"Authorization": f"Bearer {self.handle.dev_key}"},
            )
        assert r.status_code == 201, r.text
        grant: dict[str, Any] = r.json()
        self.session_id = grant["session_id"]
        self._wire()
        await asyncio.wait_for(self.room.connect(grant["livekit_url"], grant["token"]), WAIT)
        self.identity = self.room.local_participant.identity
        for participant in self.room.remote_participants.values():
            self._record_state(participant)
        return grant

    def _wire(self) -> None:
        room = self.room
        room.on("data_received", self._on_data)
        room.on("participant_attributes_changed", self._on_attrs)
        room.on("participant_connected", self._record_state)
        room.on("track_subscribed", self._on_track)
        room.on("disconnected", self._on_disconnected)
        room.on("reconnected", self._on_reconnected)
        room.register_text_stream_handler(p.TOPIC_TRANSCRIPTION, self._on_stream)

    def _on_disconnected(self, *_: Any) -> None:
        self.disconnected = True

    def _on_reconnected(self, *_: Any) -> None:
        self.reconnected += 1

    def _record_state(self, participant: rtc.RemoteParticipant) -> None:
        state = participant.attributes.get(p.ATTR_AGENT_STATE)
        if state and (not self.states or self.states[-1] != state):
            self.states.append(state)
            self.state_times.append((state, time.monotonic()))

    def _on_attrs(self, changed: dict[str, str], participant: rtc.Participant) -> None:
        if p.ATTR_AGENT_STATE in changed:
            state = changed[p.ATTR_AGENT_STATE]
            if not self.states or self.states[-1] != state:
                self.states.append(state)
                self.state_times.append((state, time.monotonic()))

    def _on_data(self, packet: rtc.DataPacket) -> None:
        if packet.topic != p.TOPIC_AGENT_EVENT:
            return
        try:
            self.events.append(p.decode_agent_event(packet.data))
        except p.ProtocolError as exc:
            self.bad_packets.append(str(exc))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_stream(self, reader: rtc.TextStreamReader, identity: str) -> None:
        attrs = reader.info.attributes or {}
        stream = Stream(
            identity=identity,
            segment=attrs.get(p.ATTR_SEGMENT_ID, ""),
            header_final=p.is_final(attrs),
        )
        self.streams.append(stream)

        async def read() -> None:
            async for chunk in reader:
                stream.text += chunk
                stream.chunk_times.append(time.monotonic())
            stream.final = p.is_final(reader.info.attributes or {})
            stream.closed = True

        self._spawn(read())

    def _on_track(
        self, track: rtc.Track, pub: rtc.RemoteTrackPublication, who: rtc.RemoteParticipant
    ) -> None:
        if track.kind == rtc.TrackKind.KIND_AUDIO:
            self._spawn(self._measure(track))

    async def _measure(self, track: rtc.Track) -> None:
        stream = rtc.AudioStream.from_track(track=track, sample_rate=SAMPLE_RATE, num_channels=1)
        async for event in stream:
            pcm = np.frombuffer(event.frame.data, dtype=np.int16)
            if rms_dbfs(pcm) > -45:
                self.loud_frames += 1
                self.last_loud = time.monotonic()
                self.loud_times.append(self.last_loud)

    # --- actions and waits --------------------------------------------------------------

    async def send(self, event: p.ClientEvent) -> None:
        """Publish a client event."""
        await self.send_raw(p.encode_client_event(event))

    async def send_raw(self, data: bytes) -> None:
        """Publish raw bytes on the client-event topic."""
        await self.room.local_participant.publish_data(
            data, reliable=True, topic=p.TOPIC_CLIENT_EVENT
        )

    async def until(self, condition: Callable[[], Any], within: float = WAIT) -> Any:
        """Poll until ``condition()`` is truthy; return its value."""
        deadline = time.monotonic() + within
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"condition not met within {within} s")
            await asyncio.sleep(0.02)

    def agent_segments(self) -> list[Stream]:
        """Agent transcript streams, in arrival order."""
        return [s for s in self.streams if s.identity == "agent"]

    def user_streams(self) -> list[Stream]:
        """Transcript streams sent under this user's identity."""
        return [s for s in self.streams if s.identity == self.identity]

    async def final_agent_segment(self, containing: str, within: float = WAIT) -> Stream:
        """The first closed agent segment whose text contains ``containing``."""

        def find() -> Stream | None:
            for s in self.agent_segments():
                if s.closed and containing in s.text:
                    return s
            return None

        result: Stream = await self.until(find, within)
        return result

    async def event(self, kind: type, within: float = WAIT, **match: Any) -> Any:
        """The first agent event of ``kind`` whose attributes equal ``match``."""

        def find() -> Any:
            for e in self.events:
                if isinstance(e, kind) and all(getattr(e, k) == v for k, v in match.items()):
                    return e
            return None

        return await self.until(find, within)

    async def publish_tone(
        self, frequency: float, seconds: float, *, before: float = 0.3, after: float = 1.5
    ) -> None:
        """Publish a microphone track (once) and play a tone on it in real time."""
        await self.publish_audio(tone(frequency, seconds, amplitude=0.3), before, after)

    async def publish_audio(self, audio: Pcm, before: float = 0.3, after: float = 1.5) -> None:
        """Publish a microphone track (once) and play 48 kHz ``audio`` on it in real time."""
        if self._mic is None:
            self._mic = rtc.AudioSource(SAMPLE_RATE, 1)
            track = rtc.LocalAudioTrack.create_audio_track("mic", self._mic)
            await self.room.local_participant.publish_track(
                track, rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
            )
        audio = np.concatenate([silence(before), audio, silence(after)])
        loop = asyncio.get_running_loop()
        start = loop.time()
        for index in range(0, audio.size - FRAME_SAMPLES + 1, FRAME_SAMPLES):
            chunk = audio[index : index + FRAME_SAMPLES]
            frame = rtc.AudioFrame(chunk.tobytes(), SAMPLE_RATE, 1, FRAME_SAMPLES)
            await self._mic.capture_frame(frame)
            delay = start + (index + FRAME_SAMPLES) / SAMPLE_RATE - 0.05 - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)

    async def close(self) -> None:
        """Leave and stop recording."""
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await self.room.disconnect()
        if self._mic is not None:
            with contextlib.suppress(Exception):
                await self._mic.aclose()
