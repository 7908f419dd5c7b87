"""The ``fishtalk`` command line (typer).

This module is imported by ``fishtalk --help`` and ``--version``, so it must stay light:
nothing heavy (textual, livekit, numpy, sounddevice, httpx) at module level. Every command
imports what it needs inside its body.

Errors: a :class:`~fishtalk.core.errors.FishtalkError` prints one line on stderr and exits with
its ``exit_code``; a traceback only appears with ``--debug``.
"""

import json
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn

import typer

from fishtalk._version import __version__
from fishtalk.core.errors import EXIT_ERROR, EXIT_OK, EXIT_USAGE, FishtalkError

if TYPE_CHECKING:
    from fishtalk.cli.config import Settings
    from fishtalk.engine.api import LiveKitGrant
    from fishtalk.engine.metrics import MetricsFile

app = typer.Typer(
    name="fishtalk",
    help="Talk to Fish Audio realtime voice agents from your terminal.",
    no_args_is_help=True,
    # --install-completion / --show-completion for bash, zsh, fish and PowerShell.
    add_completion=True,
    pretty_exceptions_enable=False,
    # Click's plain help layout: flags show no value placeholder (the rich layout labels
    # every flag, --help included, "<bool>"), help text is never read as markup, and the
    # sub-apps inherit it. Value options name their value with metavar=.
    rich_markup_mode=None,
    # Help paragraphs use the terminal's whole width (click would stop at 80 columns).
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 1000},
)
session_app = typer.Typer(help="Create and end agent sessions (without joining them).")
config_app = typer.Typer(help="Show, locate and create the config file.")
app.add_typer(session_app, name="session")
app.add_typer(config_app, name="config")


@dataclass
class CliState:
    """Global options, shared with every command through ``ctx.obj``."""

    config_path: Path | None = None
    debug: bool = False


_state = CliState()
"""The process-wide global options (main() needs --debug after the command has failed)."""


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"fishtalk {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="PATH",
            help="Config file to use (default: see `fishtalk config path`).",
            dir_okay=False,
        ),
    ] = None,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="Show tracebacks and debug logs (also after the command, or FISHTALK_DEBUG=1).",
        ),
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_version_callback,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Talk to Fish Audio realtime voice agents from your terminal."""
    _state.config_path = config
    _state.debug = debug or _state.debug
    ctx.obj = _state


def load(overrides: dict[str, Any] | None = None, *, profile: str | None = None) -> "Settings":
    """Load settings for a command: the global ``--config`` plus the command's flags (and
    the agent profile ``profile``, between the two)."""
    from fishtalk.cli.config import load_settings

    return load_settings(_state.config_path, overrides=overrides, profile=profile)


def resolve_agent(name: str | None, agent: str | None) -> tuple[str | None, str | None]:
    """``(profile, agent_id)`` for a command's positional NAME and its ``--agent`` value.

    NAME must be an agent profile (an unknown one is a ConfigError naming the closest).
    An ``--agent`` value is a profile when one has that name, else an agent id as it
    always was (with a note on stderr when it looks like a misspelt profile).
    """
    if name is None and agent is None:
        return None, None
    from fishtalk.cli.config import ConfigError, close_profile, unknown_profile_message

    profiles = list(load().agents)
    if name is not None:
        if agent is not None:
            raise ConfigError(f"give the agent once: NAME ({name!r}) or --agent, not both")
        if name not in profiles:
            raise ConfigError(
                unknown_profile_message(name, profiles) + " (for an agent id, use --agent ID)"
            )
        return name, None
    assert agent is not None
    if agent in profiles:
        return agent, None
    close = close_profile(agent, profiles)
    if close is not None:
        from fishtalk.core.text import strip

        typer.echo(
            f"fishtalk: note: {strip(agent)!r} is no agent profile (did you mean {close!r}?); "
            "using it as an agent id",
            err=True,
        )
    return None, agent


def run_async(coro: Any) -> Any:
    """Run a command's coroutine to completion (one event loop per command)."""
    import asyncio  # not at module level: --help and --version never need an event loop

    return asyncio.run(coro)


# --- shell completion -----------------------------------------------------------------------
# Completers run in the shell's completion subprocess: quick, quiet and never failing (a
# broken config or a machine without PortAudio completes nothing rather than an error).


def complete_profiles(incomplete: str) -> list[tuple[str, str]]:
    """Agent profile names from the config (``[agents.NAME]``), with their descriptions."""
    try:
        agents = load().agents
    except Exception:
        return []
    return [
        (name, profile.description or profile.agent_id)
        for name, profile in sorted(agents.items())
        if name.startswith(incomplete)
    ]


def _complete_devices(incomplete: str, *, want_input: bool) -> list[tuple[str, str]]:
    try:
        from fishtalk.engine.audio.devices import list_devices  # PortAudio: imported only here

        devices = list_devices()
    except Exception:
        return []
    found: list[tuple[str, str]] = []
    for device in devices:
        channels = device.max_input_channels if want_input else device.max_output_channels
        if channels <= 0:
            continue
        for word in (device.name, str(device.index)):
            if word.lower().startswith(incomplete.lower()):
                found.append((word, f"{device.hostapi}, {device.default_samplerate:g} Hz"))
    return found


def complete_input_devices(incomplete: str) -> list[tuple[str, str]]:
    """Microphones by name and index (from PortAudio)."""
    return _complete_devices(incomplete, want_input=True)


def complete_output_devices(incomplete: str) -> list[tuple[str, str]]:
    """Speakers by name and index (from PortAudio)."""
    return _complete_devices(incomplete, want_input=False)


def complete_scenarios(incomplete: str) -> list[str]:
    """Built-in scenario names (the sim's shipped TOML files) and ``.toml`` files here."""
    folder = Path(__file__).parent / "sim" / "fish" / "scenarios"  # no sim import
    try:
        names = sorted(p.stem for p in folder.glob("*.toml"))
        base = Path(incomplete).parent if incomplete else Path()
        files = sorted(str(p) for p in base.glob("*.toml") if str(p).startswith(incomplete))
    except OSError:
        return []
    return [n for n in names if n.startswith(incomplete)] + files


