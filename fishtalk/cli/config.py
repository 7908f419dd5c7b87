"""fishtalk settings: defaults < TOML file < environment < command-line flags.

* File: ``--config PATH``, else ``$FISHTALK_CONFIG``, else the platform config file
  (``fishtalk config path`` prints it). A missing default file is fine; a missing explicit
  one is an error. Every key is documented in ``config.example.toml``.
* Environment: ``FISH_API_KEY`` (api.api_key), ``FISHTALK_API_URL`` (api.url),
  ``FISHTALK_AGENT`` (session.agent_id), ``FISHTALK_ORIGIN`` (api.origin), and the generic
  ``FISHTALK_<SECTION>__<KEY>`` for any other key, e.g.
  ``FISHTALK_AUDIO__ECHO_CANCELLATION=false``. Values are parsed like TOML scalars would be
  (``true``/``false``, numbers); tables and arrays are given as JSON. Tools can only be
  declared in the file.
* Flags: the CLI passes an ``overrides`` mapping of dotted keys (``{"session.agent_id": ..}``);
  ``None`` values mean "flag not given".

The API key is a :class:`~pydantic.SecretStr`: it never appears in a repr, an error
message or ``fishtalk config show``. Any problem (broken TOML, unknown key, bad value)
raises :class:`ConfigError` (exit code 2) with one line naming the file and line, the
environment variable or the key.

This module never imports textual or livekit.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from fishtalk.core.errors import ConfigError
from fishtalk.core.protocol import TOOL_NAME_PATTERN
from fishtalk.core.talk import TalkMode
from fishtalk.engine import paths
from fishtalk.engine.tools.declared import ToolDecl, check_tool_names
from fishtalk.engine.tools.registry import MAX_TOOL_TIMEOUT
from fishtalk.engine.tools.secret_env import (
    ENV_ALIASES,
    SECRET_KEYS,
    env_setting,
)
from fishtalk.tui.actions import key_problems

DEFAULT_API_URL: Final = "https://api.fish.audio"
_TOOL_NAME_RE: Final = re.compile(TOOL_NAME_PATTERN)
_LANGUAGE_RE: Final = re.compile(r"[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*")
PROFILE_NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
_PROFILE_NAME_RE: Final = re.compile(PROFILE_NAME_PATTERN)
"""always = open mic with echo cancellation; toggle = one key opens and closes the mic;
push = hold a key (where the terminal reports key release)."""


class _Section(BaseModel):
    """Base for every settings table: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", validate_default=True)


def _check_http_url(value: str | None) -> str | None:
    if value is None:
        return None
    if not re.match(r"^https?://[^\s/]+", value):
        raise ValueError("must be an http:// or https:// URL")
    return value.rstrip("/")


class ApiSettings(_Section):
    """``[api]``: where sessions are created and how the client authenticates."""

    url: str = DEFAULT_API_URL
    """Base URL of the Fish Audio API."""
    api_key: SecretStr | None = None
    """API key (prefer the FISH_API_KEY environment variable). Never printed."""
    public: bool = False
    """Create sessions for a public agent without a key (sends ``origin`` instead)."""
    origin: str | None = None
    """Origin header for public agents; must be one of the agent's allowed origins."""
    timeout: float = Field(default=10.0, gt=0, le=300)
    """Seconds to wait for the session API before giving up."""

    _url = field_validator("url", "origin")(_check_http_url)


