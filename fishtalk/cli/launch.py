"""From the CLI's world to a running call: settings and flags become the parts of a session.

The one module (besides ``cli.py``) that knows both the application's
:class:`~fishtalk.cli.config.Settings` and the engine. It builds, for every front end (the chat
TUI, the line mode, the demo, ``session create``):

- the session request and the API client (:func:`session_request`, :func:`session_client`),
  hence the grant source (:func:`grant_source`);
- the audio backend factory (:func:`audio_factory`) and the tool runner
  (:func:`tool_runner`), whose built-ins reach the front end through a
  :class:`~fishtalk.engine.host.HostLink`;
- the :class:`~fishtalk.engine.session.Session` itself (:func:`build_session`);

chooses the front end (:func:`wants_tui`, :func:`run_chat`), starts the simulator for
``fishtalk demo`` (:func:`run_demo`), and maps how a call ended to the process exit code
(:func:`exit_code`, through the one table in :mod:`fishtalk.core.errors`).

Heavy modules (livekit, textual, the sim) are imported inside the functions that need them:
``cli.py`` imports this module lazily, but tests and benches import it directly.
"""

from __future__ import annotations

import contextlib
import gc
import socket
import struct
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from fishtalk.core.errors import EXIT_CONNECTION, EXIT_INTERRUPTED, FishtalkError, exit_code_for

if TYPE_CHECKING:
    from fishtalk.cli.config import Settings
    from fishtalk.engine.api import LiveKitGrant, SessionClient, SessionRequest
    from fishtalk.engine.audio.base import AudioBackend
    from fishtalk.engine.host import HostLink
    from fishtalk.engine.journal.writer import JournalWriter
    from fishtalk.engine.metrics import MetricsFile
    from fishtalk.engine.session import AudioFactory, EndResult, GrantSource, Session, Timeouts
    from fishtalk.engine.tools.registry import Approver
    from fishtalk.engine.tools.runner import ToolRunner
    from fishtalk.sim.fish.scenario import Scenario
    from fishtalk.sim.runner import SimInfo, SimThread

DEMO_AGENT: Final = "demo"
"""The sim's built-in demo scenario (also its agent id)."""

DEMO_BUILTINS: Final = ("get_local_context", "notify")
"""Built-in tools the demo enables unless the user's config declares that name itself."""

NO_WEBRTC_NETWORK: Final = (
    "fishtalk demo needs a network interface other than loopback: WebRTC ignores 127.0.0.1, "
    "and this host has no other IPv4 address (inside a sandbox, run it through "
    f"`{sys.executable} -m fishtalk.sim.netns -- {sys.executable} -m fishtalk demo`)."
)
"""The no-network hint; the command names this interpreter by its full path, so it works
from a venv that was never activated."""

_SIOCGIFADDR: Final = 0x8915


# --- the parts of a session ---------------------------------------------------------------


def require_agent(settings: Settings) -> str:
    """The agent id, or a ConfigError (exit 2) saying how to give one."""
    from fishtalk.cli.config import ConfigError

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
    from fishtalk.cli.config import ConfigError
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


def grant_source(settings: Settings) -> GrantSource:
    """Where the session's grant comes from: the session API, as the settings say.

    A request that cannot be built (no agent id) becomes a source that fails with that
    error, so the session ends with it (exit 2) rather than raising here.
    """
    from fishtalk.engine.session import CreateSession, Refused

    try:
        request = session_request(settings)
    except FishtalkError as exc:
        return Refused(exc)
    return CreateSession(client=lambda: session_client(settings), request=request)


def audio_factory(settings: Settings) -> AudioFactory | None:
    """The audio backend the settings ask for (None: text-only, no devices opened).

    Falling back to text-only (no devices, no PortAudio) is reported as a notice.
    """
    if settings.session.text_only or not settings.audio.enabled:
        return None
    audio_settings = settings.audio

    def make(notice: Callable[[str], None]) -> AudioBackend:
        from fishtalk.engine.audio import open_backend
        from fishtalk.engine.audio.base import NullAudio

        backend = open_backend(audio_settings, notice=notice)
        if isinstance(backend, NullAudio):
            notice(backend.description)
        return backend

    return make


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
    from fishtalk.engine.tools.approval import choose_approver
    from fishtalk.engine.tools.build import build_runner
    from fishtalk.engine.tools.builtins import BuiltinOptions

    options = None
    if link is not None and host_builtins:
        options = BuiltinOptions(on_notify=link.notify, clipboard=link.copy)
    approver: Approver | None = link.approve if link is not None else None
    if approver is not None and (answers_from is not None or question_to is not None):
        approver = choose_approver(approver, answers_from=answers_from, question_to=question_to)
    return build_runner(settings, approver=approver, options=options)


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