# Connection options shared by the commands that talk to the session API.
AgentOption = Annotated[
    str | None,
    typer.Option(
        "--agent",
        metavar="ID|PROFILE",
        help="Agent id, or the name of an [agents.NAME] profile (default: session.agent_id).",
        autocompletion=complete_profiles,
    ),
]
ProfileArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="PROFILE",
        # Described in each command's help text instead: typer would label it "<str>".
        hidden=True,
        autocompletion=complete_profiles,
        show_default=False,
    ),
]
PROFILE_HELP = (
    "PROFILE names an agent profile from the config ([agents.NAME]; `fishtalk agents` lists "
    "them): its agent id, public/origin choice and session settings apply, and flags still "
    "win. --agent takes a profile name or an agent id."
)
ApiUrlOption = Annotated[
    str | None,
    typer.Option("--api-url", metavar="URL", help="API base URL (default: api.url)."),
]
PublicOption = Annotated[
    bool | None,
    typer.Option("--public/--no-public", help="Public agent: no API key, send an Origin."),
]
OriginOption = Annotated[
    str | None,
    typer.Option("--origin", metavar="URL", help="Origin header for a public agent."),
]


LatencyOption = Annotated[
    bool,
    typer.Option(
        "--latency",
        help="Line mode: after each agent turn, a line with how long it took to be heard.",
    ),
]
MetricsJsonOption = Annotated[
    Path | None,
    typer.Option(
        "--metrics-json",
        metavar="PATH",
        help="When the call ends, write every turn's latency waterfall, the interrupts "
        "and p50/p95/worst to PATH as JSON (mode 0600).",
    ),
]


def _metrics_file(path: Path | None) -> "MetricsFile | None":
    """Open the ``--metrics-json`` file before the call starts (a bad path: exit 2)."""
    if path is None:
        return None
    from fishtalk.engine.metrics import MetricsFile

    try:
        return MetricsFile.open(path)
    except OSError as exc:
        _fail(f"cannot write metrics to {path}: {exc.strerror or exc}", EXIT_USAGE)


# Session overrides: what the session API accepts and the config can set ([session]).
LanguageOption = Annotated[
    str | None,
    typer.Option(
        "--language", metavar="LANG", help="Language override, e.g. en (session.language)."
    ),
]
TimezoneOption = Annotated[
    str | None,
    typer.Option(
        "--timezone", metavar="TZ", help="IANA time zone, e.g. Europe/Berlin (session.timezone)."
    ),
]
VoiceOption = Annotated[
    str | None,
    typer.Option("--voice", metavar="ID", help="Voice override: a voice id (session.voice_id)."),
]
FirstMessageOption = Annotated[
    str | None,
    typer.Option(
        "--first-message", metavar="TEXT", help="Opening line, verbatim (session.first_message)."
    ),
]
FirstMessagePromptOption = Annotated[
    str | None,
    typer.Option(
        "--first-message-prompt",
        metavar="TEXT",
        help="Instructions for the opening line (session.first_message_prompt).",
    ),
]
SystemPromptOption = Annotated[
    str | None,
    typer.Option(
        "--system-prompt", metavar="TEXT", help="Replace the system prompt (session.system_prompt)."
    ),
]
SessionNameOption = Annotated[
    str | None,
    typer.Option(
        "--session-name", metavar="NAME", help="Display name in the console (session.name)."
    ),
]
EndUserOption = Annotated[
    str | None,
    typer.Option(
        "--end-user-id", metavar="ID", help="Your id for the person talking (session.end_user_id)."
    ),
]
VarOption = Annotated[
    list[str] | None,
    typer.Option(
        "--var",
        metavar="KEY=VALUE",
        help="A prompt {{variable}}; repeat for more (session.dynamic_variables).",
    ),
]
MetadataOption = Annotated[
    str | None,
    typer.Option(
        "--metadata",
        metavar="JSON",
        help="A JSON object stored with the session (session.metadata).",
    ),
]
ServerRecordingOption = Annotated[
    bool | None,
    typer.Option(
        "--server-recording/--no-server-recording",
        help="Override whether Fish records the call's audio (session.record_audio); "
        "--record-audio records it here instead.",
        show_default=False,
    ),
]
WorldContextOption = Annotated[
    bool | None,
    typer.Option(
        "--world-context/--no-world-context",
        help="Tell the agent the date and time (session.world_context).",
        show_default=False,
    ),
]
ToolEventsOption = Annotated[
    bool | None,
    typer.Option(
        "--tool-events/--no-tool-events",
        help="Ask for tool.* events (session.tool_events).",
        show_default=False,
    ),
]


@dataclass
class SessionFlags:
    """The session-override flags of one command, as given (None: not given)."""

    language: str | None = None
    timezone: str | None = None
    voice: str | None = None
    first_message: str | None = None
    first_message_prompt: str | None = None
    system_prompt: str | None = None
    session_name: str | None = None
    end_user_id: str | None = None
    var: list[str] | None = None
    metadata: str | None = None
    record_audio: bool | None = None
    world_context: bool | None = None
    tool_events: bool | None = None

    def overrides(self) -> dict[str, Any]:
        """Dotted config overrides; a malformed --var or --metadata is a ConfigError."""
        from fishtalk.cli.config import ConfigError

        variables: dict[str, str] | None = None
        for item in self.var or ():
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"--var {item!r}: expected KEY=VALUE")
            variables = {**(variables or {}), key.strip(): value}
        metadata: Any = None
        if self.metadata is not None:
            try:
                metadata = json.loads(self.metadata)
            except ValueError as exc:
                raise ConfigError(f"--metadata: not valid JSON: {exc}") from None
            if not isinstance(metadata, dict):
                raise ConfigError("--metadata: must be a JSON object")
        return {
            "session.language": self.language,
            "session.timezone": self.timezone,
            "session.voice_id": self.voice,
            "session.first_message": self.first_message,
            "session.first_message_prompt": self.first_message_prompt,
            "session.system_prompt": self.system_prompt,
            "session.name": self.session_name,
            "session.end_user_id": self.end_user_id,
            "session.dynamic_variables": variables,
            "session.metadata": metadata,
            "session.record_audio": self.record_audio,
            "session.world_context": self.world_context,
            "session.tool_events": self.tool_events,
        }