class SessionSettings(_Section):
    """``[session]``: what each new conversation asks for."""

    agent_id: str | None = None
    """The agent to talk to."""
    language: str | None = None
    """Language override (only if the agent allows it), e.g. ``en``, ``ja``, ``pt-BR``."""
    timezone: str | None = None
    """IANA time zone for the agent's world context, e.g. ``Europe/Berlin``."""
    voice_id: str | None = Field(default=None, min_length=1)
    """Voice override: a voice model id from the voice library (if the agent allows it)."""
    first_message: str | None = Field(default=None, min_length=1)
    """Opening line override, spoken verbatim (if the agent allows it)."""
    first_message_prompt: str | None = Field(default=None, min_length=1)
    """Instructions the opening line is generated from (instead of ``first_message``)."""
    system_prompt: str | None = Field(default=None, min_length=1)
    """Replaces the agent's system prompt (if the agent allows it; needs an API key)."""
    name: str | None = Field(default=None, min_length=1, max_length=256)
    """The session's display name in the console (API-key sessions only)."""
    record_audio: bool | None = None
    """Override the agent's recording setting; unset = the agent's."""
    world_context: bool | None = None
    """Whether the agent knows the current date and time; unset = the server's (true)."""
    tool_events: bool = True
    """Ask the server for tool.started/completed/failed events."""
    text_only: bool = False
    """Start without microphone and speaker (typed turns only)."""
    dynamic_variables: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """Values for the agent prompt's {{variables}}."""
    end_user_id: str | None = Field(default=None, max_length=256)
    """Your own identifier for the person talking (for your records)."""
    metadata: dict[str, JsonValue] | None = None
    """Free-form metadata stored with the session."""
    client_tool_timeout: float = Field(default=15.0, gt=0, le=MAX_TOOL_TIMEOUT)
    """Default client-side deadline, in seconds, for a client tool call."""

    @field_validator("language")
    @classmethod
    def _language_tag(cls, value: str | None) -> str | None:
        if value is not None and not _LANGUAGE_RE.fullmatch(value):
            raise ValueError(f"{value!r} is not a language code such as en, ja or pt-BR")
        return value

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str | None) -> str | None:
        if value is not None and not _is_time_zone(value):
            raise ValueError(f"unknown time zone {value!r} (an IANA name such as Europe/Berlin)")
        return value

    @model_validator(mode="after")
    def _one_opener(self) -> SessionSettings:
        if self.first_message is not None and self.first_message_prompt is not None:
            raise ValueError("set first_message or first_message_prompt, not both")
        return self

    @field_validator("dynamic_variables")
    @classmethod
    def _few_variables(
        cls, value: dict[str, str | int | float | bool]
    ) -> dict[str, str | int | float | bool]:
        if len(value) > 50:
            raise ValueError("at most 50 dynamic variables are allowed")
        return value


DeviceSpec = int | str | None


class AudioSettings(_Section):
    """``[audio]``: devices and voice processing."""

    enabled: bool = True
    """Use the microphone and speaker at all (false = text only)."""
    input_device: DeviceSpec = None
    """PortAudio input device index or (part of its) name; unset = system default."""
    output_device: DeviceSpec = None
    """PortAudio output device index or (part of its) name; unset = system default."""
    echo_cancellation: bool = True
    """Cancel the agent's voice from the microphone signal (needed without headphones)."""
    noise_suppression: bool = True
    """Suppress steady background noise."""
    high_pass_filter: bool = True
    """Remove low-frequency rumble."""
    auto_gain: bool = True
    """Automatic microphone gain control."""
    talk_mode: TalkMode = "always"
    """How the microphone opens: always (open mic, echo-cancelled), toggle (a key opens and
    closes it) or push (hold a key; toggle where the terminal cannot report key release)."""

    @field_validator("input_device", "output_device", mode="before")
    @classmethod
    def _numeric_device(cls, value: object) -> object:
        # Environment values arrive as strings; "3" means device index 3.
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        return value


class UiSettings(_Section):
    """``[ui]``: the front end."""

    plain: bool | None = None
    """true = line-oriented output, false = full-screen TUI, unset = TUI when on a terminal."""
    keys: dict[str, str] = Field(default_factory=dict)
    """Key bindings, action -> key (see the TUI's help screen for action names). Checked
    when loading: an unknown action, or a key another action has, is a config error."""


class JournalSettings(_Section):
    """``[journal]``: the record every session leaves in the state directory."""

    enabled: bool = True
    """Write a journal for every chat and demo session (``--no-journal`` turns it off)."""
    keep_sessions: int = Field(default=100, ge=1)
    """Keep at most this many journals (the oldest are deleted when a session starts)."""
    keep_mb: float = Field(default=200.0, gt=0)
    """Keep at most this many megabytes of journals (the newest one is always kept)."""


