"""The simulated Fish agent: a real ``livekit.rtc.Room`` participant that follows the protocol.

One :class:`SimAgent` serves one session. It joins the session's room as identity
``agent`` (participant kind agent) with the token the endpoint minted, and:

* publishes ``lk.agent.state`` (``initializing`` -> ``listening`` -> ``thinking`` ->
  ``speaking`` -> ``listening``; ``idle`` after it has re-engaged once without answer);
* greets the user once they join, runs its :class:`~fishtalk.sim.scenario.Scenario`'s
  steps, then (by default) converses: every ``user.message`` gets an answer (text only
  when ``audio`` is false), and so does every stretch of user speech it hears;
* speaks with locally synthesised audio (:mod:`fishtalk.sim.voice`) fed to an
  ``rtc.AudioSource`` in real time;
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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final, Protocol

import numpy as np
from livekit import rtc

from fishtalk import protocol as p
from fishtalk.sim.endpoint import AGENT_IDENTITY, SimSession
from fishtalk.sim.scenario import (
    CallClientTool,
    DropSignalling,
    End,
    ForceReconnect,
    Raw,
    Say,
    Scenario,
    SendError,
    SetState,
    Sleep,
    Step,
    ToolRun,
    UserTranscript,
    WaitFor,
)
from fishtalk.sim.voice import (
    FRAME_SAMPLES,
    SAMPLE_RATE,
    Heard,
    Pcm,
    SpeechDetector,
    Voice,
    analyse,
    describe,
    frames,
    pick_voice,
    split_words,
)

log = logging.getLogger(__name__)

INTERIM_EVERY: Final = 0.5
"""Seconds between interim user transcripts while the user makes sound."""
MAX_UTTERANCE: Final = 15.0
"""Longest user segment: sound that goes on longer is finalised at this length and the
rest starts a new segment (speech-to-text endpointing does the same)."""
CONNECT_TIMEOUT: Final = 30.0
"""How long the agent tries to join its room."""
USER_GRACE: Final = 20.0
"""How long the agent waits for a user whose connection dropped to come back."""
_PLACEHOLDER: Final = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")
ECHO_TAIL: Final = 0.5
"""Sound starting this soon after the agent stopped talking is taken for its echo."""
_LEAD: Final = 0.06
"""How far ahead of real time audio frames are handed to the source."""


class FaultInjector(Protocol):
    """The part of :class:`~fishtalk.sim.server.SimServer` the agent's scenarios use."""

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


@dataclass(frozen=True)
class _HeardSpeech:
    heard: Heard


@dataclass(frozen=True)
class _ToolReply:
    ok: bool
    result: Any
    reason: str
    """"result", "error", "timeout" or "fire_and_forget"."""