# --- session ------------------------------------------------------------------------------


@session_app.command("create")
def session_create(
    name: ProfileArgument = None,
    agent: AgentOption = None,
    api_url: ApiUrlOption = None,
    public: PublicOption = None,
    origin: OriginOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the grant as JSON.")] = False,
    show_token: Annotated[
        bool, typer.Option("--show-token", help="Print the join token (it is a credential).")
    ] = False,
    language: LanguageOption = None,
    timezone: TimezoneOption = None,
    voice: VoiceOption = None,
    first_message: FirstMessageOption = None,
    first_message_prompt: FirstMessagePromptOption = None,
    system_prompt: SystemPromptOption = None,
    session_name: SessionNameOption = None,
    end_user_id: EndUserOption = None,
    var: VarOption = None,
    metadata: MetadataOption = None,
    server_recording: ServerRecordingOption = None,
    world_context: WorldContextOption = None,
    tool_events: ToolEventsOption = None,
) -> None:
    """Create a session and print its grant (the token is hidden unless --show-token).

    PROFILE names an agent profile from the config ([agents.NAME]; `fishtalk agents` lists
    them). --agent takes a profile name or an agent id.
    """
    flags = SessionFlags(
        language, timezone, voice, first_message, first_message_prompt, system_prompt,
        session_name, end_user_id, var, metadata, server_recording, world_context, tool_events,
    )  # fmt: skip
    profile, agent_id = resolve_agent(name, agent)
    settings = load(
        {
            "session.agent_id": agent_id,
            "api.url": api_url,
            "api.public": public,
            "api.origin": origin,
            **flags.overrides(),
        },
        profile=profile,
    )
    from fishtalk.cli.launch import session_client, session_request

    request = session_request(settings)

    async def create() -> "LiveKitGrant":
        async with session_client(settings) as client:
            return await client.create_session(request)

    grant = run_async(create())
    token = grant.token.get_secret_value() if show_token else None
    fields: dict[str, Any] = {
        "session_id": grant.session_id,
        "transport": grant.transport,
        "livekit_url": grant.livekit_url,
        "expires_at": grant.expires_at.isoformat(),
        "max_duration_seconds": grant.max_duration_seconds,
        "token": token if token is not None else "<hidden: use --show-token>",
    }
    if as_json:
        typer.echo(json.dumps(fields, indent=2))
    else:
        from fishtalk.core.text import strip

        width = max(len(k) for k in fields)
        for key, value in fields.items():
            typer.echo(f"{key:<{width}}  {strip(str(value))}")


@session_app.command("end")
def session_end(
    session_id: Annotated[str, typer.Argument(metavar="SESSION_ID", help="The session to end.")],
    api_url: ApiUrlOption = None,
    public: PublicOption = None,
    origin: OriginOption = None,
) -> None:
    """End a session by id."""
    settings = load({"api.url": api_url, "api.public": public, "api.origin": origin})
    from fishtalk.cli.launch import session_client

    async def end() -> None:
        async with session_client(settings) as client:
            await client.end_session(session_id)

    run_async(end())
    typer.echo(f"ended session {session_id}")


# --- config -------------------------------------------------------------------------------


def _target_config_path() -> Path:
    from fishtalk.engine import paths

    return _state.config_path if _state.config_path is not None else paths.config_file()


@config_app.command("path")
def config_path() -> None:
    """Print the config file's path (it may not exist yet)."""
    typer.echo(str(_target_config_path()))


@config_app.command("show")
def config_show() -> None:
    """Print the effective settings as TOML (the API key is never shown)."""
    import tomli_w

    from fishtalk.cli.config import redacted_dict

    settings = load()
    path = _target_config_path()
    state = "" if path.exists() else " (not found; defaults and environment only)"
    typer.echo(f"# effective settings; file: {path}{state}")
    typer.echo(tomli_w.dumps(redacted_dict(settings)).rstrip())