class AgentProfile(_Section):
    """``[agents.NAME]``: a named agent with its own settings (``fishtalk chat NAME``).

    Choosing a profile applies its values over the config file's and the environment's;
    command-line flags still win.
    """

    agent_id: str = Field(min_length=1)
    """The agent's id."""
    description: str | None = None
    """Shown by ``fishtalk agents``."""
    public: bool | None = None
    """A public agent: no API key, an ``origin`` instead (``api.public``)."""
    origin: str | None = None
    """Origin header for a public agent (``api.origin``)."""
    talk_mode: TalkMode | None = None
    """How the microphone opens: always, toggle or push."""
    tools: list[str] | None = None
    """Client tools offered to this agent, by name; unset = every enabled tool."""
    session: SessionSettings = Field(default_factory=SessionSettings)
    """Session settings for this agent (only the keys set here apply)."""

    _url = field_validator("origin")(_check_http_url)

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, value: list[str] | None) -> list[str] | None:
        for name in value or ():
            if not _TOOL_NAME_RE.match(name):
                raise ValueError(
                    f"invalid tool name {name!r}: names must match {TOOL_NAME_PATTERN}"
                )
        return value

    def layer(self) -> dict[str, Any]:
        """The settings this profile sets, as a nested mapping (unset keys left out)."""
        session: dict[str, Any] = self.session.model_dump(exclude_unset=True)
        session["agent_id"] = self.agent_id
        # The profile's opener replaces the file's, whichever kind that one is.
        openers = ("first_message", "first_message_prompt")
        for one, other in (openers, openers[::-1]):
            if one in session:
                session.setdefault(other, None)
        layer: dict[str, Any] = {"session": session}
        api = {
            key: value
            for key, value in (("public", self.public), ("origin", self.origin))
            if value is not None
        }
        if api:
            layer["api"] = api
        if self.talk_mode is not None:
            layer["audio"] = {"talk_mode": self.talk_mode}
        return layer


class Settings(_Section):
    """All fishtalk settings; build one with :func:`load_settings`."""

    api: ApiSettings = Field(default_factory=ApiSettings)
    session: SessionSettings = Field(default_factory=SessionSettings)
    audio: AudioSettings = Field(default_factory=AudioSettings)
    ui: UiSettings = Field(default_factory=UiSettings)
    journal: JournalSettings = Field(default_factory=JournalSettings)
    tools: dict[str, ToolDecl] = Field(default_factory=dict)
    agents: dict[str, AgentProfile] = Field(default_factory=dict)
    """Agent profiles by name."""

    _profile: str | None = PrivateAttr(default=None)

    @property
    def profile(self) -> AgentProfile | None:
        """The agent profile these settings were loaded with, if any."""
        return self.agents.get(self._profile) if self._profile is not None else None

    @property
    def profile_name(self) -> str | None:
        """The name of :attr:`profile`."""
        return self._profile

    @property
    def offered_tools(self) -> list[str] | None:
        """The client tools the active profile offers (None: every enabled tool)."""
        profile = self.profile
        return None if profile is None else profile.tools

    @field_validator("agents")
    @classmethod
    def _profile_names(cls, value: dict[str, AgentProfile]) -> dict[str, AgentProfile]:
        for name in value:
            if not _PROFILE_NAME_RE.match(name):
                raise ValueError(
                    f"invalid agent profile name {name!r}: names must match {PROFILE_NAME_PATTERN}"
                )
        return value

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, value: dict[str, ToolDecl]) -> dict[str, ToolDecl]:
        check_tool_names(value)
        return value


# --- loading ----------------------------------------------------------------------------

Sources = dict[tuple[str, ...], str]
"""Which layer set each dotted key last, for error messages."""


