"""Real ``livekit.rtc.Room`` clients joined to the sim server, for tests and benchmarks.

Everything that waits takes a timeout, so a broken scenario fails instead of hanging.
WebRTC needs the private network namespace (``python -m fishtalk.sim.netns``). The pytest
fixtures built on these (``sim_server``, ``room_factory``) live in ``tests/sim_fixtures.py``.

:func:`connect_client` connects a new ``rtc.Room`` with a minted token and returns a
:class:`Client`; :class:`Events` records room events and waits for them; :func:`wait_until`
polls a condition; :func:`feed_sine`, :func:`collect_audio` and :func:`tone_frequency`
drive and analyse audio.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from livekit import rtc
from livekit.rtc.room import EventTypes

from fishtalk.sim.livekit.server import ParticipantKindName, SimServer

DEFAULT_WAIT = 15.0
"""Seconds any helper waits before failing (generous: CI machines are shared and slow)."""
CONNECT_WAIT = 30.0
"""Seconds :func:`connect_client` allows ``Room.connect`` (ICE on a loaded host is slow)."""


@dataclass
class _Waiter:
    name: str
    predicate: Callable[..., bool] | None
    future: asyncio.Future[tuple[Any, ...]]


@dataclass
class Events:
    """Records every emission of the named room events and waits for them.

    ``events.seen["participant_connected"]`` lists the argument tuples received so far;
    ``await events.wait("data_received", lambda p: p.topic == "x")`` returns the first
    matching argument tuple (already seen or future) or raises TimeoutError.
    """

    room: rtc.Room
    names: tuple[EventTypes, ...] = (
        "participant_connected",
        "participant_disconnected",
        "participant_active",
        "data_received",
        "participant_attributes_changed",
        "track_published",
        "track_subscribed",
        "track_unsubscribed",
        "track_muted",
        "track_unmuted",
        "connection_state_changed",
        "reconnecting",
        "reconnected",
        "disconnected",
    )
    seen: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    _waiters: list[_Waiter] = field(default_factory=list)
    _consumed: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.names:
            self.seen.setdefault(name, [])
            self.room.on(name, self._recorder(name))

    def _recorder(self, name: EventTypes) -> Callable[..., None]:
        def record(*args: Any) -> None:
            self.seen[name].append(args)
            for waiter in list(self._waiters):
                if waiter.name != name or waiter.future.done():
                    continue
                if waiter.predicate is None or waiter.predicate(*args):
                    waiter.future.set_result(args)
                    self._waiters.remove(waiter)

        return record

    async def wait(
        self,
        name: str,
        predicate: Callable[..., bool] | None = None,
        *,
        within: float = DEFAULT_WAIT,
        include_past: bool = True,
    ) -> tuple[Any, ...]:
        """The first ``name`` emission matching ``predicate`` (past ones count by default)."""
        if name not in self.seen:
            raise ValueError(f"event {name!r} is not recorded (add it to names)")
        if include_past:
            for args in self.seen[name]:
                if predicate is None or predicate(*args):
                    return args
        loop = asyncio.get_running_loop()
        waiter = _Waiter(name, predicate, loop.create_future())
        self._waiters.append(waiter)
        try:
            return await asyncio.wait_for(waiter.future, within)
        except TimeoutError:
            raise TimeoutError(f"no {name!r} event within {within:.1f} s") from None
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    async def next(
        self,
        name: str,
        predicate: Callable[..., bool] | None = None,
        *,
        within: float = DEFAULT_WAIT,
    ) -> tuple[Any, ...]:
        """The next ``name`` emission after those already returned by :meth:`next`."""
        if name not in self.seen:
            raise ValueError(f"event {name!r} is not recorded (add it to names)")
        start = self._consumed.get(name, 0)

        def done() -> tuple[Any, ...] | None:
            for index in range(start, len(self.seen[name])):
                args = self.seen[name][index]
                if predicate is None or predicate(*args):
                    self._consumed[name] = index + 1
                    return args
            return None

        deadline = time.monotonic() + within
        while True:
            found = done()
            if found is not None:
                return found
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no further {name!r} event within {within:.1f} s")
            with contextlib.suppress(TimeoutError):
                await self.wait(name, None, within=min(remaining, 0.5), include_past=False)


@dataclass
class Client:
    """A connected room plus its event recorder."""

    room: rtc.Room
    events: Events
    identity: str

    @property
    def local(self) -> rtc.LocalParticipant:
        """The room's local participant."""
        return self.room.local_participant


class RoomFactory(Protocol):
    """Connects a new client to the sim server (the ``room_factory`` fixture is one)."""

    def __call__(
        self,
        room: str,
        identity: str,
        *,
        kind: ParticipantKindName = "standard",
        name: str | None = None,
        attributes: Mapping[str, str] | None = None,
    ) -> Awaitable[Client]: ...


