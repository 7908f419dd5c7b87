"""Building the parts of a call: the tool runner, the audio factory, the journal, and the
grant source of a direct LiveKit join.

The one builder both the CLI (:mod:`fishtalk.cli.launch`, from its settings) and the
public API (:class:`fishtalk.AgentSession`, from its arguments) use, so a call made either
way is put together the same way. Heavy modules load only when a part is built.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import SecretStr

if TYPE_CHECKING:
    from fishtalk.core.protocol.livekit_agents import AgentProtocol
    from fishtalk.engine.api import SessionRequest
    from fishtalk.engine.audio.base import AudioBackend
    from fishtalk.engine.audio.options import AudioOptions
    from fishtalk.engine.journal.writer import JournalWriter
    from fishtalk.engine.session import AudioFactory, CreateSession, DirectJoin, Session
    from fishtalk.engine.tools.builtins import BuiltinOptions
    from fishtalk.engine.tools.declared import ToolSettings
    from fishtalk.engine.tools.registry import Approver, ToolHandler
    from fishtalk.engine.tools.runner import ToolRunner


def audio_factory(options: AudioOptions) -> AudioFactory:
    """Opens the audio backend when the session starts; a fall back to text-only (no
    devices, no PortAudio) is reported through the session's notice callback."""

    def make(notice: Callable[[str], None]) -> AudioBackend:
        from fishtalk.engine.audio import open_backend
        from fishtalk.engine.audio.base import NullAudio

        backend = open_backend(options, notice=notice)
        if isinstance(backend, NullAudio):
            notice(backend.description)
        return backend

    return make


def tool_runner(
    declared: ToolSettings | None,
    *,
    handlers: Mapping[str, ToolHandler] | None = None,
    default_timeout: float,
    approver: Approver | None = None,
    options: BuiltinOptions | None = None,
) -> ToolRunner:
    """The runner of a call's client tools: the ``declared`` ones (config tools, built-ins,
    plugins; a bad declaration raises :class:`~fishtalk.core.errors.ConfigError`), then
    ``handlers`` registered over them by name."""
    from fishtalk.engine.tools.build import build_registry
    from fishtalk.engine.tools.registry import ToolRegistry
    from fishtalk.engine.tools.runner import ToolRunner

    registry = build_registry(declared, options=options) if declared is not None else ToolRegistry()
    for name, handler in (handlers or {}).items():
        registry.register(name, handler, replace=True)
    return ToolRunner(registry, default_timeout=default_timeout, approver=approver)


def open_journal(
    session: Session,
    path: Path | None,
    *,
    agent_id: str | None,
    front_end: str,
    spoken: bool,
    echo: TextIO | None = None,
    what: str = "call",
) -> JournalWriter | None:
    """Start writing ``session``'s journal to ``path`` (and/or ``echo``); a journal that
    cannot be opened is a notice ("No journal for this ``what``"), never a failure."""
    from fishtalk.engine.journal.writer import JournalWriter

    try:
        writer = JournalWriter(
            path,
            agent_id=agent_id,
            front_end=front_end,
            spoken=spoken,
            levels=session.audio_levels,
            echo=echo,
        )
    except OSError as exc:
        session.notice(f"No journal for this {what}: {exc}")
        return None
    session.add_observer(writer.observe)
    return writer


ENV_LIVEKIT_URL = "LIVEKIT_URL"
ENV_LIVEKIT_API_KEY = "LIVEKIT_API_KEY"
ENV_LIVEKIT_API_SECRET = "LIVEKIT_API_SECRET"  # noqa: S105 - a variable's name, not a secret
"""Where a direct join's URL, key and secret come from when none is given (LiveKit's own
names, as its CLI reads them)."""
ENV_LIVEKIT_TOKEN = "FISHTALK_LIVEKIT__TOKEN"  # noqa: S105 - a variable's name, not a secret
"""The settings' variable for ``[livekit] token``: how ``fishtalk load`` hands a token to
its Locust users (never in their argv)."""