def load_settings(
    config_path: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    profile: str | None = None,
) -> Settings:
    """Build the effective settings from every layer; raise :class:`ConfigError` on problems.

    ``config_path`` None means the default file (which may be absent). ``env`` defaults to
    ``os.environ``. ``overrides`` holds dotted keys from flags; ``None`` values are skipped.
    ``profile`` names an ``[agents.NAME]`` table whose values apply over the file's and the
    environment's (flags still win); an unknown name is a ConfigError suggesting the
    closest one.
    """
    environ = os.environ if env is None else env
    merged: dict[str, Any] = {}
    sources: Sources = {}
    file_text: str | None = None

    path = config_path.expanduser() if config_path is not None else _default_path(environ)
    if config_path is not None and not path.exists():
        raise ConfigError(f"config file not found: {path}")
    if path.exists():
        file_text, data = _read_toml(path)
        _merge(merged, data, sources, (), f"in {path}")
    _merge_env(merged, environ, sources)
    if profile is not None:
        try:
            base = Settings.model_validate(merged)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, sources, path, file_text)) from None
        chosen = base.agents.get(profile)
        if chosen is None:
            raise ConfigError(unknown_profile_message(profile, list(base.agents), path))
        _merge(merged, chosen.layer(), sources, (), f"from agent profile {profile!r}")
    if overrides:
        for key, value in overrides.items():
            if value is None:
                continue
            parts = tuple(key.split("."))
            _merge(merged, _nest(parts, value), sources, (), "from the command line")

    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, sources, path, file_text)) from None
    _check_keys(settings.ui.keys, sources, path, file_text)
    settings._profile = profile
    return settings


def close_profile(name: str, names: list[str]) -> str | None:
    """The profile name ``name`` most likely misspells, or None."""
    close = difflib.get_close_matches(name, names, n=1)
    return close[0] if close else None


def unknown_profile_message(name: str, names: list[str], path: Path | None = None) -> str:
    """One line for a profile name that is not in the config, with the closest one."""
    where = f" in {path}" if path is not None else ""
    message = f"no agent profile {name!r}{where}"
    close = close_profile(name, names)
    if close is not None:
        return f"{message} (did you mean {close!r}?)"
    if names:
        return f"{message} (profiles: {', '.join(sorted(names))})"
    return f"{message}: declare it as [agents.{name}] with an agent_id"


def _is_time_zone(name: str) -> bool:
    """Whether ``name`` is an IANA time zone this machine knows; True when it knows none
    (Windows without the tzdata package), so the server decides."""
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return not zoneinfo.available_timezones()
    return True


def _check_keys(
    keys: Mapping[str, str], sources: Sources, path: Path, file_text: str | None
) -> None:
    """Refuse an unknown action or a conflicting key in ``[ui] keys`` now, not when the TUI
    starts (and not silently, as a key taken from another action would be)."""
    problems = key_problems(keys)
    if not problems:
        return
    first = problems[0]
    loc = ("ui", "keys", first.action)
    origin = _origin_of(loc, sources)
    line = _find_line(file_text, loc) if origin == f"in {path}" else None
    if line is not None:
        origin = f"in {path}, line {line}"
    message = f"invalid setting ui.keys.{first.action} {origin}: {first.message}"
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    raise ConfigError(message)


def _default_path(environ: Mapping[str, str]) -> Path:
    explicit = environ.get(paths.CONFIG_PATH_ENV)
    if explicit:
        return Path(explicit).expanduser()
    return paths.default_config_file()


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # str(exc) carries "(at line L, column C)".
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _nest(parts: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: Any = value
    for part in reversed(parts):
        out = {part: out}
    result: dict[str, Any] = out
    return result


def _merge(
    target: dict[str, Any],
    layer: Mapping[str, Any],
    sources: Sources,
    prefix: tuple[str, ...],
    origin: str,
) -> None:
    """Deep-merge ``layer`` into ``target``; tables merge, anything else replaces."""
    for key, value in layer.items():
        where = (*prefix, key)
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], value, sources, where, origin)
            continue
        if isinstance(value, Mapping):
            target[key] = {}
            _merge(target[key], value, sources, where, origin)
            sources[where] = origin
            continue
        target[key] = value
        sources[where] = origin


_FILE_ONLY: Final = ("tools", "agents")
"""Tables of named entries: declared in the config file only."""


