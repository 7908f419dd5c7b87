"""The simulated Fish agent: a real ``livekit.rtc.Room`` participant that follows the protocol.

One :class:`SimAgent` serves one session. It joins the session's room as identity
``agent`` (participant kind agent) with the token the endpoint minted, and:

* publishes ``lk.agent.state`` (``initializing`` -> ``listening`` -> ``thinking`` ->
  ``speaking`` -> ``listening``; ``idle`` after it has re-engaged once without answer);
* greets the user once they join, runs its :class:`~fishtalk.sim.fish.scenario.Scenario`'s
  steps, then (by default) converses: every ``user.message`` gets an answer (text only
  when ``audio`` is false), and so does every stretch of user speech it hears;
* speaks with locally synthesised audio (:mod:`fishtalk.sim.fish.voice`) fed to an
  ``rtc.AudioSource`` in real time;
* takes the time its scenario says (``[agent]`` timings): ``thinking`` for
  ``think_seconds`` before each reply, ``first_audio_delay_seconds`` between a spoken
  line's first word and its voice, audio fed in ``audio_chunk_ms`` chunks at
  ``audio_realtime_factor`` times real time;
* streams its transcript on ``lk.transcription`` the way LiveKit agents do: one text
  stream per segment, opened with ``lk.segment_id`` and ``lk.transcription_final: "false"``
  (plus ``lk.transcribed_track_id``), one word chunk written as that word's audio starts
  playing, and closed with a trailer attribute ``lk.transcription_final: "true"``. A
  ``user.interrupt`` stops the audio at once and closes the segment with only the words
  already spoken;
* publishes the user's transcript under the user's identity (``sender_identity``): while
  it hears sound on the user's track, every 0.5 s a complete stream with
  ``lk.transcription_final: "false"`` whose text replaces the segment's text ("hearing
  0.8 s of sound ..."), then one with ``"true"`` in its header ("heard 1.2 s of sound at
  -18 dBFS, mostly around 440 Hz");
* calls client tools (``client_tool.call``), waits for ``client_tool.result`` up to a
  server-side deadline (30 s unless the scenario says otherwise), ignores late, unknown and
  fire-and-forget results, and says what came back;
* emits ``tool.started`` / ``tool.completed`` / ``tool.failed`` for client tools and its
  own webhook / mcp / builtin tools (payloads over 4 KB truncated and flagged), unless the
  session was created with ``tool_events: false``;
* on ``user.hangup`` sends ``session.ended {reason: user_hangup}`` and leaves; at the
  session's max duration sends ``session.ended {reason: conversation_timeout}``; ignores
  malformed client events and unknown types.

It does not barge in on user speech, and it transcribes but does not answer sound that
began while it was talking or within 0.5 s after: through a speaker without echo
cancellation that is its own voice, and answering it would loop forever.
Everything it decides is also appended to :attr:`SimAgent.journal`, which tests read.

:class:`SimAgent` owns the lifecycle (join, leave, end, the room's events) and routes what
arrives to its parts: :class:`~fishtalk.sim.fish.interpreter.ScenarioInterpreter` (the
script and the conversation), :class:`~fishtalk.sim.fish.speech.Speech` (its voice and
transcripts), :class:`~fishtalk.sim.fish.listening.Listening` (what it hears, the idle
clock) and :class:`~fishtalk.sim.fish.tools.Tools` (client tool calls, tool events).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

from livekit import rtc

from fishtalk.core import protocol as p
from fishtalk.sim.fish.core import USER_GRACE, AgentCore, Ended
from fishtalk.sim.fish.endpoint import AGENT_IDENTITY
from fishtalk.sim.fish.interpreter import ScenarioInterpreter
from fishtalk.sim.fish.listening import IdleClock, Listening
from fishtalk.sim.fish.scenario import CallClientTool, Scenario
from fishtalk.sim.fish.sessions import SimSession
from fishtalk.sim.fish.speech import Speech
from fishtalk.sim.fish.tools import Tools
from fishtalk.sim.fish.voice import Voice, pick_voice

CONNECT_TIMEOUT: Final = 30.0
"""How long the agent tries to join its room."""
CONNECT_SETTLE: Final = 30.0
"""How long a connect given up on (timed out, or the sim stopping) may take to finish."""


class FaultInjector(Protocol):
    """The part of :class:`~fishtalk.sim.livekit.server.SimServer` the agent's scenarios use."""

    @property
    def ws_url(self) -> str:
        """Signalling URL."""
        ...

    async def drop_signalling(self, room: str, identity: str) -> None:
        """Close a participant's signalling socket."""
        ...

    async def force_reconnect(self, room: str, identity: str) -> None:
        """Make a participant rejoin in full."""
        ...


