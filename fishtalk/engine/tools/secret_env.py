"""The environment variables fishtalk reads its settings (and its secrets) from.

The config loader reads these names; command tools must never see the secret ones, so both
derive from this one table and the block list cannot drift from what loading accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

ENV_API_KEY: Final = "FISH_API_KEY"
"""The API key's short environment variable."""
ENV_PREFIX: Final = "FISHTALK_"
"""``FISHTALK_<SECTION>__<KEY>`` sets any setting."""
ENV_ALIASES: Final[Mapping[str, tuple[str, str]]] = {
    ENV_API_KEY: ("api", "api_key"),
    "FISHTALK_API_URL": ("api", "url"),
    "FISHTALK_AGENT": ("session", "agent_id"),
    "FISHTALK_ORIGIN": ("api", "origin"),
    "LIVEKIT_API_KEY": ("livekit", "api_key"),
    "LIVEKIT_API_SECRET": ("livekit", "api_secret"),
}
"""Short environment variables, each naming one setting."""
SECRET_KEYS: Final = frozenset(
    {("api", "api_key"), ("livekit", "api_key"), ("livekit", "api_secret"), ("livekit", "token")}
)
"""The (section, key) settings that are secrets (the LiveKit ones follow the Fish key's
rules)."""


def env_setting(name: str) -> tuple[str, str] | None:
    """The (section, key) that the environment variable ``name`` sets, unchecked, or None
    when fishtalk does not read ``name`` at all."""
    if name in ENV_ALIASES:
        return ENV_ALIASES[name]
    if name.startswith(ENV_PREFIX) and "__" in name:
        section, _, key = name[len(ENV_PREFIX) :].lower().partition("__")
        return section, key
    return None


def is_secret_env_name(name: str) -> bool:
    """Whether fishtalk reads a secret (the API key) from the environment variable ``name``,
    in any case of its letters: ``FISH_API_KEY``, ``FISHTALK_API__API_KEY``,
    ``FISHTALK_API__api_key``, ``fishtalk_api__Api_Key``... Derived from the same parsing as
    loading, so the tool environment's block list cannot drift from it."""
    return any(env_setting(spelling) in SECRET_KEYS for spelling in (name, name.upper()))


SECRET_ENV_NAMES: Final = tuple(
    sorted(
        [alias for alias, where in ENV_ALIASES.items() if where in SECRET_KEYS]
        + [f"{ENV_PREFIX}{section}__{key}".upper() for section, key in SECRET_KEYS]
    )
)
"""The canonical spellings of :func:`is_secret_env_name` (for messages and docs)."""

__all__ = [
    "ENV_ALIASES",
    "ENV_API_KEY",
    "ENV_PREFIX",
    "SECRET_ENV_NAMES",
    "SECRET_KEYS",
    "env_setting",
    "is_secret_env_name",
]