@config_app.command("init")
def config_init(
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write the documented example config to the config path (mode 0600)."""
    from fishtalk.cli.config import ConfigError

    path = _target_config_path()
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists (use --force to overwrite it)")
    text = example_config_text()
    path.parent.mkdir(parents=True, exist_ok=True)
    # Create with 0600 from the start: the file may come to hold an API key.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)
    typer.echo(f"wrote {path}")


def example_config_text() -> str:
    """The documented example config shipped inside the package."""
    from importlib.resources import files

    return files("fishtalk").joinpath("data", "config.example.toml").read_text(encoding="utf-8")


# --- tools --------------------------------------------------------------------------------

tools_app = typer.Typer(help="List and try the client tools this machine offers the agent.")
app.add_typer(tools_app, name="tools")


@tools_app.command("list")
def tools_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Show every declared, built-in and plugin tool with its source and validity.

    Exits with 2 when a tool is misconfigured (a session would refuse to start).
    """
    from dataclasses import asdict

    from fishtalk.core.text import strip
    from fishtalk.engine.tools.build import describe_tools

    infos = describe_tools(load())
    if as_json:
        typer.echo(json.dumps([asdict(i) for i in infos], indent=2))
    elif not infos:
        typer.echo("no client tools enabled: declare them as [tools.NAME] in the config")
    for info in [] if as_json else infos:
        status = "ok" if info.problem is None else ("ERROR" if info.fatal else "warning")
        timeout = f"{info.timeout:g}s" if info.timeout is not None else "default"
        typer.echo(
            f"{info.name}  [{info.source}]  approve={info.approve}  timeout={timeout}  {status}"
        )
        for text in (info.description, info.detail, info.problem):
            if text:
                typer.echo(f"    {strip(text)}")
    if any(i.fatal for i in infos):
        raise typer.Exit(EXIT_USAGE)


@tools_app.command("run")
def tools_run(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The tool to run.")],
    params: Annotated[
        str,
        typer.Option("--params", "-p", metavar="JSON", help="The call's params as a JSON object."),
    ] = "{}",
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            "-y",
            help='Approve the call in advance (tools with approve = "ask"; "never" still '
            "refuses). Without it only an answer typed at a terminal approves: piped input "
            "never does.",
        ),
    ] = False,
) -> None:
    """Run one tool locally exactly as a call from the agent would (same limits, same
    approval, asked on this terminal). Prints the result as JSON.

    Exit codes: 0 the tool ran and returned a result; 1 the tool failed, timed out or was
    declined; 2 bad usage (unknown tool, bad --params, bad config).
    """
    try:
        parsed = json.loads(params)
    except ValueError as exc:
        raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--params") from None
    if not isinstance(parsed, dict):
        raise typer.BadParameter("must be a JSON object", param_hint="--params")
    settings = load()

    import secrets

    from fishtalk.core.protocol import ClientToolCall
    from fishtalk.core.text import json_escape, strip
    from fishtalk.engine.tools.approval import choose_approver, terminal_approver
    from fishtalk.engine.tools.build import build_runner
    from fishtalk.engine.tools.registry import unknown_tool_message

    approver = choose_approver(
        terminal_approver(), answers_from=sys.stdin, question_to=sys.stderr, assume_yes=yes
    )
    runner = build_runner(settings, approver=approver)
    if name not in runner.registry:
        typer.echo(
            f"fishtalk: {strip(unknown_tool_message(name, runner.registry.names()))}", err=True
        )
        raise typer.Exit(EXIT_USAGE)
    call = ClientToolCall(
        call_id=f"local-{secrets.token_hex(4)}",
        tool_name=name,
        params=parsed,
        expects_response=True,
    )
    outcome = run_async(runner.run(call))
    if outcome.ok:
        typer.echo(json_escape(json.dumps(outcome.result, indent=2, ensure_ascii=False)))
        return
    detail = outcome.error or ""
    if outcome.status == "declined" and approver is None:
        detail = (
            "nobody at a terminal to approve it (piped input never approves; "
            "pass --yes to approve it in advance)"
        )
    typer.echo(f"fishtalk: tool {name!r} {outcome.status}: {strip(detail)}", err=True)
    raise typer.Exit(EXIT_ERROR)


# --- more commands ------------------------------------------------------------------------
# Other helpers add one command each below (chat, demo, sim serve, devices, tools list|run).
# Rules: one small function per command; import heavy modules (textual, livekit, numpy,
# sounddevice, fishtalk.engine.session, fishtalk.tui, fishtalk.sim) INSIDE the function body so
# `fishtalk --help` stays instant; get settings with `load({...dotted overrides...})`; raise
# a FishtalkError subclass for user errors (main() prints it as one line); use a sub-typer
# (like session_app) for grouped commands, e.g. `sim_app = typer.Typer(); app.add_typer(...)`.
#
# >>> commands added by other helpers start here


InputDeviceOption = Annotated[
    str | None,
    typer.Option(
        "--input-device",
        metavar="DEV",
        help="Microphone: an index or part of a name from `fishtalk devices` "
        "(audio.input_device). A name that matches nothing stops with the choices (exit 2).",
        autocompletion=complete_input_devices,
    ),
]
OutputDeviceOption = Annotated[
    str | None,
    typer.Option(
        "--output-device",
        metavar="DEV",
        help="Speaker: an index or part of a name from `fishtalk devices` (audio.output_device).",
        autocompletion=complete_output_devices,
    ),
]
TalkModeOption = Annotated[
    Literal["always", "toggle", "push"] | None,
    typer.Option(
        "--talk-mode",
        help="When the microphone is open (audio.talk_mode): always (open mic, echo-"
        "cancelled), toggle (F5 opens and closes it; /talk in line mode) or push (hold F5; "
        "toggle where the terminal cannot report key releases).",
    ),
]
NoAudioOption = Annotated[
    bool,
    typer.Option(
        "--no-audio",
        help="No microphone or speaker (audio.enabled = false); replies still show as text.",
    ),
]


NoJournalOption = Annotated[
    bool,
    typer.Option(
        "--no-journal",
        help="Write no journal for this session (by default every session leaves one in the "
        "state directory; see `fishtalk sessions`).",
    ),
]
JournalOption = Annotated[
    Path | None,
    typer.Option(
        "--journal",
        metavar="PATH",
        dir_okay=False,
        help="Write this session's journal to PATH (JSON Lines, mode 0600) instead.",
    ),
]
EventsOption = Annotated[
    bool,
    typer.Option(
        "--events",
        help="Line mode: print every journal record to stdout as JSON Lines (for jq); the "
        "conversation's lines go to stderr.",
    ),
]


RecordAudioOption = Annotated[
    bool,
    typer.Option(
        "--record-audio",
        help="Also record the call as one stereo WAV file (microphone left, agent right) "
        "beside the journal, on the journal's clock.",
    ),
]


def _journal_choice(
    no_journal: bool, journal: Path | None, events: bool, record_audio: bool
) -> Any:
    from fishtalk.cli.launch import JournalChoice

    return JournalChoice(
        enabled=not no_journal,
        path=journal,
        events=sys.stdout if events else None,
        record_audio=record_audio,
    )


