"""From the CLI's world to the parts of a call: settings and flags become a session.

The one place (with :mod:`fishtalk.cli.front_ends` and :mod:`fishtalk.cli.demo`, which use
it) that knows both the application's :class:`~fishtalk.cli.settings.Settings` and the
engine. It builds, for every front end (the chat TUI, the line mode, the demo,
``session create``):

- the session request and the API client (:func:`session_request`, :func:`session_client`),
  hence the grant source (:func:`grant_source`), or a LiveKit room joined directly
  (:func:`livekit_target`, ``[livekit]``);
- the audio backend factory (:func:`audio_factory`) and the tool runner
  (:func:`tool_runner`), whose built-ins reach the front end through a
  :class:`~fishtalk.engine.host.HostLink` (both built by :mod:`fishtalk.engine.parts`);
- the :class:`~fishtalk.engine.session.Session` itself (:func:`build_session`).

How a call ended becomes an exit code in :mod:`fishtalk.cli.exits`.

Heavy modules (livekit, textual) are imported inside the functions that need them: the
commands import this module lazily, but tests and benches import it directly.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from fishtalk.core.errors import FishtalkError

if TYPE_CHECKING:
    from fishtalk.cli.settings import Settings
    from fishtalk.engine.api import LiveKitGrant, SessionClient, SessionRequest
    from fishtalk.engine.audio.base import AudioBackend
    from fishtalk.engine.host import HostLink
    from fishtalk.engine.journal.writer import JournalWriter
    from fishtalk.engine.parts import LiveKitTarget
    from fishtalk.engine.session import AudioFactory, GrantSource, Session, Timeouts
    from fishtalk.engine.tools.registry import Approver
    from fishtalk.engine.tools.runner import ToolRunner

# --- the parts of a session ---------------------------------------------------------------


def require_agent(settings: Settings) -> str:
    """The agent id, or a ConfigError (exit 2) saying how to give one."""
    from fishtalk.core.errors import ConfigError

    if not settings.session.agent_id:
        raise ConfigError(
            "no agent: pass --agent ID, set FISHTALK_AGENT, or set session.agent_id in the config"
        )
    return settings.session.agent_id


def session_request(settings: Settings) -> SessionRequest:
    """The ``POST /v1/agent/sessions`` body the settings ask for (the one place it is built).

    Raises ConfigError when no agent id is set.
    """
    from fishtalk.engine.api import SessionOverrides, SessionRequest

    s = settings.session
    overrides = SessionOverrides(
        voice_id=s.voice_id,
        first_message=s.first_message,
        first_message_prompt=s.first_message_prompt,
        system_prompt=s.system_prompt,
    )
    return SessionRequest(
        agent_id=require_agent(settings),
        name=s.name,
        tool_events=s.tool_events,
        language=s.language,
        timezone=s.timezone,
        overrides=overrides if overrides.model_dump(exclude_none=True) else None,
        dynamic_variables=dict(s.dynamic_variables) or None,
        end_user_id=s.end_user_id,
        metadata=s.metadata,
        record_audio=s.record_audio,
        world_context=s.world_context,
    )


def session_client(settings: Settings) -> SessionClient:
    """A :class:`fishtalk.engine.api.SessionClient` for the settings (key or public mode).

    Raises ConfigError when neither an API key nor public mode with an origin is set.
    """
    from fishtalk.core.errors import ConfigError
    from fishtalk.engine.api import SessionClient

    api = settings.api
    if api.public:
        if not api.origin:
            raise ConfigError(
                "public mode needs an origin: pass --origin URL or set api.origin "
                "(one of the agent's allowed origins)"
            )
        return SessionClient(api.url, api_key=None, origin=api.origin, timeout=api.timeout)
    if api.api_key is None:
        raise ConfigError(
            "no API key: set FISH_API_KEY (or api.api_key in the config), "
            "or use --public --origin URL for a public agent"
        )
    return SessionClient(api.url, api_key=api.api_key, origin=api.origin, timeout=api.timeout)


def livekit_target(settings: Settings) -> LiveKitTarget | None:
    """The LiveKit room ``[livekit]`` (``--livekit-url`` ...) asks to join directly, or None
    for the Fish session API; a combination that cannot join is a ConfigError (exit 2)."""
    from fishtalk.engine import parts

    lk = settings.livekit
    return parts.livekit_target(
        lk.url,
        token=parts.reveal(lk.token),
        api_key=parts.reveal(lk.api_key),
        api_secret=parts.reveal(lk.api_secret),
        room=lk.room,
        identity=lk.identity,
        protocol=lk.protocol,
        environ={},  # the environment was read into the settings already
    )


def grant_source(settings: Settings) -> GrantSource:
    """Where the session's grant comes from: a LiveKit room joined directly, or the
    session API, as the settings say.

    A request that cannot be built (no agent id) becomes a source that fails with that
    error, so the session ends with it (exit 2) rather than raising here.
    """
    from fishtalk.engine.session import CreateSession, Refused

    try:
        target = livekit_target(settings)
        if target is not None:
            return target.grant()
        request = session_request(settings)
    except FishtalkError as exc:
        return Refused(exc)
    return CreateSession(client=lambda: session_client(settings), request=request)


def audio_factory(settings: Settings) -> AudioFactory | None:
    """The audio backend the settings ask for (None: text-only, no devices opened).

    Falling back to text-only (no devices, no PortAudio) is reported as a notice.
    """
    from fishtalk.engine import parts

    if settings.session.text_only or not settings.audio.enabled:
        return None
    return parts.audio_factory(settings.audio)


def tool_runner(
    settings: Settings,
    link: HostLink | None = None,
    *,
    answers_from: TextIO | None = None,
    question_to: TextIO | None = None,
    host_builtins: bool = True,
) -> ToolRunner:
    """The client-tool runner the settings declare.

    With a ``link``, approval questions go to the front end bound to it. A front end that
    asks on given streams passes them (``answers_from``, ``question_to``), and the one
    approval policy (:func:`~fishtalk.engine.tools.approval.choose_approver`) decides whether a
    person can answer there: through pipes nobody can, so "ask" tools are declined. With
    ``host_builtins`` the built-ins' toasts and clipboard go to the front end too.
    """
    from fishtalk.engine import parts
    from fishtalk.engine.tools.approval import choose_approver
    from fishtalk.engine.tools.builtins import BuiltinOptions

    options = None
    if link is not None and host_builtins:
        options = BuiltinOptions(on_notify=link.notify, clipboard=link.copy)
    approver: Approver | None = link.approve if link is not None else None
    if approver is not None and (answers_from is not None or question_to is not None):
        approver = choose_approver(approver, answers_from=answers_from, question_to=question_to)
    return parts.tool_runner(
        settings,
        default_timeout=settings.session.client_tool_timeout,
        approver=approver,
        options=options,
    )


def build_session(
    settings: Settings,
    *,
    tools: ToolRunner | None = None,
    audio: AudioBackend | AudioFactory | None = None,
    grant: LiveKitGrant | GrantSource | None = None,
    timeouts: Timeouts | None = None,
) -> Session:
    """A :class:`~fishtalk.engine.session.Session` made of the parts the settings describe.

    ``tools`` defaults to the declared tools with nobody to approve (see
    :func:`tool_runner`); ``audio`` to :func:`audio_factory`; ``grant`` (a ready grant)
    (a ready grant or another source) replaces the API request; ``timeouts`` to the web SDK's.
    """
    from fishtalk.engine.session import DEFAULT_TIMEOUTS, Session
    from fishtalk.engine.tools import ToolRegistry, ToolRunner

    if tools is None:
        tools = ToolRunner(ToolRegistry(), default_timeout=settings.session.client_tool_timeout)
    return Session(
        grant if grant is not None else grant_source(settings),
        audio=audio if audio is not None else audio_factory(settings),
        tools=tools,
        spoken=not settings.session.text_only,
        timeouts=timeouts if timeouts is not None else DEFAULT_TIMEOUTS,
        protocol=settings.livekit.protocol,
        reply_audio="measure",  # how each reply sounds: line mode, the ended screen
    )


@dataclass(frozen=True, slots=True)
class JournalChoice:
    """What the journal flags ask for: ``--no-journal`` (``enabled`` False), ``--journal
    PATH`` (``path``), ``--events`` (``events``: every record also goes there as JSON Lines).
    The config's ``[journal]`` table can turn it off and sets the retention."""

    enabled: bool = True
    path: Path | None = None
    events: TextIO | None = None
    record_audio: bool = False
    """``--record-audio``: also a stereo WAV (mic left, agent right) beside the journal."""


