"""What every command shares: the global options' state, loading settings, resolving
the agent, running a coroutine and failing with one line."""

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from fishtalk.cli.settings import Settings


@dataclass
class CliState:
    """Global options, shared with every command through ``ctx.obj``."""

    config_path: Path | None = None
    debug: bool = False


state = CliState()
"""The process-wide global options (main() needs --debug after the command has failed)."""


def load(overrides: dict[str, Any] | None = None, *, profile: str | None = None) -> "Settings":
    """Load settings for a command: the global ``--config`` plus the command's flags (and
    the agent profile ``profile``, between the two)."""
    from fishtalk.cli.config import load_settings

    return load_settings(state.config_path, overrides=overrides, profile=profile)


def resolve_agent(name: str | None, agent: str | None) -> tuple[str | None, str | None]:
    """``(profile, agent_id)`` for a command's positional NAME and its ``--agent`` value.

    NAME must be an agent profile (an unknown one is a ConfigError naming the closest).
    An ``--agent`` value is a profile when one has that name, else an agent id as it
    always was (with a note on stderr when it looks like a misspelt profile).
    """
    if name is None and agent is None:
        return None, None
    from fishtalk.cli.config import close_profile, unknown_profile_message
    from fishtalk.core.errors import ConfigError

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


def target_config_path() -> Path:
    """The config file in use: the global ``--config``, else the default path."""
    from fishtalk.engine import paths

    return state.config_path if state.config_path is not None else paths.config_file()


def run_async(coro: Any) -> Any:
    """Run a command's coroutine to completion (one event loop per command)."""
    import asyncio  # not at module level: --help and --version never need an event loop

    return asyncio.run(coro)


def fail(message: str, code: int) -> NoReturn:
    from fishtalk.core.text import strip

    sys.stderr.write(f"fishtalk: {strip(message)}\n")
    sys.stderr.flush()
    raise SystemExit(code)
