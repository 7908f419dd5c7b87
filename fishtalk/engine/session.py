"""The LiveKit session task: the one place outside ``audio/`` and ``sim/`` touching livekit.

A :class:`Session` takes the parts of one conversation (never the application's
settings: :mod:`fishtalk.cli.launch` turns settings and flags into these parts): a grant source
(an API client plus a session request, or a ready grant), an audio backend (or a factory
for one), a client-tool runner, spoken or text-only replies, and its timeouts. It obtains
the grant, joins the LiveKit room with every handler registered before connecting, and
turns SDK callbacks into :mod:`fishtalk.core.conversation` inputs. The reducer decides; the
session executes its effects (publish client events in order, run client tools,
start/cancel timers, tear down) and hands every new :class:`~fishtalk.core.conversation.State`
to its listeners. Front ends (the TUI, the plain mode) only call the sync commands and
read state: they never see the room.

Lifecycle (the Fish web SDK's, see spec/contract-notes.md): connecting -> connected <->
reconnecting -> ended. The connect itself is bounded (:attr:`Timeouts.connect`): a host
where WebRTC cannot connect ends with ``connection_failed`` and one sentence saying why,
never a hang. Everything the session starts is a task it owns and cancels at teardown.

A server that goes away mid-call is the SDK's to notice: it reports ``reconnecting``, tries
to resume and then to rejoin (livekit 1.2.1: ten attempts a few seconds apart, about 25 s
in all), and reports ``disconnected`` when it gives up. The session bounds that wait by its
own reconnect budget (:attr:`Timeouts.reconnect`, 20 s): a link still down by then ends
the call with ``connection_lost``. Nothing at teardown waits on a link that is down.

The session never picks an exit code: :class:`EndResult` says why the call ended (the end
reason and, when one caused it, the error); the CLI edge maps that to a code
(:func:`fishtalk.core.errors.exit_code_for`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, runtime_checkable
from urllib.parse import urlsplit

from fishtalk.core import conversation as conv
from fishtalk.core import errors
from fishtalk.core.protocol import (
    ATTR_AGENT_STATE,
    ATTR_SEGMENT_ID,
    ATTR_TRANSCRIPTION_FINAL,
    TOPIC_AGENT_EVENT,
    TOPIC_CLIENT_EVENT,
    TOPIC_TRANSCRIPTION,
    ClientToolCall,
    ProtocolError,
    UserMessage,
    decode_agent_event,
    encode_client_event,
    is_final,
)
from fishtalk.engine import observe
from fishtalk.engine.aio import TaskSet
from fishtalk.engine.audio.base import (
    CHANNELS,
    SAMPLE_RATE,
    AudioBackend,
    AudioLevels,
    LatencyTaps,
    NullAudio,
)
from fishtalk.engine.tools.registry import ToolRegistry
from fishtalk.engine.tools.runner import ToolRunner

if TYPE_CHECKING:
    from livekit import rtc

    from fishtalk.engine.api import LiveKitGrant, SessionClient, SessionRequest

_log = logging.getLogger(__name__)

CONNECT_TIMEOUT: Final = 15.0
"""Seconds for the whole room connect (signalling + WebRTC) before ``connection_failed``."""
SIGNAL_ATTEMPT_TIMEOUT: Final = 5.0
"""Seconds per signalling attempt inside the SDK's own retry loop."""
SEND_DRAIN_TIMEOUT: Final = 2.0
"""At teardown, how long queued client events (``user.hangup``) get to leave."""
DISCONNECT_TIMEOUT: Final = 5.0
"""At teardown, how long the room disconnect may take."""
PREVIEW_BYTES: Final = 200
"""How much of a malformed packet is kept for the debug view."""
FRAME_MS: Final = 10
INTERRUPT_HOLD: Final = 0.4
"""Seconds after an interrupt during which agent audio still in flight is dropped."""
RECONNECT_BUDGET: Final = 20.0
"""Seconds a dropped link gets to come back (the SDK alone would try for about 25 s)."""
RECONNECT_GAVE_UP: Final = "RECONNECT_BUDGET_SPENT"
"""The disconnect reason the session reports when its reconnect budget ran out."""
LINK_WAIT: Final = 30.0
"""How long a client event waits for the transport to come back before being reported."""
LEAVE_SETTLE: Final = 0.3
"""Seconds to wait before believing a participant left (it may be a reconnect starting)."""
TAIL_AFTER_TEXT: Final = 0.5
"""A reply that begins while the earlier one still plays: once the reply's first words have
arrived, how long agent audio may stay audible without a pause before it counts as the
reply's own (longer than the jitter buffer holds the earlier reply's last frames)."""
WIRE_QUIET: Final = 0.5
"""After an interrupt, how long no audible agent frame must arrive before the agent's audio
counts as stopped on the wire (longer than a pause between words; the mark itself is the
last audible frame's arrival, so this delays only the decision)."""
WIRE_WATCH_LIMIT: Final = 10.0
"""After an interrupt, how long the wire is watched at most (an agent that never stops
gets no ``interrupt_wire_stopped`` mark)."""
RTT_FIRST: Final = 1.0
"""Seconds after connecting before the first network round trip is read."""
RTT_PERIOD: Final = 5.0
"""Seconds between reads of the SDK's RTC stats for the network round trip."""
RTT_TIMEOUT: Final = 2.0
"""How long one read of the RTC stats may take before it is given up."""
CONNECT_SETTLE: Final = 60.0
"""After teardown, how long a room connect still in flight gets to finish before the room
is disconnected (a connect is never cancelled: see :meth:`Session.wait_closed`)."""

_SETTLING: set[asyncio.Task[None]] = set()
"""Connects in flight handed over at teardown (strong references until they settle)."""


@dataclass(frozen=True, slots=True)
class Timeouts:
    """The fixed waits of a session (the web SDK's values by default); tests inject short ones."""

    connect: float = CONNECT_TIMEOUT
    """Seconds for the whole room connect (signalling + WebRTC) before ``connection_failed``."""
    agent_join: float = conv.AGENT_JOIN_TIMEOUT
    """Seconds after connecting for the agent to publish its first state."""
    ended_grace: float = conv.SESSION_ENDED_GRACE
    """Seconds after ``session.ended`` before the session tears down on its own."""
    signal_attempt: float = SIGNAL_ATTEMPT_TIMEOUT
    """Seconds per signalling attempt inside the SDK's own retry loop."""
    reconnect: float = RECONNECT_BUDGET
    """Seconds a call may stay ``reconnecting`` before it ends with ``connection_lost``."""


DEFAULT_TIMEOUTS: Final = Timeouts()


