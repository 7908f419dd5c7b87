"""A livekit-agents agent in the sim's room, and our bridge from Fish's ``client-event``.

The interop suite's other side (issue 27): a real livekit-agents ``AgentSession`` with the
local plugins of :mod:`support.lk_plugins` and Silero VAD, joined to a sim session's room
with the agent token the session endpoint minted, through ``RoomIO`` as in production.
livekit-agents 1.3.11 shares fishtalk's pins (livekit 1.2.1), so it runs in the test's
process, on the sim's thread (:func:`fishtalk.sim.runner.run_sim`'s ``agent`` option).

RoomIO does the LiveKit Agents side by itself: ``lk.agent.state``, ``lk.transcription``
(agent segments paced to the audio it plays and cut on interruption, user segments interim
then final under the user's identity), and typed turns read from ``lk.chat`` text streams.

:class:`FishBridge`, ours and kept tiny, adds what a Fish agent does on top:

=====================  ==============================================================
``client-event``       what the bridge does with the session
=====================  ==============================================================
``user.message``       ``generate_reply(user_input=text)`` (a typed turn)
``user.interrupt``     ``interrupt()``
``user.hangup``        ``agent-event`` ``session.ended {reason: user_hangup}``, then close
``client_tool.result`` settles the pending ``client_tool.call`` with that ``callId``
anything else          ignored (``user.activity`` included: no idle re-engagement)
=====================  ==============================================================

The agent's function tools go out as Fish ``agent-event`` messages: every call as
``tool.started`` then ``tool.completed`` / ``tool.failed``; ``get_time`` is a client tool
(``client_tool.call``, waits for the result) and ``get_weather`` a builtin one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable
from typing import Any, Final

from livekit import rtc
from livekit.agents import Agent, AgentSession, RunContext, ToolError, function_tool, room_io
from livekit.plugins import silero

from fishtalk.sim.fish.sessions import SimSession
from fishtalk.sim.livekit.server import SimServer
from support.lk_plugins import EnergySTT, EspeakTTS, ScriptedLLM, ToolCall

GREETING: Final = "Hello from livekit agents."
TABLE: Final = {
    "time": ToolCall("get_time", {"zone": "UTC"}),
    "weather": ToolCall("get_weather", {"city": "Oslo"}),
    "story": (
        "Once upon a time there was a little fish who swam all the way across the wide "
        "blue ocean to find a friend, and on the way it met a crab, a turtle and a whale."
    ),
    "hello": "Hello there, nice to meet you.",
}
CLIENT_TOOL_TIMEOUT: Final = 20.0

_vad: silero.VAD | None = None


def vad() -> silero.VAD:
    """Silero VAD, loaded once per process from the model its wheel ships."""
    global _vad
    if _vad is None:
        _vad = silero.VAD.load()
    return _vad


class FishBridge:
    """Fish ``client-event`` in, ``agent-event`` out, for one AgentSession (module docs)."""

    def __init__(self, room: rtc.Room, session: AgentSession) -> None:
        self.room = room
        self.session = session
        self.pending: dict[str, asyncio.Future[Any]] = {}
        self.ended = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        room.on("data_received", self._on_data)

    def _on_data(self, packet: rtc.DataPacket) -> None:
        if packet.topic != "client-event":
            return
        try:
            event = json.loads(packet.data)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "user.message" and isinstance(event.get("text"), str):
            self.session.generate_reply(user_input=event["text"])
        elif kind == "user.interrupt":
            self.session.interrupt()
        elif kind == "user.hangup":
            self._spawn(self.hang_up())
        elif kind == "client_tool.result":
            waiter = self.pending.pop(str(event.get("callId")), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(event)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def send(self, event: dict[str, Any]) -> None:
        """One ``agent-event`` message (reliable, JSON)."""
        with contextlib.suppress(Exception):  # the room may be gone at the end
            await self.room.local_participant.publish_data(
                json.dumps(event), reliable=True, topic="agent-event"
            )

    async def hang_up(self) -> None:
        await self.send({"type": "session.ended", "reason": "user_hangup"})
        self.ended.set()

    async def run_tool(
        self, name: str, source: str, params: dict[str, Any], work: Callable[[], Any]
    ) -> Any:
        """``tool.started``, the work, then ``tool.completed`` or ``tool.failed``."""
        call_id = "call_" + uuid.uuid4().hex[:8]
        head = {"callId": call_id, "toolName": name, "toolSource": source}
        await self.send({"type": "tool.started", **head, "input": json.dumps(params)})
        try:
            output = await work()
        except Exception as exc:
            await self.send({"type": "tool.failed", **head, "error": str(exc)})
            raise
        await self.send({"type": "tool.completed", **head, "output": json.dumps(output)})
        return output

    async def client_tool(self, name: str, params: dict[str, Any]) -> Any:
        """``client_tool.call`` and wait for its ``client_tool.result``."""

        async def call() -> Any:
            call_id = "call_" + uuid.uuid4().hex[:8]
            waiter = asyncio.get_running_loop().create_future()
            self.pending[call_id] = waiter
            await self.send(
                {
                    "type": "client_tool.call",
                    "callId": call_id,
                    "toolName": name,
                    "params": params,
                    "expectsResponse": True,
                }
            )
            try:
                result = await asyncio.wait_for(waiter, CLIENT_TOOL_TIMEOUT)
            finally:
                self.pending.pop(call_id, None)
            if result.get("isError"):
                raise ToolError(json.dumps(result.get("result")))
            return result.get("result")

        return await self.run_tool(name, "client", params, call)


class InteropAgent(Agent):
    """The agent: the scripted table, a client tool and a builtin one."""

    def __init__(self, bridge_ref: list[FishBridge]) -> None:
        super().__init__(instructions="Answer from the table.")
        self._bridge_ref = bridge_ref

    @property
    def bridge(self) -> FishBridge:
        return self._bridge_ref[0]

    @function_tool
    async def get_time(self, context: RunContext, zone: str) -> Any:
        """The time in a zone (run by the client)."""
        return await self.bridge.client_tool("get_time", {"zone": zone})

    @function_tool
    async def get_weather(self, context: RunContext, city: str) -> Any:
        """The weather in a city (a builtin tool)."""

        async def work() -> Any:
            return {"city": city, "sky": "clear"}

        return await self.bridge.run_tool("get_weather", "builtin", {"city": city}, work)


async def run_agent(session: SimSession, server: SimServer, on_end: Callable[[], None]) -> None:
    """Join ``session``'s room as its agent (the endpoint's token), greet the user,
    converse until the end (``run_sim``'s ``agent`` option)."""
    await join(server.ws_url, session.agent_token, session.user_identity, on_end)


async def join(
    url: str,
    token: str,
    user_identity: str | None,
    on_end: Callable[[], None] = lambda: None,
    *,
    greet: bool = True,
) -> None:
    """Join the room ``token`` is for as the agent, through RoomIO; greet
    ``user_identity`` (None: the first participant) once there (unless ``greet`` is
    False); converse until the user hangs up (Fish) or leaves (RoomIO closes the session)."""
    room = rtc.Room()
    await room.connect(url, token)
    agent_session: AgentSession = AgentSession(
        stt=EnergySTT(), llm=ScriptedLLM(TABLE), tts=EspeakTTS(), vad=vad()
    )
    bridge_ref: list[FishBridge] = []
    bridge = FishBridge(room, agent_session)
    bridge_ref.append(bridge)
    closed = asyncio.Event()
    agent_session.on("close", lambda _ev: closed.set())
    try:
        await agent_session.start(
            InteropAgent(bridge_ref),
            room=room,
            room_options=room_io.RoomOptions(delete_room_on_close=False),
        )
        await _user_joined(room, user_identity)
        if greet:
            agent_session.say(GREETING)
        done = {asyncio.ensure_future(closed.wait()), asyncio.ensure_future(bridge.ended.wait())}
        _, pending = await asyncio.wait(done, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
    finally:
        on_end()
        with contextlib.suppress(Exception):
            await agent_session.aclose()
        with contextlib.suppress(Exception):
            await room.disconnect()


async def _user_joined(room: rtc.Room, identity: str | None) -> None:
    joined = asyncio.Event()

    def seen(participant: rtc.RemoteParticipant) -> None:
        if identity is None or participant.identity == identity:
            joined.set()

    room.on("participant_connected", seen)
    if (identity is None and room.remote_participants) or identity in room.remote_participants:
        joined.set()
    try:
        await joined.wait()
    finally:
        room.off("participant_connected", seen)


__all__ = ["GREETING", "TABLE", "FishBridge", "InteropAgent", "join", "run_agent", "vad"]
