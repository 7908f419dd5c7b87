"""``fishtalk sim serve``: the simulator in the foreground until Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from fishtalk.core.errors import SimServeError

if TYPE_CHECKING:
    from fishtalk.sim.fish.scenario import Scenario

DEFAULT_PORT = 7880
"""The port ``sim serve`` listens on unless told otherwise (LiveKit's usual dev port)."""
MAX_PORT = 65535


class _StdoutClosed(Exception):
    """Whoever read our output has gone (``sim serve | head -3``)."""


def _write(out: TextIO, text: str) -> None:
    """Write and flush; a closed pipe becomes :class:`_StdoutClosed`."""
    try:
        out.write(text)
        out.flush()
    except BrokenPipeError:
        # Point the stream at /dev/null, or the interpreter's final flush complains again.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
            os.close(devnull)
        raise _StdoutClosed from None


def builtin_lines() -> list[str]:
    """One line per built-in scenario (from the scenario registry) with its description."""
    from fishtalk.sim.fish.scenario import BUILTIN, builtin_scenario

    width = max(len(name) for name in BUILTIN)
    lines = []
    for name in BUILTIN:
        description = builtin_scenario(name).description
        lines.append(f"  {name:<{width}}  {description}".rstrip())
    return lines


def _banner(
    api_url: str,
    dev_key: str,
    scenario: str,
    out: TextIO,
    origins: Sequence[str],
    overrides: Mapping[str, object] | None = None,
) -> None:
    lines = [
        f"fishtalk sim: serving on {api_url} (scenario: {scenario})",
        f"  API URL:  {api_url}",
        f"  API key:  {dev_key}   (the simulator's own key; it guards nothing real)",
        f"  Public agents (no key) accept the origins: {', '.join(origins)}",
    ]
    if overrides:
        settings = ", ".join(f"{key}={value!r}" for key, value in overrides.items())
        lines.append(f"  Agent settings for every scenario: {settings}")
    lines += [
        "",
        "Built-in scenarios (--scenario NAME; without it, agent id NAME plays NAME):",
        *builtin_lines(),
        "",
        "Connect with:",
        f"  FISH_API_KEY={dev_key} fishtalk chat --api-url {api_url} --agent demo",
        "Any agent id plays the scenario; reserved ids such as err-503 or transport-webrtc",
        "inject errors (listed in fishtalk/sim/fish/endpoint.py). Press Ctrl-C to stop.",
    ]
    _write(out, "\n".join(lines) + "\n")


async def _serve(
    host: str,
    port: int,
    chosen: Scenario | None,
    label: str,
    out: TextIO,
    allowed_origins: Sequence[str] = (),
    agent_overrides: Mapping[str, object] | None = None,
) -> None:
    from fishtalk.sim.fish.endpoint import DEFAULT_ALLOWED_ORIGINS
    from fishtalk.sim.runner import run_sim

    origins = (*DEFAULT_ALLOWED_ORIGINS, *allowed_origins)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on this platform
            loop.add_signal_handler(sig, stop.set)
    try:
        async with run_sim(
            chosen,
            host=host,
            port=port,
            allowed_origins=origins,
            agent_overrides=agent_overrides,
        ) as handle:
            try:
                _banner(handle.api_url, handle.dev_key, label, out, origins, agent_overrides)
                await stop.wait()
                _write(out, "fishtalk sim: stopping\n")
            except _StdoutClosed:
                return  # nobody is reading: stop serving, quietly
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SimServeError(f"cannot listen on {host}:{port}: {reason}") from None


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    scenario: str | Path | None = None,
    out: TextIO | None = None,
    allowed_origins: Sequence[str] = (),
    agent_settings: Sequence[str] = (),
) -> None:
    """Run server, session endpoint and agents until SIGINT/SIGTERM, then return.

    ``scenario`` is a TOML file or a built-in name (see
    :data:`~fishtalk.sim.fish.scenario.BUILTIN`). Raises
    :class:`~fishtalk.core.errors.FishtalkError` (one line) for a bad scenario, port or address.
    When ``out`` closes (its reader went away), the simulator stops quietly (returns).
    ``allowed_origins`` adds origins (``scheme://host[:port]``) a public, keyless session
    request may come from, such as a web app's dev server, to the built-in ones.
    ``agent_settings`` (``KEY=VALUE``, e.g. ``think_seconds=0.8``) replace ``[agent]``
    settings of every scenario played, the built-in ones included.
    """
    from fishtalk.sim.fish.scenario import (
        check_agent_overrides,
        load_scenario,
        parse_agent_setting,
    )

    if not 0 <= port <= MAX_PORT:
        raise SimServeError(f"port {port} is out of range (0-{MAX_PORT}; 0 picks a free one)")
    # Load first so that a bad file fails before anything listens.
    chosen = load_scenario(scenario) if scenario is not None else None
    overrides = check_agent_overrides(dict(parse_agent_setting(a) for a in agent_settings))
    if chosen is not None:
        chosen = chosen.with_agent(overrides)
    label = str(scenario) if scenario is not None else "demo for agent id 'demo', else converse"
    stream = out if out is not None else sys.stdout
    # A second Ctrl-C while stopping lands here as KeyboardInterrupt: still a clean exit.
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(host, port, chosen, label, stream, allowed_origins, overrides))


__all__ = ["DEFAULT_PORT", "MAX_PORT", "SimServeError", "builtin_lines", "serve"]