@dataclass(frozen=True)
class LiveKitTarget:
    """A LiveKit room to join directly, with no Fish session API: what ``fishtalk chat``,
    ``fishtalk test``, ``fishtalk load`` and :class:`fishtalk.AgentSession` take alike.

    ``token`` (a LiveKit access token), or ``api_key`` + ``api_secret`` + ``room`` (a token
    is minted for ``identity``). ``protocol``: what the agent speaks (None: detected from
    the agent participant). The key and the secret follow the Fish key's rules: held as
    :class:`~pydantic.SecretStr`, never printed.
    """

    url: str
    token: SecretStr | None = None
    api_key: SecretStr | None = None
    api_secret: SecretStr | None = None
    room: str | None = None
    identity: str | None = None
    protocol: AgentProtocol | None = None

    def grant(self) -> DirectJoin:
        """The grant source; raises :class:`~fishtalk.core.errors.ConfigError` (one line,
        naming the flag) for a combination that cannot join."""
        from fishtalk.engine.session import DirectJoin

        options = {"identity": self.identity} if self.identity else {}
        source = DirectJoin(
            self.url,
            token=self.token,
            api_key=self.api_key,
            api_secret=self.api_secret,
            room=self.room,
            **options,
        )
        source.check()
        return source

    def check_at_once(self, sessions: int) -> None:
        """Raise ConfigError when ``sessions`` at once cannot share this target: a token is
        one participant, and a second join with it puts the first out of the room."""
        from fishtalk.core.errors import ConfigError

        if self.token is not None and sessions > 1:
            raise ConfigError(
                f"--token is one participant, so it joins one session at a time (not "
                f"{sessions}): mint a token per session with --api-key/--api-secret and --room"
            )

    def one_of_many(self) -> LiveKitTarget:
        """This target for one of many sessions (``fishtalk load``). Minting, each session
        gets a room of its own, ``ROOM-`` and 8 hex digits, as many conversations need many
        agents and a LiveKit deployment dispatches one into each new room (its identity,
        ``fishtalk-`` and 8 hex digits, is minted anew anyway). A token is one participant
        in its one room: the same target."""
        if self.token is not None or not self.room:
            return self
        return replace(self, room=f"{self.room}-{secrets.token_hex(4)}")

    def session_options(self) -> dict[str, Any]:
        """The :class:`fishtalk.AgentSession` keyword arguments for this target."""
        return {
            "livekit_url": self.url,
            "token": reveal(self.token),
            "livekit_api_key": reveal(self.api_key),
            "livekit_api_secret": reveal(self.api_secret),
            "room": self.room,
            "protocol": self.protocol,
        }


def reveal(value: SecretStr | None) -> str | None:
    """A secret's value, at the one moment it is handed on (None stays None)."""
    return value.get_secret_value() if value is not None else None


def livekit_target(
    url: str | None,
    *,
    token: str | None = None,
    api_key: str | None = None,
    api_secret: str | None = None,
    room: str | None = None,
    identity: str | None = None,
    protocol: AgentProtocol | None = None,
    environ: Mapping[str, str] | None = None,
) -> LiveKitTarget | None:
    """The :class:`LiveKitTarget` these options ask for (None: no direct join). Without a
    token, the key and secret default to ``$LIVEKIT_API_KEY`` / ``$LIVEKIT_API_SECRET``.
    Raises ConfigError for options that cannot join, or that need ``url``."""
    from fishtalk.core.errors import ConfigError
    from fishtalk.core.protocol.livekit_agents import PROTOCOLS

    if protocol is not None and protocol not in PROTOCOLS:
        raise ConfigError(f"--protocol must be one of {', '.join(PROTOCOLS)} (got {protocol!r})")
    if url is None:
        if token or room:
            raise ConfigError("--token and --room join a LiveKit room: they need --livekit-url")
        return None
    env = os.environ if environ is None else environ
    if token is None:
        api_key = api_key or env.get(ENV_LIVEKIT_API_KEY) or None
        api_secret = api_secret or env.get(ENV_LIVEKIT_API_SECRET) or None
    target = LiveKitTarget(
        url,
        token=SecretStr(token) if token else None,
        api_key=SecretStr(api_key) if api_key else None,
        api_secret=SecretStr(api_secret) if api_secret else None,
        room=room,
        identity=identity,
        protocol=protocol,
    )
    target.grant()  # checks it
    return target


def direct_join_for_api(
    url: str | None,
    token: str | None,
    api_key: str | None,
    api_secret: str | None,
    room: str | None,
    protocol: AgentProtocol | None,
) -> DirectJoin | None:
    """:func:`livekit_target`'s grant source for the public API, whose bad options raise
    :class:`~fishtalk.core.errors.ClientConfigError`."""
    from fishtalk.core.errors import ClientConfigError, ConfigError

    try:
        target = livekit_target(
            url, token=token, api_key=api_key, api_secret=api_secret, room=room, protocol=protocol
        )
        return target.grant() if target is not None else None
    except ConfigError as exc:
        raise ClientConfigError(str(exc)) from None


def api_grant(
    request: SessionRequest,
    *,
    api_url: str | None,
    api_key: str | None,
    public: bool,
    origin: str | None,
    timeout: float,
    key_hint: str,
) -> CreateSession:
    """The grant source that creates the session through the Fish session API. Raises
    :class:`~fishtalk.core.errors.ClientConfigError` at once for no key (``key_hint`` says
    how to give one), or public mode without an origin."""
    from fishtalk.core.errors import ClientConfigError
    from fishtalk.engine.api import DEFAULT_API_URL, SessionClient
    from fishtalk.engine.session import CreateSession

    if public:
        if not origin:
            raise ClientConfigError(
                "a public agent needs an origin: pass origin= (one of the agent's allowed origins)"
            )
        api_key = None
    elif not api_key:
        raise ClientConfigError(
            f"no API key: {key_hint} (or public=True with origin= for a public agent)"
        )

    def client() -> SessionClient:
        return SessionClient(
            api_url or DEFAULT_API_URL, api_key=api_key, origin=origin, timeout=timeout
        )

    return CreateSession(client=client, request=request)


__all__ = [
    "ENV_LIVEKIT_API_KEY",
    "ENV_LIVEKIT_API_SECRET",
    "ENV_LIVEKIT_TOKEN",
    "ENV_LIVEKIT_URL",
    "LiveKitTarget",
    "api_grant",
    "audio_factory",
    "direct_join_for_api",
    "livekit_target",
    "open_journal",
    "reveal",
    "tool_runner",
]
