"""WebRTC for the loopback server: one participant's two peer connections, via aiortc.

LiveKit's two-connection mode (the one the SDK falls back to when ``/rtc/v1`` answers
404) gives each participant:

* a *subscriber* connection that the server offers; it carries the server-created data
  channels ``_reliable`` (ordered) and ``_lossy`` (unordered, no retransmits) towards the
  client, plus one send-only audio transceiver per subscribed remote track;
* a *publisher* connection that the client offers on its first publish; the server
  answers, reads the client's data channels and receives its audio tracks.

aiortc does not trickle (its candidates are inside its SDP), so the client's trickled
candidates are simply held until the matching remote description is set. aiortc has no
public way to choose a sender's msid, which the SDK uses to find the publisher
(``PA_<participant>|TR_<track>``), so a private sender attribute is set; it is the only
reach into aiortc internals, kept in :func:`_set_msid`.

Liveness is the signalling socket's to judge (the ping watchdog and the resume window in
:mod:`~fishtalk.sim.livekit.server`), as in livekit-server, whose ICE counts any packet
from the peer as a sign of life. aioice instead closes a connection after six consent
checks in a row go unanswered within 0.5 s each, and nothing tells the server: on a
loaded host that shut live publisher connections mid-call, the client's resume then met
a closed connection, and its microphone went silent with no error. So the sim turns
aioice's consent expiry off (:data:`CONSENT_FAILURES_ALLOWED`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import aioice.ice
import numpy as np
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCDataChannel,
    RTCPeerConnection,
    RTCRtpTransceiver,
    RTCSessionDescription,
)
from aiortc.contrib.media import MediaRelay
from aiortc.sdp import candidate_from_sdp
from av import AudioFrame
from livekit.protocol import rtc

from fishtalk.engine.aio import TaskSet

log = logging.getLogger(__name__)

CONSENT_FAILURES_ALLOWED = 1 << 30
"""Unanswered consent checks before aioice gives a connection up: never, in practice."""
aioice.ice.CONSENT_FAILURES = CONSENT_FAILURES_ALLOWED

RELIABLE = "_reliable"
"""Label of the ordered, reliable data channel (LiveKit's name)."""
LOSSY = "_lossy"
"""Label of the unordered, no-retransmit data channel (LiveKit's name)."""

SendSignal = Callable[[rtc.SignalResponse], None]
"""Queues a signalling message to the participant's client."""
DataHandler = Callable[[str, bytes], None]
"""Called with (channel label, raw DataPacket bytes) for every message the client sends."""
TrackHandler = Callable[[str, str, MediaStreamTrack], None]
"""Called with (mid, client track id, track) when a published track's media arrives."""
TrackEndedHandler = Callable[[str], None]
"""Called with the mid of a published track the client stopped sending (unpublished)."""


class MediaError(Exception):
    """A negotiation the server could not complete (bad SDP, timeout, closed connection)."""


def stream_id(participant_sid: str, track_sid: str) -> str:
    """The msid stream id the SDK parses to find who published a subscribed track."""
    return f"{participant_sid}|{track_sid}"


def _set_msid(transceiver: RTCRtpTransceiver, stream: str, track: str) -> None:
    # aiortc 1.16 has no public API for this; the SDP writer reads these two attributes.
    transceiver.sender._stream_id = stream
    transceiver.sender._track_id = track


def sending_mids(sdp: str) -> dict[str, str]:
    """Map the mid of each m-section the client sends media on to its msid track id.

    Sections without an msid or not sending (the SDK pre-creates idle transceivers) are
    left out; a sending section without an msid maps to ``""``.
    """
    result: dict[str, str] = {}
    for section in re.split(r"\r?\nm=", sdp)[1:]:
        mid = re.search(r"^a=mid:(\S+)", section, re.M)
        if mid is None or not re.search(r"^a=(sendonly|sendrecv)\s*$", section, re.M):
            continue
        msid = re.search(r"^a=msid:\S+ (\S+)", section, re.M)
        result[mid.group(1)] = msid.group(1) if msid else ""
    return result


@dataclass
class _Subscription:
    transceiver: RTCRtpTransceiver
    track: MediaStreamTrack


@dataclass
class _Negotiation:
    """Subscriber renegotiation bookkeeping: one offer in flight at a time."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    answer: asyncio.Future[RTCSessionDescription] | None = None
    offer_id: int = 0
    pending: bool = False


class ParticipantMedia:
    """The two peer connections of one participant, plus its subscriptions.

    ``send`` queues signalling messages (offers, answers) to the client; ``on_data`` gets
    every data packet the client sends; ``on_track`` every audio track it publishes and
    ``on_track_ended`` every one it stops sending (a re-offer without it).
    """

    def __init__(
        self,
        identity: str,
        *,
        send: SendSignal,
        on_data: DataHandler,
        on_track: TrackHandler,
        on_track_ended: TrackEndedHandler | None = None,
        negotiation_timeout: float = 15.0,
    ) -> None:
        self.identity = identity
        self._send = send
        self._on_data = on_data
        self._on_track = on_track
        self._on_track_ended = on_track_ended
        self._timeout = negotiation_timeout
        config = RTCConfiguration(iceServers=[])
        self.subscriber = RTCPeerConnection(config)
        self.publisher = RTCPeerConnection(config)
        self._channels: dict[str, RTCDataChannel] = {
            RELIABLE: self.subscriber.createDataChannel(RELIABLE, ordered=True),
            LOSSY: self.subscriber.createDataChannel(LOSSY, ordered=False, maxRetransmits=0),
        }
        self._backlog: dict[str, list[bytes]] = {RELIABLE: [], LOSSY: []}
        for label, channel in self._channels.items():
            channel.on("open", self._flusher(label))
        self._pending_candidates: dict[int, list[str]] = {
            rtc.SignalTarget.PUBLISHER: [],
            rtc.SignalTarget.SUBSCRIBER: [],
        }
        self._neg = _Negotiation()
        self._subscriptions: dict[str, _Subscription] = {}
        self._seen_mids: set[str] = set()
        self._publisher_lock = asyncio.Lock()
        self._tasks = TaskSet("fishtalk-sim-media")
        self.closed = False
        self.publisher.on("datachannel", self._on_publisher_channel)
        self.subscriber_connected = asyncio.Event()
        self.subscriber.on("connectionstatechange", self._on_subscriber_state)

    # --- subscriber connection (server offers) ---------------------------------------

    def _on_subscriber_state(self) -> None:
        if self.subscriber.connectionState == "connected":
            self.subscriber_connected.set()

    def _flusher(self, label: str) -> Callable[[], None]:
        def flush() -> None:
            channel = self._channels[label]
            backlog, self._backlog[label] = self._backlog[label], []
            for payload in backlog:
                channel.send(payload)

        return flush

    def renegotiate(self) -> None:
        """Schedule a fresh subscriber offer (coalesced with one already in flight)."""
        if self.closed:
            return
        self._neg.pending = True
        if not self._neg.lock.locked():
            self._spawn(self._negotiate_loop())

    async def _negotiate_loop(self) -> None:
        async with self._neg.lock:
            while self._neg.pending and not self.closed:
                self._neg.pending = False
                try:
                    await self._negotiate_once()
                except Exception as exc:  # aiortc raises several kinds; none may kill the loop
                    if not self.closed:
                        log.warning("subscriber negotiation for %s failed: %r", self.identity, exc)
                    return

    async def _negotiate_once(self) -> None:
        offer = await self.subscriber.createOffer()
        await self.subscriber.setLocalDescription(offer)
        local = self.subscriber.localDescription
        self._neg.offer_id += 1
        loop = asyncio.get_running_loop()
        self._neg.answer = loop.create_future()
        self._send(
            rtc.SignalResponse(
                offer=rtc.SessionDescription(type="offer", sdp=local.sdp, id=self._neg.offer_id)
            )
        )
        try:
            answer = await asyncio.wait_for(self._neg.answer, self._timeout)
        except TimeoutError:
            raise MediaError("the client did not answer the subscriber offer") from None
        finally:
            self._neg.answer = None
        await self.subscriber.setRemoteDescription(answer)
        await self._flush_candidates(rtc.SignalTarget.SUBSCRIBER)

    def handle_answer(self, description: rtc.SessionDescription) -> None:
        """The client answered our subscriber offer."""
        future = self._neg.answer
        if future is None or future.done():
            log.debug("ignoring an unexpected subscriber answer from %s", self.identity)
            return
        future.set_result(RTCSessionDescription(sdp=description.sdp, type="answer"))

    def send_data(self, label: str, payload: bytes) -> None:
        """Send raw DataPacket bytes to the client on the channel ``label``."""
        channel = self._channels.get(label)
        if channel is None or self.closed:
            return
        if channel.readyState == "open":
            channel.send(payload)
        elif channel.readyState == "connecting" and label == RELIABLE:
            self._backlog[label].append(payload)

    def subscribe(self, key: str, track: MediaStreamTrack, stream: str, track_sid: str) -> None:
        """Start sending ``track`` to the client, announced as ``stream`` / ``track_sid``.

        A new transceiver each time: reusing an inactive one raises no new track event
        in the SDK after a reconnect.
        """
        if self.closed or key in self._subscriptions:
            return
        transceiver = self.subscriber.addTransceiver(track, direction="sendonly")
        _set_msid(transceiver, stream, track_sid)
        self._subscriptions[key] = _Subscription(transceiver, track)
        self.renegotiate()

    def unsubscribe(self, key: str) -> None:
        """Stop sending the track subscribed under ``key`` (its transceiver goes inactive)."""
        sub = self._subscriptions.pop(key, None)
        if sub is None or self.closed:
            return
        sub.track.stop()
        sub.transceiver.sender.replaceTrack(None)
        sub.transceiver.direction = "inactive"
        self.renegotiate()

    # --- publisher connection (client offers) ----------------------------------------

    async def handle_offer(self, description: rtc.SessionDescription) -> None:
        """Answer the client's publisher offer and report any newly arrived tracks."""
        async with self._publisher_lock:
            if self.closed:
                return
            sending = sending_mids(description.sdp)
            sending.update(
                {m: t for m, t in description.mid_to_track_id.items() if m in sending and t}
            )
            await self.publisher.setRemoteDescription(
                RTCSessionDescription(sdp=description.sdp, type="offer")
            )
            await self._flush_candidates(rtc.SignalTarget.PUBLISHER)
            answer = await self.publisher.createAnswer()
            await self.publisher.setLocalDescription(answer)
            self._send(
                rtc.SignalResponse(
                    answer=rtc.SessionDescription(
                        type="answer", sdp=self.publisher.localDescription.sdp, id=description.id
                    )
                )
            )
            for gone in sorted(self._seen_mids - set(sending)):
                self._seen_mids.discard(gone)
                if self._on_track_ended is not None:
                    self._on_track_ended(gone)
            for transceiver in self.publisher.getTransceivers():
                mid = transceiver.mid
                if mid is None or mid in self._seen_mids or transceiver.kind != "audio":
                    continue
                if mid not in sending:
                    continue
                self._seen_mids.add(mid)
                self._on_track(mid, sending[mid], transceiver.receiver.track)

    def _on_publisher_channel(self, channel: RTCDataChannel) -> None:
        label: str = channel.label

        def on_message(message: Any) -> None:
            if isinstance(message, bytes):
                self._on_data(label, message)

        channel.on("message", on_message)

    # --- ICE -------------------------------------------------------------------------

    async def add_candidate(self, target: int, candidate_init: str) -> None:
        """Take a trickled client candidate (held until the remote description is set)."""
        self._pending_candidates.setdefault(target, []).append(candidate_init)
        pc = self.publisher if target == rtc.SignalTarget.PUBLISHER else self.subscriber
        if pc.remoteDescription is not None:
            await self._flush_candidates(target)

    async def _flush_candidates(self, target: int) -> None:
        pc = self.publisher if target == rtc.SignalTarget.PUBLISHER else self.subscriber
        pending, self._pending_candidates[target] = self._pending_candidates.get(target, []), []
        for raw in pending:
            try:
                init = json.loads(raw)
                text = str(init.get("candidate", ""))
                if not text:
                    continue
                candidate = candidate_from_sdp(text.split(":", 1)[1] if ":" in text else text)
                candidate.sdpMid = init.get("sdpMid")
                candidate.sdpMLineIndex = init.get("sdpMLineIndex")
                await pc.addIceCandidate(candidate)
            except (ValueError, KeyError, IndexError, AttributeError) as exc:
                log.debug("ignoring a bad candidate from %s: %s", self.identity, exc)

    # --- lifecycle -------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        self._tasks.spawn(coro)

    async def close(self) -> None:
        """Close both peer connections and stop every subscription."""
        if self.closed:
            return
        self.closed = True
        if self._neg.answer is not None and not self._neg.answer.done():
            self._neg.answer.cancel()
        self.subscriber_connected.set()  # wakes waiters; they see ``closed`` and give up
        for sub in self._subscriptions.values():
            sub.track.stop()
        self._subscriptions.clear()
        await self._tasks.cancel_all()
        await self.subscriber.close()
        await self.publisher.close()


LevelHandler = Callable[[float], None]
"""Called with the linear RMS level (0..1) of every audio frame a published track sends."""


class _MeteredTrack(MediaStreamTrack):
    """Passes a source's audio frames through, reporting each frame's level.

    LiveKit derives active speakers from the audio level of what it relays; this is the
    same measure, taken on the decoded frames the relay already has.
    """

    kind = "audio"

    def __init__(self, source: MediaStreamTrack, on_level: LevelHandler) -> None:
        super().__init__()
        self._source = source
        self._on_level = on_level

    async def recv(self) -> Any:
        frame = await self._source.recv()
        if not isinstance(frame, AudioFrame):
            return frame
        samples = frame.to_ndarray()
        if samples.size and samples.dtype == np.int16:  # aiortc decodes Opus to s16
            rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64)))) / 32768.0
            self._on_level(min(1.0, rms))
        return frame


class TrackRelay:
    """Fans one published track out to any number of subscribers (one proxy each).

    The source is never stopped here: the client may reuse its transceiver (and so the
    same receiver track) for a later publication. The relay stops reading once its last
    proxy is stopped, and the peer connection ends the source when it closes. With
    ``on_level``, every relayed audio frame's level is reported (active speakers).
    """

    def __init__(self, source: MediaStreamTrack, on_level: LevelHandler | None = None) -> None:
        self.source = source
        self._read: MediaStreamTrack = (
            _MeteredTrack(source, on_level) if on_level is not None else source
        )
        self._relay = MediaRelay()

    def proxy(self) -> MediaStreamTrack:
        """A new track that yields the source's frames (decoded and re-encoded by aiortc).

        Buffered: a subscriber's send loop that stalls for a moment on a loaded machine
        gets every frame late rather than losing some (gaps sound like glitches and skew
        what a listener measures).
        """
        track: MediaStreamTrack = self._relay.subscribe(self._read, buffered=True)
        return track
