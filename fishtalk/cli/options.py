"""The options several commands share: connection, session overrides, audio and journal."""

import functools
import inspect
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final

import typer

from fishtalk.cli.completion import (
    complete_input_devices,
    complete_output_devices,
    complete_profiles,
)
from fishtalk.cli.exits import EXIT_USAGE
from fishtalk.cli.shared import fail, load, resolve_agent

if TYPE_CHECKING:
    from fishtalk.cli.settings import Settings
    from fishtalk.engine.metrics import MetricsFile


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


# Session overrides: what the session API accepts and the config can set ([session]).
def _text_option(flag: str, metavar: str, help: str) -> Any:
    return Annotated[str | None, typer.Option(flag, metavar=metavar, help=help)]


def _switch_option(flag: str, help: str) -> Any:
    return Annotated[
        bool | None, typer.Option(f"{flag}/--no-{flag[2:]}", help=help, show_default=False)
    ]


_SESSION_OPTIONS: Final[dict[str, Any]] = {
    "language": _text_option(
        "--language", "LANG", "Language override, e.g. en (session.language)."
    ),
    "timezone": _text_option(
        "--timezone", "TZ", "IANA time zone, e.g. Europe/Berlin (session.timezone)."
    ),
    "voice": _text_option("--voice", "ID", "Voice override: a voice id (session.voice_id)."),
    "first_message": _text_option(
        "--first-message", "TEXT", "Opening line, verbatim (session.first_message)."
    ),
    "first_message_prompt": _text_option(
        "--first-message-prompt",
        "TEXT",
        "Instructions for the opening line (session.first_message_prompt).",
    ),
    "system_prompt": _text_option(
        "--system-prompt", "TEXT", "Replace the system prompt (session.system_prompt)."
    ),
    "session_name": _text_option(
        "--session-name", "NAME", "Display name in the console (session.name)."
    ),
    "end_user_id": _text_option(
        "--end-user-id", "ID", "Your id for the person talking (session.end_user_id)."
    ),
    "var": Annotated[
        list[str] | None,
        typer.Option(
            "--var",
            metavar="KEY=VALUE",
            help="A prompt {{variable}}; repeat for more (session.dynamic_variables).",
        ),
    ],
    "metadata": _text_option(
        "--metadata", "JSON", "A JSON object stored with the session (session.metadata)."
    ),
    "server_recording": _switch_option(
        "--server-recording",
        "Override whether Fish records the call's audio (session.record_audio); "
        "--record-audio records it here instead.",
    ),
    "world_context": _switch_option(
        "--world-context", "Tell the agent the date and time (session.world_context)."
    ),
    "tool_events": _switch_option("--tool-events", "Ask for tool.* events (session.tool_events)."),
}
"""The session-override options, by parameter name (the :class:`SessionFlags` field):
declared once, for every command that takes them (see :func:`with_session_flags`)."""


@dataclass(frozen=True)
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
    server_recording: bool | None = None
    world_context: bool | None = None
    tool_events: bool | None = None

    def overrides(self) -> dict[str, Any]:
        """Dotted config overrides; a malformed --var or --metadata is a ConfigError."""
        from fishtalk.core.errors import ConfigError

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
            "session.record_audio": self.server_recording,
            "session.world_context": self.world_context,
            "session.tool_events": self.tool_events,
        }


NO_SESSION_FLAGS: Final = SessionFlags()
"""A ``flags`` parameter's default (:func:`with_session_flags` always passes the flags)."""


_AGENT_OPTIONS: Final[dict[str, Any]] = {
    "name": ProfileArgument,
    "agent": AgentOption,
    "api_url": ApiUrlOption,
    "public": PublicOption,
    "origin": OriginOption,
}
"""The options that name one agent and how to reach it, by :class:`AgentTarget` field."""


@dataclass(frozen=True)
class AgentTarget:
    """The agent a command talks to, as given: PROFILE, ``--agent`` and the connection."""

    name: str | None = None
    agent: str | None = None
    api_url: str | None = None
    public: bool | None = None
    origin: str | None = None

    def load(self, overrides: dict[str, Any]) -> "Settings":
        """The settings for this agent (:func:`resolve_agent`) with ``overrides`` on top."""
        profile, agent_id = resolve_agent(self.name, self.agent)
        return load(
            {
                **overrides,
                "session.agent_id": agent_id,
                "api.url": self.api_url,
                "api.public": self.public,
                "api.origin": self.origin,
            },
            profile=profile,
        )


NO_AGENT_TARGET: Final = AgentTarget()
"""A ``target`` parameter's default (:func:`with_agent_target` always passes one)."""


