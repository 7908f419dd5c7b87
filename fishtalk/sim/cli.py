"""``fishtalk sim serve``: the simulator in the foreground until Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar

from fishtalk.core.errors import SimServeError

if TYPE_CHECKING:
    from fishtalk.sim.fish.scenario import Scenario

DEFAULT_PORT = 7880
"""The port ``sim serve`` listens on unless told otherwise (LiveKit's usual dev port)."""
MAX_PORT = 65535

T = TypeVar("T")


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
    origins: Sequence[str],
    overrides: Mapping[str, object] | None = None,
) -> str:
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
    return "\n".join(lines) + "\n"


def _openlive_banner(url: str) -> str:
    lines = [
        f"fishtalk sim: OpenLive stand-in on {url}",
        "  It sends status 'ready', then answers each typed turn (user_text) from its script;",
        "  a word in the turn picks the reply: garbage, unknown, broken, fail, think, tool,",
        "  todo, long (anything else is echoed). cancel stops a reply; control 'end' hangs up.",
        "Press Ctrl-C to stop.",
    ]
    return "\n".join(lines) + "\n"


async def _serve_until_stopped(
    running: AbstractAsyncContextManager[T],
    banner: Callable[[T], str],
    host: str,
    port: int,
    out: TextIO,
) -> None:
    """Enter ``running``, print its banner, and wait for SIGINT/SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on this platform
            loop.add_signal_handler(sig, stop.set)
    try:
        async with running as handle:
            try:
                _write(out, banner(handle))
                await stop.wait()
                _write(out, "fishtalk sim: stopping\n")
            except _StdoutClosed:
                return  # nobody is reading: stop serving, quietly
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SimServeError(f"cannot listen on {host}:{port}: {reason}") from None


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
    from fishtalk.sim.runner import SimHandle, run_sim

    origins = (*DEFAULT_ALLOWED_ORIGINS, *allowed_origins)

    def banner(handle: SimHandle) -> str:
        return _banner(handle.api_url, handle.dev_key, label, origins, agent_overrides)

    running = run_sim(
        chosen, host=host, port=port, allowed_origins=origins, agent_overrides=agent_overrides
    )
    await _serve_until_stopped(running, banner, host, port, out)


async def _serve_openlive(host: str, port: int, out: TextIO) -> None:
    from fishtalk.sim.openlive import OpenLiveSim, run_openlive_sim

    def banner(sim: OpenLiveSim) -> str:
        return _openlive_banner(sim.url)

    await _serve_until_stopped(run_openlive_sim(host, port), banner, host, port, out)


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    scenario: str | Path | None = None,
    out: TextIO | None = None,
    allowed_origins: Sequence[str] = (),
    agent_settings: Sequence[str] = (),
    openlive: bool = False,
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
    ``openlive`` serves the OpenLive stand-in (:mod:`fishtalk.sim.openlive`) instead, on
    ``ws://host:port/live``; it plays its own script, so the other options do not apply.
    """
    from fishtalk.sim.fish.scenario import (
        check_agent_overrides,
        load_scenario,
        parse_agent_setting,
    )

    if not 0 <= port <= MAX_PORT:
        raise SimServeError(f"port {port} is out of range (0-{MAX_PORT}; 0 picks a free one)")
    stream = out if out is not None else sys.stdout
    if openlive:
        if scenario is not None or allowed_origins or agent_settings:
            raise SimServeError(
                "--openlive plays the OpenLive stand-in's own script: "
                "--scenario, --allow-origin and --agent-setting do not apply"
            )
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(_serve_openlive(host, port, stream))
        return
    # Load first so that a bad file fails before anything listens.
    chosen = load_scenario(scenario) if scenario is not None else None
    overrides = check_agent_overrides(dict(parse_agent_setting(a) for a in agent_settings))
    if chosen is not None:
        chosen = chosen.with_agent(overrides)
    label = str(scenario) if scenario is not None else "demo for agent id 'demo', else converse"
    # A second Ctrl-C while stopping lands here as KeyboardInterrupt: still a clean exit.
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(host, port, chosen, label, stream, allowed_origins, overrides))


__all__ = ["DEFAULT_PORT", "MAX_PORT", "SimServeError", "builtin_lines", "serve"]
