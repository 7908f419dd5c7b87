"""The settings schema: every table and key of the config file as pydantic models, with
their checks (names, URLs, language tags, time zones, conflicting keys).

:func:`fishtalk.cli.config.load_settings` builds a :class:`Settings` from the layers. This
module never imports textual or livekit.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    SecretStr,
    field_validator,
    model_validator,
)

from fishtalk.core.protocol import TOOL_NAME_PATTERN
from fishtalk.core.talk import TalkMode
from fishtalk.engine.tools.declared import ToolDecl, check_tool_names
from fishtalk.engine.tools.registry import MAX_TOOL_TIMEOUT

DEFAULT_API_URL: Final = "https://api.fish.audio"


_TOOL_NAME_RE: Final = re.compile(TOOL_NAME_PATTERN)


_LANGUAGE_RE: Final = re.compile(r"[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*")


PROFILE_NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"


_PROFILE_NAME_RE: Final = re.compile(PROFILE_NAME_PATTERN)


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


class LiveKitSettings(_Section):
    """``[livekit]``: join any LiveKit room directly, with no Fish session API (``--livekit-url``).

    ``token``, or ``api_key`` + ``api_secret`` + ``room`` (a token is minted with
    livekit-api). The key, the secret and the token are secrets: never printed, never
    passed to tools; prefer ``LIVEKIT_API_KEY`` / ``LIVEKIT_API_SECRET`` to flags.
    """

    url: str | None = None
    """The LiveKit server (``wss://...``); set, it replaces the Fish session API."""
    token: SecretStr | None = None
    """A LiveKit access token for the room."""
    api_key: SecretStr | None = None
    """LiveKit API key to mint a token with (``LIVEKIT_API_KEY``)."""
    api_secret: SecretStr | None = None
    """LiveKit API secret to mint a token with (``LIVEKIT_API_SECRET``)."""
    room: str | None = None
    """The room to mint a token for."""
    identity: str | None = None
    """Your identity in the room when minting (default: ``fishtalk-`` and 8 hex digits)."""
    protocol: Literal["fish", "livekit-agents"] | None = None
    """What the agent speaks; unset: told from the agent participant (a livekit-agents
    job's identity starts with ``agent-AJ_``)."""


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
    livekit: LiveKitSettings = Field(default_factory=LiveKitSettings)
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


def _is_time_zone(name: str) -> bool:
    """Whether ``name`` is an IANA time zone this machine knows; True when it knows none
    (Windows without the tzdata package), so the server decides."""
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return not zoneinfo.available_timezones()
    return True