def spelled_out_as(
    name: str, options: dict[str, Any], group: type[Any]
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A decorator: the command's parameter ``name`` spelled out as ``options`` (with the
    defaults of the ``group`` dataclass's fields), in its place; the command gets them back
    as one ``group(**options)``."""
    defaults = {f.name: f.default for f in fields(group)}

    def spell_out(command: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(command)
        params: list[inspect.Parameter] = []
        for param in signature.parameters.values():
            if param.name != name:
                params.append(param)
                continue
            params += [
                inspect.Parameter(
                    option, param.POSITIONAL_OR_KEYWORD, default=defaults[option], annotation=kind
                )
                for option, kind in options.items()
            ]

        @functools.wraps(command)
        def spelled_out(**given: Any) -> None:
            grouped = group(**{option: given.pop(option) for option in options})
            command(**given, **{name: grouped})

        # typer reads the parameters from the signature and their types from the annotations.
        spelled_out.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]  # a function has no declared __signature__; inspect reads it
        spelled_out.__annotations__ = {p.name: p.annotation for p in params}
        return spelled_out

    return spell_out


with_session_flags: Final = spelled_out_as("flags", _SESSION_OPTIONS, SessionFlags)
"""Spells out a command's ``flags: SessionFlags`` parameter as the session-override options."""

with_agent_target: Final = spelled_out_as("target", _AGENT_OPTIONS, AgentTarget)
"""Spells out a command's ``target: AgentTarget`` parameter as PROFILE, ``--agent``,
``--api-url``, ``--public`` and ``--origin``."""


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
TALK_MODES: Final = ("always", "toggle", "push")


def _talk_mode(value: str | None) -> str | None:
    """Check ``--talk-mode`` here: typer's own check of a Literal leaks pydantic's
    "Value error," prefix into the message."""
    if value is not None and value not in TALK_MODES:
        choices = ", ".join(repr(mode) for mode in TALK_MODES)
        raise typer.BadParameter(f"{value!r} is not one of {choices}.")
    return value


TalkModeOption = Annotated[
    str | None,
    typer.Option(
        "--talk-mode",
        metavar="<always|toggle|push>",
        callback=_talk_mode,
        help="When the microphone is open (audio.talk_mode): always (open mic, echo-"
        "cancelled), toggle (F5 opens and closes it; /talk in line mode) or push (hold F5; "
        "toggle where the terminal cannot report key releases).",
    ),
]
TextOnlyOption = Annotated[
    bool,
    typer.Option(
        "--text-only",
        help="Like --no-audio, and typed turns ask for text replies (session.text_only).",
    ),
]
PlainOption = Annotated[
    bool,
    typer.Option("--plain", help="Line mode even on a terminal (automatic when piped)."),
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


@dataclass(frozen=True)
class CallRecords:
    """What a call leaves behind, as given: its journal (``--no-journal``, ``--journal``,
    ``--events``, ``--record-audio``), ``--latency`` lines and ``--metrics-json``."""

    no_journal: bool = False
    journal: Path | None = None
    events: bool = False
    record_audio: bool = False
    latency: bool = False
    metrics_json: Path | None = None

    def journal_choice(self) -> Any:
        """The journal to write (a :class:`~fishtalk.cli.launch.JournalChoice`)."""
        from fishtalk.cli.launch import JournalChoice

        return JournalChoice(
            enabled=not self.no_journal,
            path=self.journal,
            events=sys.stdout if self.events else None,
            record_audio=self.record_audio,
        )

    def metrics_file(self) -> "MetricsFile | None":
        """Open the ``--metrics-json`` file before the call starts (a bad path: exit 2)."""
        if self.metrics_json is None:
            return None
        from fishtalk.engine.metrics import MetricsFile

        try:
            return MetricsFile.open(self.metrics_json)
        except OSError as exc:
            fail(f"cannot write metrics to {self.metrics_json}: {exc.strerror or exc}", EXIT_USAGE)


NO_CALL_RECORDS: Final = CallRecords()
"""A ``records`` parameter's default (:func:`with_call_records` always passes them)."""

with_call_records: Final = spelled_out_as(
    "records",
    {
        "no_journal": NoJournalOption,
        "journal": JournalOption,
        "events": EventsOption,
        "record_audio": RecordAudioOption,
        "latency": LatencyOption,
        "metrics_json": MetricsJsonOption,
    },
    CallRecords,
)
"""Spells out a command's ``records: CallRecords`` parameter as the journal, latency and
metrics options."""


@dataclass(frozen=True)
class AudioChoice:
    """The audio devices and talk mode of a call, as given (unset: the config's)."""

    input_device: str | None = None
    output_device: str | None = None
    no_audio: bool = False
    talk_mode: str | None = None

    def overrides(self) -> dict[str, Any]:
        """Dotted config overrides (unset flags leave the config alone)."""
        return {
            "audio.input_device": self.input_device,
            "audio.output_device": self.output_device,
            "audio.enabled": False if self.no_audio else None,
            "audio.talk_mode": self.talk_mode,
        }


NO_AUDIO_CHOICE: Final = AudioChoice()
"""An ``audio`` parameter's default (:func:`with_audio_choice` always passes one)."""

with_audio_choice: Final = spelled_out_as(
    "audio",
    {
        "input_device": InputDeviceOption,
        "output_device": OutputDeviceOption,
        "no_audio": NoAudioOption,
        "talk_mode": TalkModeOption,
    },
    AudioChoice,
)
"""Spells out a command's ``audio: AudioChoice`` parameter as ``--input-device``,
``--output-device``, ``--no-audio`` and ``--talk-mode``."""