def _audio_overrides(
    input_device: str | None,
    output_device: str | None,
    no_audio: bool,
    talk_mode: str | None = None,
) -> dict[str, Any]:
    """Dotted config overrides for the audio flags (unset flags leave the config alone)."""
    return {
        "audio.input_device": input_device,
        "audio.output_device": output_device,
        "audio.enabled": False if no_audio else None,
        "audio.talk_mode": talk_mode,
    }


@app.command(
    "demo",
    short_help="Talk to a simulated agent on this machine (no account needed).",
    help=(
        "Talk to a simulated agent running on this machine (no account needed).\n\n"
        "The built-in demo is a one-minute tour of what a Fish agent can send a client "
        "(speech and transcripts, tool calls, client tools, states, errors, a dropped "
        "connection), then free conversation. Type at any time; F1 lists the keys, Ctrl+X "
        "hangs up."
    ),
)
def demo(
    scenario: Annotated[
        str,
        typer.Option(
            "--scenario",
            metavar="NAME|FILE",
            help="What the simulated agent plays: built-in demo, converse, tools, or a TOML file.",
            autocompletion=complete_scenarios,
        ),
    ] = "demo",
    input_device: InputDeviceOption = None,
    output_device: OutputDeviceOption = None,
    no_audio: NoAudioOption = False,
    talk_mode: TalkModeOption = None,
    no_journal: NoJournalOption = False,
    journal: JournalOption = None,
    events: EventsOption = False,
    record_audio: RecordAudioOption = False,
    latency: LatencyOption = False,
    metrics_json: MetricsJsonOption = None,
) -> None:
    """Talk to a simulated agent running on this machine (no account needed)."""
    from fishtalk.engine.audio.preflight import check_named_devices

    audio = _audio_overrides(input_device, output_device, no_audio, talk_mode)
    check_named_devices(load(audio))  # a device that matches nothing: exit 2 before the sim

    def load_with_audio(overrides: dict[str, Any]) -> "Settings":
        return load({**overrides, **audio})

    from fishtalk.cli.launch import run_demo
    from fishtalk.engine.native import exit_process

    # Leave without finalization, as chat does: the SDK's native threads outlive the call.
    choice = _journal_choice(no_journal, journal, events, record_audio)
    metrics = _metrics_file(metrics_json)
    code = run_demo(
        load_with_audio, scenario=scenario, journal=choice, metrics=metrics, latency=latency
    )
    exit_process(code)


@app.command(
    "test",
    short_help="Run agent tests written in TOML (against an agent, or --sim offline).",
    help=(
        "Run conversations written in TOML against an agent and check what it says and "
        "which tools it calls (see the README, 'Testing your agent').\n\n"
        "--sim runs them against the built-in simulated agent, offline (--scenario picks "
        "what it plays). --init PATH writes a commented starter file."
    ),
    epilog=(
        "Exit codes: 0 all passed; 1 any failed; 2 a bad test file or flags; 3-6 the session "
        "API refused or failed (as for chat); 7 no usable network for --sim; 130 interrupted "
        "(the reports still hold what finished)."
    ),
)
def run_agent_tests(
    files: Annotated[
        list[Path] | None, typer.Argument(metavar="FILE...", help="Test files (TOML).")
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", metavar="ID", help="The agent id (wins over the files')."),
    ] = None,
    sim: Annotated[
        bool,
        typer.Option("--sim", help="Run against the built-in simulated agent, offline."),
    ] = False,
    scenario: Annotated[
        str | None,
        typer.Option(
            "--scenario",
            metavar="NAME|FILE",
            help="With --sim: what the simulated agent plays (built-in converse, demo, tools, "
            "or a scenario file; default: the built-in named like the agent id, else converse).",
            autocompletion=complete_scenarios,
        ),
    ] = None,
    init: Annotated[
        Path | None,
        typer.Option("--init", metavar="PATH", help="Write a commented starter file and exit."),
    ] = None,
    repeat: Annotated[
        int, typer.Option("--repeat", min=1, help="Run each file N times (a pass rate).")
    ] = 1,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Sessions at once (bounded).")
    ] = 1,
    max_sessions: Annotated[
        int,
        typer.Option("--max-sessions", min=1, help="Refuse a run that would open more sessions."),
    ] = 100,
    junit: Annotated[
        Path | None, typer.Option("--junit", metavar="PATH", help="Write a JUnit XML report.")
    ] = None,
    json_report: Annotated[
        Path | None, typer.Option("--json", metavar="PATH", help="Write a JSON report.")
    ] = None,
    html_report: Annotated[
        Path | None, typer.Option("--html", metavar="PATH", help="Write an HTML report page.")
    ] = None,
    no_journal: Annotated[
        bool,
        typer.Option(
            "--no-journal",
            help="Write no session journals (by default each session has one, and a failure "
            "report names it).",
        ),
    ] = False,
    api_url: ApiUrlOption = None,
    public: PublicOption = None,
    origin: OriginOption = None,
) -> None:
    """Run agent tests written in TOML."""
    from fishtalk.workbench.agenttest.command import TestCommand, run_command
    from fishtalk.workbench.agenttest.runner import RunOptions, Target

    if init is not None:
        from fishtalk.workbench.agenttest.spec import STARTER

        if init.exists():
            _fail(f"{init} exists; not overwriting it", EXIT_USAGE)
        init.write_text(STARTER, "utf-8")
        typer.echo(f"wrote {init}; run it with: fishtalk test {init} --sim")
        return
    paths = list(files or [])
    if not paths:
        _fail("no test files given (fishtalk test FILE... ; --init PATH writes one)", EXIT_USAGE)
    options = RunOptions(repeat=repeat, concurrency=concurrency, max_sessions=max_sessions)
    if scenario is not None and not sim:
        _fail("--scenario needs --sim", EXIT_USAGE)
    if sim:
        from fishtalk.cli.launch import has_webrtc_network
        from fishtalk.core.errors import EXIT_CONNECTION

        if not has_webrtc_network():
            _fail(
                "fishtalk test --sim needs a network interface other than loopback: WebRTC "
                "ignores 127.0.0.1 and this host has no other IPv4 address (inside a sandbox, "
                f"run it through `{sys.executable} -m fishtalk.sim.netns -- {sys.executable} "
                "-m fishtalk test ...`)",
                EXIT_CONNECTION,
            )
        target = Target(agent, config_path=_state.config_path, journal=not no_journal)
    else:
        settings = load({"api.url": api_url, "api.public": public, "api.origin": origin})
        key = settings.api.api_key
        target = Target(
            agent,
            api_url=settings.api.url,
            api_key=key.get_secret_value() if key is not None else None,
            public=settings.api.public,
            origin=settings.api.origin,
            fallback_agent=settings.session.agent_id,
            config_path=_state.config_path,
            journal=not no_journal,
        )
    command = TestCommand(
        paths, target, sim=sim, scenario=scenario, options=options,
        junit=junit, json_path=json_report, html=html_report,
    )  # fmt: skip
    from fishtalk.core.text import strip
    from fishtalk.engine.native import exit_process

    console = None
    if sys.stdout.isatty():
        from rich.console import Console

        console = Console(highlight=False)
    code = run_command(command, lambda line: typer.echo(strip(line)), console=console)
    sys.stdout.flush()
    exit_process(code)


