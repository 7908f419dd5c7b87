"""The flags that join any LiveKit room directly (no Fish session API), declared once for
``fishtalk chat``, ``fishtalk test`` and ``fishtalk load`` (:func:`with_livekit_flags`):
``--livekit-url`` with ``--token``, or with ``--api-key`` / ``--api-secret`` (default
``$LIVEKIT_API_KEY`` / ``$LIVEKIT_API_SECRET``) and ``--room``; ``--protocol
fish|livekit-agents``.

They become ``[livekit]`` settings overrides (:meth:`LiveKitFlags.overrides`), so the config
file and the environment can set them too, and :func:`fishtalk.cli.launch.livekit_target`
turns the settings into the engine's :class:`~fishtalk.engine.parts.LiveKitTarget`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Final

import typer

from fishtalk.cli.options import spelled_out_as

PANEL = "Any LiveKit room (no Fish session API)"

LiveKitUrlOption = Annotated[
    str | None,
    typer.Option(
        "--livekit-url",
        metavar="URL",
        help="Join this LiveKit server's room directly instead of creating a Fish session.",
        rich_help_panel=PANEL,
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token", metavar="JWT", help="A LiveKit access token for the room.", rich_help_panel=PANEL
    ),
]
LiveKitApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        metavar="KEY",
        help="LiveKit API key to mint a token with (default: $LIVEKIT_API_KEY).",
        rich_help_panel=PANEL,
    ),
]
LiveKitApiSecretOption = Annotated[
    str | None,
    typer.Option(
        "--api-secret",
        metavar="SECRET",
        help="LiveKit API secret (default: $LIVEKIT_API_SECRET; prefer it: a flag shows in "
        "process lists). Never printed.",
        rich_help_panel=PANEL,
    ),
]
RoomOption = Annotated[
    str | None,
    typer.Option(
        "--room", metavar="NAME", help="The room to mint a token for.", rich_help_panel=PANEL
    ),
]
ProtocolOption = Annotated[
    str | None,
    typer.Option(
        "--protocol",
        metavar="fish|livekit-agents",
        help="What the agent speaks (default: told from the agent participant; a "
        "livekit-agents job's identity starts with agent-AJ_).",
        rich_help_panel=PANEL,
    ),
]


@dataclass(frozen=True)
class LiveKitFlags:
    """The direct-join flags as given (None: not given)."""

    url: str | None = None
    token: str | None = None
    api_key: str | None = None
    api_secret: str | None = None
    room: str | None = None
    protocol: str | None = None

    def overrides(self) -> dict[str, Any]:
        """Dotted ``[livekit]`` settings overrides (unset flags leave the config alone).

        A way to join given here wins over the other one set in the environment or the
        config file: ``--token`` with ``$LIVEKIT_API_KEY`` / ``$LIVEKIT_API_SECRET`` set
        joins with the token, and ``--api-key`` or ``--api-secret`` mints even when the
        config holds a token (an empty value is no value). Both ways given as flags is
        still an error."""
        minting = self.api_key is not None or self.api_secret is not None
        dropped = "" if self.token is not None and not minting else None
        return {
            "livekit.url": self.url,
            "livekit.token": "" if minting and self.token is None else self.token,
            "livekit.api_key": dropped if self.api_key is None else self.api_key,
            "livekit.api_secret": dropped if self.api_secret is None else self.api_secret,
            "livekit.room": self.room,
            "livekit.protocol": self.protocol,
        }


_LIVEKIT_OPTIONS: Final[dict[str, Any]] = {
    "url": LiveKitUrlOption,
    "token": TokenOption,
    "api_key": LiveKitApiKeyOption,
    "api_secret": LiveKitApiSecretOption,
    "room": RoomOption,
    "protocol": ProtocolOption,
}
"""The direct-join options, by :class:`LiveKitFlags` field."""

with_livekit_flags: Final = spelled_out_as("livekit", _LIVEKIT_OPTIONS, LiveKitFlags)
"""Spells out a command's ``livekit: LiveKitFlags`` parameter as the direct-join options
(``chat``, ``test`` and ``load`` alike)."""

NO_LIVEKIT_FLAGS: Final = LiveKitFlags()
"""A ``livekit`` parameter's default (:func:`with_livekit_flags` always passes the flags)."""


__all__ = [
    "NO_LIVEKIT_FLAGS",
    "LiveKitFlags",
    "with_livekit_flags",
]