class SimAgent(AgentCore):
    """The simulated agent for one session; :meth:`run` returns once it has left."""

    def __init__(
        self,
        session: SimSession,
        scenario: Scenario,
        server: FaultInjector,
        *,
        on_end: Callable[[SimSession], None] | None = None,
        voice: Voice | None = None,
        idle_clock: IdleClock | None = None,
    ) -> None:
        super().__init__(session, scenario)
        self.faults = server
        """Where scenario steps drop or force-reconnect the user's connection."""
        self._on_end = on_end
        self.speech = Speech(self, voice or pick_voice(self.settings.voice))
        self.listening = Listening(self, self.speech, clock=idle_clock)
        self.tools = Tools(self)
        self.interpreter = ScenarioInterpreter(self)
        self.user_back = asyncio.Event()
        """Set whenever the user (re)joins; a forced reconnect clears it and waits."""
        self._user_joined = asyncio.Event()
        self._script: asyncio.Task[None] | None = None
        self._done = asyncio.Event()
        self._user_gone: asyncio.TimerHandle | None = None

    @property
    def voice(self) -> Voice:
        """The voice the agent speaks with."""
        return self.speech.voice

    @property
    def max_utterance(self) -> float:
        """Seconds after which a user segment still sounding is finalised anyway."""
        return self.listening.max_utterance

    @max_utterance.setter
    def max_utterance(self, seconds: float) -> None:
        self.listening.max_utterance = seconds

    # --- what scenarios and tests call --------------------------------------------------

    async def say(self, text: str, *, audio: bool = True, sound: str | None = None) -> str:
        """Speak ``text`` (or write it only); return the words actually delivered.
        ``sound``: what the audio says instead (see :meth:`Speech.say`)."""
        return await self.speech.say(text, audio=audio, sound=sound)

    async def publish_user_transcript(
        self, identity: str, segment: str, text: str, *, final: bool, track_sid: str = ""
    ) -> None:
        """One complete text stream under the user's identity; its text replaces the last."""
        await self.speech.publish_user_transcript(
            identity, segment, text, final=final, track_sid=track_sid
        )

    async def call_client_tool(self, step: CallClientTool) -> None:
        """Run one ``client_tool.call`` step (see :meth:`client_tool`)."""
        await self.interpreter.call_client_tool(step)

    # --- lifecycle ----------------------------------------------------------------------

    async def _abandon(self, connecting: asyncio.Future[None]) -> None:
        """Give up joining without cancelling the connect: a cancelled ``room.connect``
        strands the SDK's handshake, and the SDK then ends the whole process (SIGTERM,
        seconds later). It is left to finish (at most :data:`CONNECT_SETTLE` s), and a
        room it joined is left at once."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(connecting), CONNECT_SETTLE)
        if connecting.done() and not connecting.cancelled() and connecting.exception() is None:
            with contextlib.suppress(Exception):
                await self.room.disconnect()

    async def run(self) -> None:
        """Join, greet, run the scenario, converse; return once the agent has left."""
        self._wire_room()
        self.speech.open()
        try:
            connecting = asyncio.ensure_future(
                self.room.connect(
                    self.faults.ws_url,
                    self.session.agent_token,
                    # The sim serves no /rtc/v1: skip the attempt and the SDK's warnings.
                    rtc.RoomOptions(single_peer_connection=False),
                )
            )
            try:
                await asyncio.wait_for(asyncio.shield(connecting), CONNECT_TIMEOUT)
            except (rtc.ConnectError, TimeoutError) as exc:
                await self._abandon(connecting)
                self.note(f"could not join: {exc or 'timed out'}")
                self._finish()
                return
            except asyncio.CancelledError:
                await self._abandon(connecting)
                raise
            self.note("joined")
            # The user may have been quicker: then there is no participant_connected event.
            for participant in self.room.remote_participants.values():
                self._on_participant_connected(participant)
            await self.speech.publish_track()
            self.spawn(self._timeout_after(self.session.max_duration_seconds))
            self.spawn(self._watch_end_requested())
            self._script = asyncio.ensure_future(self.interpreter.run())
            await self._done.wait()
        finally:
            await self._teardown()

    async def wait_for_user(self) -> None:
        """Wait for the user to join (until the session's join deadline)."""
        deadline = self.session.expires_at.timestamp() - time.time()
        try:
            await asyncio.wait_for(self._user_joined.wait(), max(deadline, 0.1))
        except TimeoutError:
            self.note("the user never joined")
            self._finish()
            raise Ended from None
        self.note("user joined")
        self.session.status = "active"

    def _finish(self) -> None:
        self.ending = True
        self.session.status = "completed"
        if self._on_end is not None:
            self._on_end(self.session)
        self._done.set()

    async def _teardown(self) -> None:
        tasks = [self._script, self.speech.utterance, *self._tasks]
        for task in tasks:
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        for task in tasks:
            if task is not None and task is not asyncio.current_task():
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self.tools.cancel_all()
        if self._user_gone is not None:
            self._user_gone.cancel()
        with contextlib.suppress(Exception):
            await self.room.disconnect()
        await self.speech.close()
        self.note("left")

    async def end(self, reason: str) -> None:
        """Send ``session.ended {reason}`` and leave."""
        if self.ending:
            return
        self.ending = True
        self.note(f"ending: {reason}")
        # Nothing may follow session.ended: stop the script unless it is the caller.
        if self._script is not None and self._script is not asyncio.current_task():
            self._script.cancel()
        self.speech.interrupt()
        # The session is over from now on: its token must not rejoin, even before we left.
        self.session.status = "completed"
        with contextlib.suppress(Exception):
            await self.send(p.SessionEnded(reason=reason))
            await self.set_state("idle")
            # Give the packet a moment on the wire before the room goes away.
            await asyncio.sleep(0.3)
        self._finish()
        raise Ended

    async def _end_quietly(self, reason: str) -> None:
        with contextlib.suppress(Ended):
            await self.end(reason)

    async def _timeout_after(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        await self._end_quietly("conversation_timeout")

    async def _watch_end_requested(self) -> None:
        await self.session.end_requested.wait()
        await self._end_quietly("agent_hangup")

    # --- room events --------------------------------------------------------------------

    def _wire_room(self) -> None:
        room = self.room
        room.on("participant_connected", self._on_participant_connected)
        room.on("participant_disconnected", self._on_participant_disconnected)
        room.on("track_subscribed", self._on_track_subscribed)
        room.on("data_received", self._on_data)
        room.on("disconnected", self._on_disconnected)

    def _is_user(self, participant: rtc.RemoteParticipant) -> bool:
        return participant.identity != AGENT_IDENTITY and (
            participant.kind != rtc.ParticipantKind.PARTICIPANT_KIND_AGENT
        )

    def _on_participant_connected(self, participant: rtc.RemoteParticipant) -> None:
        if not self._is_user(participant):
            return
        if self._user_gone is not None:
            self._user_gone.cancel()
            self._user_gone = None
        if self._user_joined.is_set():
            self.note("user came back")
        self._user_joined.set()
        self.user_back.set()

    def _on_participant_disconnected(self, participant: rtc.RemoteParticipant) -> None:
        if not self._is_user(participant) or self.ending:
            return
        reason = participant.disconnect_reason
        self.note(f"user left (reason {reason})")
        if reason == rtc.DisconnectReason.CLIENT_INITIATED:
            self.spawn(self._quietly_finish("the user left"))
            return
        loop = asyncio.get_running_loop()
        self._user_gone = loop.call_later(
            USER_GRACE, lambda: self.spawn(self._quietly_finish("the user did not come back"))
        )

    async def _quietly_finish(self, why: str) -> None:
        if self.ending:
            return
        self.ending = True
        self.note(f"finishing: {why}")
        self._finish()

    def _on_disconnected(self, reason: Any) -> None:
        if not self._done.is_set():
            self.note(f"disconnected by the server ({reason})")
            self.ending = True
            self._finish()

    def _on_track_subscribed(
        self,
        track: rtc.Track,
        publication: rtc.RemoteTrackPublication,
        participant: rtc.RemoteParticipant,
    ) -> None:
        if track.kind == rtc.TrackKind.KIND_AUDIO and self._is_user(participant):
            self.note(f"listening to {participant.identity}'s audio")
            self.spawn(self.listening.transcribe(track, participant.identity, publication.sid))

    def _on_data(self, packet: rtc.DataPacket) -> None:
        if packet.topic != p.TOPIC_CLIENT_EVENT:
            return
        try:
            event = p.decode_client_event(packet.data)
        except p.ProtocolError as exc:
            self.note(f"ignored a malformed client event: {exc}")
            return
        if event is None:
            self.note("ignored a client event of unknown type")
            return
        self._dispatch(event)

    def _dispatch(self, event: p.ClientEvent) -> None:
        self.note(f"received {event.type}")
        consumed = self.interpreter.offer(event)
        if isinstance(event, p.UserInterrupt):
            self.speech.interrupt()
        elif isinstance(event, p.UserHangup):
            self.spawn(self._end_quietly("user_hangup"))
        elif isinstance(event, p.ClientToolResult):
            self.tools.result(event)
        elif isinstance(event, p.UserActivity):
            self.listening.touch()
        elif isinstance(event, p.UserMessage):
            self.listening.touch()
            if not consumed:
                self.listening.heard_message(event)


__all__ = ["FaultInjector", "SimAgent"]