async def connect_client(
    server: SimServer,
    room: str,
    identity: str,
    *,
    kind: ParticipantKindName = "standard",
    name: str | None = None,
    attributes: Mapping[str, str] | None = None,
    within: float = CONNECT_WAIT,
) -> Client:
    """Connect a new ``rtc.Room`` as ``identity``; events are recorded from before connect."""
    lk_room = rtc.Room()
    events = Events(lk_room)
    token = server.mint_token(room, identity, kind=kind, name=name, attributes=attributes)
    # The sim has no single-PC /rtc/v1 path: ask for the /rtc path at once, so the SDK's
    # v1 fallback warnings stay out of every test run.
    options = rtc.RoomOptions(single_peer_connection=False)
    connecting = asyncio.ensure_future(lk_room.connect(server.ws_url, token, options))
    try:
        await asyncio.wait_for(asyncio.shield(connecting), within)
    except BaseException:
        # Never cancel a room connect: a cancelled one strands the SDK's handshake and the
        # SDK then SIGTERMs the whole process. Let it finish, leave, then fail.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(connecting), 30)
            await lk_room.disconnect()
        raise
    return Client(lk_room, events, identity)


async def wait_until(
    condition: Callable[[], bool], *, within: float = DEFAULT_WAIT, interval: float = 0.02
) -> None:
    """Poll ``condition`` until true; TimeoutError after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {within:.1f} s")
        await asyncio.sleep(interval)


async def feed_sine(
    source: rtc.AudioSource,
    frequency: float,
    *,
    seconds: float | None = None,
    amplitude: float = 0.3,
    frame_ms: int = 10,
) -> None:
    """Feed a sine to ``source`` in real time (forever when ``seconds`` is None).

    Real-time pacing matters: AudioSource queues up to a second, so feeding faster than
    real time makes every latency figure wrong.
    """
    rate, channels = source.sample_rate, source.num_channels
    per_frame = rate * frame_ms // 1000
    total = None if seconds is None else int(seconds * rate)
    sent = 0
    start = time.monotonic()
    while total is None or sent < total:
        n = np.arange(sent, sent + per_frame)
        wave = np.sin(2 * math.pi * frequency * n / rate) * amplitude * 32767
        samples = np.repeat(wave.astype(np.int16), channels)
        await source.capture_frame(rtc.AudioFrame(samples.tobytes(), rate, channels, per_frame))
        sent += per_frame
        ahead = sent / rate - (time.monotonic() - start)
        if ahead > 0.02:
            await asyncio.sleep(ahead - 0.02)


def dominant_frequency(samples: npt.NDArray[np.int16], sample_rate: int) -> float:
    """The strongest frequency (Hz) in mono ``samples``: Hann window, FFT peak refined by
    parabolic interpolation between the neighbouring bins."""
    x = samples.astype(np.float64)
    if x.size < 3:
        return 0.0
    spectrum = np.abs(np.fft.rfft(x * np.hanning(x.size)))
    spectrum[0] = 0.0
    peak = int(np.argmax(spectrum))
    offset = 0.0
    if 0 < peak < spectrum.size - 1:
        left, mid, right = np.log(spectrum[peak - 1 : peak + 2] + 1e-12)
        denominator = left - 2 * mid + right
        if denominator != 0:
            offset = float(0.5 * (left - right) / denominator)
    return (peak + offset) * sample_rate / x.size


def tone_frequency(
    samples: npt.NDArray[np.int16], sample_rate: int, *, window: float = 0.2
) -> float:
    """Median of :func:`dominant_frequency` over ``window``-second slices.

    Robust against the odd splice a loaded machine causes (a dropped or concealed frame
    smears one slice's spectrum, not the median).
    """
    size = max(3, int(window * sample_rate))
    slices = [samples[i : i + size] for i in range(0, samples.size - size + 1, size)]
    if not slices:
        return dominant_frequency(samples, sample_rate)
    return float(np.median([dominant_frequency(s, sample_rate) for s in slices]))


async def collect_audio(
    track: rtc.Track, *, seconds: float, sample_rate: int = 48000, within: float = DEFAULT_WAIT
) -> npt.NDArray[np.int16]:
    """Receive ``seconds`` of mono audio from a remote track (TimeoutError after ``within``)."""
    stream = rtc.AudioStream(track, sample_rate=sample_rate, num_channels=1)
    wanted = int(seconds * sample_rate)
    chunks: list[npt.NDArray[np.int16]] = []

    async def gather() -> None:
        have = 0
        async for event in stream:
            chunk = np.frombuffer(event.frame.data, dtype=np.int16).copy()
            chunks.append(chunk)
            have += chunk.size
            if have >= wanted:
                return

    try:
        await asyncio.wait_for(gather(), within)
    finally:
        await stream.aclose()
    return np.concatenate(chunks)[:wanted] if chunks else np.zeros(0, dtype=np.int16)