@dataclass(frozen=True, slots=True)
class EndResult:
    """How a session ended: the reason, one sentence for the user, and the error (if any).

    No exit code: the CLI edge derives one (:func:`fishtalk.core.errors.exit_code_for`).
    """

    reason: str
    message: str
    error: errors.FishtalkError | None = None
    """The error that prevented the session (API, config, grant), if that is why it ended."""


@runtime_checkable
class GrantSource(Protocol):
    """Where a session's grant comes from; ``obtain`` raises a FishtalkError on failure."""

    async def obtain(self) -> LiveKitGrant:
        """The grant to join with."""
        ...


@dataclass(frozen=True, slots=True)
class CreateSession:
    """A grant source that creates a session through the API: a client plus a request.

    ``client`` may be a factory, so the HTTP client is made on the loop that uses it. The
    client is closed once the grant is obtained.
    """

    client: SessionClient | Callable[[], SessionClient]
    request: SessionRequest

    async def obtain(self) -> LiveKitGrant:
        """Create the session; raises the API's errors."""
        client = self.client if not callable(self.client) else self.client()
        async with client:
            return await client.create_session(self.request)


@dataclass(frozen=True, slots=True)
class ReadyGrant:
    """A grant source for a grant obtained elsewhere (``fishtalk demo``, tests)."""

    grant: LiveKitGrant

    async def obtain(self) -> LiveKitGrant:
        """The grant as given."""
        return self.grant


@dataclass(frozen=True, slots=True)
class Refused:
    """A grant source that fails with ``error`` (a request that could not be built)."""

    error: errors.FishtalkError

    async def obtain(self) -> LiveKitGrant:
        """Raise the error."""
        raise self.error


NoticeFn: TypeAlias = Callable[[str], None]
AudioFactory: TypeAlias = Callable[[NoticeFn], AudioBackend]
"""Builds the audio backend when the session starts; gets the session's notice callback
(for "text-only: no devices" and the like)."""


StateListener = Callable[[conv.State], None]


def _error_code(exc: errors.FishtalkError) -> str:
    """The web SDK's error code for a failure before connecting."""
    if isinstance(exc, errors.SessionExpiredError):
        return conv.END_SESSION_EXPIRED
    if isinstance(exc, errors.UnsupportedTransportError):
        return errors.END_UNSUPPORTED_TRANSPORT
    if isinstance(exc, errors.AgentNotPublicError):
        return "agent_not_public"
    if isinstance(exc, errors.OriginForbiddenError):
        return "origin_forbidden"
    return "session_request_failed"


def _is_agent(participant: rtc.RemoteParticipant) -> bool:
    from livekit import rtc

    return (
        participant.kind == rtc.ParticipantKind.PARTICIPANT_KIND_AGENT
        or ATTR_AGENT_STATE in participant.attributes
    )


def _disconnect_reason_name(reason: int) -> str | None:
    from livekit import rtc

    try:
        return rtc.DisconnectReason.Name(reason)  # type: ignore[arg-type]  # a plain int
    except ValueError:
        return None