@app.command(
    "chat",
    short_help="Talk to an agent (TUI on a terminal, line mode otherwise).",
    help=(
        "Talk to an agent: the full-screen TUI on a terminal, line mode otherwise.\n\n"
        "In the TUI, F1 lists the keys (Ctrl+X hangs up; Ctrl+C hangs up and exits with "
        "130). In line mode (--plain, or when piped) each input line is a typed turn; /help "
        "lists the commands (/interrupt, /hangup, /mute, /unmute, /talk, /spoken on|off); end of "
        "input hangs up once the agent has answered.\n\n" + PROFILE_HELP
    ),
    epilog=(
        "Exit codes: 0 the call ended normally (you or the agent hung up, the conversation "
        "timed out, or it was escalated); 2 bad flags or config; 3 refused (401/402/403); "
        "4 agent not found or not published; 5 API unavailable or unreachable; 6 request "
        "rejected, unsupported transport or session expired; 7 connection lost or could not "
        "be established; 130 interrupted (Ctrl-C)."
    ),
)
def chat(
    name: ProfileArgument = None,
    agent: AgentOption = None,
    api_url: ApiUrlOption = None,
    public: PublicOption = None,
    origin: OriginOption = None,
    text_only: Annotated[
        bool,
        typer.Option(
            "--text-only",
            help="Like --no-audio, and typed turns ask for text replies (session.text_only).",
        ),
    ] = False,
    input_device: InputDeviceOption = None,
    output_device: OutputDeviceOption = None,
    no_audio: NoAudioOption = False,
    talk_mode: TalkModeOption = None,
    plain: Annotated[
        bool,
        typer.Option("--plain", help="Line-oriented output (automatic when stdout is no TTY)."),
    ] = False,
    language: LanguageOption = None,
    timezone: TimezoneOption = None,
    voice: VoiceOption = None,
    first_message: FirstMessageOption = None,
    first_message_prompt: FirstMessagePromptOption = None,
    system_prompt: SystemPromptOption = None,
    session_name: SessionNameOption = None,
    end_user_id: EndUserOption = None,
    var: VarOption = None,
    metadata: MetadataOption = None,
    server_recording: ServerRecordingOption = None,
    world_context: WorldContextOption = None,
    tool_events: ToolEventsOption = None,
    no_journal: NoJournalOption = False,
    journal: JournalOption = None,
    events: EventsOption = False,
    record_audio: RecordAudioOption = False,
    latency: LatencyOption = False,
    metrics_json: MetricsJsonOption = None,
) -> None:
    """Talk to an agent: the full-screen TUI on a terminal, line mode otherwise."""
    flags = SessionFlags(
        language, timezone, voice, first_message, first_message_prompt, system_prompt,
        session_name, end_user_id, var, metadata, server_recording, world_context, tool_events,
    )  # fmt: skip
    profile, agent_id = resolve_agent(name, agent)
    settings = load(
        {
            **flags.overrides(),
            "session.agent_id": agent_id,
            "api.url": api_url,
            "api.public": public,
            "api.origin": origin,
            "session.text_only": True if text_only else None,
            "ui.plain": True if plain else None,
            **_audio_overrides(input_device, output_device, no_audio, talk_mode),
        },
        profile=profile,
    )
    from fishtalk.cli.launch import require_agent, run_chat, session_client

    require_agent(settings)
    run_async(session_client(settings).aclose())  # same key / public-origin checks as above
    from fishtalk.engine.audio.preflight import check_named_devices

    check_named_devices(settings)  # a device that matches nothing: exit 2 before connecting
    from fishtalk.engine.native import exit_process

    # Both front ends leave without finalization (see exit_process).
    choice = _journal_choice(no_journal, journal, events, record_audio)
    metrics = _metrics_file(metrics_json)
    code = run_chat(settings, debug=_state.debug, journal=choice, metrics=metrics, latency=latency)
    exit_process(code)


sim_app = typer.Typer(help="The offline stand-in for Fish: LiveKit server + simulated agent.")
app.add_typer(sim_app, name="sim")


