"""``AgentSession``: script a conversation with a Fish Audio agent from Python.

::

    import asyncio
    from fishtalk import AgentSession

    async def main() -> None:
        async with AgentSession(agent_id="...", text_only=True) as session:
            reply = await session.ask("Hello!")
            print(reply.text)

    asyncio.run(main())

It is the same engine as the ``fishtalk`` CLI (:class:`fishtalk.engine.session.Session`) behind a
small async surface modelled on the Fish web SDK's ``AgentSession``: options that mirror
the session API, typed events (:mod:`fishtalk.core.events`, the one vocabulary of
:func:`fishtalk.core.conversation.changes`), client tools as plain callables, and commands.

A library behaves like one: failures are typed exceptions from :mod:`fishtalk.core.errors`,
nothing is printed, logging goes through :mod:`logging` (logger ``fishtalk``), and once
:meth:`AgentSession.close` returns (the ``async with`` block has exited) nothing the
session started is left running: no task, no thread, no audio stream, no room.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar, overload

from fishtalk.core import conversation as conv
from fishtalk.core.errors import (
    ConnectionFailedError,
    FishtalkError,
    SessionEndedError,
    SessionExpiredError,
)
from fishtalk.engine.aio import in_daemon_thread
from fishtalk.engine.fanout import KINDS, EventFanout, EventStream, kind_key
from fishtalk.engine.hardening import make_non_dumpable
from fishtalk.engine.native import keep_sdk_logs_off_stderr, let_sdk_settle
from fishtalk.engine.replies import ReplyTracker, is_line
from fishtalk.engine.tools.registry import Approver, ToolContext
from fishtalk.engine.tools.runner import DEFAULT_TIMEOUT, ToolRunner

if TYPE_CHECKING:
    from pydantic import JsonValue

    from fishtalk.core.protocol.livekit_agents import AgentProtocol
    from fishtalk.engine.api import LiveKitGrant, SessionOverrides, SessionRequest
    from fishtalk.engine.audio.base import AudioBackend, AudioLevels
    from fishtalk.engine.journal.writer import JournalWriter
    from fishtalk.engine.replyaudio import ReplyAudio
    from fishtalk.engine.session import EndResult, GrantSource, Session, Timeouts

_log = logging.getLogger(__name__)

ENV_API_KEY: Final = "FISH_API_KEY"
"""Where the API key comes from when none is given (as for the CLI and Fish's own SDK)."""
ENV_API_URL: Final = "FISHTALK_API_URL"
"""Where the API base URL comes from when none is given (as for the CLI)."""

Event: TypeAlias = conv.Change
"""Every event an :class:`AgentSession` emits (see :mod:`fishtalk.core.events`)."""

E = TypeVar("E", bound=conv.Change)

ClientTool: TypeAlias = Callable[[dict[str, "JsonValue"], ToolContext], object]
"""A client tool: ``handler(params, context)``, sync or async, returning a JSON value (or
None, sent as ``{}``). A sync handler runs in a worker thread; ``context`` carries the call
id and the tool name. Raise :class:`fishtalk.engine.tools.ToolError` for an error result whose
message is written for the agent; any other exception is an error result too."""


@dataclass(frozen=True, slots=True)
class AudioDevices:
    """Named (or numbered) audio devices; ``None`` means the system default."""

    input: str | int | None = None
    """The microphone (a PortAudio device name, part of one, or an index)."""
    output: str | int | None = None
    """The speaker."""


AudioOption: TypeAlias = "bool | AudioDevices | AudioBackend"
"""``False``: no audio at all; ``True``: the default devices; :class:`AudioDevices`: named
ones; or an :class:`~fishtalk.engine.audio.base.AudioBackend` of your own."""


class AgentSession:
    """One conversation with a Fish Audio agent, as an async context manager.

    Options mirror the Fish web SDK and the session API (``POST /v1/agent/sessions``):

    - ``agent_id``: the agent to talk to (or a whole ``request``,
      :class:`fishtalk.engine.api.SessionRequest`, instead of the request fields below);
    - ``api_key``: default ``$FISH_API_KEY``; or ``public=True`` with an ``origin`` (one of
      the agent's allowed origins) for a public agent, no key;
    - ``api_url``: default ``$FISHTALK_API_URL``, else ``https://api.fish.audio``;
    - the request fields: ``name``, ``overrides`` (a
      :class:`fishtalk.engine.api.SessionOverrides` or a dict), ``dynamic_variables``,
      ``tool_events``, ``end_user_id``, ``metadata``, ``record_audio``, ``timezone``,
      ``client_timezone``, ``language``, ``world_context``;
    - ``text_only``: typed turns get text replies, not speech (default False);
    - ``audio``: ``False`` (default: no devices), ``True`` (the default devices),
      :class:`AudioDevices` (named ones) or your own backend. Without PortAudio or devices
      the session carries on text-only and says so in a ``notice`` event;
    - ``client_tools``: ``{name: handler}`` (see :data:`ClientTool`); ``config_tools``:
      also the tools declared in the user's fishtalk config (``True``: the default config
      file; or a path); ``tool_timeout``: the handler timeout in seconds (15);
      ``approve``: an async ``(fishtalk.engine.tools.ApprovalRequest) -> bool`` asked before a
      config tool with ``approve = "ask"`` runs (without one, such calls are declined);
    - ``grant``: a ready :class:`fishtalk.engine.api.LiveKitGrant` instead of the session API;
      ``timeouts``: :class:`fishtalk.engine.session.Timeouts`.
    - any LiveKit room, no Fish session API: ``livekit_url`` with ``token`` (a LiveKit
      access token), or with ``livekit_api_key`` / ``livekit_api_secret`` (default
      ``$LIVEKIT_API_KEY`` / ``$LIVEKIT_API_SECRET``) and ``room`` (a token is minted);
      ``protocol``: ``"fish"`` or ``"livekit-agents"`` (None: told from the agent
      participant). See the README's "Talking to any LiveKit agent".
    - ``journal``: ``True`` writes the session's journal (JSON Lines, mode 0600, the format
      ``fishtalk export``, ``replay`` and ``diff`` read) to fishtalk's journal folder, a
      path writes it there; :attr:`journal_path` says where. Off by default for a library;
    - ``reply_audio``: keep each reply's received audio (:attr:`reply_audio`).

    Invalid options raise ``ValueError`` or :class:`fishtalk.core.errors.ClientConfigError` (no
    API key, public without an origin) at once. Entering the ``async with`` block connects
    and returns once connected; a failure raises: a malformed ``api_url`` or ``origin``
    (:class:`fishtalk.core.errors.ClientConfigError`), the session API's
    (:class:`fishtalk.core.errors.SessionApiError` and below),
    :class:`fishtalk.core.errors.SessionExpiredError`,
    :class:`fishtalk.core.errors.UnsupportedTransportError`, or :class:`ConnectionFailedError`.
    Leaving the block hangs up and releases everything, also when the body raised.
    """

    def __init__(
        self,
        agent_id: str | None = None,
        *,
        api_key: str | None = None,
        public: bool = False,
        origin: str | None = None,
        api_url: str | None = None,
        name: str | None = None,
        overrides: SessionOverrides | Mapping[str, str] | None = None,
        dynamic_variables: Mapping[str, str | int | float | bool] | None = None,
        tool_events: bool | None = None,
        end_user_id: str | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
        record_audio: bool | None = None,
        timezone: str | None = None,
        client_timezone: str | None = None,
        language: str | None = None,
        world_context: bool | None = None,
        request: SessionRequest | None = None,
        text_only: bool = False,
        audio: AudioOption = False,
        client_tools: Mapping[str, ClientTool] | None = None,
        config_tools: bool | str | Path = False,
        tool_timeout: float = DEFAULT_TIMEOUT,
        approve: Approver | None = None,
        api_timeout: float = 10.0,
        grant: LiveKitGrant | None = None,
        timeouts: Timeouts | None = None,
        journal: bool | str | Path = False,
        livekit_url: str | None = None,
        token: str | None = None,
        livekit_api_key: str | None = None,
        livekit_api_secret: str | None = None,
        room: str | None = None,
        protocol: AgentProtocol | None = None,
        reply_audio: bool = False,
    ) -> None:
        from fishtalk.engine import parts
        from fishtalk.engine.api import SessionOverrides, SessionRequest
        from fishtalk.engine.session import ReadyGrant

        self._journal_to: bool | str | Path = journal
        self._journal: JournalWriter | None = None
        self._protocol = protocol
        direct = parts.direct_join_for_api(
            livekit_url, token, livekit_api_key, livekit_api_secret, room, protocol
        )
        if request is None and grant is None and direct is None:
            if not agent_id:
                raise ValueError("AgentSession needs an agent_id (or a request or a grant)")
            request = SessionRequest(
                agent_id=agent_id,
                name=name,
                overrides=SessionOverrides.model_validate(dict(overrides))
                if isinstance(overrides, Mapping)
                else overrides,
                dynamic_variables=dict(dynamic_variables) if dynamic_variables else None,
                tool_events=tool_events,
                end_user_id=end_user_id,
                metadata=dict(metadata) if metadata is not None else None,
                record_audio=record_audio,
                timezone=timezone,
                client_timezone=client_timezone,
                language=language,
                world_context=world_context,
            )
        self._request = request
        make_non_dumpable()  # it holds the API key from here on
        keep_sdk_logs_off_stderr()  # the promised silence: SDK records only to the user's logging
        self._source: GrantSource
        if grant is not None:
            self._source = ReadyGrant(grant)
        elif direct is not None:
            self._source = direct
        else:
            assert request is not None
            self._source = parts.api_grant(
                request,
                api_url=api_url or os.environ.get(ENV_API_URL) or None,
                api_key=api_key if api_key is not None else os.environ.get(ENV_API_KEY),
                public=public,
                origin=origin,
                timeout=api_timeout,
                key_hint=f"pass api_key= or set {ENV_API_KEY}",
            )
        self._text_only = text_only
        self._audio_option, self._keep_reply_audio = audio, reply_audio
        self._runner = self._build_runner(client_tools, config_tools, tool_timeout, approve)
        self._timeouts = timeouts
        self._session: Session | None = None
        self._run: asyncio.Task[EndResult] | None = None
        self._previous = conv.initial_state(spoken=not text_only)
        self._fanout = EventFanout()
        self._replies: deque[conv.Segment] = deque()  # for wait_for_line
        self._answers = ReplyTracker()  # for wait_for_reply
        self._closed = False
        self._sdk_settled = False

    # --- building the parts ------------------------------------------------------------

    @staticmethod
    def _build_runner(
        client_tools: Mapping[str, ClientTool] | None,
        config_tools: bool | str | Path,
        tool_timeout: float,
        approve: Approver | None,
    ) -> ToolRunner:
        from fishtalk.engine import parts
        from fishtalk.engine.tools.declared import read_config_tools

        declared = None
        if config_tools is not False:
            declared = read_config_tools(None if config_tools is True else Path(config_tools))
        return parts.tool_runner(
            declared, handlers=client_tools, default_timeout=tool_timeout, approver=approve
        )

    def _audio(self) -> AudioBackend | Callable[[Callable[[str], None]], AudioBackend] | None:
        from fishtalk.engine import parts
        from fishtalk.engine.audio.options import DeviceOptions

        option = self._audio_option
        if option is False:
            return None
        if option is True or isinstance(option, AudioDevices):
            devices = option if isinstance(option, AudioDevices) else AudioDevices()
            return parts.audio_factory(DeviceOptions(devices.input, devices.output))
        return option

    # --- lifecycle ---------------------------------------------------------------------

    async def __aenter__(self) -> AgentSession:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Create the session and connect; returns once connected (``async with`` calls
        it). Raises what prevented the session (see the class docs); everything is released
        before it raises. May be called once."""
        from fishtalk.engine.session import DEFAULT_TIMEOUTS, Session

        if self._session is not None:
            raise RuntimeError("AgentSession.start() may only be called once")
        session = Session(
            self._source,
            audio=self._audio(),
            tools=self._runner,
            spoken=not self._text_only,
            timeouts=self._timeouts or DEFAULT_TIMEOUTS,
            protocol=self._protocol,
            reply_audio=self._keep_reply_audio,
        )
        self._session = session
        self._previous = session.state
        if self._journal_to is not False:
            self._journal = self._open_journal(session)
        session.add_listener(self._on_state)
        self._run = asyncio.ensure_future(session.run())
        try:
            await self.wait_for(
                lambda e: isinstance(e, conv.StatusChanged) and e.status == "connected",
                raise_on_end=False,
            )
        except BaseException:
            await self.close()
            raise
        if session.state.ended:
            result = await self._finish()
            await self.close()
            raise _end_error(result)

    @property
    def journal_path(self) -> Path | None:
        """Where this session's journal is written (``journal=`` asked for one), else None."""
        return self._journal.path if self._journal is not None else None

    @property
    def reply_audio(self) -> ReplyAudio | None:
        """Each reply's received audio (started with ``reply_audio=True``), else None."""
        return self._session.reply_audio if self._session is not None else None

    def _open_journal(self, session: Session) -> JournalWriter | None:
        from fishtalk.engine import parts, paths
        from fishtalk.engine.journal import SUFFIX
        from fishtalk.engine.journal.writer import new_journal_id

        if self._journal_to is True:
            path = paths.journal_dir() / f"{new_journal_id()}{SUFFIX}"
        else:
            assert not isinstance(self._journal_to, bool)
            path = Path(self._journal_to)
        return parts.open_journal(
            session,
            path,
            agent_id=self._request.agent_id if self._request is not None else None,
            front_end="python",
            spoken=not self._text_only,
            what="session",
        )

    async def hangup(self) -> EndResult:
        """End the session (``user.hangup``, then disconnect) and wait for the end; returns
        how it ended. Safe to call twice."""
        return await self._finish()

    async def close(self) -> None:
        """Hang up if still connected and release everything: the room, audio devices,
        running tool handlers, callback tasks. Safe to call twice (``async with`` calls it).

        A room connect still in flight (the caller gave up while joining) is never
        cancelled, since a cancelled connect breaks the SDK: close() waits for it to end
        (bounded by the SDK's own connect attempts) and then disconnects."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._run is not None:
                await self._finish()
        finally:
            if self._journal is not None:
                await in_daemon_thread(self._journal.close)  # joins its writer thread
            await self._fanout.close()

    async def _finish(self) -> EndResult:
        run = self._run
        if run is None or self._session is None:
            raise RuntimeError("the session was never started")
        if not run.done():
            self._session.hangup()
        # The run task tears the room down; shielded so a cancelled caller cannot cut the
        # teardown short (close() awaits it again; wait_closed() settles a connect).
        result = await asyncio.shield(run)
        await self._session.wait_closed()
        if not self._sdk_settled:  # once: hangup() then close() need not wait twice
            self._sdk_settled = True
            await let_sdk_settle()
        return result

    # --- state -------------------------------------------------------------------------

    @property
    def state(self) -> conv.State:
        """The latest conversation snapshot (:class:`fishtalk.core.conversation.State`)."""
        return self._session.state if self._session is not None else self._previous

    @property
    def status(self) -> conv.Status:
        """``connecting``, ``connected``, ``reconnecting`` or ``ended``."""
        return self.state.status

    @property
    def mode(self) -> conv.Mode:
        """``listening``, ``thinking`` or ``speaking``."""
        return self.state.mode

    @property
    def transcript(self) -> tuple[conv.Segment, ...]:
        """The transcript so far: user and agent lines in order (typed ones included)."""
        return self.state.transcript

    @property
    def end_result(self) -> EndResult | None:
        """How the session ended, once it has."""
        return self._session.end_result() if self._session is not None else None

    def audio_levels(self) -> AudioLevels:
        """Current microphone and agent levels, linear in [0, 1] (the web SDK's input and
        output volume); zeros without audio."""
        from fishtalk.engine.audio.base import AudioLevels

        return self._session.audio_levels() if self._session is not None else AudioLevels()

    # --- commands ----------------------------------------------------------------------

    def _live(self) -> Session:
        session = self._session
        if session is None:
            raise RuntimeError("the session is not started: use `async with AgentSession(...)`")
        return session

    async def send_text(self, text: str, audio: bool | None = None) -> conv.Segment:
        """Send a typed turn and return its transcript line once it has left.

        Messages wait until the agent is ready (as in the web SDK). ``audio``: whether the
        agent should speak its reply (None: not when ``text_only``). Raises ValueError for
        blank text and :class:`SessionEndedError` if the session ends before it is sent."""
        session = self._live()
        if not text.strip():
            raise ValueError("blank text is not sent")
        self._check_not_ended()
        self._replies.clear()
        session.send_text(text, audio=audio)
        sent = session.state.segment_log.last()
        assert sent is not None
        assert sent.typed
        segment_id = sent.segment_id
        if not sent.queued:
            self._answers.sent(sent)
            return sent
        event = await self.wait_for(
            lambda e: isinstance(e, conv.MessageSent) and e.segment.segment_id == segment_id
        )
        assert isinstance(event, conv.MessageSent)
        return event.segment

    def activity(self) -> None:
        """The user is active (typing): postpones the agent's idle re-engagement."""
        self._live().activity()

    def interrupt(self) -> None:
        """Stop the agent's current reply (local playback stops at once)."""
        self._live().interrupt()

    def mute(self) -> None:
        """Mute the microphone."""
        self._live().set_muted(True)

    def unmute(self) -> None:
        """Unmute the microphone."""
        self._live().set_muted(False)

    def set_spoken(self, spoken: bool) -> None:
        """Whether typed turns get spoken replies from now on."""
        self._live().set_spoken(spoken)

    # --- events ------------------------------------------------------------------------

    def events(self) -> EventStream:
        """An async iterator over the events from now on, ending after ``ended``. Each call
        makes an independent subscription (unbounded: keep reading it); call it before
        entering ``async with`` to see the connection events too."""
        return self._fanout.stream(done=self._closed or self.state.ended)

    @overload
    def on(self, kind: type[E], callback: Callable[[E], object]) -> Callable[[], None]: ...

    @overload
    def on(self, kind: str, callback: Callable[[Any], object]) -> Callable[[], None]: ...

    def on(self, kind: str | type[Any], callback: Callable[[Any], object]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event of ``kind`` (a kind name such as
        ``"segment_finalised"``, an event class from :mod:`fishtalk.core.events`, or ``"*"`` for
        all). The callback may be sync (called on the event loop; keep it short) or async
        (run as a task the session cancels at close). An exception in it is logged.
        Returns a function that removes the callback."""
        return self._fanout.add_callback(kind_key(kind), callback)

    async def wait_for(
        self,
        predicate: Callable[[conv.Change], bool],
        timeout: float | None = None,  # noqa: ASYNC109 - the web SDK's shape, and the issue's
        *,
        raise_on_end: bool = True,
    ) -> conv.Change:
        """Wait for the next event for which ``predicate(event)`` is true and return it.

        Raises TimeoutError after ``timeout`` seconds, and :class:`SessionEndedError` when
        the session ends first (unless the predicate accepts the ``ended`` event; with
        ``raise_on_end=False`` the ``ended`` event is returned instead)."""
        state = self.state
        if state.ended:
            if raise_on_end:
                raise _end_error(self.end_result, state.end_reason)
            return conv.Ended(state.end_reason or "")
        event = await self._fanout.next_event(predicate, timeout, or_ended=True)
        if isinstance(event, conv.Ended) and raise_on_end and not predicate(event):
            raise _end_error(self.end_result, event.reason)
        return event

    async def wait_for_reply(self, timeout: float | None = None) -> conv.Segment:  # noqa: ASYNC109 - public API, as wait_for's
        """The agent's reply to your last turn (typed or spoken), once complete: never
        the greeting (also when it finishes after you sent), never a reply to an earlier
        turn. It is complete when the agent, having said at least one line that answers
        the turn (:attr:`~fishtalk.core.conversation.Segment.answers_turn`), is back to
        listening with none open; several lines come joined in one segment (see
        :mod:`fishtalk.engine.replies`). Again for the same turn: the same reply at once.
        Before your first turn: the agent's opening lines (its greeting). Raises
        TimeoutError and :class:`SessionEndedError` like :meth:`wait_for`."""
        answers = self._answers
        turn = answers.last_turn
        reply = answers.reply_to(turn)
        if reply is None:
            await self.wait_for(lambda _e: answers.reply_to(turn) is not None, timeout)
            reply = answers.reply_to(turn)
            assert reply is not None
        return reply

    async def ask(
        self,
        text: str,
        timeout: float | None = None,  # noqa: ASYNC109 - as wait_for_reply's
        *,
        audio: bool | None = None,
    ) -> conv.Segment:
        """Send ``text`` as a turn and return the agent's reply to it
        (:meth:`send_text`, then :meth:`wait_for_reply`; ``timeout`` bounds both)."""
        async with asyncio.timeout(timeout):
            await self.send_text(text, audio=audio)
            return await self.wait_for_reply()

    async def wait_for_line(self, timeout: float | None = None) -> conv.Segment:  # noqa: ASYNC109 - public API, as wait_for's
        """The agent's next complete line, whatever it answers: the first one finished
        since your last :meth:`send_text` that no earlier call returned, the greeting
        included (``fishtalk test`` counts lines so). Raises like :meth:`wait_for`."""
        if self._replies:
            return self._replies.popleft()
        await self.wait_for(is_line, timeout)
        return self._replies.popleft()

    # --- dispatch ----------------------------------------------------------------------

    def _on_state(self, state: conv.State, events: Sequence[conv.Change]) -> None:
        self._answers.observe(state, events)
        for event in events:
            self._dispatch(event)

    def _dispatch(self, event: conv.Change) -> None:
        if is_line(event):
            assert isinstance(event, conv.SegmentFinalised)
            self._replies.append(event.segment)
        self._fanout.dispatch(event)

    def _check_not_ended(self) -> None:
        if self.state.ended:
            raise _end_error(self.end_result, self.state.end_reason)


def _end_error(result: EndResult | None, reason: str | None = None) -> FishtalkError:
    """The exception for a session that ended: the error that caused it, if any."""
    if result is not None and result.error is not None:
        return result.error
    why = result.reason if result is not None else (reason or "ended")
    message = result.message if result is not None else conv.describe_end_reason(why)
    if why in (conv.END_CONNECTION_FAILED,):
        return ConnectionFailedError(message, reason=why, result=result)
    if why == conv.END_SESSION_EXPIRED:  # only ever before connecting: start() raises it
        return SessionExpiredError(message)
    return SessionEndedError(f"the session ended: {message}", reason=why, result=result)


__all__ = [
    "ENV_API_KEY",
    "ENV_API_URL",
    "KINDS",
    "AgentSession",
    "AudioDevices",
    "AudioOption",
    "ClientTool",
    "ConnectionFailedError",
    "Event",
    "SessionEndedError",
]