def _merge_env(merged: dict[str, Any], environ: Mapping[str, str], sources: Sources) -> None:
    sections = Settings.model_fields
    for name in sorted(environ):
        raw = environ[name]
        setting = env_setting(name)
        if setting is None:
            continue
        if name in ENV_ALIASES:
            where = setting
        else:
            section, key = setting
            if section in _FILE_ONLY:
                raise ConfigError(f"{name}: {section} can only be declared in the config file")
            if section not in sections:
                raise ConfigError(
                    f"environment variable {name}: unknown section {section!r}"
                    + _suggest(section, [s for s in sections if s not in _FILE_ONLY])
                )
            fields = _section_fields(section)
            if key not in fields:
                raise ConfigError(
                    f"environment variable {name}: unknown setting {section}.{key}"
                    + _suggest(key, fields)
                )
            where = (section, key)
        if raw == "":
            continue
        _merge(merged, _nest(where, _env_value(raw)), sources, (), f"from ${name}")


def _env_value(raw: str) -> Any:
    stripped = raw.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            return raw
    return raw


def _section_fields(section: str) -> list[str]:
    annotation = Settings.model_fields[section].annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _describe(exc: ValidationError, sources: Sources, path: Path, file_text: str | None) -> str:
    """One line for the first validation error, naming the key and where it came from."""
    errors = exc.errors(include_input=False, include_url=False)
    first = errors[0]
    loc = tuple(str(p) for p in first["loc"])
    dotted = ".".join(loc) or "settings"
    origin = _origin_of(loc, sources)
    line = _find_line(file_text, loc) if origin == f"in {path}" else None
    if line is not None:
        origin = f"in {path}, line {line}"
    if first["type"] == "extra_forbidden":
        parent_fields = _fields_at(loc[:-1])
        message = f"unknown setting {dotted} {origin}" + _suggest(loc[-1], parent_fields)
    else:
        msg = str(first["msg"])
        msg = msg.removeprefix("Value error, ")
        message = f"invalid setting {dotted} {origin}: {msg}"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return message


def _origin_of(loc: tuple[str, ...], sources: Sources) -> str:
    for end in range(len(loc), 0, -1):
        origin = sources.get(loc[:end])
        if origin is not None:
            return origin
    return "(default)"


def _fields_at(loc: tuple[str, ...]) -> list[str]:
    """Valid key names of the table at ``loc`` (for "did you mean" hints)."""
    if loc[:1] == ("tools",):
        return list(ToolDecl.model_fields) if len(loc) == 2 else []
    if loc[:1] == ("agents",):
        if len(loc) == 2:
            return list(AgentProfile.model_fields)
        return list(SessionSettings.model_fields) if loc[2:] == ("session",) else []
    model: type[BaseModel] = Settings
    for part in loc:
        field = model.model_fields.get(part)
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)


def _find_line(text: str | None, loc: tuple[str, ...]) -> int | None:
    """Best-effort line number of ``loc`` in a TOML file (tomllib gives no positions)."""
    if text is None or not loc:
        return None
    table: tuple[str, ...] = ()
    header = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
    for number, line in enumerate(text.splitlines(), start=1):
        match = header.match(line)
        if match:
            table = tuple(p.strip().strip("\"'") for p in match.group(1).split("."))
            if table == loc:
                return number
            continue
        key_match = re.match(r"^\s*([A-Za-z0-9_.\-\"' ]+?)\s*=", line)
        if key_match is None:
            continue
        key = tuple(p.strip().strip("\"'") for p in key_match.group(1).split("."))
        full = table + key
        if full == loc[: len(full)] and len(full) >= min(len(loc), 2):
            return number
    return None


def redacted_dict(settings: Settings) -> dict[str, Any]:
    """Settings as plain data for display: secrets replaced, unset values dropped."""
    data = settings.model_dump(mode="json", exclude_none=True)
    data["agents"] = {
        name: profile.model_dump(mode="json", exclude_none=True, exclude_unset=True)
        for name, profile in settings.agents.items()
    }
    for section, key in SECRET_KEYS:
        if getattr(getattr(settings, section), key) is not None:
            data[section][key] = "<hidden>"
    # Empty tables (no tools, no key bindings...) only add noise to `config show`.
    for name, section in list(data.items()):
        for key, value in list(section.items()):
            if value == {}:
                del section[key]
        if not section and name in _FILE_ONLY:
            del data[name]
    return data