def attach_journal(
    settings: Settings,
    session: Session,
    choice: JournalChoice | None,
    *,
    front_end: str,
    tools: ToolRunner | None = None,
) -> contextlib.ExitStack:
    """Start the journal (and audio recording) of ``session`` as the flags and settings
    ask; close the returned stack once the session is over. With ``tools`` (the session's
    runner) approval answers are journaled too.

    A journal that cannot be opened is a notice in the conversation, never a failure.
    """
    from fishtalk.engine import paths
    from fishtalk.engine.journal import SUFFIX
    from fishtalk.engine.journal.writer import Retention, new_journal_id, prune

    stack = contextlib.ExitStack()
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
    from fishtalk.engine.journal.writer import JournalWriter

    if path is None and choice.events is None:
        return None
    try:
        writer = JournalWriter(
            path,
            agent_id=settings.session.agent_id,
            front_end=front_end,
            spoken=not settings.session.text_only,
            levels=session.audio_levels,
            echo=choice.events,
        )
    except OSError as exc:
        session.notice(f"No journal for this call: {exc}")
        return None
    session.add_observer(writer.observe)
    return writer


def exit_code(result: EndResult | None) -> int:
    """The process exit code for how a call ended (None: it never ended, a failure)."""
    if result is None:
        return exit_code_for(None)
    return exit_code_for(result.reason, result.error)


# --- front ends -------------------------------------------------------------------------


def wants_tui(
    plain: bool | None, *, stdin: TextIO | None = None, stdout: TextIO | None = None
) -> bool:
    """Whether ``fishtalk chat`` opens the TUI: not asked for plain mode, and both ends of
    the conversation are a terminal (pipes and redirects keep the line mode)."""
    if plain:
        return False
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    try:
        return stdin.isatty() and stdout.isatty()
    except ValueError:  # a closed stream
        return False


def run_tui(
    settings: Settings,
    *,
    title: str = "",
    grant: GrantSource | None = None,
    note: str | None = None,
    first_frame: threading.Event | None = None,
    journal: JournalChoice | None = None,
    metrics: MetricsFile | None = None,
) -> int:
    """Run one session in the full-screen TUI; return the process exit code.

    ``grant``: where the grant comes from (default: the session API, as the settings say);
    ``note``: a notice shown from the first frame (what happens before connecting);
    ``first_frame``: set once the first frame is drawn.
    """
    from fishtalk.cli.config import ConfigError
    from fishtalk.engine.host import HostLink
    from fishtalk.tui import keys
    from fishtalk.tui.run import run_app

    try:
        keys.keymap(settings.ui.keys)
    except ValueError as exc:
        raise ConfigError(f"[ui.keys]: {exc}") from None
    link = HostLink()
    tools = tool_runner(settings, link)
    session = build_session(settings, tools=tools, grant=grant)
    recording = attach_journal(settings, session, journal, front_end="tui", tools=tools)
    if note:
        session.notice(note)
    try:
        code = run_app(
            session,
            link=link,
            title=title or (settings.session.agent_id or ""),
            keymap=settings.ui.keys,
            first_frame=first_frame,
            talk_mode=settings.audio.talk_mode,
        )
    finally:
        recording.close()
        if metrics is not None:
            metrics.write(session.state)
    return code if code is not None else EXIT_CONNECTION