class Recording(contextlib.ExitStack):
    """What :func:`attach_journal` started; close it once the session is over."""

    writer: JournalWriter | None = None
    """The journal being written (None: none)."""

    @property
    def clock_origin(self) -> float | None:
        """The session clock at the journal's header (its records' ``t`` = 0), if any."""
        return None if self.writer is None else self.writer.origin[0]


def attach_journal(
    settings: Settings,
    session: Session,
    choice: JournalChoice | None,
    *,
    front_end: str,
    tools: ToolRunner | None = None,
) -> Recording:
    """Start the journal (and audio recording) of ``session`` as the flags and settings
    ask; close the returned stack once the session is over. With ``tools`` (the session's
    runner) approval answers are journaled too.

    A journal that cannot be opened is a notice in the conversation, never a failure.
    """
    from fishtalk.engine import paths
    from fishtalk.engine.journal import SUFFIX
    from fishtalk.engine.journal.writer import Retention, new_journal_id, prune

    stack = Recording()
    choice = choice or JournalChoice()
    cfg = settings.journal
    path = choice.path
    directory: Path | None = None
    stem = new_journal_id()
    if path is None and choice.enabled and cfg.enabled:
        directory = paths.journal_dir()
        path = directory / f"{stem}{SUFFIX}"
    if choice.record_audio:
        from fishtalk.engine.journal.audio import AudioRecorder

        wav = path.with_suffix(".wav") if path is not None else paths.journal_dir() / f"{stem}.wav"
        try:
            recorder = AudioRecorder(wav)
        except OSError as exc:
            session.notice(f"No audio recording for this call: {exc}")
        else:
            session.add_observer(recorder.observe)
            stack.callback(recorder.close)
    writer = _journal_writer(settings, session, choice, path, front_end=front_end)
    if writer is None:
        return stack
    stack.callback(writer.close)
    stack.writer = writer
    if tools is not None and tools.approver is not None:
        tools.approver = writer.recording_approver(tools.approver)
    if directory is not None and path is not None:
        prune(directory, Retention(cfg.keep_sessions, int(cfg.keep_mb * 1024 * 1024)), keep=path)
    return stack


def _journal_writer(
    settings: Settings,
    session: Session,
    choice: JournalChoice,
    path: Path | None,
    *,
    front_end: str,
) -> JournalWriter | None:
    from fishtalk.engine import parts

    if path is None and choice.events is None:
        return None
    writer = parts.open_journal(
        session,
        path,
        agent_id=settings.session.agent_id,
        front_end=front_end,
        spoken=not settings.session.text_only,
        echo=choice.events,
    )
    if writer is not None and choice.events is not None:
        # ``--events | head``: the reader went away, so hang up, as line mode does (exit 0).
        writer.when_echo_closed(session.hangup)
    return writer