def _preview(value: Any, pad_to: int = 0) -> tuple[str, bool | None]:
    """A tool payload as sent on the wire: JSON text, truncated at 4 KB and flagged."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if pad_to > len(text.encode("utf-8")):
        if isinstance(value, dict):
            missing = pad_to - len(text.encode("utf-8")) - len(',"padding":""')
            padded = {**value, "padding": "x" * max(missing, 0)}
            text = json.dumps(padded, separators=(",", ":"))
        else:
            text += " " * (pad_to - len(text.encode("utf-8")))
    raw = text.encode("utf-8")
    if len(raw) <= p.MAX_PAYLOAD_PREVIEW:
        return text, None
    return raw[: p.MAX_PAYLOAD_PREVIEW].decode("utf-8", errors="ignore"), True


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))
    return text if len(text) <= limit else text[: limit - 3] + "..."


class SimAgent:
    """The simulated agent for one session; :meth:`run` returns once it has left."""

    max_utterance: float = MAX_UTTERANCE
    """Seconds after which a user segment still sounding is finalised anyway."""

    def __init__(
        self,
        session: SimSession,
        scenario: Scenario,
        server: FaultInjector,
        *,
        on_end: Callable[[SimSession], None] | None = None,
        voice: Voice | None = None,
    ) -> None:
        self.session = session
        self.scenario = scenario
        self.settings = scenario.agent
        self._server = server
        self._on_end = on_end
        self.voice = voice or pick_voice(self.settings.voice)
        self.journal: list[str] = []
        """A log of what the agent did and decided (read by tests)."""
        self.state = "initializing"
        self.room = rtc.Room()
        self._source: rtc.AudioSource | None = None
        self._track_sid = ""
        self._inbox: asyncio.Queue[p.UserMessage | _HeardSpeech] = asyncio.Queue()
        self._waiters: list[tuple[str, asyncio.Future[p.ClientEvent]]] = []
        self._pending_tools: dict[str, asyncio.Future[p.ClientToolResult]] = {}
        self._speech: asyncio.Task[None] | None = None
        self._script: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._user_joined = asyncio.Event()
        self._user_back = asyncio.Event()
        self._done = asyncio.Event()
        self._ending = False
        self._last_activity = time.monotonic()
        self._nudged = False
        self._user_gone: asyncio.TimerHandle | None = None
        self._replies = 0
        self._spoke_at = -1e9
        self._note_changed = asyncio.Event()

    # --- bookkeeping -------------------------------------------------------------------

    def note(self, text: str) -> None:
        """Record a decision in :attr:`journal`."""
        log.debug("agent %s: %s", self.session.session_id, text)
        self.journal.append(text)
        self._note_changed.set()

    async def wait_note(self, prefix: str, *, within: float = 10.0) -> str:
        """Wait until a journal entry starts with ``prefix``; return it (tests use this)."""

        async def until() -> str:
            while True:
                for entry in self.journal:
                    if entry.startswith(prefix):
                        return entry
                self._note_changed.clear()
                await self._note_changed.wait()

        return await asyncio.wait_for(until(), within)

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            log.warning("sim agent task failed: %r", exc)
            self.note(f"task failed: {exc!r}")

    # --- lifecycle ----------------------------------------------------------------------

    async def run(self) -> None:
        """Join, greet, run the scenario, converse; return once the agent has left."""
        self._wire_room()
        self._source = rtc.AudioSource(SAMPLE_RATE, 1, queue_size_ms=200)
        try:
            try:
                await asyncio.wait_for(
                    self.room.connect(
                        self._server.ws_url,
                        self.session.agent_token,
                        # The sim serves no /rtc/v1: skip the attempt and the SDK's warnings.
                        rtc.RoomOptions(single_peer_connection=False),
                    ),
                    CONNECT_TIMEOUT,
                )
            except (rtc.ConnectError, TimeoutError) as exc:
                self.note(f"could not join: {exc or 'timed out'}")
                self._finish()
                return
            self.note("joined")
            # The user may have been quicker: then there is no participant_connected event.
            for participant in self.room.remote_participants.values():
                self._on_participant_connected(participant)
            track = rtc.LocalAudioTrack.create_audio_track("agent-voice", self._source)
            options = rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
            publication = await self.room.local_participant.publish_track(track, options)
            self._track_sid = publication.sid
            self._spawn(self._timeout_after(self.session.max_duration_seconds))
            self._spawn(self._watch_end_requested())
            self._script = asyncio.ensure_future(self._main())
            await self._done.wait()
        finally:
            await self._teardown()

    def _finish(self) -> None:
        self._ending = True
        self.session.status = "completed"
        if self._on_end is not None:
            self._on_end(self.session)
        self._done.set()

    async def _teardown(self) -> None:
        for task in [self._script, self._speech, *self._tasks]:
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        for task in [self._script, self._speech, *self._tasks]:
            if task is not None and task is not asyncio.current_task():
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        for fut in self._pending_tools.values():
            fut.cancel()
        if self._user_gone is not None:
            self._user_gone.cancel()
        with contextlib.suppress(Exception):
            await self.room.disconnect()
        if self._source is not None:
            with contextlib.suppress(Exception):
                await self._source.aclose()
        self.note("left")

    async def _main(self) -> None:
        try:
            await self._wait_for_user()
            await self._set_state("listening")
            await self._greet()
            for index, step in enumerate(self.scenario.steps):
                if self.settings.answer_during_steps:
                    await self._answer_pending()
                self.note(f"step {index}: {step.do}")
                await self._run_step(step)
            self.note(f"steps done; then {self.scenario.then}")
            # The idle clock starts when the script stops talking, not when the user
            # last did something: else a long tour ends straight in "are you there?".
            self._touch()
            if self.scenario.then == "end":
                await self.end("agent_hangup")
            elif self.scenario.then == "converse":
                await self._converse()
            else:
                await asyncio.Event().wait()
        except _Ended:
            pass

    async def _wait_for_user(self) -> None:
        deadline = self.session.expires_at.timestamp() - time.time()
        try:
            await asyncio.wait_for(self._user_joined.wait(), max(deadline, 0.1))
        except TimeoutError:
            self.note("the user never joined")
            self._finish()
            raise _Ended from None
        self.note("user joined")
        self.session.status = "active"

    async def _greet(self) -> None:
        overrides = self.session.body.overrides
        greeting = overrides.first_message if overrides and overrides.first_message else None
        text = greeting if greeting is not None else self.settings.greeting
        if text:
            await self.say(self._fill(text), audio=self.settings.greeting_audio)

    def _fill(self, text: str) -> str:
        """Replace ``{{name}}`` with the session's dynamic variable ``name`` (if set)."""
        variables = self.session.body.dynamic_variables or {}

        def value(match: re.Match[str]) -> str:
            found = variables.get(match[1])
            if found is None:
                return match[0]
            return found if isinstance(found, str) else json.dumps(found)

        return _PLACEHOLDER.sub(value, text)

    async def end(self, reason: str) -> None:
        """Send ``session.ended {reason}`` and leave."""
        if self._ending:
            return
        self._ending = True
        self.note(f"ending: {reason}")
        # Nothing may follow session.ended: stop the script unless it is the caller.
        if self._script is not None and self._script is not asyncio.current_task():
            self._script.cancel()
        self._interrupt_speech()
        # The session is over from now on: its token must not rejoin, even before we left.
        self.session.status = "completed"
        with contextlib.suppress(Exception):
            await self._send(p.SessionEnded(reason=reason))
            await self._set_state("idle")
            # Give the packet a moment on the wire before the room goes away.
            await asyncio.sleep(0.3)
        self._finish()
        raise _Ended

    async def _timeout_after(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        with contextlib.suppress(_Ended):
            await self.end("conversation_timeout")

    async def _watch_end_requested(self) -> None:
        await self.session.end_requested.wait()
        with contextlib.suppress(_Ended):
            await self.end("agent_hangup")

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
        self._user_back.set()

    def _on_participant_disconnected(self, participant: rtc.RemoteParticipant) -> None:
        if not self._is_user(participant) or self._ending:
            return
        reason = participant.disconnect_reason
        self.note(f"user left (reason {reason})")
        if reason == rtc.DisconnectReason.CLIENT_INITIATED:
            self._spawn(self._quietly_finish("the user left"))
            return
        loop = asyncio.get_running_loop()
        self._user_gone = loop.call_later(
            USER_GRACE, lambda: self._spawn(self._quietly_finish("the user did not come back"))
        )

    async def _quietly_finish(self, why: str) -> None:
        if self._ending:
            return
        self._ending = True
        self.note(f"finishing: {why}")
        self._finish()

    def _on_disconnected(self, reason: Any) -> None:
        if not self._done.is_set():
            self.note(f"disconnected by the server ({reason})")
            self._ending = True
            self._finish()

    def _on_track_subscribed(
        self,
        track: rtc.Track,
        publication: rtc.RemoteTrackPublication,
        participant: rtc.RemoteParticipant,
    ) -> None:
        if track.kind == rtc.TrackKind.KIND_AUDIO and self._is_user(participant):
            self.note(f"listening to {participant.identity}'s audio")
            self._spawn(self._listen(track, participant.identity, publication.sid))

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
        consumed = False
        for kind, fut in list(self._waiters):
            if kind == event.type and not fut.done():
                fut.set_result(event)
                self._waiters.remove((kind, fut))
                consumed = True
        if isinstance(event, p.UserInterrupt):
            self._interrupt_speech()
        elif isinstance(event, p.UserHangup):
            self._spawn(self._end_quietly("user_hangup"))
        elif isinstance(event, p.ClientToolResult):
            pending = self._pending_tools.get(event.call_id)
            if pending is None or pending.done():
                self.note(f"ignored result for unknown or settled call {event.call_id}")
            else:
                pending.set_result(event)
        elif isinstance(event, p.UserActivity):
            self._touch()
        elif isinstance(event, p.UserMessage):
            self._touch()
            if not consumed:
                self._inbox.put_nowait(event)

    async def _end_quietly(self, reason: str) -> None:
        with contextlib.suppress(_Ended):
            await self.end(reason)

    def _touch(self) -> None:
        self._last_activity = time.monotonic()
        self._nudged = False

    # --- output primitives ----------------------------------------------------------------

    async def _send(self, event: p.AgentEvent) -> None:
        await self.send_raw(p.encode_agent_event(event))

    async def send_raw(self, data: bytes, topic: str = p.TOPIC_AGENT_EVENT) -> None:
        """Publish one reliable data packet to the room."""
        await self.room.local_participant.publish_data(data, reliable=True, topic=topic)

    async def _set_state(self, state: str) -> None:
        if state == self.state:
            return
        self.state = state
        self.note(f"state {state}")
        await self.room.local_participant.set_attributes({p.ATTR_AGENT_STATE: state})

    def _interrupt_speech(self) -> None:
        if self._speech is not None and not self._speech.done():
            self.note("interrupted")
            self._speech.cancel()
            if self._source is not None:
                self._source.clear_queue()

    async def say(self, text: str, *, audio: bool = True) -> str:
        """Speak ``text`` (or write it only); return the words actually delivered."""
        delivered: list[str] = []
        task = asyncio.ensure_future(self._speak(text, audio, delivered))
        self._speech = task
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise
        finally:
            self._speech = None
        if not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]  # checked not None just above
        if audio:
            self._spoke_at = time.monotonic()
        spoken = "".join(delivered)
        self.note(f"{'said' if audio else 'wrote'}: {spoken.strip()}")
        if not self._ending:
            await self._set_state("listening")
        return spoken

    async def _speak(self, text: str, audio: bool, delivered: list[str]) -> None:
        segment = "SG_" + secrets.token_hex(6)
        attributes = {p.ATTR_SEGMENT_ID: segment, p.ATTR_TRANSCRIPTION_FINAL: "false"}
        if audio and self._track_sid:
            attributes[p.ATTR_TRANSCRIBED_TRACK_ID] = self._track_sid
        await self._set_state("speaking" if audio else "thinking")
        writer = await self.room.local_participant.stream_text(
            topic=p.TOPIC_TRANSCRIPTION, attributes=attributes
        )
        try:
            if audio:
                await self._speak_words(text, writer, delivered)
            else:
                for word in split_words(text):
                    await writer.write(word)
                    delivered.append(word)
                    await asyncio.sleep(0.04)
        finally:
            # Also on interrupt: the segment closes holding only the words delivered.
            await asyncio.shield(writer.aclose(attributes={p.ATTR_TRANSCRIPTION_FINAL: "true"}))

    async def _speak_words(
        self, text: str, writer: rtc.TextStreamWriter, delivered: list[str]
    ) -> None:
        assert self._source is not None
        loop = asyncio.get_running_loop()
        start = loop.time()
        sent = 0
        words = split_words(text)
        if not words:
            return
        # Render the next word while this one plays (espeak-ng takes tens of ms a word).
        upcoming = asyncio.ensure_future(self.voice.render(words[0]))
        try:
            for index, word in enumerate(words):
                pcm = await upcoming
                if index + 1 < len(words):
                    upcoming = asyncio.ensure_future(self.voice.render(words[index + 1]))
                start, sent = await self._play_word(word, pcm, writer, delivered, start, sent)
        finally:
            upcoming.cancel()
            # Retrieve its outcome so an interrupted render never logs "never retrieved".
            upcoming.add_done_callback(lambda t: t.cancelled() or t.exception())
        remaining = start + sent / SAMPLE_RATE - loop.time()
        if remaining > 0:
            await asyncio.sleep(remaining)

    async def _play_word(
        self,
        word: str,
        pcm: Pcm,
        writer: rtc.TextStreamWriter,
        delivered: list[str],
        start: float,
        sent: int,
    ) -> tuple[float, int]:
        """Feed one word's frames in real time; returns the updated (start, sent) clock."""
        assert self._source is not None
        loop = asyncio.get_running_loop()
        first = True
        for frame in frames(pcm):
            due = start + sent / SAMPLE_RATE - _LEAD
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            elif delay < -0.5:
                # We fell behind (a slow machine): restart the clock, don't burst.
                start, sent = loop.time() + _LEAD, 0
            await self._source.capture_frame(
                rtc.AudioFrame(frame.tobytes(), SAMPLE_RATE, 1, FRAME_SAMPLES)
            )
            if first:
                # The word's first frame is queued: write the word as it starts playing.
                await writer.write(word)
                delivered.append(word)
                first = False
            sent += FRAME_SAMPLES
        return start, sent

    # --- steps --------------------------------------------------------------------------

    async def _run_step(self, step: Step) -> None:
        handler = self._step_handlers().get(type(step))
        if handler is None:  # pragma: no cover - the union is exhaustive
            raise TypeError(f"unknown step {step!r}")
        await handler(step)

    def _step_handlers(self) -> dict[type, Callable[[Any], Awaitable[None]]]:
        return {
            Say: self._step_say,
            SetState: self._step_state,
            CallClientTool: self.call_client_tool,
            ToolRun: self._step_tool,
            Raw: self._step_raw,
            UserTranscript: self._step_user_transcript,
            SendError: self._step_error,
            WaitFor: self._step_wait_for,
            DropSignalling: self._step_drop,
            ForceReconnect: self._step_reconnect,
            End: self._step_end,
            Sleep: self._step_sleep,
        }

    async def _step_say(self, step: Say) -> None:
        await self.say(self._fill(step.text), audio=step.audio)

    async def _step_state(self, step: SetState) -> None:
        await self._set_state(step.value)

    async def _step_raw(self, step: Raw) -> None:
        self.note(f"sent raw packet on {step.topic}")
        await self.send_raw(step.data(), topic=step.topic)

    async def _step_error(self, step: SendError) -> None:
        self.note(f"sent error {step.code}")
        await self._send(p.AgentError(code=step.code, message=step.message))

    async def _step_drop(self, step: DropSignalling) -> None:
        self.note("dropping the user's signalling connection")
        await self._server.drop_signalling(self.session.room, self.session.user_identity)

    async def _step_reconnect(self, step: ForceReconnect) -> None:
        self.note("forcing the user to reconnect")
        self._user_back.clear()
        await self._server.force_reconnect(self.session.room, self.session.user_identity)
        try:
            await asyncio.wait_for(self._user_back.wait(), USER_GRACE)
        except TimeoutError:
            self.note("the user did not rejoin")

    async def _step_end(self, step: End) -> None:
        await self.end(step.reason)

    async def _step_sleep(self, step: Sleep) -> None:
        await asyncio.sleep(step.seconds)

    async def _step_wait_for(self, step: WaitFor) -> None:
        fut: asyncio.Future[p.ClientEvent] = asyncio.get_running_loop().create_future()
        entry = (step.event, fut)
        self._waiters.append(entry)
        try:
            await asyncio.wait_for(fut, step.timeout)
            self.note(f"got awaited {step.event}")
        except TimeoutError:
            self.note(f"timed out waiting for {step.event}")
            if step.on_timeout == "end":
                await self.end("agent_hangup")
        finally:
            if entry in self._waiters:
                self._waiters.remove(entry)

    async def _step_user_transcript(self, step: UserTranscript) -> None:
        segment = "SG_" + secrets.token_hex(6)
        identity = self.session.user_identity
        for text in step.interim:
            await self.publish_user_transcript(identity, segment, text, final=False)
            await asyncio.sleep(step.interval)
        if step.final is not None:
            await self.publish_user_transcript(identity, segment, step.final, final=True)

    async def publish_user_transcript(
        self, identity: str, segment: str, text: str, *, final: bool, track_sid: str = ""
    ) -> None:
        """One complete text stream under the user's identity; its text replaces the last."""
        attributes = {
            p.ATTR_SEGMENT_ID: segment,
            p.ATTR_TRANSCRIPTION_FINAL: "true" if final else "false",
        }
        if track_sid:
            attributes[p.ATTR_TRANSCRIBED_TRACK_ID] = track_sid
        writer = await self.room.local_participant.stream_text(
            topic=p.TOPIC_TRANSCRIPTION, attributes=attributes, sender_identity=identity
        )
        await writer.write(text)
        await writer.aclose()
        self.note(f"user transcript{' final' if final else ''}: {text}")

    # --- tools --------------------------------------------------------------------------

    async def _tool_event(self, event: p.ToolEvent) -> None:
        if self.session.body.tool_events:
            await self._send(event)

    async def _step_tool(self, step: ToolRun) -> None:
        call_id = "tool_" + secrets.token_hex(6)
        source = step.source
        text_in, in_cut = _preview(
            step.input if step.input is not None else {}, step.pad_input_bytes
        )
        await self._tool_event(
            p.ToolStarted(
                call_id=call_id,
                tool_name=step.name,
                tool_source=source,
                input=text_in,
                input_truncated=in_cut,
                node_id=step.node_id,
            )
        )
        self.note(f"tool {step.name} started")
        await asyncio.sleep(step.duration)
        output, out_cut = (None, None)
        if step.output is not None or step.pad_output_bytes:
            output, out_cut = _preview(step.output, step.pad_output_bytes)
        common: dict[str, Any] = {
            "call_id": call_id,
            "tool_name": step.name,
            "tool_source": source,
            "input": text_in,
            "input_truncated": in_cut,
            "output": output,
            "output_truncated": out_cut,
            "node_id": step.node_id,
        }
        if step.error is not None:
            await self._tool_event(p.ToolFailed(error=step.error, **common))
            self.note(f"tool {step.name} failed")
        else:
            await self._tool_event(p.ToolCompleted(**common))
            self.note(f"tool {step.name} completed")

    async def call_client_tool(self, step: CallClientTool) -> None:
        """Run one ``client_tool.call`` step (see :meth:`client_tool`)."""
        reply = await self.client_tool(
            step.name,
            step.params,
            expects_response=step.expects_response,
            deadline=step.timeout,
            call_id=step.call_id,
        )
        if step.announce:
            await self.say(self._describe_reply(step.name, reply))

    async def client_tool(
        self,
        name: str,
        params: dict[str, Any],
        *,
        expects_response: bool = True,
        deadline: float | None = None,
        call_id: str | None = None,
    ) -> _ToolReply:
        """Ask the client to run ``name``; wait for its result up to the deadline."""
        call_id = call_id or "call_" + secrets.token_hex(6)
        if deadline is None:
            deadline = self.settings.tool_deadline_seconds
        text_in, in_cut = _preview(params)
        await self._tool_event(
            p.ToolStarted(
                call_id=call_id,
                tool_name=name,
                tool_source="client",
                input=text_in,
                input_truncated=in_cut,
            )
        )
        fut: asyncio.Future[p.ClientToolResult] = asyncio.get_running_loop().create_future()
        if expects_response:
            self._pending_tools[call_id] = fut
        await self._set_state("thinking")
        await self._send(
            p.ClientToolCall(
                call_id=call_id, tool_name=name, params=params, expects_response=expects_response
            )
        )
        self.note(f"called client tool {name} ({call_id}, expects_response={expects_response})")
        common: dict[str, Any] = {
            "call_id": call_id,
            "tool_name": name,
            "tool_source": "client",
            "input": text_in,
            "input_truncated": in_cut,
        }
        if not expects_response:
            await self._tool_event(p.ToolCompleted(**common))
            return _ToolReply(True, None, "fire_and_forget")
        try:
            result = await asyncio.wait_for(fut, deadline)
        except TimeoutError:
            self.note(f"client tool {name} timed out after {deadline:g} s")
            await self._tool_event(p.ToolFailed(error=f"no result within {deadline:g} s", **common))
            return _ToolReply(False, None, "timeout")
        finally:
            # Settled or timed out: any later result for this call id is ignored.
            if not fut.done():
                fut.cancel()
        output, out_cut = _preview(result.result)
        if result.is_error:
            self.note(f"client tool {name} failed: {_short(result.result)}")
            await self._tool_event(
                p.ToolFailed(
                    error=_short(result.result, 200),
                    output=output,
                    output_truncated=out_cut,
                    **common,
                )
            )
            return _ToolReply(False, result.result, "error")
        self.note(f"client tool {name} returned {_short(result.result)}")
        await self._tool_event(p.ToolCompleted(output=output, output_truncated=out_cut, **common))
        return _ToolReply(True, result.result, "result")

    @staticmethod
    def _describe_reply(name: str, reply: _ToolReply) -> str:
        if reply.reason == "fire_and_forget":
            return f"I asked your client to run {name}; I don't need an answer."
        if reply.reason == "timeout":
            return f"Your client did not answer my {name} call in time, so I moved on."
        if reply.reason == "error":
            return f"Your {name} tool failed: {_short(reply.result)}"
        return f"Your {name} tool returned {_short(reply.result)}"

    # --- hearing ------------------------------------------------------------------------

    async def _listen(self, track: rtc.Track, identity: str, track_sid: str) -> None:
        stream = rtc.AudioStream.from_track(track=track, sample_rate=SAMPLE_RATE, num_channels=1)
        detector = SpeechDetector()
        segment = ""
        last_interim = 0.0
        span = 0
        over_my_voice = False
        try:
            async for event in stream:
                frame = event.frame
                rate = frame.sample_rate
                pcm = np.frombuffer(frame.data, dtype=np.int16).copy()
                outcome = detector.push(pcm, rate)
                if outcome == "start":
                    segment = "SG_" + secrets.token_hex(6)
                    last_interim = 0.0
                    span = detector.utterance.size
                    # Sound that starts while the agent talks is likely its own voice
                    # coming back through a speaker: transcribe it, but don't answer it.
                    over_my_voice = self._speaking_or_just_spoke()
                    self._touch()
                elif outcome == "continue":
                    span += pcm.size
                    self._touch()  # heard sound is activity: no "are you still there?"
                if outcome in {"start", "continue"} and detector.active:
                    if span / rate >= self.max_utterance:
                        # Endpoint a never-ending sound; what follows is a new segment.
                        heard = analyse(detector.utterance, rate)
                        detector.reset()
                        self.note(f"finalised a segment at {self.max_utterance:.0f} s")
                        await self._heard(identity, segment, heard, over_my_voice, track_sid)
                    # Analyse only when an interim is due: the FFTs are not free.
                    elif span / rate - last_interim >= INTERIM_EVERY:
                        last_interim = span / rate
                        heard = analyse(detector.utterance, rate)
                        await self.publish_user_transcript(
                            identity,
                            segment,
                            describe(heard, final=False),
                            final=False,
                            track_sid=track_sid,
                        )
                elif outcome == "end":
                    heard = analyse(detector.utterance, rate)
                    await self._heard(identity, segment, heard, over_my_voice, track_sid)
        finally:
            await stream.aclose()

    async def _heard(
        self, identity: str, segment: str, heard: Heard, over_my_voice: bool, track_sid: str
    ) -> None:
        await self.publish_user_transcript(
            identity, segment, describe(heard, final=True), final=True, track_sid=track_sid
        )
        self._touch()
        if over_my_voice:
            self.note("heard sound over my own voice; not answering it")
        else:
            self._inbox.put_nowait(_HeardSpeech(heard))

    def _speaking_or_just_spoke(self) -> bool:
        return self.state == "speaking" or time.monotonic() - self._spoke_at < ECHO_TAIL

    # --- conversation -------------------------------------------------------------------

    async def _converse(self) -> None:
        while True:
            item = await self._next_input()
            if item is None:
                await self._re_engage()
                continue
            await self._respond(item)

    async def _respond(
        self, item: p.UserMessage | _HeardSpeech, *, mid_script: bool = False
    ) -> None:
        await self._set_state("thinking")
        await asyncio.sleep(0.4)
        if isinstance(item, _HeardSpeech):
            h = item.heard
            await self.say(
                f"I heard {h.duration:.1f} seconds of sound at {h.dbfs:.0f} dBFS, "
                f"mostly around {h.frequency:.0f} hertz."
            )
        else:
            await self._answer(item, mid_script=mid_script)

    async def _answer_pending(self) -> None:
        """Between two steps: answer the turns that came in meanwhile, then carry on."""
        while not self._inbox.empty():
            item = self._inbox.get_nowait()
            self.note("answering a turn between steps")
            await self._respond(item, mid_script=True)

    async def _next_input(self) -> p.UserMessage | _HeardSpeech | None:
        """The next user turn, or None when the idle time ran out first."""
        idle = self.settings.idle_seconds
        while True:
            if not self._inbox.empty():
                # A turn is already waiting: answer it, whatever the idle clock says.
                return self._inbox.get_nowait()
            if idle <= 0 or (self._nudged and self.state == "idle"):
                return await self._inbox.get()
            left = self._last_activity + idle - time.monotonic()
            if left <= 0:
                return None
            try:
                return await asyncio.wait_for(self._inbox.get(), left)
            except TimeoutError:
                continue

    async def _re_engage(self) -> None:
        if not self._nudged:
            self._nudged = True
            await self.say("Are you still there? Type or say something whenever you like.")
            self._last_activity = time.monotonic()
            self._nudged = True
        else:
            await self._set_state("idle")

    async def _answer(self, message: p.UserMessage, *, mid_script: bool = False) -> None:
        text = message.text.strip()
        lowered = text.lower()
        audio = message.audio is not False
        if not mid_script:
            # Keep the hint for the first answer after the script, when it can be tried.
            self._replies += 1
        if lowered in {"bye", "goodbye", "hang up", "hangup"}:
            await self.say("Goodbye!", audio=audio)
            await self.end("agent_hangup")
        if lowered.startswith(("call ", "tool ")):
            name = text.split(maxsplit=1)[1].strip()
            reply = await self.client_tool(name, {}, expects_response=True)
            await self.say(self._describe_reply(name, reply), audio=audio)
            return
        if lowered == "error":
            await self._send(p.AgentError(code="provider_error"))
            await self.say("I just sent you a provider_error event.", audio=audio)
            return
        answer = f"You said: {text}"
        if mid_script:
            answer += ". I'll carry on with what I was showing you; then we can talk."
        elif self._replies == 1:
            answer += ". Try 'call get_local_context', 'error' or 'goodbye'."
        await self.say(answer, audio=audio)


class _Ended(Exception):
    """Raised inside the agent's own tasks once it has ended the session."""


__all__ = ["FaultInjector", "SimAgent"]