@sim_app.command(
    "serve",
    help=(
        "Run the simulator in the foreground; prints the API URL and key. Ctrl-C stops it.\n\n"
        "WebRTC needs a non-loopback network interface; any normal machine has one."
    ),
    # The command list would stop at the first full stop.
    short_help="Run the simulator in the foreground; prints the API URL and key. Ctrl-C stops it.",
)
def sim_serve(
    host: Annotated[
        str, typer.Option("--host", metavar="HOST", help="Address to listen on.")
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port", metavar="PORT", min=0, max=65535, help="Port, 0-65535 (0 picks a free one)."
        ),
    ] = 7880,
    scenario: Annotated[
        str | None,
        typer.Option(
            "--scenario",
            metavar="NAME|FILE",
            help="Scenario TOML file, or built-in demo, converse, tools.",
            autocompletion=complete_scenarios,
        ),
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            metavar="ORIGIN",
            help="Also accept keyless (public) session requests from this origin, e.g. a "
            "web app's dev server http://localhost:5173 (repeatable).",
        ),
    ] = None,
    agent_setting: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-setting",
            metavar="KEY=VALUE",
            help="Replace an [agent] setting of every scenario played, e.g. "
            "think_seconds=0.8 or first_audio_delay_seconds=0.2 (repeatable).",
        ),
    ] = None,
) -> None:
    """Run the simulator in the foreground; prints the API URL and key. Ctrl-C stops it."""
    from fishtalk.sim.cli import serve

    raise typer.Exit(
        serve(
            host=host,
            port=port,
            scenario=scenario,
            allowed_origins=allow_origin or (),
            agent_settings=agent_setting or (),
        )
    )


@app.command("devices", short_help="List audio input and output devices.")
def devices() -> None:
    """List audio devices: index, name, host API, channels, default rate (< > mark defaults)."""
    from fishtalk.engine.audio.cli import print_devices

    raise typer.Exit(print_devices())


