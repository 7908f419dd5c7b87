"""The OpenLive stand-in: an aiohttp WebSocket server on loopback speaking OpenLive's protocol.

``GET /live`` upgrades to the live socket. The server sends ``status: "ready"``, then
answers every ``user_text`` with the script of :mod:`fishtalk.sim.openlive.script`, paced
one step per ``pace_seconds``, and sends ``done`` after each turn, whether it ran to its
end, was cancelled or failed (as OpenLive's own server does). Like that server:

* ``cancel`` during a turn stops it at the next step (later deltas are never sent) and
  keeps ``spoken`` as what the turn's reply was cut down to; outside a turn it is a no-op;
* a ``user_text`` during a turn waits for that turn's ``done`` (the latest one wins);
* ``control`` ``end`` closes the socket;
* a frame that is not the protocol is answered with an ``error`` message, and the
  connection goes on; unknown messages are recorded and ignored.

What the server saw is kept for tests: :attr:`OpenLiveSim.turns` (one
:class:`TurnRecord` a turn) and :attr:`OpenLiveSim.received` (every client message).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from aiohttp import WSMessage, WSMsgType, web

from fishtalk.core.errors import OpenLiveProtocolError
from fishtalk.core.openlive import (
    MAX_IMAGE_BYTES,
    Cancel,
    ClientMessage,
    Control,
    Done,
    ErrorMessage,
    Status,
    TextDelta,
    UserText,
    encode_message,
    parse_binary_frame,
    parse_client_frame,
)
from fishtalk.engine.aio import TaskSet
from fishtalk.sim.openlive.script import Pause, Raw, reply_steps

LIVE_PATH = "/live"
DEFAULT_PACE_SECONDS = 0.05
"""Time between two steps of a reply (a word each): a brisk speaker."""


@dataclass
class TurnRecord:
    """One user turn as the stand-in saw it."""

    text: str
    """The ``user_text``."""
    sent: str = ""
    """The reply text sent before the turn ended (the ``text_delta``\\ s, joined)."""
    cancelled: bool = False
    """A ``cancel`` cut the turn short."""
    spoken: str | None = None
    """The cancel's ``spoken`` (None: no cancel, or one without it)."""
    finished: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    """Set once the turn's ``done`` has been sent."""


class _Connection:
    """One live socket: its turns, one at a time, and its reader."""

    def __init__(self, sim: OpenLiveSim, ws: web.WebSocketResponse) -> None:
        self.sim = sim
        self.ws = ws
        self.tasks = TaskSet("openlive-sim")
        self.turn: TurnRecord | None = None
        self.abort = asyncio.Event()
        self.queued: str | None = None
        self.number = 0

    async def send(self, text: str) -> None:
        if not self.ws.closed:
            with contextlib.suppress(ConnectionResetError):
                await self.ws.send_str(text)

    def start_turn(self, text: str) -> None:
        if self.turn is not None:
            self.queued = text
            return
        self.number += 1
        self.turn = TurnRecord(text=text)
        self.sim.turns.append(self.turn)
        self.abort = asyncio.Event()
        self.tasks.spawn(self.play(self.turn, self.abort), name=f"turn {self.number}")

    async def play(self, record: TurnRecord, abort: asyncio.Event) -> None:
        try:
            for step in reply_steps(record.text, self.number):
                if abort.is_set():
                    break
                if isinstance(step, Pause):
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(abort.wait(), step.units * self.sim.pace_seconds)
                elif isinstance(step, Raw):
                    await self.send(step.text)
                else:
                    if isinstance(step, TextDelta):
                        record.sent += step.text
                    await self.send(encode_message(step))
        finally:
            await self.send(encode_message(Done()))
            record.finished.set()
            self.turn = None
            queued, self.queued = self.queued, None
            if queued is not None and not self.ws.closed:
                self.start_turn(queued)

    async def on_message(self, message: ClientMessage) -> None:
        self.sim.received.append(message)
        if isinstance(message, UserText):
            self.start_turn(message.text)
        elif isinstance(message, Cancel) and self.turn is not None:
            self.turn.cancelled = True
            self.turn.spoken = message.spoken
            self.abort.set()
        elif isinstance(message, Control) and message.action == "end":
            await self.ws.close()

    async def on_frame(self, frame: WSMessage) -> None:
        try:
            if frame.type == WSMsgType.BINARY:
                self.sim.images.append(parse_binary_frame(frame.data))
            else:
                await self.on_message(parse_client_frame(frame.data))
        except OpenLiveProtocolError as exc:
            await self.send(encode_message(ErrorMessage(message=str(exc))))

    async def serve(self) -> None:
        try:
            await self.send(encode_message(Status(text="ready")))
            async for msg in self.ws:
                if msg.type in (WSMsgType.TEXT, WSMsgType.BINARY):
                    await self.on_frame(msg)
        finally:
            self.abort.set()
            await self.tasks.cancel_all()


class OpenLiveSim:
    """The stand-in server; :func:`run_openlive_sim` starts and stops it."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, *, pace_seconds: float = DEFAULT_PACE_SECONDS
    ) -> None:
        self.host = host
        self.port = port
        self.pace_seconds = pace_seconds
        self.turns: list[TurnRecord] = []
        self.received: list[ClientMessage] = []
        self.images: list[bytes] = []
        self._runner: web.AppRunner | None = None
        self._live: set[web.WebSocketResponse] = set()

    @property
    def url(self) -> str:
        """The live socket's URL, ``ws://host:port/live``."""
        return f"ws://{self.host}:{self.port}{LIVE_PATH}"

    async def _handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=MAX_IMAGE_BYTES + 1)
        await ws.prepare(request)
        self._live.add(ws)
        try:
            await _Connection(self, ws).serve()
        finally:
            self._live.discard(ws)
        return ws

    async def start(self) -> None:
        """Listen; ``port`` 0 becomes the port picked. Raises OSError if it cannot."""
        app = web.Application()
        app.router.add_get(LIVE_PATH, self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        try:
            await site.start()
        except OSError:
            await self._runner.cleanup()
            raise
        addresses = self._runner.addresses
        self.port = int(addresses[0][1]) if addresses else self.port

    async def stop(self) -> None:
        """Close every live socket and stop listening."""
        for ws in list(self._live):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


@contextlib.asynccontextmanager
async def run_openlive_sim(
    host: str = "127.0.0.1", port: int = 0, *, pace_seconds: float = DEFAULT_PACE_SECONDS
) -> AsyncIterator[OpenLiveSim]:
    """The stand-in, listening, for the ``async with`` block."""
    sim = OpenLiveSim(host, port, pace_seconds=pace_seconds)
    await sim.start()
    try:
        yield sim
    finally:
        await sim.stop()


__all__ = [
    "DEFAULT_PACE_SECONDS",
    "LIVE_PATH",
    "OpenLiveSim",
    "TurnRecord",
    "run_openlive_sim",
]