class Session:
    """One conversation with a Fish agent over LiveKit.

    ``grant``: where the grant comes from (:class:`CreateSession`, :class:`ReadyGrant`, or a
    grant itself). ``audio``: the audio backend, or a factory called at start with the
    session's notice callback (default: no audio). The session starts and closes it.
    ``tools``: the client-tool runner (default: one with no tools, so every call is answered
    with an "unknown tool" error result, as the web SDK does). ``spoken``: whether typed
    turns get spoken replies (False: text-only). ``timeouts``: see :class:`Timeouts`.
    ``clock``: monotonic seconds.

    Commands are sync, return at once and never raise, also before ``run()`` or after the
    end. ``run()`` may be awaited once.
    """

    def __init__(
        self,
        grant: GrantSource | LiveKitGrant,
        *,
        audio: AudioBackend | AudioFactory | None = None,
        tools: ToolRunner | None = None,
        spoken: bool = True,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._grant_source: GrantSource = (
            grant if isinstance(grant, GrantSource) else ReadyGrant(grant)
        )
        self._audio: AudioBackend | None = None
        self._audio_factory: AudioFactory | None = None
        if isinstance(audio, AudioBackend):
            self._audio = audio
        elif audio is not None:
            self._audio_factory = audio
        self._tools = tools if tools is not None else ToolRunner(_empty_registry())
        self.timeouts = timeouts
        self._clock = clock
        self._state = conv.initial_state(spoken=spoken)
        self._listeners: list[StateListener] = []
        self._pending: deque[conv.Input] = deque()
        self._reducing = False
        self._started = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ended: asyncio.Event | None = None
        self._tasks = TaskSet("fishtalk-session", on_error=_task_failed)
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._deferred: set[asyncio.TimerHandle] = set()
        self._outbox: asyncio.Queue[conv.ClientEventOut | _Resume] | None = None
        """What the sender task publishes in order: events, or a publish already started
        (see :meth:`_send`) for it to see through."""
        self._sender_holds = False
        """The sender task has taken an item from the outbox and not finished it yet."""
        self._published_early: UserMessage | None = None
        """A typed turn :meth:`send_text` started publishing before reducing it."""
        self._room: rtc.Room | None = None
        self._reconnecting = False
        self._link_up: asyncio.Event | None = None
        self._reconnect_deadline: asyncio.TimerHandle | None = None
        self._hold_audio_until = 0.0
        self._audio_streams: dict[str, tuple[rtc.AudioStream, asyncio.Task[None]]] = {}
        self._mic_source: rtc.AudioSource | None = None
        self._mic_track: rtc.LocalAudioTrack | None = None
        self._api_error: errors.FishtalkError | None = None
        self._refusal: errors.FishtalkError | None = None
        """An error that ended the session but whose wording is the end reason's own."""
        self._sent_events = 0
        self._connecting: asyncio.Future[None] | None = None
        """The room connect, while in flight (never cancelled)."""
        self._settling: asyncio.Task[None] | None = None
        """Lets a connect still in flight at teardown finish, then disconnects."""
        self._observers: list[observe.Observer] = []
        # Heard latency (issue 14): the IO-side marks (see _mark and docs of LatencyMark).
        self._taps: LatencyTaps | None = None
        """The backend's timing taps, when it has them and an output device."""
        self._armed = False
        """A user turn ended: the next audible agent frame is the reply's first."""
        self._armed_over_speech = False
        """Armed while the agent was speaking: its audio counts only once it has stopped
        speaking (what still plays then is the earlier reply, not the answer)."""
        self._tail_heard_at = 0.0
        """Armed over speech: when the earlier reply was last heard arriving (or the agent
        was last seen speaking)."""
        self._agent_speaking = False
        self._speaking_since = 0.0
        """When the agent's state last became (or stopped being) ``speaking``."""
        self._wire_pressed_at: float | None = None
        """While watching the wire after an interrupt: the key press."""
        self._wire_last_audible: float | None = None
        self._wire_timer: asyncio.TimerHandle | None = None

    # --- what front ends use -----------------------------------------------------------

    @property
    def state(self) -> conv.State:
        """The latest conversation snapshot."""
        return self._state

    @property
    def audio(self) -> AudioBackend | None:
        """The audio backend in use (None until ``run()`` picked one)."""
        return self._audio

    @property
    def room(self) -> rtc.Room | None:
        """The LiveKit room (tests and benchmarks only; front ends never touch it)."""
        return self._room

    def add_listener(self, fn: StateListener) -> Callable[[], None]:
        """Call ``fn(state)`` on the loop after every reduction; returns a remover."""
        self._listeners.append(fn)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(fn)

        return remove

    def add_observer(self, fn: observe.Observer) -> Callable[[], None]:
        """Call ``fn(observation)`` on the loop for everything the session sees and does
        (inputs, states, raw packets, tool runs, the end: see :mod:`fishtalk.engine.observe`);
        returns a remover. ``fn`` must be cheap and must not feed the session."""
        self._observers.append(fn)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._observers.remove(fn)

        return remove

    def _observe(self, item: observe.Observation) -> None:
        for fn in self._observers:
            try:
                fn(item)
            except Exception:
                _log.exception("session observer failed")

    def send_text(self, text: str, audio: bool | None = None) -> None:
        """Send a typed turn (blank text is ignored). ``audio=None`` follows set_spoken().

        Fast path: when the reducer would send it at once (see
        :func:`~fishtalk.core.conversation.sends_at_once`) and the link is idle, the publish
        starts before the reduction, so the bytes leave first and the bookkeeping follows.
        """
        inp = conv.SendText(text=text, at=self._clock(), audio=audio)
        if self._reducing or self._pending:
            self._feed(inp)  # inputs before it come first
            return
        message = conv.sends_at_once(self._state, inp)
        room = self._idle_link() if message is not None else None
        if message is None or room is None:
            self._feed(inp)
            return
        try:
            data = encode_client_event(message)
        except ProtocolError:
            self._feed(inp)  # the usual path reports it, in order
            return
        self._feed(inp, first=lambda: self._publish_first(room, message, data))

    def activity(self) -> None:
        """The user is typing: postpones the agent's idle re-engagement (throttled)."""
        self._feed(conv.SignalActivity(at=self._clock()))

    def interrupt(self) -> None:
        """Stop the agent now: local playback is flushed at once, then ``user.interrupt``."""
        pressed = self._clock()
        if self._audio is not None and not self._state.ended:
            taps = self._taps
            if taps is not None:
                taps.flush_playback_marked(self._on_flushed)
                self._watch_wire(pressed)
            else:
                self._audio.flush_playback()
            # Speech already on the wire would otherwise play until the agent hears us.
            self._hold_audio_until = self._clock() + INTERRUPT_HOLD
        self._feed(conv.Interrupt(at=pressed))

    def set_muted(self, muted: bool) -> None:
        """Mute or unmute the microphone."""
        self._feed(conv.SetMuted(muted=muted, at=self._clock()))

    def set_spoken(self, spoken: bool) -> None:
        """Whether typed turns get spoken replies (else text-only, ``audio: false``)."""
        self._feed(conv.SetSpoken(spoken=spoken, at=self._clock()))

    def hangup(self) -> None:
        """End the session: ``user.hangup``, then disconnect. Safe to call twice."""
        self._feed(conv.Hangup(at=self._clock()))

    def notice(self, text: str) -> None:
        """Show ``text`` as a notice in the conversation (e.g. what a launcher does before
        the connect)."""
        self._feed(conv.AddNotice(text=text, at=self._clock()))

    def audio_levels(self) -> AudioLevels:
        """Current microphone and agent levels (zeros without audio)."""
        return self._audio.levels() if self._audio is not None else AudioLevels()

    def end_result(self) -> EndResult | None:
        """How the session ended, once it has."""
        state = self._state
        if not state.ended or state.end_reason is None:
            return None
        reason = state.end_reason
        if self._api_error is not None:
            return EndResult(reason, str(self._api_error), self._api_error)
        message = conv.describe_end_reason(reason)
        if reason in (conv.END_CONNECTION_FAILED, conv.END_SESSION_EXPIRED):
            details = [e.detail for e in state.errors if e.code == reason and e.detail]
            if details:
                message = details[-1]
        return EndResult(reason, message, self._refusal)

    # --- running -----------------------------------------------------------------------

    async def run(self) -> EndResult:
        """Connect, converse until the session ends, tear down; return how it ended.

        Cancelling ``run()`` hangs up (``user.hangup``, disconnect) before re-raising.
        """
        if self._started:
            raise RuntimeError("Session.run() may only be called once")
        self._started = True
        self._loop = asyncio.get_running_loop()
        self._ended = asyncio.Event()
        self._outbox = asyncio.Queue()
        self._link_up = asyncio.Event()
        if self._state.ended:
            self._ended.set()
        try:
            await self._until_ended(self._start())
            await self._ended.wait()
        except asyncio.CancelledError:
            self.hangup()
            await asyncio.shield(self._shutdown())
            cancelled = self.end_result()
            if self._observers and cancelled is not None:
                self._observe(observe.SessionFinished(result=cancelled, at=self._clock()))
            raise
        except Exception as exc:
            # A bug of ours must not leave the room joined or a traceback on the terminal.
            _log.exception("session failed")
            self._feed(conv.ConnectFailed(at=self._clock(), detail=f"internal error: {exc}"))
        await self._shutdown()
        result = self.end_result()
        assert result is not None  # the state is ended once _ended is set
        if self._observers:
            self._observe(observe.SessionFinished(result=result, at=self._clock()))
        return result

    async def _until_ended(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` unless and until the session ends first (then cancel it)."""
        assert self._ended is not None
        work = asyncio.ensure_future(coro)
        ended = asyncio.ensure_future(self._ended.wait())
        try:
            await asyncio.wait({work, ended}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for fut in (work, ended):
                if not fut.done():
                    fut.cancel()
            await asyncio.gather(work, ended, return_exceptions=True)
        if work.done() and not work.cancelled() and (exc := work.exception()) is not None:
            raise exc

    async def _start(self) -> None:
        grant = await self._obtain_grant()
        if grant is None:
            return  # refused before any device was touched
        # livekit (and numpy under it) is imported once there is a call to join, not with
        # this module nor before the grant: a front end (whose grant may wait for its first
        # frame, as the demo's does) draws without waiting for it.
        from livekit import rtc

        audio = await self._open_audio()
        self._tap_audio(audio)
        clock = replace(self._state.clock, max_duration_seconds=grant.max_duration_seconds)
        self._state = replace(self._state, clock=clock)
        room = rtc.Room(loop=self._loop)
        self._room = room
        self._wire(room)
        if not await self._connect(room, grant):
            return
        assert self._link_up is not None
        self._link_up.set()
        self._feed(conv.Connected(local_identity=room.local_participant.identity, at=self._clock()))
        for participant in list(room.remote_participants.values()):
            self._participant_joined(participant)
        self._spawn(self._sender(room), "sender")
        self._spawn(self._poll_rtt(room), "rtt")
        if audio.has_input:
            await self._publish_microphone(room, audio)

    async def _open_audio(self) -> AudioBackend:
        if self._audio is None:
            self._audio = self._default_audio()
        audio = self._audio
        audio.set_notice_callback(self._audio_notice)
        try:
            await audio.start()
        except Exception as exc:  # the contract says it never raises; degrade if it does
            _log.warning("audio backend failed to start: %s", exc)
            self._audio_notice(f"Audio unavailable ({exc}); continuing text-only.")
            self._audio = audio = NullAudio(f"text-only: {exc}")
        return audio

    def _default_audio(self) -> AudioBackend:
        if self._audio_factory is None:
            return NullAudio("text-only")
        return self._audio_factory(self._audio_notice)

    def _audio_notice(self, text: str) -> None:
        self._call_soon(lambda: self._feed(conv.AddNotice(text=text, at=self._clock())))

    async def _obtain_grant(self) -> LiveKitGrant | None:
        try:
            grant = await self._grant_source.obtain()
        except errors.FishtalkError as exc:
            self._fail_before_connect(exc)
            return None
        if self._observers:
            self._observe(
                observe.GrantReceived(
                    session_id=grant.session_id,
                    transport=grant.transport,
                    livekit_host=urlsplit(grant.livekit_url).netloc or grant.livekit_url,
                    expires_at=grant.expires_at,
                    max_duration_seconds=grant.max_duration_seconds,
                    at=self._clock(),
                )
            )
        if grant.is_expired():
            self._feed(
                conv.ConnectFailed(
                    at=self._clock(),
                    code=conv.END_SESSION_EXPIRED,
                    detail=f"The session grant expired at {grant.expires_at:%H:%M:%S %Z} "
                    "before it was used; start a new session.",
                )
            )
            return None
        return grant

    def _fail_before_connect(self, exc: errors.FishtalkError) -> None:
        if self._state.ended:
            return  # hung up before the grant came: the hang-up is how it ended
        code = _error_code(exc)
        if code not in (conv.END_SESSION_EXPIRED, errors.END_UNSUPPORTED_TRANSPORT):
            self._api_error = exc
        else:
            self._refusal = exc
        self._feed(conv.ConnectFailed(at=self._clock(), code=code, detail=str(exc)))

    async def _connect(self, room: rtc.Room, grant: LiveKitGrant) -> bool:
        from livekit import rtc

        url = grant.livekit_url
        host = urlsplit(url).netloc or url
        timeouts = self.timeouts
        options = rtc.RoomOptions(auto_subscribe=True, connect_timeout=timeouts.signal_attempt)
        detail: str | None = None
        # The connect is never cancelled, not by the timeout nor by a hang-up meanwhile: a
        # cancelled room.connect strands the SDK's handshake (leaked sockets, then an FFI
        # panic that kills the process). It runs in a task of its own; a timeout stops the
        # waiting only, and teardown lets the connect finish before disconnecting.
        connecting = asyncio.ensure_future(
            room.connect(url, grant.token.get_secret_value(), options)
        )
        self._connecting = connecting
        try:
            done, _ = await asyncio.wait({connecting}, timeout=timeouts.connect)
            if not done:
                raise TimeoutError
            connecting.result()
        except TimeoutError:
            detail = (
                f"Could not establish a WebRTC connection to {host} within "
                f"{timeouts.connect:g} s (no usable network path; WebRTC ignores loopback-only "
                "hosts)."
            )
        except rtc.ConnectError as exc:
            detail = f"Could not connect to {host}: {_one_line(exc.message)}."
        except Exception as exc:
            detail = f"Could not connect to {host}: {_one_line(str(exc)) or type(exc).__name__}."
        if detail is None:
            return True
        _log.info("connect failed: %s", detail)
        self._feed(conv.ConnectFailed(at=self._clock(), detail=detail))
        return False

    # --- SDK wiring: every handler is registered before connect ------------------------

    def _wire(self, room: rtc.Room) -> None:
        room.on("data_received", self._on_data)
        room.register_text_stream_handler(TOPIC_TRANSCRIPTION, self._on_text_stream)
        room.on("participant_attributes_changed", self._on_attributes)
        room.on("participant_connected", self._participant_joined)
        room.on("participant_disconnected", self._on_participant_left)
        room.on("track_subscribed", self._on_track_subscribed)
        room.on("track_unsubscribed", self._on_track_unsubscribed)
        room.on("reconnecting", self._on_reconnecting)
        room.on("reconnected", self._on_reconnected)
        room.on("disconnected", self._on_disconnected)

    def _on_data(self, packet: rtc.DataPacket) -> None:
        at = self._clock()
        if self._observers:
            sender = packet.participant.identity if packet.participant is not None else None
            self._observe(observe.PacketIn(packet.topic, packet.data, sender, at))
        if packet.topic != TOPIC_AGENT_EVENT:
            return
        try:
            event = decode_agent_event(packet.data)
        except ProtocolError as exc:
            preview = packet.data[:PREVIEW_BYTES].decode("utf-8", "replace")
            _log.debug("malformed agent event (%s): %r", exc, preview)
            self._feed(conv.MalformedAgentEvent(error=str(exc), preview=preview, at=at))
            return
        if event.type not in ("client_tool.call",) and _log.isEnabledFor(logging.DEBUG):
            _log.debug("agent event %s", event.type)
        self._feed(conv.AgentEventReceived(event=event, at=at))

    def _on_text_stream(self, reader: rtc.TextStreamReader, identity: str) -> None:
        self._spawn(self._read_transcript(reader, identity), "transcript")

    async def _read_transcript(self, reader: rtc.TextStreamReader, identity: str) -> None:
        from livekit import rtc

        info = reader.info
        attributes = dict(info.attributes or {})
        stream_id = info.stream_id
        segment_id = attributes.get(ATTR_SEGMENT_ID) or stream_id
        if self._observers:
            self._observe(
                observe.StreamAttributes(stream_id, identity, attributes, False, self._clock())
            )
        self._feed(
            conv.TranscriptStreamOpened(
                stream_id=stream_id,
                segment_id=segment_id,
                identity=identity,
                final=is_final(attributes),
                at=self._clock(),
            )
        )
        try:
            async for chunk in reader:
                self._feed(
                    conv.TranscriptStreamChunk(
                        stream_id=stream_id, segment_id=segment_id, text=chunk, at=self._clock()
                    )
                )
        except rtc.StreamError as exc:
            _log.debug("transcript stream %s ended abnormally: %s", stream_id, exc)
        finally:
            reader.close()
        trailer = reader.info.attributes or {}
        if self._observers and trailer:
            self._observe(
                observe.StreamAttributes(stream_id, identity, dict(trailer), True, self._clock())
            )
        final = is_final(trailer) if ATTR_TRANSCRIPTION_FINAL in trailer else None
        self._feed(
            conv.TranscriptStreamClosed(
                stream_id=stream_id, segment_id=segment_id, at=self._clock(), final=final
            )
        )

    def _on_attributes(self, changed: dict[str, str], participant: rtc.Participant) -> None:
        self._feed(
            conv.AttributesChanged(
                identity=participant.identity, changed=dict(changed), at=self._clock()
            )
        )

    def _participant_joined(self, participant: rtc.RemoteParticipant) -> None:
        self._feed(
            conv.ParticipantJoined(
                identity=participant.identity,
                at=self._clock(),
                is_agent=_is_agent(participant),
                attributes=participant.attributes,
            )
        )

    def _on_participant_left(self, participant: rtc.RemoteParticipant) -> None:
        if self._reconnecting:
            # A rejoin can report everyone as gone; who is really left is checked (and
            # reported) once the transport is back.
            _log.debug("participant %s left while reconnecting", participant.identity)
            return
        # A full rejoin (server-requested reconnect) reports the agent as gone just before
        # it reports reconnecting, in the same batch: confirm the departure a moment later.
        identity, at = participant.identity, self._clock()
        if self._loop is None:
            return
        handle = self._loop.call_later(LEAVE_SETTLE, lambda: self._confirm_left(identity, at))
        self._deferred.add(handle)

    def _confirm_left(self, identity: str, at: float) -> None:
        if self._loop is not None:
            now = self._loop.time()
            self._deferred = {h for h in self._deferred if h.when() > now}
        room = self._room
        if self._reconnecting or room is None or identity in room.remote_participants:
            return  # the reconnect (or the participant's return) settles it
        self._feed(conv.ParticipantLeft(identity=identity, at=at))

    def _on_reconnecting(self) -> None:
        self._reconnecting = True
        if self._link_up is not None:
            self._link_up.clear()
        if self._loop is not None and self._reconnect_deadline is None:
            self._reconnect_deadline = self._loop.call_later(
                self.timeouts.reconnect, self._reconnect_expired
            )
        self._feed(conv.Reconnecting(at=self._clock()))

    def _stop_reconnect_deadline(self) -> None:
        if self._reconnect_deadline is not None:
            self._reconnect_deadline.cancel()
            self._reconnect_deadline = None

    def _reconnect_expired(self) -> None:
        self._reconnect_deadline = None
        if not self._reconnecting or self._state.ended:
            return
        _log.info("the link did not come back within %g s", self.timeouts.reconnect)
        self._reconnecting = False
        self._feed(conv.Disconnected(at=self._clock(), reason=RECONNECT_GAVE_UP))

    def _on_reconnected(self) -> None:
        self._reconnecting = False
        self._stop_reconnect_deadline()
        if self._link_up is not None:
            self._link_up.set()
        room = self._room
        if room is None:
            return
        remotes = list(room.remote_participants.values())
        self._feed(
            conv.Reconnected(at=self._clock(), remote_identities=tuple(p.identity for p in remotes))
        )
        # No replay: the sticky agent state is the one thing we can (and must) read again.
        for participant in remotes:
            self._participant_joined(participant)
            if ATTR_AGENT_STATE in participant.attributes:
                self._on_attributes(
                    {ATTR_AGENT_STATE: participant.attributes[ATTR_AGENT_STATE]}, participant
                )

    def _on_disconnected(self, reason: int) -> None:
        self._reconnecting = False
        self._stop_reconnect_deadline()
        name = _disconnect_reason_name(reason)
        _log.info("room disconnected (%s)", name)
        self._feed(conv.Disconnected(at=self._clock(), reason=name))

    def _on_track_subscribed(
        self,
        track: rtc.Track,
        publication: rtc.RemoteTrackPublication,
        participant: rtc.RemoteParticipant,
    ) -> None:
        from livekit import rtc

        if track.kind != rtc.TrackKind.KIND_AUDIO or self._state.ended:
            return
        audio = self._audio
        if audio is None:
            return
        old = self._audio_streams.pop(publication.sid, None)
        if old is not None:
            old[1].cancel()
        stream = rtc.AudioStream(
            track, sample_rate=SAMPLE_RATE, num_channels=CHANNELS, frame_size_ms=FRAME_MS
        )
        task = self._spawn(self._play(stream, audio), f"play {participant.identity}")
        self._audio_streams[publication.sid] = (stream, task)

    def _on_track_unsubscribed(
        self,
        track: rtc.Track | None,
        publication: rtc.RemoteTrackPublication,
        participant: rtc.RemoteParticipant,
    ) -> None:
        entry = self._audio_streams.pop(publication.sid, None)
        if entry is not None:
            entry[1].cancel()

    async def _play(self, stream: rtc.AudioStream, audio: AudioBackend) -> None:
        from fishtalk.engine.audio.vad import is_audible

        try:
            async for event in stream:
                frame = event.frame
                # Latency marks cost one comparison per frame; the level of a frame is
                # looked at only while a reply's first frame or the wire's end is awaited.
                if self._wire_pressed_at is not None and is_audible(frame.data):
                    self._wire_last_audible = self._clock()
                if self._hold_audio_until and self._clock() < self._hold_audio_until:
                    continue
                taps = self._taps
                if self._armed and taps is not None and self._first_of_reply(frame.data):
                    self._armed = False
                    self._mark("audio_received", self._clock())
                    taps.play_marked(frame, self._on_audio_handed)
                else:
                    audio.play(frame)
                if self._observers:
                    self._observe_frame("agent", frame)
        finally:
            await stream.aclose()

    async def _publish_microphone(self, room: rtc.Room, audio: AudioBackend) -> None:
        from livekit import rtc

        source = rtc.AudioSource(SAMPLE_RATE, CHANNELS, queue_size_ms=100)
        track = rtc.LocalAudioTrack.create_audio_track("microphone", source)
        options = rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
        try:
            await room.local_participant.publish_track(track, options)
        except Exception as exc:
            _log.warning("could not publish the microphone: %s", exc)
            self._feed(
                conv.LocalError(
                    code="mic_permission_denied",
                    at=self._clock(),
                    detail=f"The microphone track could not be published: {exc}",
                )
            )
            await source.aclose()
            return
        self._mic_source = source
        self._mic_track = track
        if self._state.muted:
            track.mute()
        self._spawn(self._pump_microphone(source, audio), "microphone")

    async def _pump_microphone(self, source: rtc.AudioSource, audio: AudioBackend) -> None:
        async for frame in audio.mic_frames():
            await source.capture_frame(frame)
            if self._observers:
                self._observe_frame("mic", frame)

    def _observe_frame(self, channel: observe.AudioChannel, frame: rtc.AudioFrame) -> None:
        self._observe(
            observe.AudioFrame(
                channel,
                bytes(frame.data.cast("B")),
                frame.sample_rate,
                frame.num_channels,
                self._clock(),
            )
        )

    # --- heard latency: the IO-side marks ----------------------------------------------
    #
    # typed_sent        a user.message publish completed (the sender, below);
    # speech_ended      the backend's capture-side detector: capture time of the last
    #                   voiced mic frame (fishtalk.engine.audio.vad);
    # audio_received    the first audible agent frame after a user turn ended (armed by
    #                   typed_sent with audio wanted, or by speech_ended); armed while the
    #                   agent speaks, only once its state has left "speaking" and no
    #                   audible frame came for WIRE_QUIET (the earlier reply's tail), or,
    #                   once the reply's first words arrived, after a quiet frame (or
    #                   TAIL_AFTER_TEXT of sound without one: the agent went straight on);
    # audio_heard       that frame's first sample handed to the output device (the
    #                   playback callback's time), value = the device's output latency;
    # rtt               the candidate pair's current round trip from the SDK's RTC stats;
    # interrupt_flushed the first playback callback after the flush: its time plus the
    #                   output latency, when the last agent sample left the speaker;
    # interrupt_wire_stopped  the arrival of the last audible agent frame after the key
    #                   press (the press itself if none came), decided once WIRE_QUIET
    #                   seconds passed without one.
    # Only a backend with LatencyTaps and an output device yields the audio marks.

    def _mark(self, kind: conv.MarkKind, at: float, value: float | None = None) -> None:
        if self._state.ended:
            return
        self._feed(conv.LatencyMark(kind, at, value))

    def _tap_audio(self, audio: AudioBackend) -> None:
        if not isinstance(audio, LatencyTaps):
            return
        if audio.has_output:
            self._taps = audio
        if audio.has_input:
            audio.set_speech_ended_callback(self._on_speech_ended)

    def _arm(self, turn_ended_at: float) -> None:
        self._armed = not self._state.ended
        # Speaking already when the user's turn ended: that audio is not the answer.
        self._armed_over_speech = self._agent_speaking and self._speaking_since <= turn_ended_at
        self._tail_heard_at = self._clock()

    def _first_of_reply(self, data: memoryview) -> bool:
        """While armed: whether this agent frame is the first audible one of the reply."""
        from fishtalk.engine.audio.vad import is_audible

        audible = is_audible(data)
        if self._armed_over_speech:
            now = self._clock()
            open_turn = self._state.latency.open
            text_at = open_turn.first_text_at if open_turn is not None else None
            if text_at is not None:
                # The reply's first words arrived (the agent went straight on from the
                # earlier reply, state and all): what still plays is the earlier reply's
                # last frames, which the jitter buffer holds back longer than the text.
                # The reply's audio is the first audible frame after a pause, or what is
                # still audible TAIL_AFTER_TEXT after its words came.
                if not audible:
                    self._armed_over_speech = False
                    return False
                if now - text_at < TAIL_AFTER_TEXT:
                    return False
                self._armed_over_speech = False
                return True
            # The earlier reply plays while the agent speaks, and its tail (pauses between
            # words included) may still arrive after its state changed: it is over once no
            # audible frame came for WIRE_QUIET, the rule that also decides when the
            # agent's audio stopped after an interrupt.
            if self._agent_speaking or now - self._tail_heard_at < WIRE_QUIET:
                if self._agent_speaking or audible:
                    self._tail_heard_at = now
                return False
            self._armed_over_speech = False
        return audible

    def _on_speech_ended(self, captured_at: float) -> None:
        self._mark("speech_ended", captured_at)
        self._arm(captured_at)

    def _on_audio_handed(self, handed_at: float, output_latency: float) -> None:
        self._mark("audio_heard", handed_at, output_latency)

    def _on_flushed(self, left_at: float) -> None:
        self._mark("interrupt_flushed", left_at)

    def _watch_wire(self, pressed: float) -> None:
        loop = self._loop
        if loop is None or not self._audio_streams:
            return
        self._wire_pressed_at = pressed
        self._wire_last_audible = None
        if self._wire_timer is not None:
            self._wire_timer.cancel()
        self._wire_timer = loop.call_later(WIRE_QUIET, self._check_wire)

    def _check_wire(self) -> None:
        self._wire_timer = None
        pressed, loop = self._wire_pressed_at, self._loop
        if pressed is None or loop is None:
            return
        now = self._clock()
        last = self._wire_last_audible
        quiet_since = pressed if last is None or last < pressed else last
        if now - quiet_since >= WIRE_QUIET:
            self._wire_pressed_at = None
            self._mark("interrupt_wire_stopped", quiet_since)
        elif now - pressed > WIRE_WATCH_LIMIT:
            self._wire_pressed_at = None
            _log.info("the agent's audio did not stop within %g s of an interrupt", now - pressed)
        else:
            self._wire_timer = loop.call_later(quiet_since + WIRE_QUIET - now, self._check_wire)

    async def _poll_rtt(self, room: rtc.Room) -> None:
        await asyncio.sleep(RTT_FIRST)
        while True:
            if not self._reconnecting:
                rtt = await _read_rtt(room)
                if rtt is not None:
                    self._mark("rtt", self._clock(), rtt)
            await asyncio.sleep(RTT_PERIOD)

    # --- reducer plumbing --------------------------------------------------------------

    def _feed(self, inp: conv.Input, first: Callable[[], None] | None = None) -> None:
        """Reduce ``inp`` (and whatever its effects feed back), then notify listeners.

        ``first`` runs before the reduction, once ``inp`` is in line (what it feeds back
        comes after ``inp``): :meth:`send_text`'s early publish."""
        self._pending.append(inp)
        if self._reducing:
            return  # re-entrant feed from an effect: the outer loop picks it up in order
        self._reducing = True
        try:
            if first is not None:
                first()
            while self._pending:
                inp = self._pending.popleft()
                if self._observers:
                    self._observe(inp)
                self._state, effects = conv.reduce(self._state, inp)
                for effect in effects:
                    self._execute(effect)
                state = self._state
                speaking = state.agent_state == "speaking"
                if speaking is not self._agent_speaking:
                    self._agent_speaking = speaking
                    self._speaking_since = inp.at
                if self._observers:
                    self._observe(observe.Reduced(state, inp.at))
                for listener in list(self._listeners):
                    try:
                        listener(state)
                    except Exception:
                        _log.exception("state listener failed")
        finally:
            self._reducing = False
            if self._published_early is not None:
                _log.error("the reducer did not send %s", self._published_early.type)
                self._published_early = None

    def _execute(self, effect: conv.Effect) -> None:
        match effect:
            case conv.SendClientEvent(event=event):
                early = self._published_early
                if early is not None and event == early:
                    self._published_early = None  # send_text started its publish already
                    return
                self._send(event)
            case conv.RunClientTool(call=call):
                if self._loop is not None:
                    self._spawn(self._run_tool(call), f"tool {call.call_id}")
            case conv.ScheduleTimer(name=name, deadline=deadline):
                self._schedule(name, deadline)
            case conv.CancelTimer(name=name):
                handle = self._timers.pop(name, None)
                if handle is not None:
                    handle.cancel()
            case conv.SetMicrophoneMuted(muted=muted):
                if self._audio is not None:
                    self._audio.set_muted(muted)
                if self._mic_track is not None:
                    if muted:
                        self._mic_track.mute()
                    else:
                        self._mic_track.unmute()
            case conv.Teardown():
                if self._ended is not None:
                    self._ended.set()

    def _schedule(self, name: str, deadline: float) -> None:
        loop = self._loop
        if loop is None:
            return
        old = self._timers.pop(name, None)
        if old is not None:
            old.cancel()

        def fire() -> None:
            self._timers.pop(name, None)
            self._feed(conv.TimerFired(name=name, at=max(self._clock(), deadline)))

        # The reducer sets its deadlines with the web SDK's fixed waits; an injected
        # timeout moves when the timer fires (it fires "at" the reducer's deadline).
        delay = deadline - self._clock()
        if name == conv.TIMER_AGENT_JOIN:
            delay -= conv.AGENT_JOIN_TIMEOUT - self.timeouts.agent_join
        elif name == conv.TIMER_ENDED_GRACE:
            delay -= conv.SESSION_ENDED_GRACE - self.timeouts.ended_grace
        self._timers[name] = loop.call_later(max(0.0, delay), fire)

    def _call_soon(self, fn: Callable[[], None]) -> None:
        loop = self._loop
        if loop is None:
            fn()
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            fn()
        else:
            loop.call_soon_threadsafe(fn)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        return self._tasks.spawn(coro, name)

    # --- effects that need IO ----------------------------------------------------------

    def _send(self, event: conv.ClientEventOut) -> None:
        """Publish ``event`` after every event asked for before it, through the sender task.

        Fast path: with the link up and the sender idle (nothing queued, nothing on its
        way), the publish starts right here, so the bytes leave before this returns; the
        sender only sees it through. Otherwise the event is queued and published in turn,
        which also keeps the order while the link is down."""
        outbox = self._outbox
        if outbox is None:
            return
        room = self._idle_link()
        if room is None:
            outbox.put_nowait(event)
            return
        started = _step_now(self._publish(room, event))
        if started is not None:
            outbox.put_nowait(started)

    def _idle_link(self) -> rtc.Room | None:
        """The room, when a publish may start right here: the link is up, the sender idle
        with nothing queued, and this is the session's loop. None otherwise."""
        outbox, room, link_up = self._outbox, self._room, self._link_up
        if (
            outbox is None
            or room is None
            or self._sender_holds
            or not outbox.empty()
            or link_up is None
            or not link_up.is_set()
            or asyncio._get_running_loop() is not self._loop
        ):
            return None
        return room

    def _publish_first(self, room: rtc.Room, message: UserMessage, data: bytes) -> None:
        """Start publishing a typed turn before its reduction (see :meth:`send_text`); the
        reducer's :class:`~fishtalk.core.conversation.SendClientEvent` for it is then skipped."""
        self._published_early = message
        started = _step_now(self._publish(room, message, data))
        if started is not None:
            assert self._outbox is not None  # _idle_link saw it
            self._outbox.put_nowait(started)

    async def _sender(self, room: rtc.Room) -> None:
        """Publish queued client events one at a time, in the order the reducer asked."""
        outbox = self._outbox
        assert outbox is not None
        link_up = self._link_up
        assert link_up is not None
        while True:
            item = await outbox.get()
            self._sender_holds = True
            try:
                if isinstance(item, _Resume):
                    await item  # started by _send
                    continue
                if not link_up.is_set():
                    # While the SDK reconnects, publishing fails; the event waits instead.
                    try:
                        async with asyncio.timeout(LINK_WAIT):
                            await link_up.wait()
                    except TimeoutError as exc:
                        self._send_failed(item, exc)
                        continue
                await self._publish(room, item)
            finally:
                self._sender_holds = False
                outbox.task_done()

    async def _publish(
        self, room: rtc.Room, event: conv.ClientEventOut, data: bytes | None = None
    ) -> None:
        """Publish one client event (``data``: its bytes, when already encoded), on the
        link that is up (every path of :meth:`_send` and :meth:`send_text` ends here). Its
        first step may run outside any task (see :func:`_step_now`)."""
        try:
            if data is None:
                data = encode_client_event(event)
            taken_at = self._clock()
            await room.local_participant.publish_data(data, reliable=True, topic=TOPIC_CLIENT_EVENT)
        except Exception as exc:
            self._send_failed(event, exc)
            return
        # The publish of `event` has completed here, whichever path it took.
        self._sent_events += 1
        if event.type == "user.message":
            self._mark("typed_sent", self._clock())
            # A reply asked to be text-only has no first audio frame to wait for.
            if event.audio is not False:
                self._arm(taken_at)
            else:
                self._armed = False
        if self._observers:
            self._observe(observe.PacketOut(TOPIC_CLIENT_EVENT, data, self._clock()))

    def _send_failed(self, event: conv.ClientEventOut, exc: Exception) -> None:
        why = _one_line(str(exc)) or type(exc).__name__
        _log.warning("could not send %s: %s", event.type, why)
        self._feed(
            conv.LocalError(
                code="send_failed", at=self._clock(), detail=f"Could not send {event.type}: {why}"
            )
        )

    async def _run_tool(self, call: ClientToolCall) -> None:
        outcome = await self._tools.run(call)
        if self._observers:
            self._observe(
                observe.ToolRan(call.call_id, call.tool_name, call.params, outcome, self._clock())
            )
        self._feed(outcome.as_input(self._clock()))

    # --- teardown ----------------------------------------------------------------------

    async def _shutdown(self) -> None:
        """Release everything the session holds; safe to call twice."""
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        for handle in self._deferred:
            handle.cancel()
        self._deferred.clear()
        self._stop_reconnect_deadline()
        if self._wire_timer is not None:
            self._wire_timer.cancel()
            self._wire_timer = None
        self._wire_pressed_at = None
        outbox = self._outbox
        link_up = self._link_up is not None and self._link_up.is_set()
        if outbox is not None and self._room is not None and link_up:
            # Let user.hangup (and anything queued before it) leave before disconnecting.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(SEND_DRAIN_TIMEOUT):
                    await outbox.join()
        self._tools.cancel_all()
        await self._tasks.cancel_all()
        self._audio_streams.clear()
        room, self._room = self._room, None
        connecting, self._connecting = self._connecting, None
        if connecting is not None and not connecting.done() and room is not None:
            # Never cancelled (see wait_closed): a task of its own lets it finish, then
            # disconnects, so a connect that timed out still fails fast.
            task = asyncio.ensure_future(self._settle_connect(connecting, room))
            self._settling = task
            _SETTLING.add(task)
            task.add_done_callback(_SETTLING.discard)
            room = None
        elif connecting is not None and connecting.done() and not connecting.cancelled():
            connecting.exception()  # retrieved: already reported through the end reason
        if room is not None:
            try:
                async with asyncio.timeout(DISCONNECT_TIMEOUT):
                    await room.disconnect()
            except Exception as exc:
                _log.info("room disconnect did not complete cleanly: %s", exc)
        if self._mic_source is not None:
            source, self._mic_source = self._mic_source, None
            with contextlib.suppress(Exception):
                await source.aclose()
        if self._audio is not None:
            try:
                await self._audio.aclose()
            except Exception as exc:
                _log.info("audio backend did not close cleanly: %s", exc)

    async def _settle_connect(self, connecting: asyncio.Future[None], room: rtc.Room) -> None:
        """Let a room connect still in flight finish (bounded), then disconnect the room."""
        _log.info("the room connect is still in flight; disconnecting once it settles")
        await asyncio.wait({connecting}, timeout=CONNECT_SETTLE)
        if not connecting.done():
            _log.warning("the room connect did not settle within %g s", CONNECT_SETTLE)
            return
        if not connecting.cancelled():
            connecting.exception()  # retrieved: the session already ended for it
        try:
            async with asyncio.timeout(DISCONNECT_TIMEOUT):
                await room.disconnect()
        except Exception as exc:
            _log.info("room disconnect did not complete cleanly: %s", exc)

    async def wait_closed(self) -> None:
        """Wait until nothing the session started is still running, after ``run()``.

        ``run()`` returns as soon as the session has ended and been torn down, with one
        exception: a room connect still in flight (it timed out, or the user hung up while
        it ran) is never cancelled, because a cancelled ``room.connect`` strands the SDK's
        handshake (leaked sockets, then a native panic that kills the process). It is left
        to finish in a task of its own, which then disconnects the room; this waits for
        that (at most :data:`CONNECT_SETTLE` seconds). A library user that must leave
        nothing behind (``AgentSession.close()``) awaits it; a process about to exit need
        not."""
        task = self._settling
        if task is not None:
            await asyncio.shield(task)


def _step_now(coro: Coroutine[Any, Any, None]) -> _Resume | None:
    """Run ``coro`` up to its first suspension now, on the caller's stack (Python 3.11 has
    no eager tasks); return what a task awaits to run the rest, or None if it already
    finished."""
    try:
        first = coro.send(None)
    except StopIteration:
        return None
    return _Resume(coro, first)


class _Resume:
    """Awaiting this continues a coroutine that :func:`_step_now` started: it hands the
    task what the coroutine is waiting on, then passes every wake-up (or exception, e.g. a
    cancel) back into the coroutine."""

    __slots__ = ("_coro", "_first")

    def __init__(self, coro: Coroutine[Any, Any, None], first: Any) -> None:
        self._coro = coro
        self._first = first

    def __await__(self) -> Generator[Any, Any, None]:
        coro, waiting_on = self._coro, self._first
        while True:
            try:
                sent = yield waiting_on
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:
                try:
                    waiting_on = coro.throw(exc)
                except StopIteration:
                    return
            else:
                try:
                    waiting_on = coro.send(sent)
                except StopIteration:
                    return


def _task_failed(task: asyncio.Task[Any], exc: BaseException) -> None:
    _log.error("session task %s failed: %s", task.get_name(), exc, exc_info=exc)


async def _read_rtt(room: rtc.Room) -> float | None:
    """The network round trip (seconds) of the connection's selected candidate pair, from
    the SDK's RTC stats (the subscriber's, which carries the agent's audio, first); None
    when no pair has measured one yet or the stats could not be read in time."""
    try:
        async with asyncio.timeout(RTT_TIMEOUT):
            stats = await room.get_rtc_stats()
    except Exception as exc:  # a room going away, a slow FFI answer: try again later
        _log.debug("rtc stats not read: %s", exc)
        return None
    for reports in (stats.subscriber_stats, stats.publisher_stats):
        fallback: float | None = None
        for report in reports:
            if report.WhichOneof("stats") != "candidate_pair":
                continue
            pair = report.candidate_pair.candidate_pair
            rtt = float(pair.current_round_trip_time)
            if rtt <= 0.0:
                continue
            if pair.nominated:
                return rtt
            fallback = rtt if fallback is None else min(fallback, rtt)
        if fallback is not None:
            return fallback
    return None


def _empty_registry() -> ToolRegistry:
    return ToolRegistry()


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


__all__ = [
    "CONNECT_TIMEOUT",
    "DEFAULT_TIMEOUTS",
    "AudioFactory",
    "CreateSession",
    "EndResult",
    "GrantSource",
    "ReadyGrant",
    "Refused",
    "Session",
    "StateListener",
    "Timeouts",
]