@app.command("agents", short_help="List the agent profiles in the config.")
def agents(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List the agent profiles ([agents.NAME] in the config): `fishtalk chat NAME` uses one."""
    from fishtalk.core.text import strip

    profiles = load().agents
    if as_json:
        typer.echo(
            json.dumps(
                {
                    name: p.model_dump(mode="json", exclude_none=True, exclude_unset=True)
                    for name, p in sorted(profiles.items())
                },
                indent=2,
            )
        )
        return
    if not profiles:
        typer.echo(
            "no agent profiles: declare them as [agents.NAME] with an agent_id in "
            f"{_target_config_path()}"
        )
        return
    width = max(len(name) for name in profiles)
    for name, p in sorted(profiles.items()):
        details = [f"agent {p.agent_id}"]
        if p.public:
            details.append(f"public, origin {p.origin}" if p.origin else "public")
        if p.talk_mode:
            details.append(f"talk {p.talk_mode}")
        if p.tools is not None:
            details.append(f"tools: {', '.join(p.tools) or 'none'}")
        overrides = sorted(p.session.model_dump(exclude_unset=True))
        if overrides:
            details.append(f"sets {', '.join('session.' + k for k in overrides)}")
        typer.echo(strip(f"{name:<{width}}  {' · '.join(details)}"))
        if p.description:
            typer.echo(strip(f"{'':<{width}}  {p.description}"))


@app.command("doctor", short_help="Check config, API key, audio, network and terminal.")
def doctor(
    name: ProfileArgument = None,
    online: Annotated[
        bool,
        typer.Option(
            "--online",
            help="Also check the API key against the service (creates a session and ends it).",
        ),
    ] = False,
    mic_seconds: Annotated[
        float,
        typer.Option(
            "--mic-seconds", metavar="SECONDS", min=0, max=30, help="Microphone level check length."
        ),
    ] = 2.0,
) -> None:
    """Check everything fishtalk needs, one line each: ok, warn or fail, with the fix.

    Exits 0 when nothing fails (warnings allowed), 1 otherwise. With PROFILE (an
    [agents.NAME] profile) the key, agent and --online checks use that profile.
    """
    from fishtalk.cli.doctor import Status, run_checks
    from fishtalk.core.text import strip

    if online:
        typer.echo("--online: creating a session with your key and ending it at once")
    failed = False
    checks = run_checks(
        config_path=_state.config_path, online=online, mic_seconds=mic_seconds, profile=name
    )
    for check in checks:
        failed = failed or check.status is Status.FAIL
        typer.echo(strip(f"{check.status.value:<4}  {check.name}: {check.detail}"))
        if check.fix and check.status is not Status.OK:
            typer.echo(strip(f"      fix: {check.fix}"))
    if failed:
        raise typer.Exit(EXIT_ERROR)


# --- journals -----------------------------------------------------------------------------


def _journal_dir() -> Path:
    from fishtalk.engine import paths

    return paths.journal_dir()


def _damaged(message: str | None) -> None:
    """A damaged journal was used up to the damage: say so on one line, exit 2."""
    if message:
        from fishtalk.core.text import strip

        sys.stdout.flush()
        typer.echo(f"fishtalk: {strip(message)}", err=True)
        raise typer.Exit(EXIT_USAGE)


@app.command("sessions", short_help="List past sessions (their journals), newest first.")
def sessions(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON Lines.")] = False,
    limit: Annotated[
        int, typer.Option("--limit", "-n", metavar="N", min=1, help="Show at most N.")
    ] = 20,
) -> None:
    """List past sessions from their journals, newest first: id, when, agent, duration,
    turns, tools, errors and how each ended. Pass an id to `fishtalk export`."""
    from fishtalk.workbench.journal.compare import format_sessions, list_sessions

    directory = _journal_dir()
    rows = list_sessions(directory)[:limit]
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row.to_dict(), ensure_ascii=False))
        return
    if not rows:
        typer.echo(f"no sessions yet (journals are kept in {directory})")
        return
    typer.echo(format_sessions(rows), nl=False)


@app.command("export", short_help="Print a past session as md, txt, json, srt, vtt or html.")
def export(
    ref: Annotated[
        str,
        typer.Argument(
            metavar="ID|FILE", help="A journal id from `fishtalk sessions`, a session id or a file."
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            metavar="md|txt|json|srt|vtt|html",
            help="Markdown, plain text, JSON (with tool calls and per-turn timings), "
            "SRT/WebVTT subtitles on the session clock, or a self-contained HTML page.",
        ),
    ] = "md",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write to FILE.")
    ] = None,
) -> None:
    """Print a past session's transcript with speaker labels and times.

    A damaged journal is exported up to the damage, then one line says so (exit 2).
    """
    from fishtalk.engine.journal.reader import find_journal, read_journal, summarise
    from fishtalk.workbench.journal.export import FORMATS, render

    if fmt not in (*FORMATS, "html"):
        raise typer.BadParameter(
            f"must be one of {', '.join(FORMATS)}, html", param_hint="--format"
        )
    journal = read_journal(find_journal(ref, _journal_dir()))
    if fmt == "html":
        from fishtalk.workbench.reports.session import session_page

        text = session_page(journal)
    else:
        text = render(summarise(journal), fmt)  # type: ignore[arg-type]
    if output is not None:
        output.write_text(text, "utf-8")
    else:
        typer.echo(text, nl=False)
    _damaged(journal.damage)


@app.command("diff", short_help="Line up two sessions turn by turn and show what differs.")
def diff(
    a: Annotated[str, typer.Argument(metavar="A", help="Journal id, session id or file.")],
    b: Annotated[str, typer.Argument(metavar="B", help="Journal id, session id or file.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare two sessions turn by turn: transcript text, tools called (name and params)
    and per-turn timings (answer latency, turn length; 0.5 s tolerance).

    Exit codes: 0 the same, 1 different, 2 a journal is missing or damaged.
    """
    from fishtalk.core.text import json_escape
    from fishtalk.engine.journal.reader import find_journal, read_journal, summarise
    from fishtalk.workbench.journal.compare import diff as compare
    from fishtalk.workbench.journal.compare import format_diff

    directory = _journal_dir()
    first = read_journal(find_journal(a, directory))
    second = read_journal(find_journal(b, directory))
    result = compare(summarise(first), summarise(second))
    if as_json:
        typer.echo(json_escape(json.dumps(result, ensure_ascii=False, indent=2)))
    else:
        typer.echo(format_diff(result), nl=False)
    _damaged(first.damage or second.damage)
    if not result["same"]:
        raise typer.Exit(EXIT_ERROR)


@app.command("replay", short_help="Play a past session back in line mode, with its timing.")
def replay(
    ref: Annotated[str, typer.Argument(metavar="ID|FILE", help="Journal id, session id or file.")],
    speed: Annotated[
        float,
        typer.Option(
            "--speed",
            metavar="N",
            min=0,
            help="Play N times as fast (0: print everything at once).",
        ),
    ] = 1.0,
    plain: Annotated[
        bool,
        typer.Option("--plain", help="Line mode even on a terminal (automatic when piped)."),
    ] = False,
) -> None:
    """Play a past session back with its original timing, read-only: no network, no audio.
    The TUI on a terminal (Space pauses, n jumps to the next turn, Left/Right seek 10 s,
    -/+ change the speed, Ctrl+X stops), line mode otherwise. A damaged journal plays up
    to the damage, then one line (exit 2)."""
    from fishtalk.cli.launch import wants_tui
    from fishtalk.core.text import strip
    from fishtalk.engine.journal.reader import find_journal, read_journal
    from fishtalk.plain.replay import play_plain

    journal = read_journal(find_journal(ref, _journal_dir()))
    if wants_tui(plain):
        from fishtalk.tui.replay import ReplayApp
        from fishtalk.tui.run import run_app
        from fishtalk.workbench.journal.replay_session import ReplaySession

        run_app(
            ReplaySession(journal, speed=speed),
            title=f"replay {journal.journal_id}",
            app_type=ReplayApp,
        )
        _damaged(journal.damage)
        return
    state = play_plain(journal, sys.stdout, speed=speed)
    ends = [r for r in journal.records if r.get("type") == "end"]
    if ends:
        typer.echo(f"* {strip(str(ends[-1].get('message') or ends[-1].get('reason')))}")
    elif not state.ended:
        typer.echo("* (the journal ends here: the session did not finish)")
    _damaged(journal.damage)


# <<< commands added by other helpers end here


def _fail(message: str, code: int) -> NoReturn:
    from fishtalk.core.text import strip

    sys.stderr.write(f"fishtalk: {strip(message)}\n")
    sys.stderr.flush()
    raise SystemExit(code)


DEBUG_ENV = "FISHTALK_DEBUG"
"""Set (to anything but empty or 0) for the same effect as ``--debug``."""


def _take_debug(args: list[str]) -> tuple[list[str], bool]:
    """``args`` without ``--debug`` (accepted before or after the command, up to ``--``)."""
    end = args.index("--") if "--" in args else len(args)
    kept = [a for a in args[:end] if a != "--debug"] + args[end:]
    return kept, len(kept) != len(args)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI, mapping errors to one line and an exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    # --debug is global: `fishtalk --debug chat` and `fishtalk chat --debug` alike. It is
    # taken out here so every command accepts it, and known even when parsing fails.
    args, flagged = _take_debug(args)
    _state.debug = flagged or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    if not args:
        args = ["--help"]  # bare `fishtalk`: the help, exit 0 (click's no_args_is_help exits 2)
    command = typer.main.get_command(app)
    from fishtalk.engine.native import quiet_livekit_handle_drops

    quiet_livekit_handle_drops()
    try:
        # Standalone mode: typer itself reports usage errors (exit 2), --help, Exit and
        # Ctrl-C (exit 130) and always ends in SystemExit; only our own errors get here.
        command.main(args=args, prog_name="fishtalk", standalone_mode=True)
    except FishtalkError as exc:
        if _state.debug:
            traceback.print_exc()
        _fail(str(exc), exc.exit_code)
    except Exception as exc:
        if _state.debug:
            traceback.print_exc()
        hint = "" if _state.debug else " (run with --debug for details)"
        _fail(f"unexpected error: {type(exc).__name__}: {exc}{hint}", EXIT_ERROR)
    raise SystemExit(EXIT_OK)
