"""The session's commands and run loop: :class:`Session`, one conversation with a Fish agent.

A :class:`Session` takes the parts of one conversation (never the application's settings:
:mod:`fishtalk.cli.launch` turns settings and flags into these parts): a grant source, an
audio backend (or a factory for one), a client-tool runner, spoken or text-only replies,
and its timeouts. It obtains the grant, joins the LiveKit room (:mod:`.room`) and turns
what happens into :mod:`fishtalk.core.conversation` inputs. The reducer decides; the
session executes its effects (client events through the one outbox, :mod:`.outbox`;
client tools, timers, teardown) and hands every new state to its listeners. Front ends
only call the sync commands and read state: they never see the room.

Lifecycle (the Fish web SDK's, see spec/contract-notes.md): connecting -> connected <->
reconnecting -> ended. The connect itself is bounded (:attr:`Timeouts.connect`): a host
where WebRTC cannot connect ends with ``connection_failed`` and one sentence saying why,
never a hang. Everything the session starts is a task it owns and cancels at teardown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from fishtalk.core import conversation as conv
from fishtalk.core import errors
from fishtalk.core.protocol.livekit_agents import CANNOT, AgentProtocol
from fishtalk.engine import observe
from fishtalk.engine.audio.base import AudioBackend, AudioLevels
from fishtalk.engine.session.grants import GrantSource, ReadyGrant, error_code, speaks_for_itself
from fishtalk.engine.session.media import AudioFactory
from fishtalk.engine.session.outbox import Outbox
from fishtalk.engine.session.plumbing import DEFAULT_TIMEOUTS, StateListener, Timeouts
from fishtalk.engine.session.result import EndResult, end_result_of
from fishtalk.engine.session.room import Room
from fishtalk.engine.tools.runner import ToolRunner

if TYPE_CHECKING:
    from livekit import rtc

    from fishtalk.engine.api import LiveKitGrant
    from fishtalk.engine.replyaudio import ReplyAudio

_log = logging.getLogger("fishtalk.engine.session")


class Session(Room):
    """One conversation with a Fish agent over LiveKit.

    ``grant``: where the grant comes from (:class:`CreateSession`, :class:`ReadyGrant`, or a
    grant itself). ``audio``: the audio backend, or a factory called at start with the
    session's notice callback (default: no audio). The session starts and closes it.
    ``tools``: the client-tool runner (default: one with no tools, so every call is answered
    with an "unknown tool" error result, as the web SDK does). ``spoken``: whether typed
    turns get spoken replies (False: text-only). ``timeouts``: see :class:`Timeouts`.
    ``clock``: monotonic seconds. ``protocol``: what the agent speaks (``fish`` or
    ``livekit-agents``: where typed turns go); None to tell from the agent participant
    (:func:`~fishtalk.core.protocol.livekit_agents.detect_protocol`).
    ``reply_audio``: keep each reply's received audio (:attr:`reply_audio`, see
    :mod:`fishtalk.engine.replyaudio`) and measure it (``reply_audio`` events);
    ``"measure"``: measure only (audio let go once measured).

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
        protocol: AgentProtocol | None = None,
        reply_audio: bool | Literal["measure"] = False,
    ) -> None:
        self._grant_source: GrantSource = (
            grant if isinstance(grant, GrantSource) else ReadyGrant(grant)
        )
        self._init_core(tools, spoken, timeouts, clock)
        self._init_media(audio, reply_audio)
        self._init_room(protocol)
        self._started = False
        self._api_error: errors.FishtalkError | None = None
        self._refusal: errors.FishtalkError | None = None
        """An error that ended the session but whose wording is the end reason's own."""

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
    def reply_audio(self) -> ReplyAudio | None:
        """Each reply's received audio (None unless ``reply_audio=True``)."""
        return self._reply_audio

    @property
    def room(self) -> rtc.Room | None:
        """The LiveKit room (tests and benchmarks only; front ends never touch it)."""
        return self._room

    def add_listener(self, fn: StateListener) -> Callable[[], None]:
        """Call ``fn(state, events)`` on the loop after every reduction (the new state and
        what changed in it); returns a remover."""
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

    def send_text(self, text: str, audio: bool | None = None) -> None:
        """Send a typed turn (blank text is ignored). ``audio=None`` follows set_spoken().

        Like every command, it is a reducer input: the ``user.message`` the reducer returns
        leaves through the outbox, after everything asked for before it."""
        self._feed(conv.SendText(text=text, at=self._clock(), audio=audio))

    @property
    def protocol(self) -> AgentProtocol:
        """The protocol the agent speaks (``fish`` until an agent shows otherwise)."""
        return self._protocol or "fish"

    def interrupt(self) -> None:
        """Stop the agent now: local playback is flushed at once, then ``user.interrupt``
        (a livekit-agents agent offers none: a notice says so)."""
        pressed = self._clock()
        self._flush_for_interrupt(pressed)
        self._feed(conv.Interrupt(at=pressed))
        if self.protocol == "livekit-agents":
            self.notice(CANNOT["interrupt"].capitalize() + ".")

    def activity(self) -> None:
        """The user is typing: postpones the agent's idle re-engagement (throttled)."""
        self._feed(conv.SignalActivity(at=self._clock()))

    def set_muted(self, muted: bool) -> None:
        """Mute or unmute the microphone."""
        self._feed(conv.SetMuted(muted=muted, at=self._clock()))

    def set_spoken(self, spoken: bool) -> None:
        """Whether typed turns get spoken replies (else text-only, ``audio: false``)."""
        self._feed(conv.SetSpoken(spoken=spoken, at=self._clock()))

    def hangup(self, reason: str = conv.END_USER_HANGUP) -> None:
        """End the session: ``user.hangup``, then disconnect. Safe to call twice, and from
        any thread (a journal echo whose reader went away hangs up from its writer thread).
        ``reason``: the end reason to record (``interrupted`` for Ctrl-C)."""
        if self._state.ended:
            return
        self._call_soon(lambda: self._hang_up(reason))

    def _hang_up(self, reason: str) -> None:
        self._report_reply_audio()
        self._feed(conv.Hangup(at=self._clock(), reason=reason))

    def notice(self, text: str) -> None:
        """Show ``text`` as a notice in the conversation (e.g. what a launcher does before
        the connect)."""
        self._feed(conv.AddNotice(text=text, at=self._clock()))

    def audio_levels(self) -> AudioLevels:
        """Current microphone and agent levels (zeros without audio)."""
        return self._audio.levels() if self._audio is not None else AudioLevels()

    def end_result(self) -> EndResult | None:
        """How the session ended, once it has."""
        return end_result_of(self._state, self._api_error, self._refusal)

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
        self._outbox = Outbox(
            self._clock, self._published, self._send_failed, lambda: self.protocol
        )
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

        self._start_reply_audio()
        audio = await self._open_audio()
        self._tap_audio(audio)
        clock = replace(self._state.clock, max_duration_seconds=grant.max_duration_seconds)
        self._state = replace(self._state, clock=clock)
        room = rtc.Room(loop=self._loop)
        self._room = room
        self._wire(room)
        if not await self._connect(room, grant):
            return
        self._on_joined(room)
        assert self._outbox is not None  # made by run()
        self._spawn(self._outbox.run(room), "outbox")
        self._spawn(self._poll_rtt(room), "rtt")
        if audio.has_input:
            await self._publish_microphone(room, audio)

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
        code = error_code(exc)
        if speaks_for_itself(code):
            self._refusal = exc
        else:
            self._api_error = exc
        self._feed(conv.ConnectFailed(at=self._clock(), code=code, detail=str(exc)))


__all__ = ["Session"]