def run_plain(
    settings: Settings,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    debug: bool = False,
    journal: JournalChoice | None = None,
    metrics: MetricsFile | None = None,
    latency: bool = False,
) -> int:
    """Run one session in line mode; return the process exit code.

    With ``--events`` (``journal.events``) the conversation's lines go to stderr, so the
    events stream alone is on stdout. ``latency`` (``--latency``): a latency note after
    each agent turn; ``metrics`` (``--metrics-json``) is written when the call ends."""
    from fishtalk.engine.host import HostLink
    from fishtalk.plain import line as plain

    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    if journal is not None and journal.events is not None:
        stdout = stderr or sys.stderr
    link = HostLink()
    tools = tool_runner(settings, link, answers_from=stdin, question_to=stdout, host_builtins=False)
    session = build_session(settings, tools=tools)
    recording = attach_journal(settings, session, journal, front_end="plain", tools=tools)
    try:
        result = plain.run_plain(
            session,
            link=link,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            debug=debug,
            talk_mode=settings.audio.talk_mode,
            latency=latency,
        )
    finally:
        recording.close()
        if metrics is not None:
            metrics.write(session.state)
    return EXIT_INTERRUPTED if result is None else exit_code(result)


def run_chat(
    settings: Settings,
    *,
    debug: bool = False,
    journal: JournalChoice | None = None,
    metrics: MetricsFile | None = None,
    latency: bool = False,
) -> int:
    """``fishtalk chat``: the TUI on a terminal, line mode otherwise; the exit code."""
    if wants_tui(settings.ui.plain) and (journal is None or journal.events is None):
        return run_tui(settings, journal=journal, metrics=metrics)
    return run_plain(settings, debug=debug, journal=journal, metrics=metrics, latency=latency)


# --- the demo ---------------------------------------------------------------------------


def has_webrtc_network() -> bool:
    """Whether any non-loopback interface has an IPv4 address (Linux; True elsewhere).

    libwebrtc never gathers candidates on loopback, so without such an interface a local
    connection can only time out. Asks the kernel only: no packet is sent.
    """
    if not sys.platform.startswith("linux"):
        return True
    import fcntl  # POSIX only: never imported at module level (Windows has none)

    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return True
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for name in names:
            if name == "lo":
                continue
            request = struct.pack("256s", name.encode()[:15])
            try:
                answer = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, request)
            except OSError:
                continue  # no IPv4 address on this interface
            address = socket.inet_ntoa(answer[20:24])
            if not address.startswith("127."):
                return True
    return False


def demo_settings(
    load: Callable[[dict[str, object]], Settings], api_url: str, dev_key: str
) -> Settings:
    """The user's settings (config file, environment, flags: keys, audio, declared tools)
    pointed at the sim, plus the harmless built-ins the tour calls.

    A name the user declared (say their own ``notify`` command) keeps their declaration:
    forcing ``builtin = true`` onto a command would be a config error.
    """
    base: dict[str, object] = {
        "api.url": api_url,
        "api.api_key": dev_key,
        "api.public": False,
        "session.agent_id": DEMO_AGENT,
    }
    settings = load(base)
    missing = {
        f"tools.{name}.builtin": True for name in DEMO_BUILTINS if name not in settings.tools
    }
    return load({**base, **missing}) if missing else settings


STARTING_SIM: Final = "Starting the simulated agent…"
"""What the demo's TUI shows while the sim starts behind it."""


class SimStartError(FishtalkError):
    """The demo's simulator could not start (exit 7, like a connection never established)."""

    exit_code = EXIT_CONNECTION


class _BackgroundSim:
    """The demo's simulator, started on a worker thread when the session asks for a grant,
    so the TUI draws its first frame before the sim's heavy imports (aiortc...)."""

    def __init__(self, scenario: Scenario | str) -> None:
        self._scenario = scenario
        self._sim: SimThread | None = None
        self._settled = threading.Event()

    def start(self) -> SimInfo:
        """Import and start the sim (blocking); raises SimStartError."""
        try:
            from fishtalk.sim.runner import SimThread

            scenario = self._scenario
            if isinstance(scenario, str):  # a built-in, loaded behind the first frame
                from fishtalk.sim.fish.scenario import builtin_scenario

                scenario = builtin_scenario(scenario)
            self._sim = SimThread(scenario)
            try:
                return self._sim.start()
            except (OSError, TimeoutError) as exc:
                raise SimStartError(f"the simulator could not start: {exc}") from None
        finally:
            self._settled.set()

    def stop(self) -> None:
        """Stop the sim, once a start under way has settled."""
        if self._sim is None and not self._settled.is_set():
            return  # never asked to start
        self._settled.wait(30)
        if self._sim is not None:
            with contextlib.suppress(Exception):
                self._sim.stop()


FIRST_FRAME_WAIT: Final = 5.0
"""The longest the sim start waits for the TUI's first frame."""


@dataclass(frozen=True, slots=True)
class _DemoGrant:
    """A grant source that starts the sim once the TUI's first frame is drawn (``after``,
    if given), then creates the session on it."""

    sim: _BackgroundSim
    settings: Settings
    after: threading.Event | None = None

    async def obtain(self) -> LiveKitGrant:
        from fishtalk.engine.aio import in_daemon_thread

        after = self.after
        if after is not None and not after.is_set():
            await in_daemon_thread(lambda: after.wait(FIRST_FRAME_WAIT), name="fishtalk-frame")
        gc.enable()  # held off by run_demo until the first frame
        info = await in_daemon_thread(self.sim.start, name="fishtalk-sim-start")
        # Imported behind the first frame too (httpx).
        from fishtalk.engine.api import SessionClient
        from fishtalk.engine.session import CreateSession

        timeout = self.settings.api.timeout
        client = SessionClient(info.api_url, api_key=info.dev_key, timeout=timeout)
        return await CreateSession(client, session_request(self.settings)).obtain()


def run_demo(
    load: Callable[[dict[str, object]], Settings],
    *,
    scenario: str | Path = DEMO_AGENT,
    journal: JournalChoice | None = None,
    metrics: MetricsFile | None = None,
    latency: bool = False,
) -> int:
    """Start the sim in-process with its demo scenario and open the TUI on it (line mode
    when stdin/stdout are not a terminal or ``ui.plain`` is set); the exit code.

    ``load`` builds settings from dotted overrides (the CLI's ``load``), so the user's
    config still applies (keys, audio devices) while the API points at the sim.
    ``scenario`` is a built-in name (``demo``, ``converse``) or a scenario TOML file; a bad
    one raises :class:`~fishtalk.sim.fish.scenario.ScenarioError` (one line, exit 2) before
    anything starts. In the TUI the sim starts behind the first frame, which says so.
    """
    chosen: Scenario | str = DEMO_AGENT
    if scenario != DEMO_AGENT:
        # Anything but the built-in demo is read and checked now (a bad file: exit 2 before
        # anything starts). The demo itself ships with fishtalk and is parsed on the sim's
        # worker thread, behind the first frame (its module stands on the sim package).
        from fishtalk.sim.fish.scenario import load_scenario

        chosen = load_scenario(scenario)
    if not has_webrtc_network():
        sys.stderr.write(f"fishtalk: {NO_WEBRTC_NETWORK}\n")
        return EXIT_CONNECTION
    sim = _BackgroundSim(chosen)
    # Until the first frame (the TUI, textual's imports) Python allocates a great deal and
    # frees little: cyclic collections then only cost time (about a tenth of it).
    gc.disable()
    try:
        # The API settings are the sim's, known once it runs; everything else is the user's.
        settings = demo_settings(load, "http://127.0.0.1", "sim")
        events = journal is not None and journal.events is not None
        if not wants_tui(settings.ui.plain) or events:
            # Piped or --plain in the config: the same tour in line mode, sim first.
            gc.enable()
            try:
                info = sim.start()
            except SimStartError as exc:
                sys.stderr.write(f"fishtalk: {exc}\n")
                return EXIT_CONNECTION
            return run_plain(
                demo_settings(load, info.api_url, info.dev_key),
                journal=journal,
                metrics=metrics,
                latency=latency,
            )
        name = chosen if isinstance(chosen, str) else chosen.name
        title = f"{name} (simulated agent)"
        drawn = threading.Event()
        grant = _DemoGrant(sim, settings, after=drawn)
        return run_tui(
            settings,
            title=title,
            grant=grant,
            note=STARTING_SIM,
            first_frame=drawn,
            journal=journal,
            metrics=metrics,
        )
    finally:
        gc.enable()
        sim.stop()


__all__ = [
    "DEMO_AGENT",
    "DEMO_BUILTINS",
    "NO_WEBRTC_NETWORK",
    "STARTING_SIM",
    "JournalChoice",
    "SimStartError",
    "attach_journal",
    "audio_factory",
    "build_session",
    "demo_settings",
    "exit_code",
    "grant_source",
    "has_webrtc_network",
    "require_agent",
    "run_chat",
    "run_demo",
    "run_plain",
    "run_tui",
    "session_client",
    "session_request",
    "tool_runner",
    "wants_tui",
]
